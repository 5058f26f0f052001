"""Events as ``events`` rows, grouped by the hour file they belong in.

Events come from nodes, and a node is hostile: the decoder bounds every value, but
this is the one sink that serves the whole fleet's events, so it never trusts that
alone. A record that cannot become a row (a GPU index outside UInt16, a code outside
Int64, a time outside the datetime range) is dropped with one log line per distinct
problem; every other record of the flush is still written.
"""

from __future__ import annotations

import logging
import math
from collections import OrderedDict, defaultdict
from collections.abc import Sequence

import polars as pl

from fleet.model import EventRecord
from history.layout import EVENTS, SCHEMAS

log = logging.getLogger(__name__)

HOUR_MS = 3_600_000
# 0001-01-01 .. 9999-12-31 in ms: what a Datetime("ms") column and Python's datetime hold.
_MIN_MS = -62_135_596_800_000
_MAX_MS = 253_402_300_799_999
_GPU_MAX = 65_535
_CODE_MAX = (1 << 63) - 1
# The (node, problem) pairs logged most recently: a node repeating its problem logs
# once, while the memory of it stays bounded however many nodes misbehave.
_LOGGED_KEPT = 256

_logged: OrderedDict[str, None] = OrderedDict()


def to_frame(events: Sequence[EventRecord]) -> pl.DataFrame:
    """``events`` as rows of the ``events`` table; records that cannot be rows are dropped."""
    good = [event for event in events if _fits(event)]
    try:
        return _frame(good)
    except (TypeError, ValueError, OverflowError, pl.exceptions.PolarsError):
        # Something _fits did not foresee: build row by row so only the culprit is lost.
        frames = []
        for event in good:
            try:
                frames.append(_frame([event]))
            except (TypeError, ValueError, OverflowError, pl.exceptions.PolarsError) as exc:
                _drop(event, f"{type(exc).__name__}: {exc}")
        return pl.concat(frames) if frames else _frame([])


def by_hour(events: Sequence[EventRecord]) -> list[tuple[int, pl.DataFrame]]:
    """(hour start in ms, rows) for each hour the events fall in."""
    hours: dict[int, list[EventRecord]] = defaultdict(list)
    for event in events:
        t_ms = _ms(event.t)
        if t_ms is None:
            _drop(event, "time outside the datetime range")
            continue
        hours[t_ms - t_ms % HOUR_MS].append(event)
    result = []
    for hour, rows in sorted(hours.items()):
        frame = to_frame(rows)
        if not frame.is_empty():
            result.append((hour, frame))
    return result


def _frame(events: Sequence[EventRecord]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "ts": [round(e.t * 1000) for e in events],
            "node": [e.node for e in events],
            "gpu": [e.gpu for e in events],
            "uuid": [e.uuid for e in events],
            "kind": [e.kind for e in events],
            "code": [e.code for e in events],
            "detail": [e.detail for e in events],
        },
        schema={**SCHEMAS[EVENTS], "ts": pl.Int64()},
    ).cast(SCHEMAS[EVENTS])  # type: ignore[arg-type]


def _ms(t: object) -> int | None:
    if not isinstance(t, int | float) or not math.isfinite(t):
        return None
    ms = round(t * 1000)
    return ms if _MIN_MS <= ms <= _MAX_MS else None


def _fits(event: EventRecord) -> bool:
    problem = None
    if _ms(event.t) is None:
        problem = "time outside the datetime range"
    elif event.gpu is not None and not (isinstance(event.gpu, int) and 0 <= event.gpu <= _GPU_MAX):
        problem = "gpu index outside 0..65535"
    elif event.code is not None and not (
        isinstance(event.code, int) and -_CODE_MAX - 1 <= event.code <= _CODE_MAX
    ):
        problem = "code outside the 64-bit range"
    elif not all(isinstance(s, str | None) for s in (event.node, event.kind, event.uuid)):
        problem = "a text field is not text"
    elif not isinstance(event.detail, str):
        problem = "detail is not text"
    if problem is not None:
        _drop(event, problem)
    return problem is None


def _drop(event: EventRecord, problem: str) -> None:
    key = f"{event.node}\0{problem}"
    if key in _logged:
        _logged.move_to_end(key)
        return
    _logged[key] = None
    if len(_logged) > _LOGGED_KEPT:
        _logged.popitem(last=False)
    log.warning("event of node %s not recorded: %s", event.node, problem[:200])
