"""Property: no agent line, however made, escapes decode → state → tick → history → /metrics.

A ``fuzz`` node sends lines hypothesis makes (valid messages with values replaced by
arbitrary JSON, raw bytes, control characters); a ``good`` node beside it streams
normally and reports XID 48. Whatever the fuzz node sends, nothing raises, the
exposition still parses, no raw escape reaches a label, and the good node's
telemetry and event are what it sent.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import polars as pl
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from collectors.protocol import ProtocolError, decode_line
from collectors.updates import NodeMessage, NodeStatusChange
from exporter.text import render_exposition
from fleet.state import FleetState, NodeSpec
from gpufleet.config import parse_config
from history.recorder import HistoryRecorder
from tests.fleet.feed import NodeFeed, start

CONFIG = parse_config({"fleet": {"hosts": ["good", "fuzz"]}})

# The edges of every range a sink has (UInt16 GPU index, Int64 code, datetime, uint64,
# float to int): drawn often, since plain integers rarely land on them.
edges = st.sampled_from(
    [-1, 65_536, 2**63, 2**64, -(2**63) - 1, 2**64 - 1, 1e300, -1e300, 1e19, 2.5e15, 0]
)
leaves = st.one_of(
    edges,
    edges,
    edges,
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from(["\x1b]52;c;aGk=\x07", "\u202e", "\x9b2J", "\x00", "x" * 5000]),
)
json_values = st.recursive(
    leaves,
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=6), kids, max_size=4)
    ),
    max_leaves=12,
)


def _bases(feed: NodeFeed) -> list[dict[str, Any]]:
    messages = [feed.hello(), feed.sample(), feed.event("xid", gpu=1, code=79)]
    return [json.loads(json.dumps(_plain(m.message))) for m in messages]


def _plain(message: object) -> object:
    import msgspec

    return msgspec.to_builtins(message)


@st.composite
def mutated(draw: st.DrawFn, base: dict[str, Any]) -> bytes:
    """``base`` with a few values, at any depth, replaced by arbitrary JSON."""
    obj = json.loads(json.dumps(base))
    for _ in range(draw(st.sampled_from([1, 1, 1, 2, 3]))):
        node: Any = obj
        for _depth in range(draw(st.sampled_from([0, 0, 0, 1, 2, 3]))):
            keys = list(node) if isinstance(node, dict) else list(range(len(node)))
            if not keys:
                break
            child = node[draw(st.sampled_from(keys))]
            if not isinstance(child, dict | list):
                break
            node = child
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        if keys:
            node[draw(st.sampled_from(keys))] = draw(json_values)
    return json.dumps(obj).encode()


def lines() -> st.SearchStrategy[bytes]:
    bases = _bases(NodeFeed("fuzz", gpus=2, ports=1, nvlinks=2))
    return st.one_of(
        *(mutated(base) for base in bases),
        st.binary(max_size=300),
        st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
    )


def _feed_fuzz(state: FleetState, fuzz: NodeFeed, line: bytes) -> None:
    """What the transport does with one line: deliver it, or mark the node."""
    try:
        message = decode_line(line)
    except ProtocolError as exc:
        state.ingest(NodeStatusChange(fuzz.name, "protocol-error", str(exc), fuzz.t))
        return
    state.ingest(NodeMessage(fuzz.name, message, fuzz.t))


def _labels_clean(exposition: str) -> bool:
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            for value in sample.labels.values():
                if any(ch in value for ch in "\x1b\x07\x9b\u202e\n"):
                    return False
    return True


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(fuzzed=st.lists(lines(), min_size=1, max_size=6))
# The minimal line and its relatives, always tried.
@example(fuzzed=[b'{"v":1,"type":"event","t":1001,"kind":"xid","gpu":-1,"code":79}'])
@example(
    fuzzed=[b'{"v":1,"type":"event","t":1001,"kind":"xid","gpu":0,"code":9223372036854775808}']
)
@example(fuzzed=[b'{"v":1,"type":"event","t":1e300,"kind":"xid","gpu":0,"code":79}'])
@example(fuzzed=[b'{"v":1,"type":"event","t":1001,"kind":"x\xff","gpu":0}'])
def test_no_agent_line_escapes_the_pipeline(fuzzed: list[bytes]) -> None:
    good, fuzz = NodeFeed("good", gpus=2, ports=1), NodeFeed("fuzz", gpus=2, ports=1)
    state = FleetState([NodeSpec("good", 2), NodeSpec("fuzz", 2)], CONFIG.health)
    with tempfile.TemporaryDirectory() as data:
        recorder = HistoryRecorder(Path(data), CONFIG.history, clock=lambda: good.t)
        start(state, good)
        start(state, fuzz)
        for line in fuzzed:
            fuzz.t = good.t
            _feed_fuzz(state, fuzz, line)
            state.ingest(good.sample())
            snapshot = state.snapshot(good.t)
            recorder.record(snapshot)
            exposition = render_exposition(snapshot).decode()
            assert _labels_clean(exposition)
        state.ingest(good.event("xid", gpu=1, code=48))
        state.ingest(good.sample())
        snapshot = state.snapshot(good.t)
        recorder.record(snapshot)
        recorder.close()
        events = pl.read_parquet(list(Path(data, "events").rglob("*.parquet")))

    node = snapshot.node("good")
    assert node is not None
    assert [g.util_gpu for g in node.gpus] == [50, 50]
    assert [g.power_w for g in node.gpus] == [300.5, 300.5]
    assert node.gpus[1].verdict == "fail" and node.gpus[0].verdict == "ok"
    good_events = events.filter(pl.col("node") == "good")
    assert good_events["code"].to_list() == [48]
