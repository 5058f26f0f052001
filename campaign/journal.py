"""The campaign's state file in the data directory: written atomically after each step.

``<data_dir>/campaign/state.json`` holds the state and when it was saved. A controller
killed with SIGKILL loses at most the step in flight; started again with the same
nodes it resumes, and the time between the last save and the restart goes into the
timeline as a gap the monitor did not watch.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from campaign.model import CampaignState, TimelineEntry

JOURNAL_VERSION = 1
MAX_STATE_BYTES = 64 << 20  # a campaign's state is kilobytes; anything bigger is not ours


class JournalError(Exception):
    """The state file exists but cannot be read as a campaign state."""


class Journal:
    """Loads and saves one campaign's state under ``data_dir``."""

    def __init__(self, data_dir: Path) -> None:
        self.directory = data_dir / "campaign"
        self.path = self.directory / "state.json"

    def load(self) -> tuple[CampaignState, float] | None:
        """The saved state and when it was saved; None when there is none.

        Raises:
            JournalError: the file is damaged or from another version.
        """
        try:
            with self.path.open("rb") as handle:
                raw = handle.read(MAX_STATE_BYTES + 1)
        except FileNotFoundError:
            return None
        if len(raw) > MAX_STATE_BYTES:
            raise JournalError(f"{self.path}: larger than {MAX_STATE_BYTES} bytes")
        try:
            data: dict[str, Any] = json.loads(raw)
            if data.get("version") != JOURNAL_VERSION:
                raise JournalError(f"{self.path}: version {data.get('version')!r}, expected 1")
            return CampaignState.from_json(data["state"]), float(data["saved_at"])
        except (ValueError, KeyError, TypeError) as exc:
            raise JournalError(f"{self.path}: not a campaign state ({exc})") from None

    def save(self, state: CampaignState, saved_at: float) -> None:
        """Replace the state file atomically (write, fsync, rename)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        body = {"version": JOURNAL_VERSION, "saved_at": saved_at, "state": state.to_json()}
        temporary = self.path.with_suffix(".tmp")
        with temporary.open("w", encoding="utf-8") as handle:
            json.dump(body, handle, indent=1, allow_nan=False)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, self.path)


def open_campaign(journal: Journal, fresh: CampaignState, now: float) -> CampaignState:
    """The saved campaign when it is this one and unfinished, else ``fresh``.

    A resumed campaign gets a ``gap`` timeline entry from its last save to ``now``: the
    controller was not running, so nothing was watched or measured then.

    Raises:
        JournalError: the saved state is damaged, or an unfinished campaign on other
            nodes is saved there (the operator decides; nothing is overwritten).
    """
    saved = journal.load()
    if saved is None:
        return fresh
    state, saved_at = saved
    if state.finished_at is not None:
        return fresh
    if state.nodes != fresh.nodes:
        raise JournalError(
            f"{journal.path}: an unfinished campaign on {len(state.nodes)} other nodes; "
            "finish it with the same --nodes, or start over with --fresh"
        )
    gap = TimelineEntry("gap", saved_at, now, "controller not running: nothing watched")
    return replace(state, timeline=(*state.timeline, gap))
