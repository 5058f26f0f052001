"""Turning the probe's lines into events and, at the end, one ``ProbeReport``."""

from __future__ import annotations

import time
from collections.abc import Callable

from probes.messages import Done, Error, Hello, ProbeMessage, Progress, Result, Skip
from probes.report import (
    ProbeEvent,
    ProbeFailure,
    ProbeMeasurement,
    ProbeProgress,
    ProbeReport,
    RunStatus,
    Suite,
)

ProgressCallback = Callable[[ProbeEvent], None]
_DONE_STATUS: dict[str, RunStatus] = {
    "ok": "ok",
    "incomplete": "incomplete",
    "timeout": "timeout",
    "terminated": "cancelled",
    "error": "error",
}


class RunCollector:
    """Accumulates one run's messages and hands each event to the callback as it comes."""

    def __init__(
        self,
        node: str,
        suite: Suite,
        python: str,
        on_event: ProgressCallback | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.node = node
        self.suite: Suite = suite
        self.python = python
        self._on_event = on_event
        self._clock = clock
        self.started = clock()
        self.hello: Hello | None = None
        self.done: Done | None = None
        self.pid: int | None = None
        self.measurements: list[ProbeMeasurement] = []
        self.failures: list[ProbeFailure] = []
        self.status: RunStatus | None = None
        self.error = ""

    def accept(self, message: ProbeMessage) -> None:
        """Record one message from the probe."""
        if isinstance(message, Hello):
            self.hello = message
            self.pid = message.pgid
        elif isinstance(message, Progress):
            self._emit(
                ProbeProgress(
                    self.node,
                    message.probe,
                    message.gpu,
                    message.step,
                    message.steps,
                    message.message,
                )
            )
        elif isinstance(message, Result):
            self._measure(message)
        elif isinstance(message, Error):
            self._error(message)
        elif isinstance(message, Done):
            self.done = message
        elif isinstance(message, Skip):
            pass  # a probe that does not apply (one GPU, no all-reduce) is not a finding

    def fail_run(self, status: RunStatus, code: str, message: str) -> None:
        """The runner's own verdict on the run (time limit, cancellation, lost node)."""
        self.status = status
        if status == "error":
            self.error = self.error or message
        if status != "cancelled":
            self._add_failure(ProbeFailure(self.node, code, message))

    def report(self) -> ProbeReport:
        """The run as it stands (unjudged)."""
        hello = self.hello
        return ProbeReport(
            node=self.node,
            suite=self.suite,
            status=self._final_status(),
            started=self.started,
            finished=self._clock(),
            model=hello.gpus[0].name if hello and hello.gpus else None,
            simulated=bool(hello and hello.simulated),
            gpus=tuple(g.index for g in hello.gpus) if hello else (),
            measurements=tuple(self.measurements),
            failures=tuple(self.failures),
            error=self.error,
            pgid=self.pid,
        )

    def _final_status(self) -> RunStatus:
        if self.status is not None:
            return self.status
        if self.done is not None:
            return _DONE_STATUS.get(self.done.status, "error")
        return "error"

    def _measure(self, result: Result) -> None:
        m = ProbeMeasurement(
            node=self.node,
            probe=result.probe,
            metric=result.metric,
            gpu=result.gpu,
            value=result.value,
            unit=result.unit,
            ok=result.ok,
            detail=result.detail,
            stand_in=result.stand_in,
        )
        self.measurements.append(m)
        self._emit(m)

    def _error(self, error: Error) -> None:
        message = self._explain(error)
        if error.probe is None and error.code in ("no_torch", "no_gpu", "bad_request"):
            self.error = message
        self._add_failure(
            ProbeFailure(self.node, error.code, message, error.probe, tuple(error.gpus))
        )

    def _explain(self, error: Error) -> str:
        if error.code == "no_torch":
            return (
                f"probe_python {self.python!r} on {self.node} has no torch: "
                "install torch there or set [probes] probe_python"
            )
        if error.code == "no_gpu":
            return f"no GPU on {self.node}: {error.message}"
        return error.message

    def _add_failure(self, failure: ProbeFailure) -> None:
        self.failures.append(failure)
        self._emit(failure)

    def _emit(self, event: ProbeEvent) -> None:
        if self._on_event is not None:
            self._on_event(event)
