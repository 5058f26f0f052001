"""A node's readings frozen at one tick: the rows its GPU and port objects are built from.

Every node changes every tick, so building its ~17 GpuSnapshot / PortSnapshot objects
each tick cost more than everything else the state does. A tick now keeps references
to what it read (the decoded rows, which ingest never writes into, the steady values
of each GPU, the rates of each port) and the briefs; the objects are built on first
access, once per tick at most, by whoever needs them (a node screen, a scrape).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fleet.briefs import PortAlarms
from fleet.model import GpuBrief, PortBrief
from fleet.state.build import (
    PortStatic,
    QuietSteady,
    Steady,
    SteadyGpu,
    gpu_snapshot,
    port_alarms,
    port_snapshot,
)
from fleet.state.layout import FieldIndex, Row
from fleet.state.port_tick import PortFrozen

GpuErrors = tuple[tuple[tuple[str, str], ...], ...]


class PortRows:
    """One node's ports (or NICs) at a tick: briefs, session facts, raw rows, hw counters."""

    __slots__ = ("briefs", "hw", "rows", "static")

    def __init__(
        self,
        briefs: tuple[PortBrief, ...],
        static: tuple[PortStatic, ...],
        rows: Sequence[Row | None],
        hw: tuple[Mapping[str, int], ...],
    ) -> None:
        self.briefs, self.static, self.rows, self.hw = briefs, static, rows, hw

    def build(self, tick: PortFrozen) -> tuple[Any, ...]:
        readings = tick.readings([static[2] for static in self.static])
        return tuple(map(port_snapshot, self.briefs, self.static, self.rows, self.hw, readings))

    def alarms(self, tick: PortFrozen) -> tuple[PortAlarms, ...]:
        """Each port's error readings at ``tick`` (no PortSnapshot built)."""
        readings = tick.readings([static[2] for static in self.static])
        return tuple(map(port_alarms, self.static, readings))


class StateRows:
    """Implements :class:`fleet.model.NodeRows` for the fleet state's nodes."""

    __slots__ = (
        "_gpus",
        "_nics",
        "_ports",
        "_steady",
        "errors",
        "fast",
        "fast_rows",
        "gpu_briefs",
        "gpu_start",
        "nic_briefs",
        "nics",
        "port_briefs",
        "ports",
        "tick",
    )

    def __init__(
        self,
        gpu_start: int,
        gpu_briefs: tuple[GpuBrief, ...],
        gpu_parts: tuple[FieldIndex | None, Sequence[Row | None], Steady],
        errors: GpuErrors | None,
        ports: PortRows,
        nics: PortRows,
        tick: PortFrozen,
    ) -> None:
        self.gpu_start = gpu_start
        self.gpu_briefs = gpu_briefs
        self.fast, self.fast_rows, self._steady = gpu_parts
        self.errors = errors
        # The ports' and NICs' briefs, session facts, raw rows and hw counters now.
        self.ports, self.nics, self.tick = ports, nics, tick
        self.port_briefs, self.nic_briefs = ports.briefs, nics.briefs
        self._gpus: tuple[Any, ...] | None = None
        self._ports: tuple[Any, ...] | None = None
        self._nics: tuple[Any, ...] | None = None

    @property
    def steady(self) -> tuple[SteadyGpu, ...]:
        """Each GPU's identity and slow readings (built on first read after a quiet slow tick)."""
        steady = self._steady
        return steady.gpus() if isinstance(steady, QuietSteady) else steady

    @property
    def steady_parts(self) -> Steady:
        """What :attr:`steady` is read from (as the next tick's rows may share it)."""
        return self._steady

    def build(self, which: str) -> tuple[Any, ...]:
        """The ``gpus``, ``ports`` or ``nics`` tuple, built on the first call."""
        if which == "gpus":
            if self._gpus is None:
                self._gpus = self._build_gpus()
            return self._gpus
        if which == "ports":
            if self._ports is None:
                self._ports = self.ports.build(self.tick)
            return self._ports
        if self._nics is None:
            self._nics = self.nics.build(self.tick)
        return self._nics

    def built(self, which: str) -> tuple[Any, ...] | None:
        """What :meth:`build` returned for ``which``, or None."""
        return self._gpus if which == "gpus" else self._ports if which == "ports" else self._nics

    def port_alarms(self) -> tuple[PortAlarms, ...]:
        """Each fabric port's error readings at this tick, read from the built ports when
        they exist, else from the tick's port columns."""
        if self._ports is not None:
            return tuple(map(PortAlarms.of, self._ports))
        return self.ports.alarms(self.tick)

    def _build_gpus(self) -> tuple[Any, ...]:
        fast = self.fast
        if fast is None:
            return ()
        errors = self.errors or ((),) * len(self.gpu_briefs)
        return tuple(
            map(
                gpu_snapshot,
                self.gpu_briefs,
                self.steady,
                self.fast_rows,
                errors,
                (fast,) * len(self.gpu_briefs),
            )
        )
