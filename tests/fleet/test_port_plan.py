"""A port plan's compact matrix: the fields the columns read, as the full matrix has them."""

from __future__ import annotations

import numpy as np
import pytest

from collectors.agent.fields import NIC_FIELDS, PORT_FIELDS
from collectors.protocol import Value
from fleet.settings.health_section import HealthSection
from fleet.state.layout import FieldIndex
from fleet.state.port_batch import matrix_of
from fleet.state.port_columns import PortColumns


def _ib_row(seed: int) -> list[Value]:
    return [4, 5, 400.0, *range(seed, seed + len(PORT_FIELDS) - 3)]


CASES = {
    "clean": [_ib_row(1), _ib_row(7)],
    "missing values": [[None if i % 3 else v for i, v in enumerate(_ib_row(2))], _ib_row(3)],
    "a short row": [_ib_row(1)[:5], _ib_row(2)],
    "rows short alike": [_ib_row(1)[:9], _ib_row(2)[:9]],
    "a long row": [[*_ib_row(1), 99, 98], _ib_row(2)],
    "beyond float range": [[*_ib_row(1)[:3], 10**400, *_ib_row(1)[4:]], _ib_row(2)],
}


@pytest.mark.parametrize("rows", CASES.values(), ids=CASES.keys())
def test_the_compact_matrix_is_the_full_matrix_at_the_picked_fields(
    rows: list[list[Value]],
) -> None:
    plan = PortColumns(HealthSection()).plan(FieldIndex.of(PORT_FIELDS), is_nic=False)
    full = matrix_of(rows, len(PORT_FIELDS))
    compact = plan.matrix(rows)
    np.testing.assert_array_equal(compact, full[:, plan.picked])
    # Each tracked counter and link reading is read from its own field of the row.
    for name, col in zip(("state", "phys_state", "rate_gbps"), plan.links, strict=True):
        np.testing.assert_array_equal(compact[:, col], full[:, PORT_FIELDS.index(name)])


def test_a_plan_points_each_counter_column_at_its_field() -> None:
    columns = PortColumns(HealthSection())
    for names, is_nic in ((PORT_FIELDS, False), (NIC_FIELDS, True), (PORT_FIELDS[::-1], False)):
        plan = columns.plan(FieldIndex.of(names), is_nic)
        for dst, src in zip(plan.dst.tolist(), plan.src.tolist(), strict=True):
            assert names[plan.picked[src]] == columns.names[dst]
        assert [columns.names[c] for c in np.arange(len(columns.names))[plan.cols]] == [
            columns.names[c] for c in plan.dst.tolist()
        ]
