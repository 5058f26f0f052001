"""Protocol v1: the controller's typed view of the agent's JSON lines.

The agent (Python 3.8, stdlib only) writes these messages with ``json``; the
controller decodes each line straight into one of the structs below with msgspec,
which rejects anything that is not valid protocol. ``docs/protocol.md`` is the
user-facing description; field orders live in :mod:`collectors.agent.fields`.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from collectors.agent.fields import PROTOCOL_VERSION

# A line longer than this is not protocol: the node is marked protocol-error.
MAX_LINE_BYTES = 1 << 20


class GpuInfo(msgspec.Struct, frozen=True):
    """Static facts about one GPU, sent once in ``hello``."""

    index: int
    uuid: str
    name: str
    serial: str | None = None
    pci_bus_id: str | None = None
    memory_total_bytes: int | None = None
    power_limit_w: float | None = None
    nvlinks: int = 0


class PortInfo(msgspec.Struct, frozen=True):
    """One InfiniBand / RoCE / EFA port (``kind`` ib|roce|efa) or Ethernet NIC (``eth``)."""

    name: str  # "mlx5_0/1" for an HCA port, the interface name for a NIC
    kind: str
    link_layer: str | None = None  # "InfiniBand" or "Ethernet"
    netdev: str | None = None
    # Width of the PMA data/packet counters: 64 (extended), 32, or None (unknown/none).
    data_bits: Annotated[int, msgspec.Meta(ge=8, le=64)] | None = None


class Hello(msgspec.Struct, frozen=True, tag_field="type", tag="hello"):
    """First message of every session: who the node is and the field orders used."""

    v: int
    t: float
    agent: str
    host: str
    interval: float
    slow_interval: float
    gpu_fields: list[str]
    gpu_slow_fields: list[str]
    port_fields: list[str]
    nic_fields: list[str]
    gpus: list[GpuInfo] = []
    ports: list[PortInfo] = []  # HCA ports, in the order of ``Sample.ports``
    nics: list[PortInfo] = []  # Ethernet NICs, in the order of ``Sample.nics``
    driver: str | None = None
    cuda: str | None = None
    nvml: str | None = None
    python: str | None = None
    # Fields a GPU cannot report at all (e.g. GPM before Hopper), by GPU index:
    # sent as null in every sample without repeating the error.
    unsupported: dict[str, list[str]] = {}


Value = int | float | None


class Sample(msgspec.Struct, frozen=True, tag_field="type", tag="sample"):
    """One tick. ``gpus[i]`` follows ``Hello.gpu_fields`` and is null for a lost GPU."""

    v: int
    t: float
    seq: int
    gpus: list[list[Value] | None]
    ports: list[list[Value]] = []
    nics: list[list[Value]] = []
    lost: list[int] = []  # GPU indexes that raised NVMLError_GpuIsLost
    # {"<gpu index>": {"<field>": "NVMLError_Xxx"}} for fields that failed this tick.
    errs: dict[str, dict[str, str]] = {}
    # Present on slow ticks only: per GPU, values in ``Hello.gpu_slow_fields`` order.
    slow: list[list[Value] | None] | None = None
    # Present on slow ticks only: per GPU, per link, values in NVLINK_FIELDS order.
    links: list[list[list[Value]] | None] | None = None
    # Present on slow ticks only: per port, hw_counters by name (mlx5 / EFA).
    hw: list[dict[str, int]] | None = None


class Event(msgspec.Struct, frozen=True, tag_field="type", tag="event"):
    """Something happened: an XID, an ECC event, a GPU lost, a recovery action."""

    v: int
    t: float
    kind: str  # "xid" | "dbe" | "sbe" | "gpu_lost" | "recovery_action" | "remap" | other NVML event
    gpu: int | None = None
    uuid: str | None = None
    code: int | None = None  # the XID for kind "xid"
    detail: str = ""


class Error(msgspec.Struct, frozen=True, tag_field="type", tag="error"):
    """A problem the agent survived (or, with ``fatal``, did not)."""

    v: int
    t: float
    code: str  # e.g. "NVMLError_LibraryNotFound"
    message: str = ""
    gpu: int | None = None
    fatal: bool = False


class Bye(msgspec.Struct, frozen=True, tag_field="type", tag="bye"):
    """The agent is exiting on purpose."""

    v: int
    t: float
    reason: str = ""


Message = Hello | Sample | Event | Error | Bye

_decoder = msgspec.json.Decoder(Message)


class ProtocolError(ValueError):
    """A line that is not protocol v1."""


def decode_line(line: bytes | str) -> Message:
    """Decode one agent line into its typed message.

    Raises:
        ProtocolError: the line is too long, not JSON, of an unknown type or version.
    """
    if len(line) > MAX_LINE_BYTES:
        raise ProtocolError(f"line of {len(line)} bytes exceeds the {MAX_LINE_BYTES}-byte cap")
    try:
        message = _decoder.decode(line)
    except msgspec.DecodeError as exc:
        raise ProtocolError(str(exc)) from None
    if message.v != PROTOCOL_VERSION:
        raise ProtocolError(f"protocol version {message.v}, expected {PROTOCOL_VERSION}")
    return message
