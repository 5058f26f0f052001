"""History: in-memory ring, minute rollups, parquet partitions (docs/history.md)."""

from history.recorder import HistoryRecorder

__all__ = ["HistoryRecorder"]
