"""Lemons: hardware that fails again after a repair, followed across slots and nodes.

A GPU is followed by its identity: the serial where a ``gpu_swap`` event named it,
else its UUID (as stable as the serial: it is burned into the board, not the slot).
The same identity in two or more repair records is a repeat offender; its chain is
every record it appears in, in order, so a board swapped out of one node and failing
in another is one chain.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from ledger.repairs.evidence import Event
from ledger.repairs.model import Lemon, RepairRecord
from ledger.repairs.records import CAUSE_LEAD_MS, new_serial


def serial_of_uuid(events: Sequence[Event]) -> dict[str, str]:
    """UUID -> serial for every GPU a swap event named."""
    return {
        e.uuid: serial
        for e in events
        if e.kind == "gpu_swap" and e.uuid and (serial := new_serial(e.detail))
    }


def lemons(records: Sequence[RepairRecord], events: Sequence[Event]) -> list[Lemon]:
    """Identities in two or more repair records, with the chain of their failures."""
    serials = serial_of_uuid(events)
    # (node, uuid) -> its events' (time, GPU), read once: records times events is too many.
    seen: dict[tuple[str, str], list[tuple[int, int | None]]] = defaultdict(list)
    for e in events:
        if e.uuid:
            seen[(e.node, e.uuid)].append((e.at_ms, e.gpu))
    chains: dict[str, list[tuple[str, int, int | None]]] = defaultdict(list)
    for record in records:
        for uuid in record.serials:
            gpu = _gpu_of(seen.get((record.node, uuid), []), record.detected_ms)
            chains[serials.get(uuid, uuid)].append((record.node, record.detected_ms, gpu))
    return [
        Lemon(identity, tuple(chain), moved=len({node for node, _, _ in chain}) > 1)
        for identity, chain in sorted(chains.items())
        if len(chain) >= 2
    ]


def _gpu_of(sightings: list[tuple[int, int | None]], detected_ms: int) -> int | None:
    """The GPU index of the first sighting near or after the outage's detection."""
    for at_ms, gpu in sightings:
        if at_ms >= detected_ms - CAUSE_LEAD_MS:
            return gpu
    return None
