"""What validating and sanitising every node line costs the decoder.

Decodes the same lines with today's ``collectors.protocol.decode_line`` and, in the
same run, with two named baselines read from git and loaded as their own modules:
the decoder before validation (``collectors/protocol.py`` at commit 09179f1) and the
validating decoder that scanned each line twice (commit e80ac40, "two-scan"), and the
one-scan fast path before its per-field typing was inlined (f7b051d, "one-scan"). Lines: a
canned 1 Hz sample of 8 GPUs and 8 IB ports (the hot path, ~840 B), a slow sample
with NVLink and hw counters, the same with one counter at 2^64 - 1 (a twenty-digit
number: every integer is then range-checked in Python), and a hello whose GPU names
carry escape sequences (the path that walks and cleans every string).

    PYTHONPATH=. .venv/bin/python bench/bench_decode.py --repeat 20000
    PYTHONPATH=. .venv/bin/python bench/bench_decode.py --fine   # ours vs one-scan only
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path

from collectors.protocol import decode_line
from testkit.loopback.canned import SampleMaker, hello_line

BASELINE_COMMIT = "09179f1"  # no validation: msgspec's decode alone
TWO_SCAN_COMMIT = "e80ac40"  # validation with two scans of the line, before the fast path
ONE_SCAN_COMMIT = "f7b051d"  # the one-scan fast path, before _typed was inlined
ROOT = Path(__file__).resolve().parents[1]


def baseline_decoder(commit: str) -> Callable[[bytes], object]:
    source = subprocess.run(
        ["git", "show", f"{commit}:collectors/protocol.py"],
        cwd=ROOT, capture_output=True, check=True, text=True,
    ).stdout  # fmt: skip
    module = types.ModuleType(f"protocol_at_{commit}")
    sys.modules[module.__name__] = module  # msgspec resolves annotations through it
    exec(compile(source, "protocol_before_validation.py", "exec"), module.__dict__)
    decode: Callable[[bytes], object] = module.decode_line
    return decode


def lines() -> dict[str, bytes]:
    maker = SampleMaker(8)
    fast = maker.line(time.time()).rstrip(b"\n")
    slow = json.loads(fast)
    slow["slow"] = [[0] * 20 for _ in range(8)]
    slow["links"] = [[[1, 0, 0, 0, 0]] * 18 for _ in range(8)]
    slow["hw"] = [{"out_of_buffer": 12, "np_cnp_sent": 73_400_112_998}] * 8
    top = json.loads(json.dumps(slow))
    top["hw"][0]["np_cnp_sent"] = (1 << 64) - 1  # a uint64 at its top: the values are walked
    hello = json.loads(hello_line("node-001", 8, time.time()))
    for gpu in hello["gpus"]:
        gpu["name"] = "\x1b]52;c;aGk=\x07NVIDIA H100 \u202e80GB"
    return {
        "fast sample": fast,
        "slow sample": json.dumps(slow).encode(),
        "uint64 at top": json.dumps(top).encode(),
        "hostile hello": json.dumps(hello).encode(),
    }


def per_call_us(decode: Callable[[bytes], object], line: bytes, repeat: int) -> float:
    # CPU time of this process, best of 5: the machine is shared, wall time is not ours.
    best = float("inf")
    for _ in range(5):
        start = time.process_time()
        for _ in range(repeat):
            decode(line)
        best = min(best, time.process_time() - start)
    return best / repeat * 1e6


def fine_comparison(rounds: int = 60, calls: int = 2000) -> None:
    """Ours vs one-scan on the fast sample: short runs, alternated, best of each.

    On a loaded shared machine the differences left are a few percent; alternating
    short runs gives both sides the same quiet moments.
    """
    one_scan = baseline_decoder(ONE_SCAN_COMMIT)
    line = lines()["fast sample"]
    best = {"ours": float("inf"), "one-scan": float("inf")}
    for _ in range(rounds):
        for side, decode in (("ours", decode_line), ("one-scan", one_scan)):
            start = time.process_time()
            for _ in range(calls):
                decode(line)
            best[side] = min(best[side], (time.process_time() - start) / calls * 1e6)
    print(f"# fast sample, best of {rounds} alternated runs of {calls} decodes")
    print(f"ours {best['ours']:.2f} µs, one-scan ({ONE_SCAN_COMMIT}) {best['one-scan']:.2f} µs, "
          f"ratio {best['ours'] / best['one-scan']:.3f}x")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20000)
    parser.add_argument(
        "--fine",
        action="store_true",
        help="only ours vs one-scan on the fast sample, 60 interleaved rounds of 2,000",
    )
    args = parser.parse_args()
    if args.fine:
        fine_comparison()
        return
    before = baseline_decoder(BASELINE_COMMIT)
    two_scan = baseline_decoder(TWO_SCAN_COMMIT)
    one_scan = baseline_decoder(ONE_SCAN_COMMIT)
    print(f"# python {sys.version.split()[0]}, CPU time, best of 15 x {args.repeat} decodes")
    print(f"# before = no validation ({BASELINE_COMMIT}); 2-scan = {TWO_SCAN_COMMIT}; "
          f"1-scan = {ONE_SCAN_COMMIT}")  # fmt: skip
    print("line            bytes   ours µs   1-scan µs   2-scan µs   before µs   ours/1s   ours/2s"
          "   ours/before")  # fmt: skip
    for name, line in lines().items():
        ours = w4 = w3 = theirs = float("inf")
        for _ in range(3):  # interleaved, so all four see the same machine
            ours = min(ours, per_call_us(decode_line, line, args.repeat))
            w4 = min(w4, per_call_us(one_scan, line, args.repeat))
            w3 = min(w3, per_call_us(two_scan, line, args.repeat))
            theirs = min(theirs, per_call_us(before, line, args.repeat))
        print(
            f"{name:14s} {len(line):6d}   {ours:7.2f}   {w4:9.2f}   {w3:9.2f}   {theirs:9.2f}"
            f"   {ours / w4:6.2f}x   {ours / w3:6.2f}x   {ours / theirs:10.2f}x"
        )


if __name__ == "__main__":
    main()
