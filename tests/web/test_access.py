"""Who may open the dashboard: the token, the session cookie, the loopback warning."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpufleet.web.access import Access, TokenError, exposure_warning, new_token, read_token


def test_a_fresh_token_is_long_and_different_each_time() -> None:
    first, second = new_token(), new_token()
    assert first != second and len(first) >= 43  # 32 random bytes, URL-safe


def test_the_token_and_the_session_are_checked_exactly() -> None:
    access = Access("correct horse battery staple")
    assert access.token_ok("correct horse battery staple")
    assert not access.token_ok("correct horse battery stapl")
    assert not access.token_ok(None) and not access.token_ok("")
    assert access.session_ok(access.session)
    assert not access.session_ok(access.session[:-1] + "0" if access.session[-1] != "0" else "1")
    assert access.session != "correct horse battery staple"  # the cookie is not the token
    assert Access("another token of enough length").session != access.session
    assert access.query() == "token=correct+horse+battery+staple"


def test_a_token_file_gives_its_first_line(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("  s3cret-token-of-length-24  \nsecond line ignored\n")
    assert read_token(path) == "s3cret-token-of-length-24"


@pytest.mark.parametrize(
    "content", ["", "short\n", "\n\n", "x" * 5000], ids=["empty", "short", "blank", "huge"]
)
def test_an_unusable_token_file_is_refused_without_showing_it(tmp_path: Path, content: str) -> None:
    path = tmp_path / "token"
    path.write_text(content)
    with pytest.raises(TokenError) as caught:
        read_token(path)
    assert str(path) in str(caught.value)
    if content.strip():
        assert content.strip()[:5] not in str(caught.value)


def test_a_missing_token_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(TokenError, match="No such file"):
        read_token(tmp_path / "absent")


def test_only_beyond_loopback_earns_a_warning() -> None:
    assert exposure_warning("127.0.0.1", 8420) is None
    assert exposure_warning("::1", 8420) is None
    assert exposure_warning("localhost", 8420) is None
    warning = exposure_warning("0.0.0.0", 8420)
    assert warning is not None and "0.0.0.0:8420" in warning and "token" in warning


def _web(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpufleet", "web", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_config_that_publishes_nothing_is_refused_before_listening(tmp_path: Path) -> None:
    config = tmp_path / "fleet.toml"
    config.write_text('[fleet]\nhosts = ["gpu-01"]\n')
    done = _web("-c", str(config), "--addr", "127.0.0.1:0")
    assert done.returncode == 2
    assert "[cluster] nats_url" in done.stderr


def test_a_bad_token_file_is_refused_before_listening(tmp_path: Path) -> None:
    config = tmp_path / "fleet.toml"
    (tmp_path / "web.token").write_text("short\n")
    config.write_text(
        '[fleet]\nhosts = ["gpu-01"]\n[cluster]\nnats_url = "nats://127.0.0.1:4222"\n'
        '[web]\ntoken_file = "web.token"\n'
    )
    done = _web("-c", str(config), "--addr", "127.0.0.1:0")
    assert done.returncode == 2
    assert "token_file" in done.stderr and str(tmp_path / "web.token") in done.stderr
