"""Pure formatting of snapshot values for the dashboard: a missing value is "N/A"."""

from __future__ import annotations

import time

NA = "N/A"

# NVML clocks-event reasons (nvmlClocksEventReason*), in the order they are shown.
CLOCK_REASONS: tuple[tuple[int, str], ...] = (
    (0x1, "idle"),
    (0x2, "app clock setting"),
    (0x4, "SW power cap"),
    (0x8, "HW slowdown"),
    (0x10, "sync boost"),
    (0x20, "SW thermal"),
    (0x40, "HW thermal"),
    (0x80, "power brake"),
    (0x100, "display clock setting"),
)


def pct(value: float | None, digits: int = 1) -> str:
    return NA if value is None else f"{value:.{digits}f}%"


def watts(value: float | None) -> str:
    if value is None:
        return NA
    if value >= 10_000:
        return f"{value / 1000:.1f}kW"
    return f"{value:.0f}W"


def celsius(value: float | None) -> str:
    return NA if value is None else f"{value:.0f}°C"


def mhz(value: float | None) -> str:
    return NA if value is None else f"{value:.0f} MHz"


def count(value: int | None) -> str:
    return NA if value is None else str(value)


def count_f(value: float | None) -> str:
    """A float without trailing zeros (400.0 -> 400), or N/A."""
    return NA if value is None else f"{value:g}"


def flag(value: bool | None, yes: str = "yes", no: str = "no") -> str:
    return NA if value is None else (yes if value else no)


def rate(value: float | None, unit: str = "/s") -> str:
    if value is None:
        return NA
    if value == 0:
        return f"0{unit}"
    if value < 0.01:
        return f"{value:.1e}{unit}"
    return f"{value:.2f}{unit}"


def gbps(value: float | None) -> str:
    return NA if value is None else f"{value:g} Gb/s"


def bytes_rate(value: float | None) -> str:
    if value is None:
        return NA
    for unit, scale in (("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)):
        if value >= scale:
            return f"{value / scale:.1f} {unit}"
    return f"{value:.0f} B/s"


def gib(value: int | None) -> str:
    return NA if value is None else f"{value / 2**30:.0f} GiB"


def clock_reasons(mask: int | None) -> str:
    """Throttle reasons in words: 0x48 -> "HW slowdown, HW thermal"; 0 -> "none"."""
    if mask is None:
        return NA
    words = [name for bit, name in CLOCK_REASONS if mask & bit]
    known = sum(bit for bit, _ in CLOCK_REASONS)
    if mask & ~known:
        words.append(f"other 0x{mask & ~known:x}")
    return ", ".join(words) if words else "none"


def clock_time(t: float | None) -> str:
    """HH:MM:SS in UTC, or N/A."""
    if t is None:
        return NA
    return time.strftime("%H:%M:%S", time.gmtime(t))


def stamp(t: float | None, seconds: bool = False) -> str:
    """YYYY-MM-DD HH:MM[:SS] UTC, or N/A."""
    if t is None:
        return NA
    return time.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M", time.gmtime(t))


def duration(seconds: float | None) -> str:
    """Compact duration: 45s, 12m, 3h05m, 2d04h."""
    if seconds is None:
        return NA
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    return f"{s // 86400}d{(s % 86400) // 3600:02d}h"


def ago(t: float | None, now: float) -> str:
    return NA if t is None else f"{duration(now - t)} ago"


def money(value: float, currency: str) -> str:
    return f"{value:,.2f} {currency}"
