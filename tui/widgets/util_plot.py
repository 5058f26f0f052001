"""Rolling fleet utilization: per-minute values and their rolling average, with axes."""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import RenderResult
from textual.color import Color
from textual.content import Content
from textual_plotext import PlotextPlot

from fleet.facade import UtilizationPoint

WINDOWS: tuple[tuple[str, float], ...] = (("1 h", 3_600.0), ("24 h", 86_400.0), ("7 d", 604_800.0))


def axis_unit(window_s: float) -> tuple[float, str]:
    """Seconds per x unit and the axis label that suit the window."""
    if window_s <= 3_600:
        return 60.0, "minutes ago"
    return (3_600.0, "hours ago") if window_s <= 86_400 else (86_400.0, "days ago")


MIN_SPAN_S = 600.0  # the axis spans at least ten minutes, so the first points are not a wall


def shown_span(points: Sequence[UtilizationPoint], window_s: float) -> float:
    """Seconds the x axis spans: the window, or less while less history exists (a 24 h
    axis with twelve minutes in it would be an empty plot with a stub at its right edge)."""
    if len(points) < 2:
        return min(window_s, MIN_SPAN_S)
    recorded = points[-1].ts - points[0].ts + 60.0
    return min(window_s, max(MIN_SPAN_S, recorded))


def time_axis(points: Sequence[UtilizationPoint], window_s: float) -> tuple[list[float], str]:
    """x values relative to the newest point, in a unit that suits the span shown."""
    unit, label = axis_unit(shown_span(points, window_s))
    if not points:
        return [], label
    end = points[-1].ts
    return [(p.ts - end) / unit for p in points], label


def downsample(points: Sequence[UtilizationPoint], buckets: int) -> list[UtilizationPoint]:
    """At most ``buckets`` points: consecutive points averaged (a plot cell cannot show more)."""
    if buckets <= 0 or len(points) <= buckets:
        return list(points)
    out = []
    step = len(points) / buckets
    for b in range(buckets):
        chunk = points[int(b * step) : max(int((b + 1) * step), int(b * step) + 1)]
        out.append(
            UtilizationPoint(
                ts=chunk[-1].ts,
                util=sum(p.util for p in chunk) / len(chunk),
                rolling=sum(p.rolling for p in chunk) / len(chunk),
            )
        )
    return out


class UtilPlot(PlotextPlot):
    """A braille line plot of fleet utilization (%) against time before now."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.points: list[UtilizationPoint] = []
        self.window_s = 86_400.0
        self.waiting = "loading utilization history…"

    def on_mount(self) -> None:
        super().on_mount()
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.redraw())
        self.redraw()

    def render(self) -> RenderResult:
        if len(self.points) < 2:  # nothing to draw a line through yet
            return Content.from_markup(f"[$muted]{self.waiting}[/]")
        return super().render()

    def on_resize(self) -> None:
        self.redraw()

    def show(self, points: Sequence[UtilizationPoint], window_s: float) -> None:
        self.points, self.window_s = list(points), window_s
        minutes = len(self.points)
        self.waiting = f"collecting utilization history ({minutes} min so far, one point a minute)"
        self.redraw()

    def _role_rgb(self, role: str) -> tuple[int, int, int]:
        value = self.app.theme_variables.get(role, "white")
        r, g, b = Color.parse(value).rgb
        return (r, g, b)

    def redraw(self) -> None:
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        points = downsample(self.points, 2 * max(self.size.width, 40))  # braille: 2 dots/cell
        xs, label = time_axis(points, self.window_s)
        plt.xlabel(label)
        plt.ylabel("util %")
        plt.ylim(0, 100)
        # The axis fits the history that exists (at most the window), in a unit that suits
        # it: twelve minutes of history read "-12 … 0 minutes ago", not a stub on a 24 h axis.
        span = shown_span(points, self.window_s)
        unit, _ = axis_unit(span)
        plt.xlim(-span / unit, 0)
        if xs:
            plt.plot(
                xs,
                [p.util for p in points],
                marker="braille",
                color=self._role_rgb("util-line"),
                label="per minute",
            )
            plt.plot(
                xs,
                [p.rolling for p in points],
                marker="braille",
                color=self._role_rgb("util-rolling"),
                label="rolling avg",
            )
        else:
            plt.title("no utilization history yet")
        self.refresh()
