"""The agent as the controller starts it: a process whose stdout is the protocol stream."""

from __future__ import annotations

import ctypes.util
import itertools
import os
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from collectors import sim
from collectors.protocol import Bye, Error, Event, Hello, Sample, decode_line

AGENT = [sys.executable, "-m", "collectors.agent"]
ROOT = Path(__file__).resolve().parents[2]


def start(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [*AGENT, *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def read_until_sample(proc: subprocess.Popen[bytes]) -> list[bytes]:
    """Lines up to and including the first sample (readline blocks on the stream itself)."""
    assert proc.stdout is not None
    lines = []
    while True:
        line = proc.stdout.readline()
        assert line, f"agent exited early: {proc.stderr.read() if proc.stderr else b''!r}"
        lines.append(line)
        if isinstance(decode_line(line), Sample):
            return lines


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_stop_signal_ends_with_bye_and_exit_zero(signum: signal.Signals) -> None:
    proc = start("--sim", "none", "--interval", "0.1")
    try:
        read_until_sample(proc)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    last = decode_line(out.splitlines()[-1])
    assert isinstance(last, Bye) and last.reason == signum.name
    assert proc.returncode == 0, err


def test_a_closed_stdout_ends_quietly_with_exit_zero() -> None:
    proc = start("--sim", "none", "--interval", "0.05")
    try:
        read_until_sample(proc)
        assert proc.stdout is not None
        proc.stdout.close()  # the SSH channel went away
        code = proc.wait(timeout=20)
        err = proc.stderr.read() if proc.stderr else b""
    finally:
        proc.kill()
    assert code == 0
    assert b"Traceback" not in err and b"BrokenPipe" not in err, err


def test_samples_follow_the_interval_grid() -> None:
    out = subprocess.run(
        [*AGENT, "--sim", "none", "--interval", "0.2", "--max-samples", "8"],
        cwd=ROOT,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout
    times = [m.t for m in map(decode_line, out.splitlines()) if isinstance(m, Sample)]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert len(gaps) == 7
    # A stalled tick is skipped rather than bunched up: every gap is a whole number of
    # intervals, and most are exactly one.
    assert all(abs(g / 0.2 - round(g / 0.2)) < 0.25 and round(g / 0.2) >= 1 for g in gaps), gaps
    assert abs(statistics.median(gaps) - 0.2) < 0.03, gaps


def test_without_nvml_hello_error_and_port_counters_still_come(tmp_path: Path) -> None:
    # A node without the NVIDIA driver: the agent is started without the simulator.
    # The port tree is the one a simulated node writes (its NVML is not used here).
    node = sim.install("node-001", sysfs_root=tmp_path / "sys", refresh_s=None)
    node.close()
    out = subprocess.run(
        [*AGENT, "--sysfs-root", str(tmp_path / "sys"), "--interval", "0.05", "--max-samples", "3"],
        cwd=ROOT,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout
    messages = [decode_line(line) for line in out.splitlines()]
    hello = messages[0]
    assert isinstance(hello, Hello) and len(hello.ports) == 8
    samples = [m for m in messages if isinstance(m, Sample)]
    assert len(samples) == 3 and all(len(s.ports) == 8 and s.ports[0][0] == 4 for s in samples)
    if ctypes.util.find_library("nvidia-ml") is None:  # development and CI machines
        assert hello.gpus == [] and hello.driver is None
        errors = [m for m in messages if isinstance(m, Error)]
        assert [e.code for e in errors] == ["NVMLError_LibraryNotFound"]
        assert all(s.gpus == () for s in samples)
    else:  # a real GPU node: its GPUs stream
        assert hello.gpus and all(len(s.gpus) == len(hello.gpus) for s in samples)


def test_help_works_without_any_nvidia_software() -> None:
    out = subprocess.run(
        [*AGENT, "--help"], cwd=ROOT, capture_output=True, check=True, timeout=30
    ).stdout
    assert b"--slow-interval" in out and b"--sim" in out


def test_bad_arguments_fail_with_a_clear_message() -> None:
    done = subprocess.run([*AGENT, "--interval", "-1"], cwd=ROOT, capture_output=True, timeout=30)
    assert done.returncode == 2
    assert b"expected a positive number of seconds" in done.stderr
    assert done.stdout == b""  # nothing half-started reaches the controller


def test_a_bad_scenario_is_refused_with_a_fatal_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[[fault]]\nkind = "xid80"\nnode = "node-001"\nat = "1s"\n')
    done = subprocess.run([*AGENT, "--sim", str(bad)], cwd=ROOT, capture_output=True, timeout=30)
    assert done.returncode == 2
    (line,) = done.stdout.splitlines()
    error = decode_line(line)
    assert isinstance(error, Error) and error.fatal and error.code == "SimStartError"
    assert "xid80" in error.message and b"xid80" in done.stderr


def test_an_agent_crash_kills_the_process_and_the_next_agent_sweeps_its_tree(
    tmp_path: Path,
) -> None:
    crash = tmp_path / "crash.toml"
    crash.write_text('[[fault]]\nkind = "agent_crash"\nnode = "node-001"\nat = "0.3s"\n')
    proc = start("--sim", str(crash), "--interval", "0.05")
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 137
    messages = [decode_line(line) for line in out.splitlines()]
    assert isinstance(messages[0], Hello) and not isinstance(messages[-1], Bye)
    base = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else Path(tempfile.gettempdir())
    left = list(base.glob(f"gpufleet-sim-sysfs-{proc.pid}-*"))
    assert left, "os._exit skips cleanup: the crashed agent's tree is still there"
    subprocess.run(
        [*AGENT, "--sim", "none", "--max-samples", "1"],
        cwd=ROOT,
        capture_output=True,
        check=True,
        timeout=60,
    )
    assert not any(path.exists() for path in left)


def test_the_event_thread_delivers_an_xid_while_samples_stream(tmp_path: Path) -> None:
    scenario = tmp_path / "xid.toml"
    scenario.write_text('[[fault]]\nkind = "xid79"\nnode = "node-001"\ngpu = 2\nat = "0.4s"\n')
    out = subprocess.run(
        [*AGENT, "--sim", str(scenario), "--interval", "0.1", "--max-samples", "12"],
        cwd=ROOT,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout
    messages = [decode_line(line) for line in out.splitlines()]
    xids = [m for m in messages if isinstance(m, Event) and m.kind == "xid"]
    assert [(e.gpu, e.code) for e in xids] == [(2, 79)]
    samples = [m for m in messages if isinstance(m, Sample)]
    assert samples[-1].lost == (2,) and samples[-1].gpus[3] is not None
    assert isinstance(messages[-1], Bye)
