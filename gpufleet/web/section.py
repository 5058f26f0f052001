"""[web] the dashboard in a browser (docs/dashboard.md)."""

from __future__ import annotations

from fleet.settings.base import Section


class WebSection(Section):
    """[web] `gpufleet web`: where it listens and who may open it."""
