"""The acceptance campaign as the dashboard's panel sees it: the report document of the
campaign on record in ``<data_dir>/campaign/state.json``.

``gpufleet accept`` (another process, or the demo's) saves the state after each step;
the dashboard asks on every snapshot. The file is read at most once a second, on a
thread, and the last document is handed out meanwhile: the event loop never waits on
the disk.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from campaign.section import AcceptanceSection
from fleet.settings.contract_section import ContractSection

log = logging.getLogger(__name__)

READ_EVERY_S = 1.0


def read_campaign(
    data_dir: Path, settings: AcceptanceSection, contract: ContractSection
) -> dict[str, Any] | None:
    """The report of the campaign on record, or None (none, or a damaged file: logged)."""
    from campaign.journal import Journal, JournalError
    from campaign.report import report_dict

    try:
        saved = Journal(data_dir).load()
    except (JournalError, OSError) as exc:
        log.warning("campaign state not shown: %s", exc)
        return None
    return None if saved is None else report_dict(saved[0], settings, contract)


class CampaignView:
    """The last campaign report read from ``data_dir``; a new read when one is due."""

    def __init__(
        self,
        data_dir: Path | None,
        settings: AcceptanceSection,
        contract: ContractSection,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._data_dir = data_dir
        self._settings = settings
        self._contract = contract
        self._clock = clock
        self._report: dict[str, Any] | None = None
        self._read_at = float("-inf")
        self._reading: asyncio.Future[dict[str, Any] | None] | None = None

    def report(self) -> Mapping[str, Any] | None:
        """The document as last read; starts a read when a second has passed since the
        previous one (on the running loop's default executor; none without a loop)."""
        now = self._clock()
        due = now - self._read_at >= READ_EVERY_S
        if self._data_dir is not None and self._reading is None and due:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return self._report
            self._read_at = now
            args = (self._data_dir, self._settings, self._contract)
            self._reading = task = loop.create_task(asyncio.to_thread(read_campaign, *args))
            task.add_done_callback(self._read)
        return self._report

    def _read(self, task: asyncio.Future[dict[str, Any] | None]) -> None:
        self._reading = None
        if not task.cancelled() and task.exception() is None:
            self._report = task.result()

    async def refreshed(self) -> Mapping[str, Any] | None:
        """Wait for the read in progress, if any; the document handed out next."""
        if self._reading is not None:
            await asyncio.wait((self._reading,))
        return self._report
