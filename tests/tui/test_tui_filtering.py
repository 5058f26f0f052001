"""Filters (hostlists through the domain's expander), sort orders and broken intervals."""

from __future__ import annotations

from dataclasses import replace

import pytest

from fleet.facade import InventoryError, current_interval, expand_hosts
from testkit.snapshots import T0, demo_snapshot
from testkit.static_fleet import StaticFleet
from tui.node_view import SummaryCache, parse_filter, sort_nodes, summarize
from tui.screens.export_screen import export_range


def expand(text: str) -> list[str]:
    return expand_hosts([text])


def test_expand_ranges_and_lists() -> None:
    assert expand("node-[001-003]") == ["node-001", "node-002", "node-003"]
    assert expand("a[1-2]b[8,10]") == ["a1b8", "a1b10", "a2b8", "a2b10"]
    assert expand("x,y[09-10]") == ["x", "y09", "y10"]


@pytest.mark.parametrize("bad", ["n[1-", "n]1[", "n[3-1]", "n[a-b]", "n[[1]]"])
def test_expand_rejects_malformed(bad: str) -> None:
    with pytest.raises(InventoryError):
        expand(bad)


@pytest.mark.parametrize("bad", ["n[1-", "n[3-1]", "n[[1]]", "node-[0001-0003],a_b"])
def test_a_malformed_hostlist_filter_says_why_in_the_domain_s_words(bad: str) -> None:
    # The filter box shows the message of a ValueError: the expander's own sentence.
    with pytest.raises(ValueError, match=r"hostlist expression|not a hostname"):
        parse_filter(bad)


def test_a_hostlist_filter_names_hosts_as_the_inventory_does() -> None:
    # ClusterShell's stepped ranges: the TUI's own parser refused them.
    assert names("node-[0002-0008/3]") == ["node-0002", "node-0005", "node-0008"]


def names(text: str) -> list[str]:
    snap = demo_snapshot(16)
    pred = parse_filter(text)
    return [n.name for n in snap.nodes if pred(n, summarize(n))]


def test_filters() -> None:
    assert names("") == [f"node-{i:04d}" for i in range(1, 17)]
    assert names("0001") == ["node-0001"]
    assert names("node-[0010-0012]") == ["node-0010", "node-0011", "node-0012"]
    assert names("state:broken") == ["node-0003", "node-0005", "node-0007"]
    assert names("state:unreachable") == ["node-0012"]
    assert names("state:warn") == ["node-0009", "node-0011", "node-0014"]
    assert names("state:broken|unreachable node-[0001-0005]") == ["node-0003", "node-0005"]
    with pytest.raises(ValueError, match="unknown state"):
        parse_filter("state:exploded")


def test_sort_orders() -> None:
    snap = demo_snapshot(16)
    cache = SummaryCache()
    cache.refresh()
    by_health = sort_nodes(snap.nodes, "health", cache)
    assert [n.name for n in by_health[:4]] == ["node-0012", "node-0003", "node-0007", "node-0005"]
    by_util = sort_nodes(snap.nodes, "utilization", cache)
    # The unreachable node's figures are drawn as N/A, so it sorts with the N/As: last.
    assert by_util[-1].name == "node-0012"
    utils = [cache.get(n).util or -1 for n in by_util[:-1]]
    assert utils == sorted(utils, reverse=True)
    shuffled = tuple(reversed(snap.nodes))
    assert [n.name for n in sort_nodes(shuffled, "name", cache)] == [n.name for n in snap.nodes]


def test_summary_cache_reuses_unchanged_nodes() -> None:
    snap = demo_snapshot(4)
    cache = SummaryCache()
    cache.refresh()
    first = cache.get(snap.nodes[0])
    changed = replace(snap.nodes[1], last_seen=T0 + 1)
    cache.refresh()
    assert cache.get(snap.nodes[0]) is first
    assert cache.get(changed) == summarize(changed)


def test_broken_intervals_are_the_ones_history_records() -> None:
    snap = demo_snapshot(16)
    node = snap.node("node-0003")
    assert node is not None and node.state_since is not None and node.state_since > T0 - 8_000
    went = replace(node, state="broken", state_since=T0 - 9_000, broken_reasons=("GPU 1 lost",))
    back = replace(node, state="up", state_since=T0 - 8_000, broken_reasons=())
    fleet = StaticFleet(
        [
            replace(snap, taken_at=T0 - 9_000, nodes=(went,)),
            replace(snap, taken_at=T0 - 8_000, nodes=(back,)),
            snap,
        ]
    )
    intervals = fleet.broken_intervals("node-0003")
    assert [(i.state, i.end) for i in intervals] == [("broken", None), ("broken", T0 - 8_000)]
    assert intervals[0].reasons == ("GPU 5 lost (XID 79)",)
    assert intervals[1].reasons == ("GPU 1 lost",)
    assert fleet.broken_intervals("node-0001") == []


def test_without_a_state_history_the_current_interval_is_what_is_known() -> None:
    snap = demo_snapshot(16)
    healthy, broken = snap.node("node-0001"), snap.node("node-0003")
    assert healthy is not None and broken is not None
    assert current_interval(healthy) is None
    now = current_interval(broken)
    assert now is not None and now.end is None
    assert (now.state, now.start) == ("broken", broken.state_since)


def test_export_range() -> None:
    assert export_range("7d", "", "") == ("7d", None)
    assert export_range("24h", "", "2026-11-20") == ("24h", "2026-11-20")
    assert export_range("date", "2026-11-01", "2026-11-15") == ("2026-11-01", "2026-11-15")
    with pytest.raises(ValueError, match="first day"):
        export_range("date", "", "")
    with pytest.raises(ValueError, match="after the last"):
        export_range("date", "2026-11-20", "2026-11-01")
    with pytest.raises(ValueError):
        export_range("7d", "", "yesterday")
