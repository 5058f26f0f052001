"""A node's readings frozen at one tick: the rows its GPU and port objects are built from.

Every node changes every tick, so building its ~17 GpuSnapshot / PortSnapshot objects
each tick cost more than everything else the state does. A tick now keeps references
to what it read (the decoded rows, which ingest never writes into, the steady values
of each GPU, the rates of each port) and the briefs; the objects are built on first
access, once per tick at most, by whoever needs them (a node screen, a scrape).

These holders are made per node and tick and refer to nothing that refers back to them,
so the cyclic collector does not track them (msgspec Structs, ``gc=False``): at 3,000
nodes three of them a node were ~9,000 objects each full collection scanned
(bench/bench_gc_tracked.py). They compare by identity, as readers do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

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


class PortRows(msgspec.Struct, gc=False, eq=False):
    """One node's ports (or NICs) at a tick: briefs, session facts, raw rows, hw counters."""

    briefs: tuple[PortBrief, ...]
    static: tuple[PortStatic, ...]
    rows: Sequence[Row | None]
    hw: tuple[Mapping[str, int], ...]

    def build(self, tick: PortFrozen) -> tuple[Any, ...]:
        readings = tick.readings([static[2] for static in self.static])
        return tuple(map(port_snapshot, self.briefs, self.static, self.rows, self.hw, readings))

    def alarms(self, tick: PortFrozen) -> tuple[PortAlarms, ...]:
        """Each port's error readings at ``tick`` (no PortSnapshot built)."""
        readings = tick.readings([static[2] for static in self.static])
        return tuple(map(port_alarms, self.static, readings))


class StateRows(msgspec.Struct, gc=False, eq=False):
    """Implements :class:`fleet.model.NodeRows` for the fleet state's nodes.

    Made by :meth:`of`; ``steady_parts`` is what :attr:`steady` is read from (as the
    next tick's rows may share it); ``_gpus``, ``_ports`` and ``_nics`` are what
    :meth:`build` built.
    """

    gpu_start: int
    gpu_briefs: tuple[GpuBrief, ...]
    fast: FieldIndex | None
    fast_rows: Sequence[Row | None]
    steady_parts: Steady
    errors: GpuErrors | None
    # The ports' and NICs' briefs, session facts, raw rows and hw counters now.
    ports: PortRows
    nics: PortRows
    tick: PortFrozen
    port_briefs: tuple[PortBrief, ...]
    nic_briefs: tuple[PortBrief, ...]
    _gpus: tuple[Any, ...] | None = None
    _ports: tuple[Any, ...] | None = None
    _nics: tuple[Any, ...] | None = None

    @classmethod
    def of(
        cls,
        gpu_start: int,
        gpu_briefs: tuple[GpuBrief, ...],
        gpu_parts: tuple[FieldIndex | None, Sequence[Row | None], Steady],
        errors: GpuErrors | None,
        ports: PortRows,
        nics: PortRows,
        tick: PortFrozen,
    ) -> StateRows:
        """A node's rows at ``tick``: ``gpu_parts`` is the fast layout, the fast rows and
        the steady readings."""
        fast, fast_rows, steady = gpu_parts
        return cls(
            gpu_start,
            gpu_briefs,
            fast,
            fast_rows,
            steady,
            errors,
            ports,
            nics,
            tick,
            ports.briefs,
            nics.briefs,
        )

    @property
    def steady(self) -> tuple[SteadyGpu, ...]:
        """Each GPU's identity and slow readings (built on first read after a quiet slow tick)."""
        steady = self.steady_parts
        return steady.gpus() if isinstance(steady, QuietSteady) else steady

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
