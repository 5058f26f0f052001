"""The README's key list names every key the dashboard and its grid screen bind."""

from __future__ import annotations

import re
from pathlib import Path

from textual.binding import Binding

from tui.app import GpuFleetApp
from tui.screens.main_screen import MainScreen

ROOT = Path(__file__).resolve().parents[2]
SHOWN_AS = {"slash": "/", "question_mark": "?"}


def test_every_dashboard_key_is_in_the_readme() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    paragraph = text[text.index("Keys: ") :].split("\n\n")[0]
    listed = set(re.findall(r"`([^`]+)`", paragraph))
    bindings = [*GpuFleetApp.BINDINGS, *MainScreen.BINDINGS]
    keys = {SHOWN_AS.get(b.key, b.key) for b in bindings if isinstance(b, Binding)}
    assert keys - listed == set()
