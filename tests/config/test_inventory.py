"""Hostnames, hostlist expressions and hostfiles."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given
from hypothesis import strategies as st

from collectors.inventory import (
    InventoryError,
    expand_hosts,
    parse_hostfile,
    validate_hostname,
)

_label = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?", fullmatch=True)


@given(st.lists(_label, min_size=1, max_size=4))
def test_rfc1123_names_pass_unchanged(labels: list[str]) -> None:
    name = ".".join(labels)
    assert validate_hostname(name) == name


@given(st.text(min_size=1, max_size=30))
def test_accepted_names_never_need_shell_quoting(text: str) -> None:
    try:
        name = validate_hostname(text)
    except InventoryError:
        return
    assert shlex.quote(name) == name or ":" in name  # IPv6 literals keep their colons


@pytest.mark.parametrize(
    "bad", ["", "a b", "a_b", "-a", "a-", "x;rm -rf", "$(id)", "a..b", "é", "a" * 64, "[10.0.0.1]"]
)
def test_invalid_names_are_refused(bad: str) -> None:
    with pytest.raises(InventoryError):
        validate_hostname(bad)


def test_ip_literals() -> None:
    assert validate_hostname("10.1.2.3") == "10.1.2.3"
    assert validate_hostname("[fe80::1]") == "fe80::1"
    assert validate_hostname("::1") == "::1"


def test_hostlists_expand_in_order_without_duplicates() -> None:
    hosts = expand_hosts(["gpu-[008-010]", "login1", "gpu-009", "rack[1-2]-n[1-2]", "::1"])
    assert hosts == [
        "gpu-008", "gpu-009", "gpu-010", "login1",
        "rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2", "::1",
    ]  # fmt: skip


def test_large_hostlist() -> None:
    assert len(expand_hosts(["gpu-[0001-1024]"])) == 1024


def test_hostfile_comments_and_blanks() -> None:
    text = "# header\n\n  gpu-[1-2]  # inline\n\t\ngpu-3\n"
    assert parse_hostfile(text) == ["gpu-1", "gpu-2", "gpu-3"]


def test_hostfile_error_names_the_line() -> None:
    with pytest.raises(InventoryError, match=r"^hosts\.txt:2: 'bad name' is not a hostname"):
        parse_hostfile("ok\nbad name\n", source="hosts.txt")
