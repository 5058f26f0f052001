"""The renderer across chunks of nodes: the same series as the collector path, whatever moves."""

from __future__ import annotations

import math
from dataclasses import replace

from bench.lib.metrics_fleets import fleet
from exporter.text import NODES_PER_CHUNK, ExpositionRenderer
from fleet.model import FleetSnapshot, NodeSnapshot, PortSnapshot
from tests.metrics.test_parity import collector_text, parse


def _with_counters(port: PortSnapshot, **values: int | float | None) -> PortSnapshot:
    return replace(port, counters=tuple((n, values.get(n, v)) for n, v in port.counters))


def _map_node(snapshot: FleetSnapshot, index: int, node: NodeSnapshot) -> FleetSnapshot:
    nodes = list(snapshot.nodes)
    nodes[index] = node
    return replace(snapshot, nodes=tuple(nodes))


def _raw(parsed: dict, node: str, port: str) -> dict[str, float]:  # type: ignore[type-arg]
    samples = parsed["gpufleet_port_raw_value"][2]
    return {
        dict(labels)["counter"]: value
        for _, labels, value in samples
        if dict(labels)["node"] == node and dict(labels)["port"] == port
    }


def test_a_fleet_of_several_chunks_says_what_the_collector_says() -> None:
    renderer = ExpositionRenderer()
    first = fleet(NODES_PER_CHUNK * 2 + 3, gpus=2, ports=2)
    assert parse(renderer.render(first)) == parse(collector_text(first))
    # Next tick: every value moved (new objects), one node in the middle chunk left.
    later = fleet(NODES_PER_CHUNK * 2 + 3, gpus=2, ports=2, seed=8)
    later = replace(later, nodes=later.nodes[:70] + later.nodes[71:])
    text = renderer.render(later)
    assert parse(text) == parse(collector_text(later))
    assert b'node="n0071"' not in text


def test_missing_and_non_finite_port_counters_are_omitted_sample_by_sample() -> None:
    renderer = ExpositionRenderer(raw_port_counters=True)
    base = fleet(3, gpus=1, ports=2)
    renderer.render(base)
    node = base.nodes[1]
    port = node.ports[0]
    names = [name for name, _ in port.counters]
    gone, nan, big = names[0], names[1], names[2]
    odd = _with_counters(port, **{gone: None, nan: math.nan, big: 2**64 - 1})
    second = _map_node(base, 1, replace(node, ports=(odd, node.ports[1])))
    parsed = parse(renderer.render(second))
    assert parsed == parse(collector_text(second, raw_port_counters=True))
    raw = _raw(parsed, node.name, port.name)
    assert gone not in raw and nan not in raw
    assert raw[big] == float(2**64 - 1)
    # The counter comes back: the cached layout with the gap must not hide it.
    restored = _with_counters(port, **{gone: 5})
    back = _map_node(base, 1, replace(node, ports=(restored, node.ports[1])))
    parsed = parse(renderer.render(back))
    assert parsed == parse(collector_text(back, raw_port_counters=True))
    assert _raw(parsed, node.name, port.name)[gone] == 5.0


def test_a_port_whose_counter_names_change_gets_new_labels() -> None:
    renderer = ExpositionRenderer(raw_port_counters=True)
    base = fleet(2, gpus=1, ports=1)
    renderer.render(base)
    node = base.nodes[0]
    port = node.ports[0]
    renamed = replace(port, counters=(("only_this", 7), *port.counters[1:]))
    second = _map_node(base, 0, replace(node, ports=(renamed,)))
    parsed = parse(renderer.render(second))
    assert parsed == parse(collector_text(second, raw_port_counters=True))
    assert _raw(parsed, node.name, port.name)["only_this"] == 7.0
    assert port.counters[0][0] not in _raw(parsed, node.name, port.name)


def test_the_renderer_offers_the_interpreter_between_chunks() -> None:
    calls: list[int] = []
    renderer = ExpositionRenderer(between_chunks=lambda: calls.append(1))
    renderer.render(fleet(NODES_PER_CHUNK * 3 + 1, gpus=1))
    assert len(calls) == 4


def test_percent_signs_and_quotes_from_a_node_stay_literal() -> None:
    base = fleet(2, gpus=1, ports=1)
    node = base.nodes[0]
    gpu = replace(node.gpus[0], name='H100 %s "80%" \\ %r')
    port = node.ports[0]
    odd = replace(port, name="mlx5_%d/1", counters=(('err%s"x', 3), *port.counters[1:]))
    second = _map_node(base, 0, replace(node, name="n%01", gpus=(gpu,), ports=(odd,)))
    renderer = ExpositionRenderer(raw_port_counters=True)
    parsed = parse(renderer.render(second))
    assert parsed == parse(collector_text(second, raw_port_counters=True))
    assert _raw(parsed, "n%01", "mlx5_%d/1")['err%s"x'] == 3.0
    models = {dict(labels)["model"] for _, labels, _ in parsed["gpufleet_gpu_power_watts"][2]}
    assert 'H100 %s "80%" \\ %r' in models
