"""What a contract term's judge hands the interval builder (:mod:`ledger.delivery.conformance`)."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

MINUTE_MS = 60_000

Measure = float | str  # a count, rate or size; a driver version or GPU model as text


@dataclass(frozen=True, slots=True)
class Breach:
    """The minutes in which one term is broken: rows of ``node``, ``gpu`` (null for a
    node or port), ``port`` (null but for a port), ``t`` (the minute's start, ms), ``m``
    (the measured value) and ``share`` (the GPUs it takes from the renter, as the text
    of a fraction, e.g. ``8/3``)."""

    kind: str
    contracted: Measure
    rows: pl.DataFrame


def breach(
    kind: str,
    contracted: Measure,
    rows: pl.DataFrame,
    gpus: pl.Expr | int = 1,
    per: pl.Expr | int = 1,
) -> Breach:
    """``rows`` (with ``node``, ``t`` and ``m``; ``gpu`` and ``port`` where they have them)
    in the shape :class:`Breach` documents; each takes ``gpus`` / ``per`` GPUs."""
    for name, dtype in (("gpu", pl.Int64), ("port", pl.String)):
        if name not in rows.columns:
            rows = rows.with_columns(pl.lit(None, dtype).alias(name))
    share = pl.format("{}/{}", _whole(gpus), _whole(per))
    rows = rows.with_columns(share=share, gpu=pl.col("gpu").cast(pl.Int64))
    return Breach(kind, contracted, rows.select("node", "gpu", "port", "t", "m", "share"))


def _whole(value: pl.Expr | int) -> pl.Expr:
    return (value if isinstance(value, pl.Expr) else pl.lit(value)).cast(pl.Int64)
