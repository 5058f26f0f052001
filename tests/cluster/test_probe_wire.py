"""Probe events on the bus: round trip, and what a viewer drops."""

from __future__ import annotations

import asyncio

import msgspec
import pytest
from nats.aio.msg import Msg

from cluster.fleet_sla import LedgerRequest
from cluster.probe_wire import (
    MAX_EVENT_BYTES,
    MAX_EVENTS,
    TEXT_LIMIT,
    ProbeRequest,
    ProgressForwarder,
    ProgressInbox,
    decode_probe_event,
    encode_probe_event,
)
from cluster.remote_export import ExportAsk
from probes.report import ProbeEvent, ProbeFailure, ProbeMeasurement, ProbeProgress

EVENTS: list[ProbeEvent] = [
    ProbeProgress("node-001", "gemm", 0, 1, 4, "bf16"),
    ProbeMeasurement("node-001", "gemm", "bf16", 0, 712.4, "TFLOPS", verdict="pass"),
    ProbeFailure("node-001", "probe_failed", "hbm: out of memory", "hbm", (1,)),
]


def test_every_kind_of_event_comes_back_as_it_was_sent() -> None:
    assert [decode_probe_event(encode_probe_event(e), "node-001") for e in EVENTS] == EVENTS


def test_events_about_another_node_or_malformed_are_dropped() -> None:
    assert decode_probe_event(encode_probe_event(EVENTS[0]), "node-002") is None
    assert decode_probe_event(b"\xc1", "node-001") is None
    assert decode_probe_event(msgspec.msgpack.encode([None, None, None]), "node-001") is None
    bad_step = msgspec.msgpack.encode([["node-001", "gemm", 0, "one", 4, ""], None, None])
    assert decode_probe_event(bad_step, "node-001") is None


async def test_the_forwarder_sends_in_order_and_counts_what_went_out() -> None:
    sent: list[tuple[str, bytes]] = []

    async def publish(subject: str, data: bytes) -> None:
        await asyncio.sleep(0)  # a real publish yields to the loop
        sent.append((subject, data))

    forward = ProgressForwarder(publish, "_INBOX.x")
    for event in EVENTS:
        forward(event)  # the runner calls back synchronously
    await forward.close()
    assert forward.sent == 3
    assert [decode_probe_event(d, "node-001") for _, d in sent] == EVENTS
    assert {s for s, _ in sent} == {"_INBOX.x"}


def test_progress_goes_only_to_an_inbox_and_asks_stay_in_range() -> None:
    asked = msgspec.msgpack.encode(["node-001", "quick", "_INBOX.aBc12.7"])
    assert msgspec.msgpack.decode(asked, type=ProbeRequest).progress == "_INBOX.aBc12.7"
    spoof = msgspec.msgpack.encode(["node-001", "quick", "gpufleet.summary.1"])
    with pytest.raises(msgspec.ValidationError):
        msgspec.msgpack.decode(spoof, type=ProbeRequest)  # other viewers read that subject
    with pytest.raises(msgspec.ValidationError):
        msgspec.msgpack.decode(msgspec.msgpack.encode([0, 10**18]), type=LedgerRequest)
    with pytest.raises(msgspec.ValidationError):
        ask = ["7d", None, "node", "1h", 1.8e9, 1e12]  # a rolling window of 30,000 years
        msgspec.msgpack.decode(msgspec.msgpack.encode(ask), type=ExportAsk)


def test_an_events_text_is_made_safe_and_a_huge_one_is_dropped() -> None:
    hostile = ProbeFailure("node-001", "probe_failed", "\x1b]52;c;cm0gLXJm\x07 " + "x" * 900)
    got = decode_probe_event(encode_probe_event(hostile), "node-001")
    assert isinstance(got, ProbeFailure)
    assert "\x1b" not in got.message and got.message.startswith("\\x1b]52")
    assert len(got.message) == TEXT_LIMIT
    reasons = tuple(f"\u202ereason {i}" for i in range(40))
    measured = ProbeMeasurement("node-001", "gemm", "bf16", 0, 1.0, "TFLOPS", reasons=reasons)
    got_m = decode_probe_event(encode_probe_event(measured), "node-001")
    assert isinstance(got_m, ProbeMeasurement) and len(got_m.reasons) == 16
    assert all(r.startswith("\\u202e") for r in got_m.reasons)
    huge = ProbeProgress("node-001", "gemm", 0, 1, 4, "y" * MAX_EVENT_BYTES)
    assert decode_probe_event(encode_probe_event(huge), "node-001") is None


async def test_a_flood_on_the_inbox_stops_at_the_bound_and_is_counted() -> None:
    shown: list[ProbeEvent] = []
    inbox = ProgressInbox("node-001", shown.append)
    data = encode_probe_event(EVENTS[0])
    for _ in range(MAX_EVENTS + 10):
        await inbox.on_message(Msg(None, "_INBOX.x", "", data))  # type: ignore[arg-type]
    assert len(shown) == MAX_EVENTS and inbox.dropped == 10
