"""What a controller decodes from a healthy simulated node: every message is protocol v1."""

from __future__ import annotations

import json
import re
from pathlib import Path

from collectors.agent import wire
from collectors.agent.fields import GPU_FIELDS, GPU_SLOW_FIELDS, NIC_FIELDS, PORT_FIELDS
from collectors.protocol import Error, decode_line


def test_hello_declares_gpus_ports_and_field_orders(agent_run) -> None:  # type: ignore[no-untyped-def]
    run = agent_run(samples=2)
    hello = run.hello
    assert hello.host == "node-001" and hello.interval == 1.0 and hello.slow_interval == 5.0
    assert hello.gpu_fields == list(GPU_FIELDS) and hello.gpu_slow_fields == list(GPU_SLOW_FIELDS)
    assert hello.port_fields == list(PORT_FIELDS) and hello.nic_fields == list(NIC_FIELDS)
    assert [g.index for g in hello.gpus] == list(range(8))
    assert len({g.uuid for g in hello.gpus}) == 8 and all(
        g.uuid.startswith("GPU-") for g in hello.gpus
    )
    assert all(g.nvlinks > 0 and g.memory_total_bytes for g in hello.gpus)
    assert len(hello.ports) == 8 and all(p.kind == "ib" for p in hello.ports)
    assert hello.driver and hello.cuda and hello.python


def test_samples_carry_every_gpu_and_port_in_the_declared_order(agent_run) -> None:  # type: ignore[no-untyped-def]
    run = agent_run(samples=3)
    samples = run.samples
    assert [s.seq for s in samples] == [0, 1, 2]
    for sample in samples:
        assert len(sample.gpus) == 8 and all(len(row) == len(GPU_FIELDS) for row in sample.gpus)
        assert len(sample.ports) == 8 and all(len(p) == len(PORT_FIELDS) for p in sample.ports)
        assert not sample.lost and not sample.errs
    assert run.port(samples[0], 0, "state") == 4
    assert run.slow(samples[0], 0, "nvlink_total") == run.hello.gpus[0].nvlinks
    assert run.bye.reason == "max samples"


def test_slow_fields_come_on_the_slow_cadence_only(agent_run) -> None:  # type: ignore[no-untyped-def]
    run = agent_run(samples=11, interval=1.0, slow_interval=5.0)
    slow_seqs = [s.seq for s in run.samples if s.slow is not None]
    assert slow_seqs == [0, 5, 10]
    slow = run.samples[5]
    assert slow.links is not None and slow.hw is not None and len(slow.hw) == 8
    assert len(slow.links[0]) == run.hello.gpus[0].nvlinks


def test_waits_that_wake_early_still_give_one_slow_sample_per_slow_interval(agent_run) -> None:  # type: ignore[no-untyped-def]
    run = agent_run(samples=16, interval=1.0, slow_interval=5.0, early=0.3)
    assert [s.seq for s in run.samples if s.slow is not None] == [0, 5, 10, 15]


def test_a_gpu_entry_is_well_under_100_bytes(agent_run) -> None:  # type: ignore[no-untyped-def]
    run = agent_run(samples=5)
    sizes = [len(json.dumps(row, separators=(",", ":"))) for s in run.samples for row in s.gpus]
    assert max(sizes) < 70, sizes


def test_every_message_type_round_trips_through_the_controller_decoder(agent_run) -> None:  # type: ignore[no-untyped-def]
    run = agent_run(samples=1)
    kinds = {type(m).__name__ for m in run.messages}
    assert {"Hello", "Sample", "Bye"} <= kinds
    # Event and Error lines are built by the same writer the agent uses.
    event = decode_line(wire._encoder.encode(wire.event(1.5, "xid", 3, "GPU-x", 79)))
    assert (event.kind, event.gpu, event.code) == ("xid", 3, 79)  # type: ignore[union-attr]
    error = decode_line(wire._encoder.encode(wire.error(1.5, "NVMLError_Unknown", "m", gpu=2)))
    assert isinstance(error, Error) and error.code == "NVMLError_Unknown" and error.gpu == 2


def test_non_finite_numbers_never_reach_the_wire() -> None:
    assert wire.finite(float("nan")) is None
    assert wire.finite(float("inf")) is None
    assert wire.finite(12.345) == 12.3


def test_the_examples_in_the_protocol_doc_are_valid_protocol() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "protocol.md").read_text()
    blocks = re.findall(r"```json\n(.*?)```", doc, flags=re.S)
    lines = []
    for block in blocks:
        try:
            lines.append(json.dumps(json.loads(block)))  # the pretty-printed hello
        except json.JSONDecodeError:
            lines.extend(block.strip().splitlines())
    types = [type(decode_line(line)).__name__ for line in lines]
    assert sorted(set(types)) == ["Bye", "Error", "Event", "Hello", "Sample"]
