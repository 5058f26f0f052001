"""[history] where and how long history is kept (docs/history.md)."""

from fleet.config.base import Section


class HistorySection(Section):
    """[history] where and how long history is kept (docs/history.md)."""
