"""A broken interval's reasons: every cause seen while it held, each shape once, bounded.

The agent reports a lost GPU in a sample and its XID 79 from its event thread: the node
can turn broken on the sample a tick before the XID joins its reasons. The interval must
still carry the XID, the evidence a provider's RMA desk asks for.
"""

from __future__ import annotations

from dataclasses import replace

from fleet.model import NodeSnapshot
from history.states import MAX_INTERVAL_REASONS, NodeStateBook, StateInterval
from testkit.snapshots import T0, demo_snapshot


def broken(node: NodeSnapshot, *reasons: str) -> NodeSnapshot:
    return replace(node, state="broken", broken_reasons=reasons, state_since=T0)


def ticks(*reason_sets: tuple[str, ...]) -> NodeStateBook:
    """One snapshot a second with node-0001 broken for ``reason_sets`` in turn."""
    healthy = demo_snapshot(2, faults=False)
    book = NodeStateBook(session_file="s.parquet")
    for i, reasons in enumerate(reason_sets):
        t = T0 + i
        nodes = (broken(healthy.nodes[0], *reasons), healthy.nodes[1])
        book.apply(replace(healthy, taken_at=t, nodes=nodes))
        book.take_dirty()
    return book


def interval(book: NodeStateBook) -> StateInterval:
    (only,) = [i for i in book.intervals() if i.node == "node-0001"]
    return only


def test_an_xid_that_joins_a_tick_later_is_kept_with_the_first_cause() -> None:
    book = ticks(
        ("GPU 3 lost (GPU lost)", "7 of 8 GPUs healthy"),
        ("GPU 3 lost (XID 79): GPU has fallen off the bus", "7 of 8 GPUs healthy"),
    )
    assert interval(book).reasons == (
        "GPU 3 lost (GPU lost)",
        "7 of 8 GPUs healthy",
        "GPU 3 lost (XID 79): GPU has fallen off the bus",
    )
    assert interval(book).end_ms is None  # one broken interval, still open


def test_a_cause_that_joins_marks_the_file_to_be_written_again() -> None:
    healthy = demo_snapshot(1, faults=False)
    book = NodeStateBook(session_file="s.parquet")
    first = broken(healthy.nodes[0], "GPU 3 lost (GPU lost)")
    book.apply(replace(healthy, taken_at=T0, nodes=(first,)))
    assert book.take_dirty()
    book.apply(replace(healthy, taken_at=T0 + 1, nodes=(first,)))
    assert book.take_dirty() == {}  # nothing new: nothing to write
    second = broken(healthy.nodes[0], "GPU 3 lost (XID 79)")
    book.apply(replace(healthy, taken_at=T0 + 2, nodes=(second,)))
    (frame,) = book.take_dirty().values()
    assert frame["reasons"].to_list() == [["GPU 3 lost (GPU lost)", "GPU 3 lost (XID 79)"]]


def test_the_same_cause_measured_again_is_not_a_new_reason() -> None:
    book = ticks(
        ("mlx5_0/1 symbol_error 45/s", "GPU 2 XID 48: Double Bit ECC (x3 within 60 s)"),
        ("mlx5_0/1 symbol_error 7/s", "GPU 2 XID 48: Double Bit ECC (x4 within 60 s)"),
        ("mlx5_0/1 symbol_error 9.5/s", "GPU 4 NVLink CRC 120/s on 2 links", "6 of 8 GPUs healthy"),
        ("GPU 4 NVLink CRC 80/s on 3 links", "5 of 8 GPUs healthy"),
    )
    assert interval(book).reasons == (
        "mlx5_0/1 symbol_error 45/s",
        "GPU 2 XID 48: Double Bit ECC (x3 within 60 s)",
        "GPU 4 NVLink CRC 120/s on 2 links",
        "6 of 8 GPUs healthy",
    )


def test_another_gpu_port_or_xid_is_a_new_reason() -> None:
    book = ticks(
        ("GPU 3 lost (XID 79)", "mlx5_0/1 symbol_error 45/s"),
        ("GPU 5 lost (XID 79)", "mlx5_1/1 symbol_error 45/s", "GPU 3 XID 48: Double Bit ECC"),
    )
    assert len(interval(book).reasons) == 5


def test_a_node_that_changes_its_words_every_tick_is_bounded() -> None:
    book = ticks(*((f"GPU lost (agent note {i})",) for i in range(3 * MAX_INTERVAL_REASONS)))
    reasons = interval(book).reasons
    assert len(reasons) == MAX_INTERVAL_REASONS
    assert reasons[0] == "GPU lost (agent note 0)"


def test_an_unreachable_interval_keeps_its_first_reason() -> None:
    """``no sample for N s`` grows every tick; only broken intervals gather causes."""
    healthy = demo_snapshot(1, faults=False)
    book = NodeStateBook(session_file="s.parquet")
    for i in range(3):
        node = replace(
            healthy.nodes[0],
            state="unreachable",
            status="unreachable",
            broken_reasons=(f"unreachable: no sample for {10 + i} s",),
            sampled_at=T0 - 30,
            state_since=T0,
        )
        book.apply(replace(healthy, taken_at=T0 + i, nodes=(node,)))
    assert interval(book).reasons == ("unreachable: no sample for 10 s",)
