"""The three gpufleet themes: dark (default), light, and a colour-blind-safe contrast theme.

Every theme defines the same role variables (``ROLE_VARIABLES``); the dashboard's
``.tcss`` files refer to roles only (``$gpu-failed``), never to colours.
"""

from __future__ import annotations

from textual.theme import Theme

# Role variables every gpufleet theme defines, with what each one colours.
ROLE_VARIABLES: dict[str, str] = {
    "gpu-ok": "a healthy, busy GPU cell",
    "gpu-idle": "a healthy GPU under 5% utilization",
    "gpu-warn": "a GPU whose verdict is warn",
    "gpu-failed": "a GPU whose verdict is fail; a broken node",
    "gpu-lost": "a GPU that fell off the bus or is missing; an unreachable node",
    "gpu-unknown": "no data yet",
    "link-up": "an active port at its expected rate",
    "link-down": "a port that is down",
    "link-degraded": "a port below its expected rate or counting errors",
    "sla-ok": "availability at or above the SLO",
    "sla-breach": "availability below the SLO",
    "util-line": "fleet utilization per minute in the plot",
    "util-rolling": "the rolling average in the plot",
    "muted": "secondary text",
    "cursor-bg": "the fleet grid's cursor row",
}

GPUFLEET_DARK = Theme(
    name="gpufleet-dark",
    primary="#4C9BE8",
    secondary="#2E5F8A",
    accent="#E8A33C",
    warning="#E8A33C",
    error="#E5534B",
    success="#57AB5A",
    foreground="#D8DEE4",
    background="#14181E",
    surface="#1C222A",
    panel="#252D38",
    dark=True,
    variables={
        "gpu-ok": "#57AB5A",
        "gpu-idle": "#4E6A85",
        "gpu-warn": "#E8A33C",
        "gpu-failed": "#F0524A",
        "gpu-lost": "#C070E0",
        "gpu-unknown": "#6E7781",
        "link-up": "#57AB5A",
        "link-down": "#F0524A",
        "link-degraded": "#E8A33C",
        "sla-ok": "#57AB5A",
        "sla-breach": "#F0524A",
        "util-line": "#4C9BE8",
        "util-rolling": "#E8A33C",
        "muted": "#8B949E",
        "cursor-bg": "#2E4A6B",
    },
)

GPUFLEET_LIGHT = Theme(
    name="gpufleet-light",
    primary="#0A63C9",
    secondary="#5A8FCB",
    accent="#B35900",
    warning="#9A6700",
    error="#C4231C",
    success="#1A7F37",
    foreground="#1F2328",
    background="#F6F8FA",
    surface="#FFFFFF",
    panel="#E6EBF1",
    dark=False,
    variables={
        "gpu-ok": "#1A7F37",
        "gpu-idle": "#8CA6C0",
        "gpu-warn": "#9A6700",
        "gpu-failed": "#C4231C",
        "gpu-lost": "#8250DF",
        "gpu-unknown": "#8C959F",
        "link-up": "#1A7F37",
        "link-down": "#C4231C",
        "link-degraded": "#9A6700",
        "sla-ok": "#1A7F37",
        "sla-breach": "#C4231C",
        "util-line": "#0A63C9",
        "util-rolling": "#B35900",
        "muted": "#57606A",
        "cursor-bg": "#C8DCF4",
    },
)

# Okabe-Ito: black #000000, orange #E69F00, sky blue #56B4E9, bluish green #009E73,
# yellow #F0E442, blue #0072B2, vermillion #D55E00, reddish purple #CC79A7.
GPUFLEET_CONTRAST = Theme(
    name="gpufleet-contrast",
    primary="#56B4E9",
    secondary="#0072B2",
    accent="#F0E442",
    warning="#E69F00",
    error="#D55E00",
    success="#009E73",
    foreground="#FFFFFF",
    background="#000000",
    surface="#000000",
    panel="#1A1A1A",
    dark=True,
    luminosity_spread=0.2,
    variables={
        "gpu-ok": "#56B4E9",
        "gpu-idle": "#0072B2",
        "gpu-warn": "#F0E442",
        "gpu-failed": "#D55E00",
        "gpu-lost": "#CC79A7",
        "gpu-unknown": "#BBBBBB",
        "link-up": "#56B4E9",
        "link-down": "#D55E00",
        "link-degraded": "#E69F00",
        "sla-ok": "#009E73",
        "sla-breach": "#D55E00",
        "util-line": "#56B4E9",
        "util-rolling": "#E69F00",
        "muted": "#BBBBBB",
        "cursor-bg": "#0072B2",
    },
)
