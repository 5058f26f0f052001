"""``agent_hang``: every NVML call blocks while it holds, as with a hung driver."""

from __future__ import annotations

import threading

import pynvml
import pytest

from collectors import sim
from collectors.sim import ManualClock

HANG = '[[fault]]\nkind = "agent_hang"\nnode = "node-001"\nat = "2s"\nuntil = "5s"\n'
# How long a held call is given to return before the test calls it blocked: a held call
# never returns by itself, so this only bounds the test's run time.
BLOCKED_S = 0.3


def test_agent_hang_is_a_node_kind_without_parameters() -> None:
    scenario = sim.parse_scenario(HANG, source="test.toml")
    (fault,) = scenario.faults_for("node-001")
    assert (fault.kind, fault.at, fault.until, dict(fault.params)) == ("agent_hang", 2, 5, {})
    with pytest.raises(sim.ScenarioError, match="unknown parameter"):
        sim.parse_scenario(HANG + "exit_code = 3\n", source="test.toml")


def test_calls_block_while_the_hang_holds_and_resume_after(
    install_node, clock: ManualClock
) -> None:
    install_node("node-001", HANG, clock=clock)
    pynvml.nvmlInit()
    assert pynvml.nvmlDeviceGetCount() == 8  # before the hang: answers at once
    clock.set(2)
    answers: list[int] = []
    call = threading.Thread(target=lambda: answers.append(pynvml.nvmlDeviceGetCount()))
    call.start()
    call.join(BLOCKED_S)
    assert call.is_alive() and answers == []  # held: the agent writes nothing
    clock.set(5)  # the fault's end: the held call goes on
    call.join(10)
    assert not call.is_alive() and answers == [8]


def test_a_recover_ends_the_hang(install_node, clock: ManualClock) -> None:
    recover = '[[fault]]\nkind = "recover"\nnode = "node-001"\nat = "3s"\n'
    node = install_node("node-001", HANG.replace('until = "5s"\n', "") + recover, clock=clock)
    faults = node.model.faults
    assert [faults.hung(t) for t in (1.9, 2, 2.9, 3, 100)] == [False, True, True, False, False]


def test_closing_the_node_frees_a_held_call(install_node, clock: ManualClock) -> None:
    node = install_node("node-001", HANG, clock=clock)
    pynvml.nvmlInit()
    clock.set(3)
    errors: list[BaseException] = []

    def count() -> None:
        try:
            pynvml.nvmlDeviceGetCount()
        except pynvml.NVMLError as exc:
            errors.append(exc)

    call = threading.Thread(target=count)
    call.start()
    call.join(BLOCKED_S)
    assert call.is_alive()
    node.close()
    call.join(10)
    assert not call.is_alive()
