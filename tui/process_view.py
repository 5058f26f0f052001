"""Pure content of the node screen's process table (PID, user, GPU, GPU memory, command)."""

from __future__ import annotations

from fleet.facade import ProcessListing
from tui import format as fmt
from tui.draw import Cell

PROCESS_COLUMNS = ("PID", "user", "GPU", "GPU mem", "command")
# What one table cell shows of a command line; the whole (sanitised) text is in the
# listing, a terminal line is not the place for 4 KiB of argv.
COMMAND_CHARS = 120
USER_CHARS = 16


def process_rows(listing: ProcessListing) -> list[list[Cell]]:
    """One row per (process, GPU), by GPU then by memory used, largest first."""
    ordered = sorted(listing.processes, key=lambda p: (p.gpu, -(p.memory_used_bytes or 0), p.pid))
    return [
        [
            (str(p.pid), "text"),
            (_cut(p.user, USER_CHARS) if p.user is not None else "?", "text"),
            (str(p.gpu), "text"),
            (mib(p.memory_used_bytes), "text"),
            (_cut(p.command, COMMAND_CHARS) if p.command else "(exited)", "text"),
        ]
        for p in ordered
    ]


def process_title(listing: ProcessListing | None) -> str:
    """``Processes · 2 on 8 GPUs · read 21:05:12 UTC`` (or what is going on).

    The clock time, not "0s ago": the title is drawn when a listing arrives.
    """
    if listing is None:
        return "Processes · reading…"
    count = len({p.pid for p in listing.processes})
    gpus = len({p.gpu for p in listing.processes})
    when = fmt.clock_time(listing.taken_at)
    return f"Processes · {count} on {gpus} GPU{'s' if gpus != 1 else ''} · read {when} UTC"


def process_note(listing: ProcessListing | None) -> str | None:
    """The line under the table: why it is empty or partial (None when nothing to say)."""
    if listing is None:
        return None
    if listing.error is not None:
        return f"Could not read every process: {listing.error}"
    if not listing.processes:
        return "No compute process on any GPU."
    return None


def mib(value: int | None) -> str:
    """GPU memory in MiB as nvidia-smi shows it per process; N/A when NVML has none."""
    return fmt.NA if value is None else f"{value / 2**20:,.0f} MiB"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
