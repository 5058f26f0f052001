"""Measuring an ``unsure`` straggler again before its verdict is shown.

A straggler that rests on one measurement near the bar may be noise (a busy host, a
neighbour's job). The runner runs the suite again on those GPUs only, up to a bounded
number of times; each repeat's figures join the report (a GPU is compared by the
median of its repeats) and the report is judged again, until every straggler is
``sure`` or cleared (see ``probes.verdicts``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable

from probes.collect import ProgressCallback
from probes.report import ProbeProgress, ProbeReport
from probes.verdicts import unsure_stragglers

Judge = Callable[[ProbeReport], ProbeReport]
Rerun = Callable[[str], Awaitable[ProbeReport]]  # GPU selection like "3,5" -> its report


async def confirm_stragglers(
    report: ProbeReport,
    judge: Judge,
    rerun: Rerun,
    repeats: int,
    on_progress: ProgressCallback | None = None,
    stopped: Callable[[], bool] = lambda: False,
) -> ProbeReport:
    """``report`` judged, with its unsure stragglers measured again up to ``repeats`` times.

    Args:
        report: the first run, unjudged.
        judge: judges one report (against its node, or with the fleet's peers).
        rerun: runs the suite on a GPU selection and returns that run's report.
        repeats: the most repeats.
        on_progress: told before each repeat, as a ``repeat`` progress event.
        stopped: true once the operator cancelled: no further repeat starts.

    Returns:
        The judged report. A repeat that does not end ``ok`` (cancelled, timed out,
        node lost) ends the repeats; the verdict then keeps its ``unsure`` confidence.
    """
    judged = judge(report)
    for attempt in range(1, repeats + 1):
        unsure = unsure_stragglers(judged)
        if not unsure or judged.status != "ok" or stopped():
            break
        gpus = ",".join(str(gpu) for gpu in unsure)
        if on_progress is not None:
            message = f"unsure straggler: measuring GPU {gpus} again ({attempt} of {repeats})"
            on_progress(ProbeProgress(report.node, "repeat", unsure[0], 0, 1, message))
        again = await rerun(gpus)
        if again.status != "ok":
            break
        report = dataclasses.replace(
            report, finished=again.finished, measurements=report.measurements + again.measurements
        )
        judged = judge(report)
    return judged
