"""[alerts] what the dashboard and the recorder do when a node breaks (docs/dashboard.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from fleet.settings.base import Section

AlertOn = Literal["broken", "unreachable", "fail", "lost", "warn", "probe"]


class AlertsSection(Section):
    """[alerts] bell, webhook and command hook on transitions to broken or failed."""

    on: tuple[AlertOn, ...] = ("broken", "fail", "lost", "probe")
    """Which transitions alert: a node becoming `broken` or `unreachable`, a GPU or port
    verdict becoming `fail`, `lost` or `warn`, a `probe` flagging a GPU (slow, straggler,
    fail)."""
    bell: bool = True
    """Ring the terminal bell (and show a notification) in the dashboard on an alert."""
    notify: bool = False
    """Also send a desktop notification through the terminal on an alert (OSC 9 and
    OSC 777 escape sequences; terminals that know neither ignore them; inside tmux they
    need `set -g allow-passthrough on`)."""
    webhook: str | None = Field(default=None, pattern=r"^https?://\S+$")
    """URL to POST each alert to as JSON: node, gpu, verdict, reasons, time (ISO 8601 UTC),
    t (unix seconds), kind, text. Unset: no webhook."""
    webhook_timeout_s: float = Field(default=5.0, gt=0.0, le=60.0)
    """Seconds one webhook request may take in all (connect, send, answer); a receiver
    still answering then is cut off and the attempt failed."""
    command: tuple[str, ...] = ()
    """A program and its arguments to run per alert, the alert's JSON on its standard
    input, e.g. ["notify-send", "gpufleet"]. Run without a shell. Empty: none."""
    command_timeout_s: float = Field(default=10.0, gt=0.0, le=300.0)
    """Seconds the command may run before it is stopped."""
    retries: int = Field(default=3, ge=0, le=10)
    """A failed webhook or command delivery is tried again this many times, then
    recorded in the event log as failed."""
    retry_backoff_s: float = Field(default=2.0, gt=0.0, le=300.0)
    """Seconds before the first retry; each later wait doubles."""
    retry_backoff_max_s: float = Field(default=60.0, gt=0.0, le=3600.0)
    """The longest wait between two tries."""
    repeat_after_s: float = Field(default=900.0, ge=0.0)
    """The same alert (node, GPU, verdict) is not sent again within this many seconds:
    a flapping GPU alerts once, not every flap."""
    max_per_minute: int = Field(default=20, ge=1, le=10_000)
    """At most this many alerts are sent per minute; the rest of the same tick go out
    at once as one storm alert naming their nodes and the count (a fleet-wide outage is
    one storm, not 1,000 webhooks)."""

    @field_validator("command")
    @classmethod
    def _program_named(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if value and not value[0].strip():
            raise ValueError('expected the program first, e.g. ["notify-send", "gpufleet"]')
        return value
