"""Probe results as text: pure functions, tested without an app."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from textual.markup import escape

from fleet.facade import ProbeMeasurement, ProbeProgress, ProbeReport
from tui.draw import progress_bar

PROBE_ROLE = {"pass": "gpu-ok", "slow": "gpu-warn", "straggler": "gpu-warn", "fail": "gpu-failed"}
STATUS_ROLE = {
    "ok": "gpu-ok",
    "incomplete": "gpu-warn",
    "timeout": "gpu-failed",
    "cancelled": "muted",
    "error": "gpu-failed",
}
FIGURE_W = 18


def figure_columns(measurements: Sequence[ProbeMeasurement]) -> list[tuple[str, str]]:
    """The (probe, metric) pairs measured, in the order they first appear."""
    seen: dict[tuple[str, str], None] = {}
    for m in measurements:
        seen.setdefault((m.probe, m.metric), None)
    return list(seen)


def figure_text(m: ProbeMeasurement | None) -> str:
    """``0.18 TFLOPS``; ``mismatch`` for a failed sdc; ``N/A`` when nothing came out."""
    if m is None:
        return "—"
    if not m.ok:
        return "mismatch" if m.probe == "sdc" else "failed"
    if m.value is None:
        return "N/A"
    return f"{m.value:.3g} {m.unit}".strip()


def results_markup(
    gpus: Sequence[int],
    measurements: Sequence[ProbeMeasurement],
    verdicts: Mapping[int, str] | None = None,
) -> str:
    """One line per GPU with every figure and (once judged) its verdict, as Textual markup."""
    columns = figure_columns(measurements)
    by_key = {(m.gpu, m.probe, m.metric): m for m in measurements}
    head = "GPU  verdict    " + "".join(f"{p} {k}"[:FIGURE_W].ljust(FIGURE_W) for p, k in columns)
    lines = [f"[b]{escape(head.rstrip())}[/]"]
    for gpu in gpus:
        verdict = (verdicts or {}).get(gpu)
        shown = f"[${PROBE_ROLE[verdict]}]{verdict:<10}[/]" if verdict else "[$muted]…         [/]"
        figures = "".join(
            figure_text(by_key.get((gpu, p, k)))[:FIGURE_W].ljust(FIGURE_W) for p, k in columns
        )
        lines.append(f"{gpu:>3}  {shown} {escape(figures.rstrip())}")
    return "\n".join(lines)


def report_markup(report: ProbeReport) -> str:
    """A finished run: summary line, per-GPU table and every reason, as Textual markup."""
    role = STATUS_ROLE.get(report.status, "muted")
    took = max(0.0, report.finished - report.started)
    model = report.model or "unknown model"
    where = " · simulated GPUs (CPU)" if report.simulated and "CPU" not in model else ""
    lines = [
        f"[b]{escape(report.suite)}[/] suite: [${role}]{report.status}[/] in {took:.1f} s"
        f" · {escape(model)}{where}"
    ]
    if report.error:
        lines.append(f"[$gpu-failed]{escape(report.error)}[/]")
        return "\n".join(lines)
    verdicts = {v.gpu: v.verdict for v in report.verdicts}
    lines.append(results_markup(report.gpus, report.measurements, verdicts))
    for v in report.verdicts:
        lines.extend(f"[$muted]GPU {v.gpu}:[/] {escape(reason)}" for reason in v.reasons)
    lines.extend(f"[$gpu-failed]{escape(f.message)}[/]" for f in report.failures if not f.gpus)
    return "\n".join(lines)


def progress_markup(progress: ProbeProgress | None, width: int = 40) -> str:
    """The progress bar line of a running probe."""
    if progress is None:
        return "[$muted]starting: uploading and launching the probe…[/]"
    bar = progress_bar(progress.step, progress.steps, width)
    what = f"{progress.probe} on GPU {progress.gpu}"
    return f"{bar} {progress.step}/{progress.steps}  {escape(what)}"
