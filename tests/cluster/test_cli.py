"""The scale-out flags fail in one line, and the docs' [cluster] table is the model's."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from collectors.ssh.target import NodeTarget
from gpufleet.cli import main
from gpufleet.config.reference import key_table
from gpufleet.shard import read_targets_file, write_targets_file

DOC = Path(__file__).resolve().parents[2] / "docs" / "scale-out.md"


def test_the_cluster_key_table_in_the_doc_is_the_models() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert f"<!-- keys:cluster -->\n{key_table('cluster')}<!-- /keys -->" in text


def test_check_shards_prints_the_assignment_and_connects_nowhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "fleet.toml"
    config.write_text('[fleet]\nhosts = ["gpu-[001-012]"]\n')
    assert main(["check", "-c", str(config), "--shards", "3"]) == 0
    out = capsys.readouterr().out
    listed = [line.strip() for line in out.splitlines() if line.startswith("  ")]
    assert sorted(listed) == [f"gpu-{i:03d}" for i in range(1, 13)]
    assert [line.split(":")[0] for line in out.splitlines() if line.startswith("shard")] == [
        "shard 1/3",
        "shard 2/3",
        "shard 3/3",
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["watch", "--attach", "http://x:1"], "expected nats://HOST:PORT"),
        (["watch", "--headless"], "need --attach"),
        (["serve", "--shard", "5/4"], "shard number must be 1 to 4"),
    ],
)
def test_bad_flags_fail_in_one_line(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "fleet.toml"
    config.write_text('[fleet]\nhosts = ["gpu-001"]\n')
    assert main([*argv, "-c", str(config)]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_attaching_to_no_server_fails_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as sock:  # a port that refuses: bound, never listening
        sock.bind(("127.0.0.1", 0))
        url = f"nats://127.0.0.1:{sock.getsockname()[1]}"
        assert main(["watch", "--attach", url, "--headless"]) == 2
    err = capsys.readouterr().err
    assert f"cannot reach NATS at {url}" in err and "Traceback" not in err, err


def test_targets_file_round_trip_and_refusals(tmp_path: Path) -> None:
    path = tmp_path / "targets.json"
    targets = [NodeTarget("node-001", "127.0.0.1", port=2201, known_hosts="/k", python="py")]
    write_targets_file(path, targets)
    assert read_targets_file(path) == targets
    path.write_text(json.dumps([{"name": "x", "shell": "rm -rf /"}]))
    with pytest.raises(ValueError, match="row 0"):
        read_targets_file(path)
    path.write_text("{")
    with pytest.raises(ValueError, match="not a targets file"):
        read_targets_file(path)


@pytest.mark.parametrize(
    "argv",
    [
        ["watch", "--attach", "nats://127.0.0.1:4222", "--headless"],
        ["serve", "--nats-url", "nats://127.0.0.1:4222", "--metrics-addr", "127.0.0.1:0"],
    ],
    ids=["watch --attach", "serve"],
)
def test_a_missing_nats_password_file_fails_before_connecting(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "fleet.toml"
    missing = tmp_path / "no-such-password"
    config.write_text(
        '[fleet]\nhosts = ["gpu-001"]\n'
        f'[cluster]\nnats_user = "viewer"\nnats_password_file = "{missing}"\n'
    )
    assert main([*argv, "-c", str(config), "--data-dir", str(tmp_path / "data")]) == 2
    err = capsys.readouterr().err
    assert "nats_password_file" in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err


def test_sla_from_a_viewer_says_in_one_line_that_it_needs_the_shards_directories(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "viewer.toml"
    config.write_text(
        '[fleet]\nhosts = ["gpu-001"]\n[cluster]\nnats_url = "nats://ops:s3cret@127.0.0.1:4222"\n'
        "[sla]\ncommitted_nodes = 1\ngpu_hour_price = 2\n"
    )
    empty = tmp_path / "no-history"
    assert main(["sla", "-c", str(config), "--data-dir", str(empty)]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "shard=K" in err and "--data-dir" in err and "nats://ops:***@127.0.0.1:4222" in err
    assert "s3cret" not in err
