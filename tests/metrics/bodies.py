"""Exposition bodies compared across renders: the one line that must differ goes."""

from __future__ import annotations

from exporter.catalog import SCRAPE_DURATION


def without_scrape_duration(body: bytes) -> bytes:
    """``body`` without the scrape-duration sample, which differs between any two renders."""
    prefix = SCRAPE_DURATION.name.encode() + b" "
    return b"".join(line for line in body.splitlines(True) if not line.startswith(prefix))
