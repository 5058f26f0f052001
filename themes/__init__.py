"""Textual themes with gpufleet role variables."""

from themes.palettes import GPUFLEET_CONTRAST, GPUFLEET_DARK, GPUFLEET_LIGHT, ROLE_VARIABLES

THEMES = (GPUFLEET_DARK, GPUFLEET_LIGHT, GPUFLEET_CONTRAST)
THEME_NAMES: tuple[str, ...] = tuple(t.name for t in THEMES)
DEFAULT_THEME = GPUFLEET_DARK.name

__all__ = [
    "DEFAULT_THEME",
    "GPUFLEET_CONTRAST",
    "GPUFLEET_DARK",
    "GPUFLEET_LIGHT",
    "ROLE_VARIABLES",
    "THEMES",
    "THEME_NAMES",
]
