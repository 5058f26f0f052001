"""What the text the /metrics renderer keeps between scrapes costs in memory and saves in CPU.

The renderer keeps one kind of text between scrapes: the one-hot / flag / info lines',
while their states hold still. (It used to keep three more: the slow
columns', the fast columns that held still, and each port group's counters that held
still. Each saved 1.0-1.7 ms of CPU per scrape per MiB held, which the resident-set
target could not afford; BENCHMARKS.md has the figures.) Here two renderers render the
same fresh snapshots in turn (bench/lib/metrics_probe.py's canned fleet): one keeps the
text, the other forgets it after every scrape. It prints each one's CPU per steady
render and the size of the text the first one holds (``sys.getsizeof``).

    PYTHONPATH=. .venv/bin/python bench/bench_metrics_kept_texts.py --nodes 1000
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent / "lib"))  # metrics_probe, after the tree

from metrics_probe import snapshots

from exporter.blocks import EntityBlock
from exporter.text import ExpositionRenderer

MiB = 2**20


def _blocks(renderer: ExpositionRenderer) -> list[EntityBlock]:
    return [block for blocks in renderer._blocks for block in blocks.values()]


def _forget_specs(block: EntityBlock) -> None:
    block.spec_texts = [None] * len(block.spec_texts)


VARIANTS: dict[str, Callable[[EntityBlock], None] | None] = {
    "everything kept": None,
    "no one-hot/info texts": _forget_specs,
}


def held_texts(renderer: ExpositionRenderer) -> dict[str, float]:
    """MiB of each kind of text ``renderer`` keeps."""
    specs = 0
    for block in _blocks(renderer):
        specs += sum(sys.getsizeof(kept[1]) for kept in block.spec_texts if kept is not None)
    return {"one-hot/info texts": specs / MiB}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--renders", type=int, default=10)
    args = parser.parse_args()
    snaps: list = snapshots(args.nodes, args.renders + 3)  # type: ignore[type-arg]
    gc.freeze()
    gc.set_threshold(20_000, *gc.get_threshold()[1:])
    loads = [os.getloadavg()[0]]
    warm = ExpositionRenderer()  # builds what a node's rows build lazily, for all alike
    renderers = {name: ExpositionRenderer() for name in VARIANTS}
    cpu: dict[str, list[float]] = {name: [] for name in VARIANTS}
    for i, snapshot in enumerate(snaps):
        sum(map(len, warm.stream_parts(snapshot)))
        order = list(renderers) if i % 2 else list(renderers)[::-1]
        for name in order:
            started = time.process_time()
            sum(map(len, renderers[name].stream_parts(snapshot)))
            spent = time.process_time() - started
            forget = VARIANTS[name]
            if forget is not None:
                for block in _blocks(renderers[name]):
                    forget(block)
            if i >= 3:
                cpu[name].append(spent)
        snaps[i] = None  # dropped once rendered, as the runtime drops an old snapshot
    loads.append(os.getloadavg()[0])
    print(
        f"/metrics, {args.nodes} nodes, {args.renders} steady renders each, in turn;"
        f" load {min(loads):.1f}-{max(loads):.1f}"
    )
    for name, times in cpu.items():
        print(
            f"  {name:24s} CPU fastest {1000 * min(times):6.1f} ms,"
            f" median {1000 * statistics.median(times):6.1f} ms"
        )
    held = held_texts(renderers["everything kept"])
    print("  texts kept: " + ", ".join(f"{k} {v:.1f} MiB" for k, v in held.items()))


if __name__ == "__main__":
    main()
