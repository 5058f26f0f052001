"""Words for start-up and for a node without NVML: `connecting` in the event log, not
`unreachable`; failures keep their words; no NVML is named first."""

from __future__ import annotations

from fleet.event_log import transition_text
from fleet.health.node import judge_node, node_status_view
from fleet.settings.health_section import HealthSection


def test_start_up_is_connecting_in_the_event_log() -> None:
    assert transition_text("unreachable", ("connecting: no sample yet",)) == (
        "node connecting: no sample yet",
        "info",
    )
    assert transition_text("unreachable", ("no sample yet",)) == (
        "node connecting: agent started, waiting for its first sample",
        "info",
    )


def test_a_failure_keeps_unreachable_and_its_cause() -> None:
    text, severity = transition_text("unreachable", ("unreachable: connection refused",))
    assert (text, severity) == ("node unreachable: unreachable: connection refused", "bad")
    assert transition_text("broken", ("GPU 5 lost (XID 79)",)) == (
        "node broken: GPU 5 lost (XID 79)",
        "bad",
    )


def test_a_node_without_nvml_names_it_first() -> None:
    view = node_status_view("streaming", "", 100.0, 1.0, HealthSection(), 100.0)
    judged = judge_node(view, [], 8, [], HealthSection(), 100.0, "NVMLError_LibraryNotFound")
    assert judged.state == "broken"
    assert judged.reasons == (
        "no NVML (NVMLError_LibraryNotFound)",
        "0 of 8 GPUs healthy",
        "0 of 8 GPUs visible",
    )
