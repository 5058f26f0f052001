"""``report_failure``: how the dashboard tells the operator that a request failed.

The facade raises :class:`FleetError` subclasses for requests it cannot serve; their
message is written for the operator and is shown as is. Anything else out of a facade
is a bug there: it is still a notification (never a traceback on the dashboard), named
by its type, and logged with its traceback for whoever fixes it.
"""

from __future__ import annotations

import logging
from typing import Any

from textual.app import App
from textual.widget import Widget

from fleet.facade import FleetError

log = logging.getLogger(__name__)


def failure_text(exc: BaseException) -> str:
    """The one line the operator reads for ``exc``."""
    if isinstance(exc, FleetError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def report_failure(where: App[Any] | Widget, title: str, exc: BaseException) -> None:
    """Notify the operator, from ``where`` (an app, screen or widget), that ``title`` failed."""
    if not isinstance(exc, FleetError):
        log.error("%s failed", title, exc_info=exc)
    where.notify(failure_text(exc), title=title, severity="error", markup=False)
