"""What reaches the node's shell: every word quoted, pids only as integers."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from collectors.ssh.upload import MISMATCH_STATUS, sha256_hex
from probes.command import kill_command, probe_command, shell_word
from tests.runtime.waits import wait_until_blocking

from .conftest import group_members

DIGEST = "0" * 64


def inner_argv(command: str) -> list[str]:
    """The words ``sh -c '<inner>'`` would exec, after the ``echo $$;``."""
    sh, dash_c, inner = shlex.split(command)
    assert (sh, dash_c) == ("sh", "-c")
    echo, rest = inner.split("; exec ", 1)
    assert echo == "echo $$"
    return shlex.split(rest)


def test_hostile_words_stay_single_arguments() -> None:
    python = "/opt/py thon; rm -rf ~"
    bundle = ".cache/gpufleet/probes-0123456789ab.pyz"
    argv = inner_argv(probe_command(python, bundle, DIGEST, "quick", 120, "all", False))
    assert argv[:2] == [python, "-c"]  # argv[2] is the hash-checking bootstrap
    assert argv[3:] == [bundle, DIGEST, "--suite", "quick", "--timeout", "120", "--gpus", "all"]


def test_a_home_relative_python_expands_in_the_shell() -> None:
    assert shell_word("~/venv/bin/python") == '"$HOME"/venv/bin/python'
    out = subprocess.run(
        ["sh", "-c", "printf %s " + shell_word("~/a b")],
        capture_output=True,
        text=True,
        env={"HOME": "/home/x"},
        check=True,
    )
    assert out.stdout == "/home/x/a b"


def test_the_gpu_selection_is_validated() -> None:
    command = probe_command("python3", "p.pyz", DIGEST, "full", 5, "0,3", True)
    assert "--allow-cpu" in inner_argv(command)
    with pytest.raises(ValueError):
        probe_command("python3", "p.pyz", DIGEST, "quick", 5, "0; reboot", False)


def test_the_echoed_pid_is_the_program_pid() -> None:
    command = probe_command("python3", "p.pyz", DIGEST, "quick", 1, "all", False)
    # Replace the program by one that prints its own pid: exec must keep the shell's.
    inner = shlex.split(command)[2].replace(
        "exec python3 -c", "exec python3 -c 'import os; print(os.getpid())' #"
    )
    out = subprocess.run(["sh", "-c", inner], capture_output=True, text=True, check=True)
    echoed, own = out.stdout.split()
    assert echoed == own


def test_kill_command_ends_a_whole_process_group() -> None:
    leader = subprocess.Popen(
        ["sh", "-c", "sleep 60 & sleep 60 & wait"],
        start_new_session=True,
    )
    try:
        wait_until_blocking(lambda: len(group_members(leader.pid)) >= 3, within_s=10)
        assert len(group_members(leader.pid)) == 3
        subprocess.run(shlex.split(kill_command(leader.pid, grace_s=1.0)), check=True, timeout=10)
        leader.wait(timeout=10)
        assert group_members(leader.pid) == []
    finally:
        if leader.poll() is None:
            leader.kill()


def test_a_planted_bundle_is_refused_and_the_real_one_runs(tmp_path: Path) -> None:
    real = b"print('probe ran')\n"
    bundle = tmp_path / "probes-0123456789ab.pyz"
    bundle.write_bytes(b"print('planted code ran')\n")  # same name, other content
    command = probe_command(sys.executable, str(bundle), sha256_hex(real), "quick", 1, "all", False)
    planted = subprocess.run(command, shell=True, capture_output=True, text=True, check=False)
    assert planted.returncode == MISMATCH_STATUS
    assert "planted code ran" not in planted.stdout and "SHA-256" in planted.stderr
    bundle.write_bytes(real)
    genuine = subprocess.run(command, shell=True, capture_output=True, text=True, check=False)
    assert genuine.returncode == 0 and "probe ran" in genuine.stdout
