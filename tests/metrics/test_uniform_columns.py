"""A column whose entities all hold one value is written once and joined around the
label heads: the same text as value by value, for every kind of equal values."""

from __future__ import annotations

from typing import Any

import pytest

from exporter.catalog import GPU, families
from exporter.columns import ColumnGroup
from exporter.patterns import ChunkLabels, Templates

KEYS = [("node-1", i, f"GPU-{i}", 'H100 "80GB" \\ %s') for i in range(5)]
SLOTS = {family: i for i, family in enumerate(families(False))}


def _group(flag: bool) -> tuple[ColumnGroup, int]:
    columns = GPU.columns(slow=False) + GPU.columns(slow=True)
    group = ColumnGroup(columns, SLOTS, GPU.base_labels)
    at = next(i for i, c in enumerate(columns) if bool(c.flag) == flag and c.scale is None)
    return group, at


@pytest.mark.parametrize(
    "values",
    [
        (0, 0, 0, 0, 0),
        (700.0,) * 5,
        (0.0,) * 5,
        (-0.0,) * 5,
        (0.0, -0.0, 0.0, 0.0, 0.0),  # equal, not written alike
        (0, 0.0, 0, 0, 0),  # equal, not written alike
        (2**63 + 1,) * 5,  # beyond float64's integers
        (None, 3, 3, None, 3),  # missing values left out
        (None, None, 0.0, -0.0, 0.0),
        (1e300,) * 5,
    ],
)
def test_a_uniform_column_is_written_as_value_by_value(values: tuple[Any, ...]) -> None:
    group, at = _group(flag=False)
    labels = ChunkLabels(KEYS, GPU.base_labels)
    text = group.column_text(at, values, labels, Templates())
    assert text == group._render_one_by_one(at, values, labels)
    assert text.count("\n") == sum(v is not None for v in values)


@pytest.mark.parametrize("values", [(True,) * 5, (1, True, 1, 1, True), (0, False, None, 0, 0)])
def test_a_uniform_flag_column_writes_ones_and_zeros(values: tuple[Any, ...]) -> None:
    group, at = _group(flag=True)
    labels = ChunkLabels(KEYS, GPU.base_labels)
    text = group.column_text(at, values, labels, Templates())
    assert text == group._render_one_by_one(at, values, labels)
