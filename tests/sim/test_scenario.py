"""Scenario files: parsing, defaults, errors that name the fault, the shipped demo."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from collectors import sim
from collectors.sim import KINDS, ScenarioError, load_scenario, parse_scenario


def _one(body: str) -> sim.Fault:
    return parse_scenario(f"[[fault]]\n{body}", source="s.toml").faults[0]


def test_times_accept_seconds_and_durations() -> None:
    assert _one('kind = "sdc"\nnode = "node-002"\ngpu = 1\nat = 90').at == 90
    fault = _one('kind = "sdc"\nnode = "node-002"\nat = "1m30s"\nuntil = "1h"')
    assert (fault.at, fault.until) == (90, 3600)
    assert _one('kind = "sdc"\nnode = "node-002"\nat = "250ms"').at == 0.25


def test_defaults_fill_kind_parameters() -> None:
    fault = _one('kind = "ecc_dbe"\nnode = "node-001"\ngpu = 0\nat = "5s"')
    assert dict(fault.params) == {"xid": 48, "count": 1, "recovery_action": 1}
    link = _one('kind = "ib_link_down"\nnode = "node-001"')
    assert link.port == 0 and link.params["flap"] is False
    assert dict(_one('kind = "recover"\nnode = "node-001"').params) == {"new_uuid": False}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            'kind = "xid80"\nnode = "node-001"',
            "s.toml: fault #2: unknown kind 'xid80'; expected one of",
        ),
        ('kind = "sdc"\nnode = "gpu-001"', "s.toml: fault #2: node 'gpu-001' is not a node name"),
        ('kind = "sdc"\nnode = "node-001"\ngpu = -1', "s.toml: fault #2: gpu must be an index"),
        (
            'kind = "sdc"\nnode = "node-001"\nat = "soon"',
            "s.toml: fault #2: at 'soon' is not a time",
        ),
        ('kind = "sdc"\nnode = "node-001"\nat = 50\nuntil = 40', "s.toml: fault #2: until (40s)"),
        ('kind = "ecc_dbe"\nnode = "node-001"\nxid = 13', "s.toml: fault #2: xid must be one of"),
        (
            'kind = "sdc"\nnode = "node-001"\nfactor = 2',
            "unknown parameter 'factor' for kind 'sdc'",
        ),
        ('kind = "ib_link_down"\nnode = "node-001"\nport = 8', "fault #2: port 8 beyond the 8"),
        ('kind = "recover"\nnode = "node-001"\nkinds = ["xid81"]', "kinds names unknown kind"),
        ('kind = "ib_degraded_rate"\nnode = "node-001"\nrate = "slow"', "rate must read like"),
    ],
)
def test_errors_name_file_position_and_problem(body: str, message: str) -> None:
    text = f'[[fault]]\nkind = "sdc"\nnode = "node-001"\n\n[[fault]]\n{body}\n'
    with pytest.raises(ScenarioError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_scenario(text, source="s.toml")


def test_bad_toml_and_missing_file_are_scenario_errors(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="not valid TOML"):
        parse_scenario("[[fault]\nkind=", source="x.toml")
    with pytest.raises(ScenarioError, match="cannot read scenario"):
        load_scenario(tmp_path / "absent.toml")
    with pytest.raises(ScenarioError, match="unknown top-level key 'faults'"):
        parse_scenario("[[faults]]\nkind='sdc'", source="x.toml")


def test_node_count_and_gpu_count_are_validated(install_node) -> None:
    text = 'nodes = 4\n[[fault]]\nkind = "sdc"\nnode = "node-005"\n'
    with pytest.raises(ScenarioError, match="fault #1: node 'node-005' beyond the 4 nodes"):
        parse_scenario(text, source="s.toml")
    scenario = parse_scenario('[[fault]]\nkind = "sdc"\nnode = "node-001"\ngpu = 6\n')
    with pytest.raises(ScenarioError, match="gpu 6 beyond the 4 GPUs"):
        install_node(scenario=scenario, gpus=4)
    with pytest.raises(ScenarioError, match="node 'node-001' beyond the 0"):
        scenario.validate(nodes=0)


def test_load_scenario_none_is_empty_and_file_path_is_the_source(tmp_path: Path) -> None:
    assert load_scenario(None).faults == ()
    path = tmp_path / "scenario.toml"
    path.write_text('[[fault]]\nkind = "sdc"\nnode = "node-001"\n[[fault]]\nkind = "x"\n')
    with pytest.raises(ScenarioError, match=rf"^{path}: fault #2: unknown kind 'x'"):
        load_scenario(path)


def test_every_kind_parses_with_its_defaults() -> None:
    for kind in sorted(KINDS):
        fault = _one(f'kind = "{kind}"\nnode = "node-001"')
        assert fault.kind == kind


def test_unreachable_window_and_recover() -> None:
    scenario = parse_scenario(
        '[[fault]]\nkind = "node_unreachable"\nnode = "node-002"\nat = 10\n'
        '[[fault]]\nkind = "recover"\nnode = "node-002"\nat = 40\n'
    )
    assert not scenario.unreachable("node-002", 9.9)
    assert scenario.unreachable("node-002", 10)
    assert scenario.unreachable("node-002", 39)
    assert not scenario.unreachable("node-002", 40)
    assert not scenario.unreachable("node-001", 20)


def test_probe_fault_env_lists_slow_and_sdc_gpus_while_they_hold() -> None:
    scenario = parse_scenario(
        '[[fault]]\nkind = "slow_gpu"\nnode = "node-001"\ngpu = 3\nfactor = 3.0\nuntil = 100\n'
        '[[fault]]\nkind = "sdc"\nnode = "node-001"\ngpu = 5\nat = 50\n'
        '[[fault]]\nkind = "sdc"\nnode = "node-002"\ngpu = 1\n'
    )
    assert sim.probe_fault_env(scenario, "node-001", 10) == {
        "gpus": 8,
        "slow": {"3": 3.0},
        "sdc": [],
    }
    assert sim.probe_fault_env(scenario, "node-001", 60) == {
        "gpus": 8,
        "slow": {"3": 3.0},
        "sdc": [5],
    }
    assert sim.probe_fault_env(scenario, "node-001", 100, gpus=4) == {
        "gpus": 4,
        "slow": {},
        "sdc": [5],
    }
    assert sim.probe_fault_env(None, "node-001", 0) == {"gpus": 8, "slow": {}, "sdc": []}
    assert sim.probe_fault_env_json(scenario, "node-002", 0) == '{"gpus":8,"slow":{},"sdc":[1]}'


def test_demo_scenario_shows_the_headline_faults_in_the_first_minute() -> None:
    scenario = load_scenario(sim.default_scenario_path())
    first_minute = {f.kind for f in scenario.faults if f.at < 60}
    assert {"xid79", "ecc_dbe", "ib_link_down", "thermal_slowdown", "slow_gpu"} <= first_minute
    assert any(f.kind == "sdc" for f in scenario.faults)
    flap = next(f for f in scenario.faults if f.kind == "ib_link_down")
    assert flap.params["flap"] is True
    nodes = {f.node for f in scenario.faults}
    assert len(nodes) >= 5  # faults spread over the fleet, not piled on one node


def test_default_scenario_reads_from_inside_a_zipapp(tmp_path: Path) -> None:
    archive = tmp_path / "bundle.pyz"
    root = Path(sim.__file__).parent
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr("collectors/__init__.py", "")
        for path in root.rglob("*"):
            if path.suffix in (".py", ".toml"):
                bundle.write(path, f"collectors/sim/{path.relative_to(root)}")
        agent = root.parent / "agent"
        bundle.write(agent / "__init__.py", "collectors/agent/__init__.py")
        bundle.write(agent / "fields.py", "collectors/agent/fields.py")
        bundle.writestr(
            "__main__.py",
            "from collectors import sim\nprint(len(sim.default_scenario().faults))\n",
        )
    out = subprocess.run([sys.executable, str(archive)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) == len(load_scenario(sim.default_scenario_path()).faults)


def test_faults_are_immutable_values() -> None:
    first, second = sim.default_scenario(), sim.default_scenario()
    assert first.faults == second.faults
    assert len(set(first.faults)) == len(first.faults)  # hashable, all distinct
    with pytest.raises(TypeError):
        first.faults[0].params["xid"] = 95  # type: ignore[index]
