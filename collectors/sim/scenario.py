"""Scenario files: timed faults for simulated nodes, declared in TOML.

A scenario is a list of ``[[fault]]`` tables. Each names a ``kind``, a ``node``
(``node-001`` ...), optionally a ``gpu`` or a ``port``, the time it starts (``at``)
and optionally when it ends (``until``); everything else in the table is a
kind-specific parameter. Bad input fails with a :class:`ScenarioError` that names the
file and the fault's position, because a scenario is hand-written and a typo should
point at its line, not at a stack trace.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

from collectors.sim.kinds import GPU_KINDS as GPU_KINDS
from collectors.sim.kinds import KINDS as KINDS
from collectors.sim.kinds import NODE_KINDS as NODE_KINDS
from collectors.sim.kinds import PORT_KINDS as PORT_KINDS
from collectors.sim.params import normalize_params, seconds_of

_NODE_NAME = re.compile(r"^node-(\d{3,})$")
_COMMON_KEYS = frozenset({"kind", "node", "gpu", "port", "at", "until"})
PORTS_PER_NODE = 8


# A scenario of a thousand faults is ~100 kB.
MAX_SCENARIO_BYTES = 1 << 20


class ScenarioError(ValueError):
    """A scenario file or table is not valid; the message names file and position."""


@dataclass(frozen=True, slots=True)
class Fault:
    """One timed fault on one node.

    Attributes:
        kind: One of :data:`KINDS`.
        node: Node name, ``node-001`` style.
        gpu: GPU index, or None for every GPU of the node (GPU kinds) / not applicable.
        port: HCA index (``mlx5_<port>``) for port kinds, else None.
        at: Seconds after the node's start when the fault begins.
        until: Seconds after the start when it ends by itself, or None.
        params: Kind-specific parameters as written in the table.
    """

    kind: str
    node: str
    gpu: int | None
    port: int | None
    at: float
    until: float | None
    # Not hashed (a mapping proxy is unhashable); faults still compare by their params.
    params: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}), hash=False)

    def covers_gpu(self, gpu: int) -> bool:
        """True when this fault applies to GPU ``gpu`` (None means all GPUs)."""
        return self.gpu is None or self.gpu == gpu


@dataclass(frozen=True, slots=True)
class Scenario:
    """An immutable set of faults, optionally bound to a node and GPU count."""

    faults: tuple[Fault, ...] = ()
    nodes: int | None = None
    gpus: int | None = None
    source: str = "<scenario>"

    def faults_for(self, node: str) -> tuple[Fault, ...]:
        """The faults that name ``node``, in file order."""
        return tuple(f for f in self.faults if f.node == node)

    def unreachable(self, node: str, elapsed: float) -> bool:
        """True while a ``node_unreachable`` fault holds for ``node`` at ``elapsed`` s."""
        return any(
            f.at <= elapsed < fault_end(self, f)
            for f in self.faults
            if f.node == node and f.kind == "node_unreachable"
        )

    def validate(self, nodes: int | None = None, gpus: int | None = None) -> None:
        """Check node numbers and GPU indices against a fleet's size.

        Raises:
            ScenarioError: naming the first fault that does not fit.
        """
        for position, fault in enumerate(self.faults, start=1):
            where = f"{self.source}: fault #{position}"
            number = node_number(fault.node)
            if nodes is not None and number > nodes:
                raise ScenarioError(f"{where}: node {fault.node!r} beyond the {nodes} nodes")
            if gpus is not None and fault.gpu is not None and fault.gpu >= gpus:
                raise ScenarioError(f"{where}: gpu {fault.gpu} beyond the {gpus} GPUs per node")


def node_number(node: str) -> int:
    """``node-007`` -> 7.

    Raises:
        ScenarioError: the name is not ``node-`` and at least three digits.
    """
    match = _NODE_NAME.match(node)
    if match is None:
        raise ScenarioError(f"node {node!r} is not a node name like 'node-001'")
    return int(match.group(1))


def fault_end(scenario: Scenario, fault: Fault) -> float:
    """When ``fault`` stops holding: its ``until`` or the first ``recover`` that clears it."""
    end = fault.until if fault.until is not None else math.inf
    for other in scenario.faults:
        recovers = other.kind in CLEARING_KINDS and fault.at <= other.at < end
        if recovers and recover_clears(other, fault):
            end = other.at
    return end


# A reboot and a replaced node clear every condition of the node, as a ``recover``
# without ``kinds`` does.
CLEARING_KINDS = frozenset(("recover", "reboot", "node_replaced"))


def recover_clears(recover: Fault, fault: Fault) -> bool:
    """True when ``recover`` (a ``recover``, ``reboot`` or ``node_replaced``) clears ``fault``."""
    if fault.kind in CLEARING_KINDS or recover.node != fault.node:
        return False
    if recover.gpu is not None and fault.gpu is not None and recover.gpu != fault.gpu:
        return False
    if recover.port is not None and fault.port is not None and recover.port != fault.port:
        return False
    kinds = recover.params.get("kinds")
    return kinds is None or fault.kind in kinds


def default_scenario_path() -> Path:
    """The demo scenario shipped with the package."""
    return Path(str(resources.files("collectors.sim").joinpath("scenarios/demo.toml")))


def default_scenario() -> Scenario:
    """The demo scenario, read as package data (works from inside a zipapp too)."""
    resource = resources.files("collectors.sim").joinpath("scenarios/demo.toml")
    return parse_scenario(resource.read_text(encoding="utf-8"), source=str(resource))


def load_scenario(path: Path | None) -> Scenario:
    """Read a scenario file; ``None`` gives the empty scenario.

    Raises:
        ScenarioError: the file is missing, not TOML, or a fault is invalid.
    """
    if path is None:
        return Scenario()
    try:
        # Read up to the cap, never whole: the path may be /dev/zero or a huge log.
        with open(path, "rb") as stream:
            data = stream.read(MAX_SCENARIO_BYTES + 1)
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read scenario: {exc.strerror or exc}") from None
    if len(data) > MAX_SCENARIO_BYTES:
        raise ScenarioError(f"{path}: scenario larger than the {MAX_SCENARIO_BYTES}-byte cap")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"{path}: scenario is not UTF-8 (byte {exc.start})") from None
    return parse_scenario(text, source=str(path))


def parse_scenario(text: str, source: str = "<scenario>") -> Scenario:
    """Parse scenario TOML text; ``source`` names it in errors."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{source}: not valid TOML: {exc}") from None
    except RecursionError:
        raise ScenarioError(f"{source}: tables or arrays nested too deeply") from None
    unknown = set(doc) - {"fault", "nodes", "gpus"}
    if unknown:
        raise ScenarioError(
            f"{source}: unknown top-level key {sorted(unknown)[0]!r}; expected fault, nodes, gpus"
        )
    nodes = _optional_count(doc, "nodes", source)
    gpus = _optional_count(doc, "gpus", source)
    tables = doc.get("fault", [])
    if not isinstance(tables, list):
        raise ScenarioError(f"{source}: 'fault' must be an array of tables ([[fault]])")
    faults = tuple(
        _parse_fault(table, f"{source}: fault #{i}") for i, table in enumerate(tables, start=1)
    )
    scenario = Scenario(faults=faults, nodes=nodes, gpus=gpus, source=source)
    scenario.validate(nodes, gpus)
    return scenario


def parse_duration(value: object, where: str, key: str) -> float:
    """Seconds from a number or a string such as ``"90s"``, ``"5m"``, ``"1.5h"``, ``"250ms"``."""
    try:
        return seconds_of(value, key)
    except ValueError as exc:
        raise ScenarioError(f"{where}: {exc}") from exc


def _optional_count(doc: Mapping[str, Any], key: str, source: str) -> int | None:
    value = doc.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ScenarioError(f"{source}: {key} must be a positive integer, got {value!r}")
    return value


def _parse_fault(table: object, where: str) -> Fault:
    if not isinstance(table, dict):
        raise ScenarioError(f"{where}: expected a table")
    kind = table.get("kind")
    if kind not in KINDS:
        expected = ", ".join(sorted(KINDS))
        raise ScenarioError(f"{where}: unknown kind {kind!r}; expected one of {expected}")
    node = table.get("node")
    if not isinstance(node, str) or not _NODE_NAME.match(node) or node == "node-000":
        raise ScenarioError(f"{where}: node {node!r} is not a node name like 'node-001'")
    gpu = _optional_index(table, "gpu", where, limit=None)
    port = _optional_index(table, "port", where, limit=PORTS_PER_NODE)
    if port is None and kind in PORT_KINDS:
        port = 0
    at = parse_duration(table.get("at", 0), where, "at")
    until = None if "until" not in table else parse_duration(table["until"], where, "until")
    if until is not None and until <= at:
        raise ScenarioError(f"{where}: until ({until:g}s) must be after at ({at:g}s)")
    written = {k: v for k, v in table.items() if k not in _COMMON_KEYS}
    try:
        params = normalize_params(kind, written)
    except ValueError as exc:
        raise ScenarioError(f"{where}: {exc}") from exc
    return Fault(kind, node, gpu, port, at, until, MappingProxyType(params))


def _optional_index(
    table: Mapping[str, Any], key: str, where: str, limit: int | None
) -> int | None:
    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ScenarioError(f"{where}: {key} must be an index >= 0, got {value!r}")
    if limit is not None and value >= limit:
        raise ScenarioError(f"{where}: {key} {value} beyond the {limit} per node")
    return value
