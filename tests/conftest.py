"""Fixtures every test gets."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest


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
