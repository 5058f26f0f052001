"""``gpufleet serve`` arguments, failures and log lines, without a fleet to reach."""

from __future__ import annotations

import json
import logging
import socket
from pathlib import Path

import pytest

from gpufleet.cli import main
from gpufleet.commands.serve import StructuredFormatter


def _record(msg: str, **extra: object) -> logging.LogRecord:
    record = logging.LogRecord("gpufleet.serve", logging.WARNING, __file__, 1, msg, None, None)
    record.__dict__.update(extra)
    return record


def test_key_value_lines_quote_what_needs_quoting() -> None:
    line = StructuredFormatter(as_json=False).format(
        _record("node state", node="n2", state="broken", reasons='7 of 8 "GPUs"\nok', gpu=None)
    )
    assert line.startswith("ts=") and line.count("\n") == 0
    assert 'level=warning logger=gpufleet.serve msg="node state" node=n2 state=broken' in line
    assert 'reasons="7 of 8 \\"GPUs\\"\\nok" gpu=""' in line


def test_json_lines_carry_the_extra_fields() -> None:
    line = StructuredFormatter(as_json=True).format(_record("xid", node="n2", code=79))
    fields = json.loads(line)
    assert (fields["msg"], fields["node"], fields["code"], fields["level"]) == (
        "xid",
        "n2",
        79,
        "warning",
    )


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "fleet.toml"
    path.write_text('[fleet]\nhosts = ["127.0.0.1"]\nport = 1\nknown_hosts = "/dev/null"\n')
    return path


def test_a_bad_metrics_address_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["serve", "-c", str(_config(tmp_path)), "--metrics-addr", "9400"])
    assert status == 2
    assert "expected host:port" in capsys.readouterr().err


def test_a_taken_address_fails_before_connecting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        addr = f"127.0.0.1:{taken.getsockname()[1]}"
        args = ["serve", "-c", str(_config(tmp_path)), "--metrics-addr", addr]
        status = main([*args, "--data-dir", str(tmp_path / "data")])
    assert status == 1
    err = capsys.readouterr().err
    assert 'msg="cannot serve metrics"' in err and f"addr={addr}" in err
    assert not (tmp_path / "data" / "node_states").exists()  # nothing was recorded


def test_a_bad_web_config_is_one_line_read_beside_the_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path)
    config.write_text(config.read_text() + '[metrics]\nweb_config_file = "web.yml"\n')
    (tmp_path / "web.yml").write_text("basic_auth_users:\n  bob: plain\n")
    status = main(["serve", "-c", str(config), "--data-dir", str(tmp_path / "data")])
    assert status == 2
    err = capsys.readouterr().err
    web = tmp_path / "web.yml"
    assert err == f"gpufleet: {web}: basic_auth_users.bob: expected a bcrypt hash\n"
    assert not (tmp_path / "data" / "node_states").exists()
