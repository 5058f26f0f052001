"""GPUs' steady readings read column by column are what ``SteadyGpu.values`` works out,
value and type, for every attribute, on the state's own ticks with odd slow rows."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from bench.lib.fleet_states import state_ticks
from collectors.agent.fields import GPU_SLOW_FIELDS
from fleet.model import GpuSnapshot
from fleet.state.build import QuietSteady
from fleet.state.rows import StateRows
from history.steady_columns import STEADY_ATTRIBUTES, SteadyColumns

AT = {f.name: i for i, f in enumerate(dataclasses.fields(GpuSnapshot))}
DROPPED = ("energy_mj", "power_limit_w", "retired_pending")


def _odd_hello(line: bytes, node: int, tick: int) -> bytes:
    hello = json.loads(line)
    if node == 2:  # an agent that does not send some slow fields
        hello["gpu_slow_fields"] = [f for f in hello["gpu_slow_fields"] if f not in DROPPED]
    if node == 5:
        hello["gpus"][0]["power_limit_w"] = None
    return json.dumps(hello).encode() + b"\n"


def _odd_slow(line: bytes, node: int, tick: int) -> bytes:
    sample = json.loads(line)
    slow = sample.get("slow")
    if not slow:
        return line
    fields = list(GPU_SLOW_FIELDS)
    if node == 1:
        row = slow[0]
        row[fields.index("ecc_corr_vol")] = None  # a failed reading
        row[fields.index("ecc_unc_agg")] = 3.0  # an int sent as a float
        row[fields.index("retired_pending")] = 2  # a flag that is not 0/1
        row[fields.index("energy_mj")] = 2**63 + 1  # beyond float64's integers
        row[fields.index("power_limit_w")] = None  # falls back to the hello's limit
        row[fields.index("power_mgmt_limit_w")] = 650  # an int where a float is meant
        slow[1][fields.index("power_limit_w")] = 650.5
    if node == 2:
        sent = [f for f in fields if f not in DROPPED]
        sample["slow"] = [[r[fields.index(f)] for f in sent] for r in slow]
    if node == 3:
        slow[4] = None  # a GPU without a slow reading this slow tick
        sample["links"][1] = [[1, 0, tick, tick, 7 * tick]] * 18  # NVLink counts moving
    if node in (5, 6):  # no health fact moves: the second slow tick is a quiet one
        for row in slow:
            row[fields.index("pcie_replay")] = 0
    if node == 4:
        sample["slow"] = [r[:20] for r in slow]  # short rows: the rest reads as missing
    return json.dumps(sample).encode() + b"\n"


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and (a == b or (a != a and b != b))


def test_every_steady_attribute_reads_as_steady_gpu_values() -> None:
    kinds = set()
    for snapshot in state_ticks(8, 22, _odd_slow, edit_hello=_odd_hello):
        for node in snapshot.nodes:
            rows = node.rows
            assert isinstance(rows, StateRows)
            parts = rows.steady_parts
            kinds.add(type(parts))
            columns = SteadyColumns()
            columns.add(parts, len(parts))
            expected = [gpu.values() for gpu in rows.steady]
            for attr in sorted(STEADY_ATTRIBUTES):
                got = columns.column(attr)
                want = [values[AT[attr]] for values in expected]
                assert len(got) == len(want)
                assert all(map(_same, got, want)), (node.name, attr, got, want)
    assert kinds == {QuietSteady, tuple}  # both shapes of a node's steady parts were read


def test_columns_of_several_nodes_follow_each_ones_layout() -> None:
    snapshot = state_ticks(8, 11, _odd_slow, edit_hello=_odd_hello)[-1]
    columns = SteadyColumns()
    expected: list[list[object]] = []
    for node in snapshot.nodes:
        assert isinstance(node.rows, StateRows)
        columns.add(node.rows.steady_parts, 5)  # the first five GPUs of each node
        expected.extend(gpu.values() for gpu in node.rows.steady[:5])
    for attr in ("energy_mj", "power_limit_w", "retired_pending", "nvlink_replay_delta"):
        assert columns.column(attr) == [values[AT[attr]] for values in expected]
    assert None in columns.column("energy_mj")  # node 2 does not send it


def test_every_gpu_field_is_fast_brief_or_steady() -> None:
    """A field the steady columns do not know would send a scrape to build objects."""
    from exporter.tick_rows import _FAST, _FROM_BRIEF

    fields = set(AT) - {"field_errors"}
    assert fields - set(_FAST) - _FROM_BRIEF == STEADY_ATTRIBUTES
