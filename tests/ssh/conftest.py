"""Fixtures of the SSH transport tests (the harness itself is collectors.loopback.harness)."""

from __future__ import annotations

import pytest

from collectors.loopback.harness import fast_options as make_fast_options
from collectors.ssh import SshOptions


@pytest.fixture
def fast_options() -> SshOptions:
    """Quick timeouts and retries; a tiny stand-in agent bundle (canned nodes ignore it)."""
    return make_fast_options()
