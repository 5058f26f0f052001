"""Properties over random scenarios: counters only grow, clamp at their widths, and a
fault's state effects hold exactly inside its window."""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from collectors.agent.fields import PORT_COUNTER_BITS
from collectors.sim import parse_scenario
from collectors.sim.effects import NodeFaults
from collectors.sim.sysfs import render_tree

GPU_KINDS = ["ecc_dbe", "row_remap_pending", "nvlink_crc_storm", "nvlink_down", "xid79"]
PORT_KINDS = ["ib_link_down", "ib_symbol_errors"]


@st.composite
def scenarios(draw: st.DrawFn) -> str:
    tables = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(GPU_KINDS + PORT_KINDS + ["recover"]))
        at = draw(st.integers(0, 500))
        lines = [f'kind = "{kind}"', 'node = "node-001"', f"at = {at}"]
        if kind in GPU_KINDS:
            lines.append(f"gpu = {draw(st.integers(0, 2))}")  # few targets: overlaps
        elif kind in PORT_KINDS:
            lines.append(f"port = {draw(st.integers(0, 2))}")
        if kind == "ib_link_down" and draw(st.booleans()):
            lines += ["flap = true", f"down_s = {draw(st.integers(1, 30))}"]
        if kind == "ib_symbol_errors":
            lines.append(f"rate = {draw(st.integers(1, 5000))}")
        if draw(st.booleans()) and kind != "recover":
            lines.append(f"until = {at + draw(st.integers(1, 400))}")
        tables.append("[[fault]]\n" + "\n".join(lines))
    return "\n".join(tables)


MONOTONIC_GPU = ("ecc_unc_agg", "remap_corr", "remap_unc")
MONOTONIC_LINKS = ("replay", "recovery", "crc_flit", "crc_data")


@settings(max_examples=int(os.environ.get("SIM_EXAMPLES", "40")), deadline=None)
@given(scenarios(), st.lists(st.floats(0, 2000), min_size=2, max_size=6))
def test_cumulative_counters_never_decrease_and_stay_in_width(
    text: str, times: list[float]
) -> None:
    faults = NodeFaults(parse_scenario(text), "node-001", 8)
    previous_gpu: dict[int, tuple[int, ...]] = {}
    previous_port: dict[str, int] = {}
    for t in sorted(times):
        for gpu in range(8):
            state = faults.gpu_state(gpu, t)
            counts = tuple(getattr(state, name) for name in MONOTONIC_GPU)
            counts += tuple(sum(getattr(state, name)) for name in MONOTONIC_LINKS)
            old = previous_gpu.get(gpu, (0,) * len(counts))
            assert all(new >= before for new, before in zip(counts, old, strict=True))
            previous_gpu[gpu] = counts
        for path, text_value in render_tree(3, faults, t).items():
            if "/counters/" not in path:
                continue
            name, value = path.rsplit("/", 1)[1], int(text_value)
            assert 0 <= value < 2 ** PORT_COUNTER_BITS.get(name, 64)
            assert value >= previous_port.get(path, 0)
            previous_port[path] = value


@settings(max_examples=int(os.environ.get("SIM_EXAMPLES", "40")), deadline=None)
@given(st.integers(0, 1000), st.integers(1, 1000), st.floats(0, 3000))
def test_a_lost_gpu_is_lost_exactly_inside_its_window(at: int, length: int, t: float) -> None:
    text = (
        f'[[fault]]\nkind = "xid79"\nnode = "node-001"\ngpu = 2\nat = {at}\nuntil = {at + length}'
    )
    faults = NodeFaults(parse_scenario(text), "node-001", 8)
    assert faults.gpu_state(2, t).lost == (at <= t < at + length)
    assert not faults.gpu_state(1, t).lost
