"""Events as ``events`` rows, grouped by the hour file they belong in."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import polars as pl

from fleet.history.layout import EVENTS, SCHEMAS
from fleet.model import EventRecord

HOUR_MS = 3_600_000


def to_frame(events: Sequence[EventRecord]) -> pl.DataFrame:
    """``events`` as rows of the ``events`` table."""
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


def by_hour(events: Sequence[EventRecord]) -> list[tuple[int, pl.DataFrame]]:
    """(hour start in ms, rows) for each hour the events fall in."""
    hours: dict[int, list[EventRecord]] = defaultdict(list)
    for event in events:
        t_ms = round(event.t * 1000)
        hours[t_ms - t_ms % HOUR_MS].append(event)
    return [(hour, to_frame(rows)) for hour, rows in sorted(hours.items())]
