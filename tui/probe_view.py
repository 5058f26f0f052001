"""Probe results as text: pure functions, tested without an app."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from textual.markup import escape

from fleet.facade import NodeSnapshot, ProbeMeasurement, ProbeProgress, ProbeReport
from tui.draw import progress_bar

# A node above either mark is running work that a probe's kernels would slow down (and be
# slowed by: the figures would read as a slow GPU), so the operator confirms first.
BUSY_UTIL_PCT = 10.0
BUSY_MEM_PCT = 10.0
PROBE_RANK = {"pass": 0, "straggler": 1, "slow": 2, "fail": 3}

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


def busy_question(node: NodeSnapshot) -> str | None:
    """The question to ask before probing a busy node (naming its load and memory in
    use), or None when the node is idle enough to probe at once."""
    utils = [g.util_gpu for g in node.gpus if g.util_gpu is not None]
    used = sum(g.mem_used_bytes or 0 for g in node.gpus)
    total = sum(g.memory_total_bytes or 0 for g in node.gpus)
    util = sum(utils) / len(utils) if utils else 0.0
    mem_pct = 100.0 * used / total if total else 0.0
    if util < BUSY_UTIL_PCT and mem_pct < BUSY_MEM_PCT:
        return None
    busiest = max(node.gpus, key=lambda g: g.util_gpu or 0.0, default=None)
    peak = ""
    if busiest is not None and busiest.util_gpu is not None:
        peak = f" (GPU {busiest.index} at {busiest.util_gpu:.0f}%)"
    return (
        f"{node.name} is busy: {util:.0f}% mean GPU utilization{peak}, "
        f"{used / 2**30:.0f} of {total / 2**30:.0f} GiB GPU memory in use.\n"
        "The probe runs GEMM and HBM kernels beside that work: the job slows down, "
        "and the figures may read low.\nProbe anyway?"
    )


def worst_verdict(report: ProbeReport) -> tuple[str, list[int]]:
    """The worst GPU verdict of a report and the GPUs that have it."""
    if not report.verdicts:
        return "", []
    worst = max((v.verdict for v in report.verdicts), key=lambda v: PROBE_RANK.get(v, 0))
    return worst, sorted(v.gpu for v in report.verdicts if v.verdict == worst)


def report_markup(report: ProbeReport) -> str:
    """A finished run: the headline (the worst verdict, never "ok" over a slow GPU),
    per-GPU table and every reason, as Textual markup."""
    role = STATUS_ROLE.get(report.status, "muted")
    took = max(0.0, report.finished - report.started)
    model = report.model or "unknown model"
    where = " · simulated GPUs (CPU)" if report.simulated and "CPU" not in model else ""
    worst, gpus = worst_verdict(report)
    if worst and worst != "pass" and not report.error:
        which = ", ".join(str(g) for g in gpus)
        headline = f"[b ${PROBE_ROLE[worst]}]{worst}[/]: GPU {which} · run {report.status}"
    elif worst == "pass" and report.status == "ok":
        headline = f"[${PROBE_ROLE['pass']}]all GPUs pass[/]"
    else:
        headline = f"[${role}]{report.status}[/]"
    lines = [
        f"[b]{escape(report.suite)}[/] suite: {headline} in {took:.1f} s · {escape(model)}{where}"
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


def many_warnings(nodes: Sequence[NodeSnapshot], acked: Mapping[str, str]) -> list[str]:
    """What `P` says before probing several nodes, as `p` does for one: which are busy
    (their jobs slow down) and which are acknowledged (known bad, maybe being repaired)."""
    busy = [n.name for n in nodes if busy_question(n) is not None]
    held = [f"{n.name} ({acked[n.name]})" for n in nodes if n.name in acked]
    lines = []
    if busy:
        lines.append(f"Busy, their jobs slow down: {_few(busy)}")
    if held:
        lines.append(f"Acknowledged as known bad: {_few(held)}")
    return lines


def _few(names: Sequence[str], shown: int = 6) -> str:
    return ", ".join(names[:shown]) + (
        f" and {len(names) - shown} more" if len(names) > shown else ""
    )
