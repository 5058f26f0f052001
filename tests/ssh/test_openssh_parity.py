"""ssh config resolution held against ``ssh -G`` (OpenSSH) over a corpus of configs.

Every ``# case:`` of ``tests/ssh/openssh_corpus/*.conf`` is resolved by gpufleet and
by ``ssh`` and compared field by field: HostName, Port, User, the identity files
(expanded, from ``ssh -v``), every ProxyJump hop, UserKnownHostsFile and
GlobalKnownHostsFile. A config ``ssh`` refuses must be refused too.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from testkit.loopback.ssh_config_oracle import (
    FIELDS,
    ConfigCase,
    compare,
    corpus_cases,
    gpufleet_view,
    install_corpus,
    openssh_view,
)

CORPUS = Path(__file__).parent / "openssh_corpus"
LABELS = [case.label for case in corpus_cases(CORPUS)]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, ConfigCase]]:
    assert shutil.which("ssh"), "the OpenSSH client (openssh-client) is the oracle here"
    home = tmp_path_factory.mktemp("home")
    return home, {case.label: case for case in install_corpus(CORPUS, home)}


@pytest.mark.parametrize("label", LABELS)
def test_resolution_agrees_with_ssh_G(
    label: str, corpus: tuple[Path, dict[str, ConfigCase]]
) -> None:
    home, cases = corpus
    case = cases[label]
    assert compare(gpufleet_view(case, home), openssh_view(case, home)) == []


def test_corpus_covers_what_the_issue_names() -> None:
    assert len(LABELS) >= 50
    names = {case.config.name for case in corpus_cases(CORPUS)}
    for config in ("wildcards", "negation", "include", "match", "tokens", "jumps", "ipv6"):
        assert f"{config}.conf" in names
    assert len(FIELDS) == 7


def test_a_refused_config_is_refused_by_both(corpus: tuple[Path, dict[str, ConfigCase]]) -> None:
    home, cases = corpus
    case = cases["refused.conf:r1"]
    assert set(openssh_view(case, home).values()) == {"refused"}
    assert set(gpufleet_view(case, home).values()) == {"refused"}
