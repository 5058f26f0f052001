"""Fixtures every test gets."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

SLOW_FIRST = (
    "tests/campaign/test_campaign_loopback.py",
    "tests/campaign/test_campaign_recovery.py",
    "tests/cluster/test_attach.py",
    "tests/cluster/test_same_fleet_e2e.py",
    "tests/cluster/test_takeover_e2e.py",
    "tests/fleet/test_jobs_loopback.py",
    "tests/cluster/test_takeover_signed_e2e.py",
    "tests/cluster/test_dead_shard.py",
    "tests/cluster/test_demo_shards.py",
    "tests/tui/test_tui_ssh.py",
    "tests/delivery/test_sim_kinds.py",
    "tests/cli/test_printed_commands.py",
)
"""Test files that take 15 s or more of a busy two-core machine, slowest first.

pytest-xdist hands the first tests to its workers in collection order, in turn: put
first, these start at once on different workers and the many short tests fill in
behind them. In path order each starts wherever its file falls, and one that starts
late runs alone at the end while the other worker sits idle.
"""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Put the tests of :data:`SLOW_FIRST` first, in its order; the rest keep theirs."""
    root = config.rootpath
    missing = [path for path in SLOW_FIRST if not (root / path).is_file()]
    if missing:
        raise pytest.UsageError(f"tests/conftest.py SLOW_FIRST names no file: {missing}")
    rank = {path: i for i, path in enumerate(SLOW_FIRST)}

    def place(item: pytest.Item) -> int:
        path = item.path.relative_to(root).as_posix() if item.path.is_relative_to(root) else ""
        return rank.get(path, len(SLOW_FIRST))

    items.sort(key=place)  # stable


@pytest.fixture(autouse=True)
def restore_root_logger() -> Iterator[None]:
    """Give every test the root logger it found.

    ``gpufleet serve`` points the root logger at the stderr of the moment; in-process
    CLI tests would leave a handler on a closed capture stream behind, and the next
    test's log lines would end in "--- Logging error ---" tracebacks on its stderr.
    """
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
