"""[web] the dashboard in a browser (docs/dashboard.md)."""

from __future__ import annotations

from pydantic import field_validator

from exporter.addr import parse_addr
from fleet.settings.base import Section

DEFAULT_WEB_ADDR = "127.0.0.1:8420"


class WebSection(Section):
    """[web] `gpufleet web`: where it listens and who may open it."""

    addr: str = DEFAULT_WEB_ADDR
    """Where ``gpufleet web`` listens, as host:port. Loopback by default: the dashboard
    shows node names, GPU serials and fleet health, and whoever holds the token sees it
    all. Another address is a choice, said with a warning at start (``--addr``
    overrides it)."""
    token_file: str | None = None
    """A file holding the token a browser must present (at least 16 characters, one
    line), relative to this config file's directory. Without one, ``gpufleet web``
    makes a fresh token at every start and prints the URL that carries it, once."""
    actions: bool = False
    """Let browser sessions run the actions that change nodes (probes, ssh into a
    node). Off: every tab is read-only (``--allow-actions`` turns them on for one run)."""

    @field_validator("addr")
    @classmethod
    def _valid_addr(cls, value: str) -> str:
        parse_addr(value)  # raises ValueError with what was expected
        return value
