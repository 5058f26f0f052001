"""What each text the /metrics renderer keeps between scrapes costs in memory and saves in CPU.

The renderer keeps four kinds of text between scrapes: the slow columns' (ECC, retired
pages, remapping, NVLink), the one-hot / flag / info lines', the fast columns that held
still, and each port group's counters that held still (with the moving ones' heads).
Here five renderers render the same fresh snapshots in turn (bench/metrics_probe.py's
canned fleet): one keeps everything, each of the others forgets one kind after every
scrape. It prints each one's CPU per steady render and the size of each kind of text
the first one holds (``sys.getsizeof`` of the kept strings and their lists).

    PYTHONPATH=. .venv/bin/python bench/metrics_kept_texts.py --nodes 1000
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

sys.path.append(str(Path(__file__).resolve().parent))  # metrics_probe, after the tree

from metrics_probe import snapshots

from fleet.metrics.blocks import EntityBlock
from fleet.metrics.reuse import KeptTexts
from fleet.metrics.text import ExpositionRenderer

MiB = 2**20


def _blocks(renderer: ExpositionRenderer) -> list[EntityBlock]:
    return [block for blocks in renderer._blocks for block in blocks.values()]


def _forget_slow(block: EntityBlock) -> None:
    block.slow_values = None


def _forget_specs(block: EntityBlock) -> None:
    block.spec_texts = [None] * len(block.spec_texts)


def _forget_counters(block: EntityBlock) -> None:
    block.keyed_groups.clear()


def _forget_columns(block: EntityBlock) -> None:
    block.fast_texts = KeptTexts()


VARIANTS: dict[str, Callable[[EntityBlock], None] | None] = {
    "everything kept": None,
    "no slow column texts": _forget_slow,
    "no one-hot/info texts": _forget_specs,
    "no counter groups kept": _forget_counters,
    "no still fast columns": _forget_columns,
}


def held_texts(renderer: ExpositionRenderer) -> dict[str, float]:
    """MiB of each kind of text ``renderer`` keeps."""
    slow = specs = columns = counters = 0
    for block in _blocks(renderer):
        slow += sum(map(sys.getsizeof, block.slow_chunks.values()))
        specs += sum(sys.getsizeof(kept[1]) for kept in block.spec_texts if kept is not None)
        columns += sum(
            sys.getsizeof(kept[2]) for kept in block.fast_texts._kept.values() if kept[2]
        )
        for group in block.keyed_groups.values():
            baked = group._baked
            if baked is not None:
                counters += sum(sys.getsizeof(x) for x in baked.slots if x is not None)
                counters += sys.getsizeof(baked.slots) + sys.getsizeof(baked.kept_values)
                counters += len(baked.kept) + len(baked.moving)
    return {
        "slow column texts": slow / MiB,
        "one-hot/info texts": specs / MiB,
        "still fast columns": columns / MiB,
        "counter groups": counters / MiB,
    }


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
