"""The history files a kept ledger was computed from: what each holds, read once per
version of the file.

A file is known by its path and its (mtime, size); the store rewrites a file whole and
renames it into place, so a file that changed has a new signature. What a kept figure
depends on is the list of signatures of the files whose rows reach its minutes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from pathlib import Path

import polars as pl

from history.layout import empty_frame, partition_files, read_file

MINUTE_MS = 60_000
Signature = tuple[str, int, int]  # path, mtime in ns, size


@dataclass(frozen=True, slots=True)
class FileFacts:
    """One version of one history file: its minutes' first and last start, its nodes."""

    table: str
    path: Path
    signature: Signature
    first_ms: int | None  # None: no rows (or unreadable, as every reader skips it)
    last_ms: int | None
    nodes: frozenset[str]
    aligned: bool  # every minute starts on a whole minute

    def meets(self, lo: int, hi: int) -> bool:
        """Whether some of its minutes may start in ``[lo, hi)``."""
        if self.first_ms is None or self.last_ms is None:
            return False
        return self.first_ms < hi and self.last_ms >= lo


class HistoryFiles:
    """Facts of a data directory's files, and the rows of those a refresh reads."""

    def __init__(self) -> None:
        self._known: dict[Path, FileFacts] = {}
        self._rows: dict[Path, pl.DataFrame] = {}

    def scan(self, data_dir: Path, table: str, days: list[date], keep_from: int) -> list[FileFacts]:
        """The facts of ``table``'s files of ``days`` in the order readers read them; the
        rows of a file read to learn them are kept when it reaches ``keep_from``."""
        out = []
        for path in partition_files(data_dir, table, days):
            try:
                stat = path.stat()
            except FileNotFoundError:  # replaced between the listing and now: next time
                continue
            signature = (str(path), stat.st_mtime_ns, stat.st_size)
            known = self._known.get(path)
            if known is None or known.signature != signature:
                known = self._known[path] = self._learn(table, path, signature, keep_from)
            out.append(known)
        return out

    def _learn(self, table: str, path: Path, signature: Signature, keep_from: int) -> FileFacts:
        frame = read_file(path, table)
        if frame is None or frame.is_empty():
            return FileFacts(table, path, signature, None, None, frozenset(), True)
        t = frame["ts"].dt.epoch("ms")
        if t.max() >= keep_from:  # type: ignore[operator]
            self._rows[path] = frame  # read again this refresh
        return FileFacts(
            table, path, signature, t.min(), t.max(),  # type: ignore[arg-type]
            frozenset(frame["node"].unique().to_list()), bool((t % MINUTE_MS == 0).all()),
        )  # fmt: skip

    def rows(self, files: list[FileFacts], table: str, lo: int, hi: int) -> pl.DataFrame:
        """The rows of ``files`` whose minute starts in ``[lo, hi)``, in reading order."""
        frames = []
        for facts in files:
            if not facts.meets(lo, hi):
                continue
            frame = self._rows.get(facts.path)
            if frame is None:
                frame = read_file(facts.path, table)
                if frame is None:
                    continue
                self._rows[facts.path] = frame
            t = pl.col("ts").dt.epoch("ms")
            frames.append(frame.filter((t >= lo) & (t < hi)))
        return pl.concat(frames) if frames else empty_frame(table)

    def let_go(self, before_ms: int | None = None) -> None:
        """Stop holding the rows of files that end before ``before_ms`` (all: None)."""
        for path in list(self._rows):
            facts = self._known.get(path)
            last = None if facts is None else facts.last_ms
            if before_ms is None or last is None or last < before_ms:
                del self._rows[path]

    def forget_missing(self, seen: set[Path]) -> None:
        """Forget files no longer in the directory."""
        for path in [p for p in self._known if p not in seen]:
            del self._known[path]
