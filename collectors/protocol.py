"""Protocol v1: the controller's typed view of the agent's JSON lines.

The agent (Python 3.8, stdlib only) writes these messages with ``json``; the
controller decodes each line straight into one of the structs below with msgspec,
which rejects anything that is not valid protocol. ``docs/protocol.md`` is the
user-facing description; field orders live in :mod:`collectors.agent.fields`.

A node is hostile: every value is checked here, once, so no sink downstream (state,
history, /metrics, the terminal) can be made to raise or misbehave by node data.
Ranges and sizes are declared on the structs (``Annotated`` msgspec constraints);
what msgspec cannot declare (integers beyond int64, invalid UTF-8, escape
sequences in strings) is checked in :func:`decode_line`. Every violation is a
:class:`ProtocolError`, never another exception.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from collectors.agent.fields import PROTOCOL_VERSION
from collectors.sanitize import clean_text, is_clean

# A line longer than this is not protocol: the node is marked protocol-error.
MAX_LINE_BYTES = 1 << 20

# 9999-12-31T23:59:59Z: the last instant a datetime (and the history's ms column) holds.
MAX_EPOCH_S = 253_402_300_799.0
INT64_MAX = (1 << 63) - 1
UINT64_MAX = (1 << 64) - 1
# Floats beyond this are no reading NVML or sysfs gives; rejecting them keeps every
# arithmetic downstream (MiB to bytes, rates) finite and inside uint64 columns.
MAX_FLOAT = float(1 << 53)

Index = Annotated[int, msgspec.Meta(ge=0, le=65535)]  # a GPU index (history: UInt16)
Count = Annotated[int, msgspec.Meta(ge=0, le=INT64_MAX)]
Time = Annotated[float, msgspec.Meta(ge=0.0, le=MAX_EPOCH_S)]
Period = Annotated[float, msgspec.Meta(gt=0.0, le=86_400.0)]
Watts = Annotated[float, msgspec.Meta(ge=0.0, le=1e6)]
Word = Annotated[str, msgspec.Meta(max_length=64)]  # kinds, codes, field names
Name = Annotated[str, msgspec.Meta(max_length=256)]  # names, UUIDs, versions
Text = Annotated[str, msgspec.Meta(max_length=4096)]  # details and messages
Fields = Annotated[list[Word], msgspec.Meta(max_length=512)]
MAX_GPUS = 1024
MAX_PORTS = 4096


class GpuInfo(msgspec.Struct, frozen=True):
    """Static facts about one GPU, sent once in ``hello``."""

    index: Index
    uuid: Name
    name: Name
    serial: Name | None = None
    pci_bus_id: Name | None = None
    memory_total_bytes: Count | None = None
    power_limit_w: Watts | None = None
    nvlinks: Annotated[int, msgspec.Meta(ge=0, le=255)] = 0


class PortInfo(msgspec.Struct, frozen=True):
    """One InfiniBand / RoCE / EFA port (``kind`` ib|roce|efa) or Ethernet NIC (``eth``)."""

    name: Name  # "mlx5_0/1" for an HCA port, the interface name for a NIC
    kind: Word
    link_layer: Word | None = None  # "InfiniBand" or "Ethernet"
    netdev: Name | None = None
    # Width of the PMA data/packet counters: 64 (extended), 32, or None (unknown/none).
    data_bits: Annotated[int, msgspec.Meta(ge=8, le=64)] | None = None


class Hello(msgspec.Struct, frozen=True, tag_field="type", tag="hello"):
    """First message of every session: who the node is and the field orders used."""

    v: int
    t: Time
    agent: Name
    host: Name
    interval: Period
    slow_interval: Period
    gpu_fields: Fields
    gpu_slow_fields: Fields
    port_fields: Fields
    nic_fields: Fields
    gpus: Annotated[list[GpuInfo], msgspec.Meta(max_length=MAX_GPUS)] = []
    # HCA ports, in the order of ``Sample.ports``
    ports: Annotated[list[PortInfo], msgspec.Meta(max_length=MAX_PORTS)] = []
    # Ethernet NICs, in the order of ``Sample.nics``
    nics: Annotated[list[PortInfo], msgspec.Meta(max_length=MAX_PORTS)] = []
    driver: Name | None = None
    cuda: Name | None = None
    nvml: Name | None = None
    python: Name | None = None
    # The kernel's boot id and systemd's machine id (added later: null from older agents
    # and where unreadable): a new boot id is a reboot, a new machine id another machine.
    boot_id: Name | None = None
    machine_id: Name | None = None
    # Fields a GPU cannot report at all (e.g. GPM before Hopper), by GPU index:
    # sent as null in every sample without repeating the error.
    unsupported: Annotated[dict[Word, Fields], msgspec.Meta(max_length=MAX_GPUS)] = {}


# Integers are checked against uint64/int64 after decoding (msgspec bounds stop at
# int64); floats are bounded here.
Value = int | Annotated[float, msgspec.Meta(ge=-MAX_FLOAT, le=MAX_FLOAT)] | None
# Rows decode as tuples, and a sample's sequences of rows too: a tuple of numbers drops
# out of the garbage collector's view at its first collection (a tuple of such tuples at
# its second), where a list stays tracked and is scanned by every full collection for as
# long as the state keeps the latest rows (17 rows and ~6 sequences per node).
Row = Annotated[tuple[Value, ...], msgspec.Meta(max_length=512)]


class Sample(msgspec.Struct, frozen=True, gc=False, tag_field="type", tag="sample"):
    """One tick. ``gpus[i]`` follows ``Hello.gpu_fields`` and is null for a lost GPU."""

    v: int
    t: Time
    seq: Count
    gpus: Annotated[tuple[Row | None, ...], msgspec.Meta(max_length=MAX_GPUS)]
    ports: Annotated[tuple[Row, ...], msgspec.Meta(max_length=MAX_PORTS)] = ()
    nics: Annotated[tuple[Row, ...], msgspec.Meta(max_length=MAX_PORTS)] = ()
    # GPU indexes that raised NVMLError_GpuIsLost
    lost: Annotated[tuple[Index, ...], msgspec.Meta(max_length=MAX_GPUS)] = ()
    # {"<gpu index>": {"<field>": "NVMLError_Xxx"}} for fields that failed this tick.
    errs: Annotated[
        dict[Word, Annotated[dict[Word, Word], msgspec.Meta(max_length=512)]],
        msgspec.Meta(max_length=MAX_GPUS),
    ] = {}
    # Present on slow ticks only: per GPU, values in ``Hello.gpu_slow_fields`` order.
    slow: Annotated[tuple[Row | None, ...], msgspec.Meta(max_length=MAX_GPUS)] | None = None
    # Present on slow ticks only: per GPU, per link, values in NVLINK_FIELDS order.
    links: (
        Annotated[
            list[Annotated[tuple[Row, ...], msgspec.Meta(max_length=64)] | None],
            msgspec.Meta(max_length=MAX_GPUS),
        ]
        | None
    ) = None
    # Present on slow ticks only: per port, hw_counters by name (mlx5 / EFA).
    hw: (
        Annotated[
            list[Annotated[dict[Word, int], msgspec.Meta(max_length=512)]],
            msgspec.Meta(max_length=MAX_PORTS),
        ]
        | None
    ) = None


class Event(msgspec.Struct, frozen=True, tag_field="type", tag="event"):
    """Something happened: an XID, an ECC event, a GPU lost, a recovery action."""

    v: int
    t: Time
    # "xid" | "dbe" | "sbe" | "gpu_lost" | "recovery_action" | "remap" | other NVML event
    kind: Word
    gpu: Index | None = None
    uuid: Name | None = None
    code: Count | None = None  # the XID for kind "xid"
    detail: Text = ""


class Error(msgspec.Struct, frozen=True, tag_field="type", tag="error"):
    """A problem the agent survived (or, with ``fatal``, did not)."""

    v: int
    t: Time
    code: Word  # e.g. "NVMLError_LibraryNotFound"
    message: Text = ""
    gpu: Index | None = None
    fatal: bool = False


class Bye(msgspec.Struct, frozen=True, tag_field="type", tag="bye"):
    """The agent is exiting on purpose."""

    v: int
    t: Time
    reason: Text = ""


# Version of the ``jobs`` body; a controller rejects a schema it does not know.
JOBS_SCHEMA = 1
MAX_JOB_ENTRIES = 4096
JobId = Annotated[str, msgspec.Meta(pattern=r"^[0-9]{1,20}$")]
StepId = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9_]{1,32}$")]
PodUid = Annotated[
    str, msgspec.Meta(pattern=r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
]
ContainerId = Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{64}$")]
# What the node can tell of a pod (heuristics, docs/jobs.md): its name is a DNS
# subdomain, its namespace a DNS label (RFC 1123), as Kubernetes requires.
PodName = Annotated[str, msgspec.Meta(pattern=r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")]
Namespace = Annotated[str, msgspec.Meta(pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")]
Uid = Annotated[int, msgspec.Meta(ge=0, le=(1 << 32) - 1)]


class JobOnGpu(msgspec.Struct, frozen=True):
    """One scheduler job (or Kubernetes pod) on one GPU, as the node sees it."""

    gpu: Index
    uuid: Name
    scheduler: Annotated[str, msgspec.Meta(pattern="^(slurm|k8s)$")]
    job: JobId | None = None  # Slurm job id
    step: StepId | None = None  # Slurm step: "0", "batch", "extern", "interactive"
    pod: PodUid | None = None  # Kubernetes pod UID
    container: ContainerId | None = None
    pod_name: PodName | None = None  # the pod's HOSTNAME, as its process carries it
    namespace: Namespace | None = None  # its service account's namespace file
    uid: Uid | None = None
    user: Word | None = None
    processes: Annotated[int, msgspec.Meta(ge=0, le=1 << 20)] = 0
    via: Annotated[str, msgspec.Meta(pattern="^(nvml|env)$")] = "nvml"  # env: allocated only


class JobsError(msgspec.Struct, frozen=True):
    gpu: Index | None
    error: Word


class Jobs(msgspec.Struct, frozen=True, tag_field="type", tag="jobs"):
    """Which jobs use each GPU (docs/jobs.md): sent on a change and every few minutes.

    A ``jobs`` message replaces the node's previous answer whole: a job not listed
    has left its GPU.
    """

    v: int
    t: Time
    schema: Annotated[int, msgspec.Meta(ge=JOBS_SCHEMA, le=JOBS_SCHEMA)]
    jobs: Annotated[list[JobOnGpu], msgspec.Meta(max_length=MAX_JOB_ENTRIES)] = []
    errors: Annotated[list[JobsError], msgspec.Meta(max_length=MAX_GPUS)] = []


Message = Hello | Sample | Event | Error | Bye | Jobs

_decoder = msgspec.json.Decoder(Message)
_decode = _decoder.decode


class ProtocolError(ValueError):
    """A line that is not protocol v1 (the message is clean, bounded text)."""

    def __init__(self, message: str) -> None:
        super().__init__(clean_text(message, 300))


def decode_line(line: bytes | str) -> Message:
    """Decode one agent line into its typed, validated and sanitised message.

    A line from the channel (``bytes``) costs msgspec's decode and one C-speed scan
    of its bytes in the common case (plain numbers, ASCII names); the Python walks
    over the decoded values (64-bit range check, string cleaning) run only for a line
    the scan flags. :func:`decode_line_checked` always walks: the property tests
    hold the two to the same answer for every line.

    Raises:
        ProtocolError: the line is too long, not UTF-8, not JSON, of an unknown type
            or version, or holds a value outside its range or size.
    """
    if type(line) is not bytes:
        return decode_line_checked(line)
    message = _typed(line)
    flags = line.translate(_SCAN)
    if _NINETEEN_DIGITS in flags:
        _check_range(message)
    if _NOT_PLAIN in flags:
        message = _cleaned(message)
    return message


def decode_line_checked(line: bytes | str) -> Message:
    """:func:`decode_line` without the byte scan: every value walked, every string cleaned.

    Slower; the same message, or the same error text, for every line.

    Raises:
        ProtocolError: as :func:`decode_line`.
    """
    return _checked(_typed(line))


def _typed(line: bytes | str) -> Message:
    """The line decoded into its struct, size, syntax, types, bounds and version checked."""
    if len(line) > MAX_LINE_BYTES:
        raise ProtocolError(f"line of {len(line)} bytes exceeds the {MAX_LINE_BYTES}-byte cap")
    try:
        message = _decode(line)
    except msgspec.DecodeError as exc:
        raise ProtocolError(str(exc)) from None
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"not UTF-8: {exc.reason} at byte {exc.start}") from None
    if message.v != PROTOCOL_VERSION:
        raise ProtocolError(f"protocol version {message.v}, expected {PROTOCOL_VERSION}")
    return message


def _checked(message: Message) -> Message:
    """``message`` after the full walks: 64-bit range of every integer, every string clean."""
    _check_range(message)
    cleaned: Message = _cleaned(message)
    return cleaned


def _check_range(message: Message) -> None:
    where = _out_of_range(message)
    if where is not None:
        raise ProtocolError(f"integer out of the 64-bit range - at `${where}`")


# One translate of the line answers both questions of the fast path, then two ``in``
# searches (C speed; a regex with the same meaning is thirty times slower):
# - may it hold an integer outside -2^63..2^64-1? Such an integer has at least
#   twenty digits, or a minus and nineteen: every digit maps to "0" and a run of
#   nineteen is searched (one search; a counter past 10^18 is walked needlessly).
# - may a string need cleaning? JSON carries a control or bidi character only as a
#   backslash escape (\u001b, \n...), as a raw DEL or as non-ASCII UTF-8: backslash,
#   DEL and every byte from 0x80 map to one marker, the backslash.
_NOT_PLAIN = b"\\"
_SCAN = bytes.maketrans(
    b"0123456789" + _NOT_PLAIN + b"\x7f" + bytes(range(0x80, 0x100)),
    b"0" * 10 + _NOT_PLAIN * (2 + 0x80),
)
_NINETEEN_DIGITS = b"0" * 19
INT64_MIN = -(1 << 63)


def _out_of_range(value: Any) -> str | None:
    """The path (``[3].x``) to an integer outside int64 and uint64 in ``value``, or None."""
    if type(value) is int:
        return None if INT64_MIN <= value <= UINT64_MAX else ""
    items: Any
    if type(value) is list or type(value) is tuple:
        items = enumerate(value)
    elif type(value) is dict:
        items = value.items()
    elif isinstance(value, msgspec.Struct):
        items = ((name, getattr(value, name)) for name in value.__struct_fields__)
    else:
        return None
    for key, item in items:
        kind = type(item)
        found: str | None = ""
        if kind is int:  # inline: most values are ints, and a call each is what costs
            if INT64_MIN <= item <= UINT64_MAX:
                continue
        elif kind is float or item is None:
            continue
        else:
            found = _out_of_range(item)
            if found is None:
                continue
        step = f"[{key}]" if type(key) is int else f".{key}"
        return step + (found or "")
    return None


def _cleaned(value: Any) -> Any:
    """``value`` with every string passed through :func:`clean_text` (shared when clean)."""
    if isinstance(value, str):
        return value if is_clean(value) else clean_text(value)
    if isinstance(value, list):
        return [_cleaned(item) for item in value]
    if isinstance(value, tuple):  # rows hold numbers today; a string in one is cleaned too
        return tuple(_cleaned(item) for item in value)
    if isinstance(value, dict):
        return {_cleaned(key): _cleaned(item) for key, item in value.items()}
    if isinstance(value, msgspec.Struct):
        changes = {}
        for name in value.__struct_fields__:
            old = getattr(value, name)
            new = _cleaned(old)
            if new is not old:
                changes[name] = new
        return msgspec.structs.replace(value, **changes) if changes else value
    return value
