"""Hostile agent programs: Python source shipped as the agent bundle to shell nodes.

Each node runs the same file; ``--role`` (a per-target agent argument) picks what it
says. The lines are made here with the real field orders, so only what a test makes
hostile is hostile.
"""

from __future__ import annotations

import json

from collectors.agent.fields import GPU_FIELDS, GPU_SLOW_FIELDS, NIC_FIELDS, PORT_FIELDS

# OSC 52 (write the clipboard), OSC 0 (retitle the pane), a CSI clear screen and an RLO.
OSC52 = "\x1b]52;c;aGFja2Vk\x07"
HOSTILE = OSC52 + "\x1b]0;pwned\x07\x1b[2J\u202eH100"


def hello(role: str) -> dict[str, object]:
    name = HOSTILE if role == "evil" else "NVIDIA H100 80GB HBM3"
    return {
        "v": 1,
        "type": "hello",
        "t": 0,
        "agent": "hostile" + (OSC52 if role == "evil" else ""),
        "host": role,
        "interval": 0.2,
        "slow_interval": 1.0,
        "gpu_fields": list(GPU_FIELDS),
        "gpu_slow_fields": list(GPU_SLOW_FIELDS),
        "port_fields": list(PORT_FIELDS),
        "nic_fields": list(NIC_FIELDS),
        "gpus": [{"index": 0, "uuid": f"GPU-{role}-0", "name": name}],
        "driver": "550.54.15" + (HOSTILE if role == "evil" else ""),
    }


# After the second sample each role sends these lines once (``NOW`` becomes the time).
EXTRA_LINES: dict[str, list[str]] = {
    "good": ['{"v":1,"type":"event","t":NOW,"kind":"xid","gpu":0,"code":48}'],
    # The minimal line, and its relatives: each is a protocol error of its node.
    "bad": ['{"v":1,"type":"event","t":NOW,"kind":"xid","gpu":-1,"code":79}'],
    "evil": [
        '{"v":1,"type":"event","t":NOW,"kind":"xid","gpu":0,"code":13,"detail":'
        + json.dumps(OSC52)
        + "}"
    ],
}

_PROGRAM = """
import json, sys, time
ROLE = sys.argv[sys.argv.index("--role") + 1]
if ROLE == "crash":
    sys.stderr.write({stderr!r})
    sys.exit(1)
HELLO = json.loads({hellos!r})[ROLE]
EXTRA = json.loads({extra!r}).get(ROLE, [])
ROW = [1] * {fields}
def emit(line):
    sys.stdout.write(line + "\\n")
    sys.stdout.flush()
HELLO["t"] = time.time()
emit(json.dumps(HELLO))
seq = 0
while True:
    emit(json.dumps({{"v": 1, "type": "sample", "t": time.time(), "seq": seq, "gpus": [ROW]}}))
    seq += 1
    if seq == 2:
        for line in EXTRA:
            emit(line.replace("NOW", repr(time.time())))
    time.sleep(0.2)  # the agent's sample rate
"""


def hostile_agent() -> bytes:
    """The agent program every shell node runs."""
    hellos = {role: hello(role) for role in ("good", "bad", "evil")}
    return _PROGRAM.format(
        hellos=json.dumps(hellos),
        extra=json.dumps(EXTRA_LINES),
        fields=len(GPU_FIELDS),
        stderr="Traceback: " + HOSTILE + "\n" + "x" * 100_000 + "\n",
    ).encode()
