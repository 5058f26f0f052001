"""Whether this tree's /metrics bodies are byte for byte those of another revision.

Renders a fixed series of states with one renderer, scrape after scrape (so every cache
is exercised: unchanged states, moved values, changed verdicts and clock reasons, nodes
gone, hostile label strings, nodes read from objects beside nodes read from rows), by
``render`` and by ``stream_parts``, and prints the SHA-256 of each body (the scrape
duration line left out: it is a time). With ``--against REV`` it runs the same series
under the tree at git revision ``REV`` in a subprocess and says which bodies differ.

    PYTHONPATH=. .venv/bin/python bench/tools/metrics_same_bytes.py --against a739b4d
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from bench.lib.fleet_states import state_ticks
from bench.lib.metrics_fleets import fleet, troubled_fleet, troubled_ticks, without_scrape_duration
from exporter.text import ExpositionRenderer
from fleet.model import FleetSnapshot, evolve

ROOT = Path(__file__).resolve().parents[2]


def _moody_sample(line: bytes, node: int, tick: int) -> bytes:
    """Clock reasons, a failed reading and a NIC without speed that come and go."""
    sample = json.loads(line)
    if node % 7 == 3 and tick % 2 == 0:
        sample["gpus"][node % 8][9] = 0x8 | 0x40  # hw slowdown, hw thermal slowdown
    if node % 11 == 5 and tick == 3:
        sample["gpus"][1][0] = None
        sample["ports"][1][17] = None
    if node == 9 and tick >= 2:
        sample["gpus"][2] = None
    if node % 5 == 0 and tick == 7:  # a port counter that held still moves
        sample["ports"][0][5] = tick * 3
    return json.dumps(sample).encode() + b"\n"


def _objects_only(snapshot: FleetSnapshot) -> FleetSnapshot:
    return replace(snapshot, nodes=tuple(node.detached() for node in snapshot.nodes))


def _one_on_a_copy(snapshot: FleetSnapshot) -> FleetSnapshot:
    """Node 2's GPUs set on a copy (as a probe verdict does): read from its objects."""
    nodes = list(snapshot.nodes)
    gpus = tuple(replace(g, probe_verdict="pass") for g in nodes[2].gpus)
    nodes[2] = evolve(nodes[2], gpus=gpus)
    return replace(snapshot, nodes=tuple(nodes))


def states() -> list[FleetSnapshot]:
    """The series of states, in the order they are scraped."""
    hostile = troubled_ticks(ticks=4)
    moody = state_ticks(150, 7, _moody_sample)
    out = [*hostile, hostile[-1], *map(_objects_only, hostile[:2])]
    out += [*moody, moody[-1], _one_on_a_copy(moody[-1]), moody[-1]]
    out += [moody[2], state_ticks(40, 1)[0]]  # back in time, then most nodes gone
    out += [troubled_fleet(), fleet(130, 8, 2), fleet(130, 8, 2), fleet(60, 8, 1), troubled_fleet()]
    return out


def _digest(body: bytes) -> str:
    return hashlib.sha256(without_scrape_duration(body)).hexdigest()


def digests() -> dict[str, list[str]]:
    """Per way of rendering, each state's body digest."""
    series = states()
    ways: dict[str, Callable[[ExpositionRenderer, FleetSnapshot], bytes]] = {
        "render": lambda r, s: r.render(s),
        "stream": lambda r, s: b"".join(r.stream_parts(s)),
    }
    out = {}
    for way, render in ways.items():
        renderer = ExpositionRenderer()
        out[way] = [_digest(render(renderer, snapshot)) for snapshot in series]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", metavar="REV", help="compare with the bodies at REV")
    args = parser.parse_args()
    ours = digests()
    if not args.against:
        print(json.dumps(ours))
        return
    # Imported here: the other tree runs this script too, and may not have the module.
    from bench.lib.other_tree import run_script_in

    theirs: dict[str, list[str]] = run_script_in(args.against, Path(__file__), ROOT)
    differ = [
        f"{way} #{i}"
        for way in ours
        for i, (a, b) in enumerate(zip(ours[way], theirs[way], strict=True))
        if a != b
    ]
    count = sum(map(len, ours.values()))
    print(f"{count} bodies compared with {args.against}: {len(differ)} differ {differ}")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
