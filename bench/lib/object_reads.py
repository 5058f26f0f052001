"""Which nodes' GPU and port objects a piece of code reads: the objects a lazy snapshot builds.

``FleetState`` hands out ``NodeSnapshot.gpus``/``ports``/``nics`` as tuples built on first
read, so a reader that touches every node's ``gpus`` each tick builds every GPU object of
the fleet again. ``ReadCounter`` wraps those three fields of the class (whatever
descriptor is there: a slot, or the lazy one) and records which node objects were read
while it is ``counting`` (bench/bench_tui.py and the tests under tests/tui).

Reads made by ``tui/node_facts.py`` are counted apart (``facts``): those accessors read
the state's briefs, which build no object. So are the reads of
``NodeSnapshot.gpu_briefs``/``port_briefs``/``nic_briefs``/``port_alarms``: a node built
with its objects (not from the state's rows) makes its briefs from them.
"""

from __future__ import annotations

import sys
from typing import Any

from fleet.facade import NodeSnapshot

FIELDS = ("gpus", "ports", "nics")
FACTS_MODULE = "node_facts.py"
BRIEFS = frozenset(("gpu_briefs", "port_briefs", "nic_briefs", "port_alarms"))


class _Counted:
    """A data descriptor in front of the field's own; records the node read."""

    def __init__(self, name: str, inner: Any, counter: ReadCounter) -> None:
        self.name, self.inner, self.counter = name, inner, counter

    def __get__(self, node: Any, owner: type | None = None) -> Any:
        if node is None:
            return self
        if self.counter.counting:
            caller = sys._getframe(1).f_code
            by_facts = caller.co_filename.endswith(FACTS_MODULE) or caller.co_name in BRIEFS
            into = self.counter.facts if by_facts else self.counter.read
            into[self.name].add(id(node))
        return self.inner.__get__(node, owner)

    def __set__(self, node: Any, value: Any) -> None:
        self.inner.__set__(node, value)


class ReadCounter:
    """Install with ``with ReadCounter() as c``; set ``c.counting`` around the code measured."""

    def __init__(self) -> None:
        self.counting = False
        self.read: dict[str, set[int]] = {name: set() for name in FIELDS}
        self.facts: dict[str, set[int]] = {name: set() for name in FIELDS}
        self._saved: dict[str, Any] = {}

    def __enter__(self) -> ReadCounter:
        for name in FIELDS:
            inner = NodeSnapshot.__dict__[name]
            self._saved[name] = inner
            setattr(NodeSnapshot, name, _Counted(name, inner, self))
        return self

    def __exit__(self, *_exc: object) -> None:
        for name, inner in self._saved.items():
            setattr(NodeSnapshot, name, inner)

    def take(self) -> tuple[dict[str, int], dict[str, int]]:
        """Distinct nodes read per field since the last take (objects, facts); resets."""
        objects = {name: len(ids) for name, ids in self.read.items()}
        facts = {name: len(ids) for name, ids in self.facts.items()}
        self.read = {name: set() for name in FIELDS}
        self.facts = {name: set() for name in FIELDS}
        return objects, facts
