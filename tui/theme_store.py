"""Remembers the theme chosen with ``t`` in a small state file (user_state_dir)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from platformdirs import user_state_dir


def default_state_path() -> Path:
    return Path(user_state_dir("gpufleet")) / "ui-state.json"


class ThemeStore:
    """Reads and writes ``{"theme": NAME}``; a missing or unreadable file means no choice."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else default_state_path()

    def load(self) -> str | None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        theme = data.get("theme") if isinstance(data, dict) else None
        return theme if isinstance(theme, str) else None

    def save(self, theme: str) -> None:
        """Write atomically (temp file + rename). Raises OSError when it cannot."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"theme": theme}) + "\n", encoding="utf-8")
        os.replace(tmp, self.path)
