"""A chunk of nodes during one scrape: its entities read into tables, its text per family.

A scrape is streamed family by family (the text format keeps a family's lines
together), and within a family chunk by chunk. A chunk reads its nodes' entities of a
kind (from the tick's rows, or from objects) the first time a family of that kind asks
for them, and keeps the table until the scrape has written the kind's last family; the
blocks (label heads, reused texts) are kept for the next scrape.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import NamedTuple

from exporter.blocks import EntityBlock
from exporter.columns import KindPlan
from exporter.patterns import Templates
from exporter.tables import KindTable
from exporter.tick_rows import (
    Run,
    add_gpu_run,
    add_port_run,
    gpu_rows_of,
    port_rows_of,
    reads_gpus,
    reads_ports,
)
from fleet.model import NodeSnapshot
from fleet.state.rows import StateRows

NODES_PER_READ = 64
"""Nodes whose entities are read into a table in one step of a streamed scrape: a whole
chunk (a port's rates come from the tick's numpy columns, read once per step)."""


def _gpu_objects(table: KindTable, nodes: list[NodeSnapshot]) -> None:
    for node in nodes:
        name, gpus = node.name, node.gpus
        table.add_objects([(name, g.index, g.uuid, g.name) for g in gpus], gpus)


def _port_objects(table: KindTable, nodes: list[NodeSnapshot]) -> None:
    for node in nodes:
        name, ports = node.name, (*node.ports, *node.nics)
        table.add_objects([(name, p.name, p.kind) for p in ports], ports)


def _node_objects(table: KindTable, nodes: list[NodeSnapshot]) -> None:
    table.add_objects([(node.name,) for node in nodes], tuple(nodes))


class Source(NamedTuple):
    """How a chunk's entities of one kind get into its table."""

    objects: Callable[[KindTable, list[NodeSnapshot]], None]
    # From the tick's rows, for the nodes that have them (no object built).
    rows_of: Callable[[NodeSnapshot], StateRows | None] | None = None
    add_run: Callable[[KindTable, Run], None] | None = None


def sources(plans: dict[str, KindPlan]) -> dict[str, Source]:
    """Each kind's source: the tick's rows where the state's nodes have them, unless the
    catalog asks for an attribute the rows reader does not know."""
    gpu_rows = reads_gpus(plans["gpu"].attrs)
    port_rows = reads_ports(plans["port"].attrs)
    return {
        "gpu": Source(_gpu_objects, gpu_rows_of, add_gpu_run) if gpu_rows else Source(_gpu_objects),
        "port": (
            Source(_port_objects, port_rows_of, add_port_run)
            if port_rows
            else Source(_port_objects)
        ),
        "node": Source(_node_objects),
    }


def fill(table: KindTable, nodes: tuple[NodeSnapshot, ...], source: Source) -> None:
    """Add ``nodes``' entities: runs of nodes from their rows, the others from objects."""
    rows_of, add_run = source.rows_of, source.add_run
    if rows_of is None or add_run is None:
        source.objects(table, list(nodes))
        return
    run: Run = []
    objects: list[NodeSnapshot] = []
    for node in nodes:
        rows = rows_of(node)
        if rows is not None:
            if objects:
                source.objects(table, objects)
                objects = []
            run.append((node.name, rows))
            continue
        if run:
            add_run(table, run)
            run = []
        objects.append(node)
    if objects:
        source.objects(table, objects)
    if run:
        add_run(table, run)


class Kinds(NamedTuple):
    """What every chunk of a renderer shares: per kind its plan and source; templates."""

    plans: dict[str, KindPlan]
    sources: dict[str, Source]
    templates: Templates


class ChunkScrape:
    """One chunk of nodes in one scrape.

    Args:
        nodes: the chunk's nodes.
        kinds: the renderer's shared parts.
        previous: the chunk's blocks at the last scrape, by kind (reused when the
            entities' keys are the same).
    """

    __slots__ = ("blocks", "kinds", "nodes", "previous", "tables")

    def __init__(
        self, nodes: tuple[NodeSnapshot, ...], kinds: Kinds, previous: dict[str, EntityBlock]
    ) -> None:
        self.nodes = nodes
        self.kinds = kinds
        self.previous = previous
        self.blocks: dict[str, EntityBlock] = {}  # "gpu", "port", "node": absent when none
        self.tables: dict[str, KindTable | None] = {}

    def prepare(self, kind: str) -> None:
        """Read the entities of ``kind`` (once per scrape) and take the block for them."""
        for _ in self._prepare(kind):
            pass

    def _prepare(self, kind: str) -> Iterator[str]:
        """As :meth:`prepare`, yielding ``""`` after each :data:`NODES_PER_READ` nodes."""
        if kind in self.tables:
            return
        plan = self.kinds.plans[kind]
        table = plan.table()
        nodes = self.nodes
        for start in range(0, len(nodes), NODES_PER_READ):
            fill(table, nodes[start : start + NODES_PER_READ], self.kinds.sources[kind])
            yield ""
        if not table.keys:
            self.tables[kind] = None
            return
        keys = tuple(table.keys)
        block = self.previous.get(kind)
        if block is None or block.keys != keys:
            block = EntityBlock(plan, keys, self.kinds.templates)
        block.begin(table)
        self.tables[kind] = table
        self.blocks[kind] = block

    def pieces(self, slot: int, kinds: tuple[str, ...]) -> Iterator[str | bytes]:
        """The chunk's lines of family ``slot`` (written by entities of ``kinds``), in pieces
        of well under a millisecond's work each; ``""`` where only entities were read."""
        for kind in kinds:
            if kind not in self.tables:  # read once per scrape, by its first family
                yield from self._prepare(kind)
            table = self.tables[kind]
            if table is not None:
                yield from self.blocks[kind].slot_texts(table, slot)

    def release(self, kind: str) -> None:
        """Drop this scrape's table of ``kind`` (its last family is written)."""
        if self.tables.get(kind) is not None:
            self.tables[kind] = None
