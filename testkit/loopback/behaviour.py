"""How a loopback node misbehaves: the test doubles of the SSH transport's tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

BehaviourKind = Literal[
    "normal",
    "slow",  # the agent takes `delay` seconds before its hello
    "hang",  # accepts TCP and never says a word (no SSH banner)
    "drop",  # streams `after_lines` lines, then the TCP connection is cut
    "garbage",  # streams `after_lines` lines, then a line that is not protocol
    "long-line",  # streams `after_lines` lines, then an endless line without newline
    "exit",  # streams `after_lines` lines, then the agent exits with status 3
    "silent",  # the agent starts and never writes a line (goes stale)
    "auth-fail",  # refuses every client key
    "wrong-host-key",  # presents a host key other than the one in known_hosts
]


@dataclass(frozen=True, slots=True)
class NodeBehaviour:
    """One node's behaviour; ``normal`` unless a test asks otherwise."""

    kind: BehaviourKind = "normal"
    delay: float = 0.0
    after_lines: int = 3

    @property
    def streams_canned_faults(self) -> bool:
        """Whether the fault is in the agent's output (canned mode only)."""
        return self.kind in ("slow", "drop", "garbage", "long-line", "exit", "silent")


NORMAL = NodeBehaviour()
