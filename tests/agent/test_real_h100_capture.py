"""A real H100 as our agent saw it, checked against nvidia-smi on the same machine.

tests/fixtures/h100/ was captured on a lent NVIDIA H100 80GB HBM3 (driver 580.159.04,
CUDA 13.0, one GPU in a VM, no InfiniBand) with ``OUT=DIR bash bench/on_gpu.sh``: the
agent streamed for 150 s over the real NVML while the probe suite and 40 s of
back-to-back GEMMs ran, and ``nvidia-smi -q -x`` was saved beside it. Everything else
in the suite runs the agent over the simulated NVML; this is the one real driver.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter
from functools import cache
from pathlib import Path

from collectors.protocol import Hello, Message, Sample, decode_line
from collectors.updates import NodeMessage
from fleet.settings.health_section import HealthSection
from fleet.state.fleet import FleetState
from fleet.state.node import NodeSpec

FIXTURES = Path(__file__).parents[1] / "fixtures" / "h100"
SW_POWER_CAP = 0x4  # nvmlClocksEventReasonSwPowerCap


@cache
def messages() -> tuple[Message, ...]:
    with (FIXTURES / "agent.jsonl").open("rb") as capture:
        return tuple(decode_line(line) for line in capture)


@cache
def nvidia_smi() -> ET.Element:
    return ET.parse(FIXTURES / "nvidia-smi.xml").getroot()


def smi_gpu(path: str) -> str:
    element = nvidia_smi().find("gpu/" + path)
    assert element is not None and element.text is not None, path
    return element.text.strip()


def hello() -> Hello:
    first = messages()[0]
    assert isinstance(first, Hello)
    return first


def test_every_line_of_a_real_h100_capture_decodes() -> None:
    kinds = Counter(type(message).__name__ for message in messages())
    assert kinds == {"Hello": 1, "Sample": 151, "Bye": 1}


def test_identity_and_limits_are_what_nvidia_smi_reports() -> None:
    (gpu,) = hello().gpus
    assert gpu.uuid == smi_gpu("uuid")
    assert gpu.name == smi_gpu("product_name")
    assert gpu.serial == smi_gpu("serial")
    assert gpu.pci_bus_id == smi_gpu("pci/pci_bus_id")
    total_mib = int(smi_gpu("fb_memory_usage/total").removesuffix(" MiB"))
    assert gpu.memory_total_bytes == total_mib << 20
    assert gpu.power_limit_w == float(smi_gpu("gpu_power_readings/current_power_limit")[:-2])
    root = nvidia_smi()
    assert hello().driver == root.findtext("driver_version")
    assert hello().cuda == root.findtext("cuda_version")


def test_what_the_driver_lacks_is_unsupported_not_zero() -> None:
    # Hopper replaced page retirement with row remapping: nvidia-smi prints N/A for the
    # one and counts for the other, and so must we (N/A is not "no retired pages").
    retired = nvidia_smi().find("gpu/retired_pages")
    assert retired is not None
    assert {e.findtext("retired_count", e.text).strip() for e in retired} == {"N/A"}
    assert {"retired_sbe", "retired_dbe", "retired_pending"} <= set(hello().unsupported["0"])
    state = replay()
    (gpu,) = state.snapshot(last_time() + 0.5).nodes[0].gpus
    assert (gpu.retired_sbe, gpu.retired_dbe, gpu.retired_pending) == (None, None, None)
    remapped = "gpu/remapped_rows/remapped_row_"
    assert gpu.remap_corr == int(nvidia_smi().findtext(remapped + "corr", "-1"))
    assert gpu.remap_unc == int(nvidia_smi().findtext(remapped + "unc", "-1"))
    assert gpu.field_errors == ()


def test_a_busy_power_capped_h100_stays_healthy() -> None:
    # A GEMM burn runs at the 700 W limit with the SW power cap holding the clock down:
    # that is the GPU working as designed, not a fault to page anyone about.
    capped = 0
    state = one_gpu_node()
    fields = hello().gpu_fields
    for message in messages():
        state.ingest(NodeMessage("h100-01", message, message.t))
        node = state.snapshot(message.t + 0.1).nodes[0]
        if not isinstance(message, Sample):
            continue
        values = dict(zip(fields, message.gpus[0], strict=True))
        (brief,) = node.gpu_briefs
        assert (node.state, brief.verdict, brief.reasons) == ("up", "ok", ()), values
        if values["util_gpu"] == 100 and values["clock_reasons"] & SW_POWER_CAP:
            capped += 1
    assert capped >= 30  # the burn really was in the capture


def one_gpu_node() -> FleetState:
    return FleetState([NodeSpec("h100-01", expected_gpus=1)], HealthSection())


def replay() -> FleetState:
    state = one_gpu_node()
    for message in messages():
        state.ingest(NodeMessage("h100-01", message, message.t))
    return state


def last_time() -> float:
    return messages()[-1].t
