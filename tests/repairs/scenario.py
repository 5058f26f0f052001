"""A two-day history of four nodes with one of each kind of repair, written to disk in
the documented layout. Times are whole hours after T0 so every figure is hand-checkable.

- gpu-a: XID 79 on GPU 3 at 10 h; acknowledged at 10.5 h (ticket T-1); the controller
  restarts mid-outage (unmonitored 12.0-12.1 h); GPU 3 swapped at 13.9 h; up at 14 h.
- gpu-b: XID 79 on GPU 0 at 5 h, cleared by a reboot seen at 5.5 h, up at 6 h;
  later the board U40 (moved here from gpu-d) fails with XID 48 at 30 h, up at 31 h.
- gpu-c: unreachable from 20 h, replaced (new host key and serials) at 29.5 h, up at 30 h.
- gpu-d: board U40 (GPU 1) fails with XID 48 at 2 h, swapped out at 2.9 h, up at 3 h.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from fleet.model import EventRecord
from history.states import StateInterval
from testkit.synthetic_history import write_events, write_state_intervals

T0 = datetime(2026, 11, 2, tzinfo=UTC)
T0_MS = round(T0.timestamp() * 1000)
END_H = 48.0
H_MS = 3_600_000


def ms(hours: float) -> int:
    """T0 plus ``hours``, in ms."""
    return T0_MS + round(hours * H_MS)


def _t(hours: float) -> float:
    return ms(hours) / 1000


def _iv(node: str, state: str, a: float, b: float | None, *reasons: str) -> StateInterval:
    return StateInterval(node, state, ms(a), None if b is None else ms(b), reasons)  # type: ignore[arg-type]


INTERVALS = [
    _iv("gpu-a", "up", 0, 10),
    _iv("gpu-a", "broken", 10, 12, "GPU 3 lost"),
    _iv("gpu-a", "unmonitored", 12, 12.1),
    _iv("gpu-a", "broken", 12.1, 14, "GPU 3 lost"),
    _iv("gpu-a", "up", 14, END_H),
    _iv("gpu-b", "up", 0, 5),
    _iv("gpu-b", "broken", 5, 6, "GPU 0 lost"),
    _iv("gpu-b", "up", 6, 30),
    _iv("gpu-b", "broken", 30, 31, "GPU 5 fail: XID 48"),
    _iv("gpu-b", "up", 31, END_H),
    _iv("gpu-c", "up", 0, 20),
    _iv("gpu-c", "unreachable", 20, 30, "connection refused"),
    _iv("gpu-c", "up", 30, END_H),
    _iv("gpu-d", "up", 0, 2),
    _iv("gpu-d", "broken", 2, 3, "GPU 1 fail: XID 48"),
    _iv("gpu-d", "up", 3, END_H),
]

EVENTS = [
    EventRecord(_t(10), "gpu-a", "xid", 3, "U-a3", 79, "fallen off the bus"),
    EventRecord(_t(13.9), "gpu-a", "gpu_swap", 3, "U-new", None, "GPU 3: serial S-a3 -> S-new"),
    EventRecord(_t(5), "gpu-b", "xid", 0, "U-b0", 79, "fallen off the bus"),
    EventRecord(_t(5.5), "gpu-b", "reboot", None, None, None, "boot id b1 -> b2"),
    EventRecord(_t(30), "gpu-b", "xid", 5, "U40", 48, "double-bit ECC"),
    EventRecord(_t(29.5), "gpu-c", "node_replaced", None, None, None, "host key, machine id"),
    EventRecord(_t(2), "gpu-d", "xid", 1, "U40", 48, "double-bit ECC"),
    EventRecord(_t(2.9), "gpu-d", "gpu_swap", 1, "U41", None, "GPU 1: serial S40 -> S41"),
]

ACKS = [
    {"node": "gpu-a", "gpu": 3, "note": "GPU 3 gone", "at": _t(10.5), "ticket": "T-1"},
    {"node": "gpu-c", "gpu": None, "note": "down", "at": _t(21)},  # no ticket field
]


def write(data_dir: Path) -> None:
    """The scenario's history in ``data_dir``."""
    write_state_intervals(data_dir, INTERVALS)
    write_events(data_dir, EVENTS)
    (data_dir / "acknowledged.json").write_text(json.dumps(ACKS), encoding="utf-8")
