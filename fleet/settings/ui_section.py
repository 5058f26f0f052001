"""[ui] dashboard preferences."""

from pydantic import Field

from fleet.settings.base import Section


class UiSection(Section):
    """[ui] dashboard preferences."""

    theme: str | None = Field(default=None, pattern=r"^[a-z0-9][a-z0-9-]*$")
    """Dashboard theme: `gpufleet-dark`, `gpufleet-light` or `gpufleet-contrast`
    (colour-blind safe, Okabe–Ito palette). Unset: the theme last chosen with `t`,
    else `gpufleet-dark`. `--theme NAME` on the command line overrides it."""
    refresh_s: float = Field(default=1.0, gt=0.0, le=60.0)
    """Kept for older configs; it no longer delays anything: the dashboard applies each
    snapshot right after the next screen refresh (a flood collapses to the newest)."""
