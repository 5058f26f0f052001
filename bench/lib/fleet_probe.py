"""Runs the real ``gpufleet`` CLI with measuring hooks, for bench/bench_fleet.py.

    python bench/lib/fleet_probe.py STATS.json -- serve -c fleet.toml ...

Before handing ``argv`` to :func:`gpufleet.cli.main` it adds, without changing any
product code path:

- a ``gc.callbacks`` timer (every collection's pause, by generation);
- a snapshot listener, subscribed when the runtime starts, that notes each node's new
  sample (``NodeSnapshot.sampled_at`` is the node's own send time) and the tick's
  ``taken_at``: sample -> snapshot latency and samples that reached a snapshot.

- for ``watch``: a hook after the dashboard applies a snapshot that, once the screen
  has been refreshed (``call_after_refresh``), notes send -> screen latency of every
  new sample in it (the fleet grid draws only the visible rows; a sample counts as on
  screen when the frame after its snapshot was written);
- with ``GPUFLEET_BENCH_FROZEN_GARBAGE=S``: once, S seconds after the heap froze at the
  settle, what a thaw would free (the cyclic garbage that a freeze kept resident), in
  ``STATS.json`` (``frozen_garbage``); that collection's pause is left out of ``gc``;
- with ``GPUFLEET_BENCH_GEN2_CENSUS=1``: before each full collection, the objects it is
  about to scan (the old generation, less what is frozen) counted by type, in
  ``STATS.json`` (``gen2_census``); the count runs before the pause's timer starts;
- with ``GPUFLEET_BENCH_YOUNG=N``: the runtime collects its young generation every N
  net new objects instead of ``gpufleet.runtime.GC_YOUNG_THRESHOLD`` (an A/B of the
  threshold on one tree);
- with ``GPUFLEET_BENCH_TRACEMALLOC=N`` (debug mode): a tracemalloc snapshot every
  N seconds, and the top allocation sites that grew between the first and the last
  one in ``STATS.json`` (``memory_growth``), with gc object counts by type.

It rewrites ``STATS.json.progress`` every few ticks (ticks, nodes streaming) so the
bench can wait for the fleet, and writes ``STATS.json`` when the CLI returns (or, for
``watch``, on SIGTERM).
"""

from __future__ import annotations

import gc
import json
import os
import signal
import sys
import threading
import time
import tracemalloc
from array import array
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import gpufleet  # first, as for the CLI: it configures malloc before polars
import gpufleet.runtime
from fleet.model import FleetSnapshot
from gpufleet.cli import main
from gpufleet.runtime import FleetRuntime

if TYPE_CHECKING:
    from first_view import Timeline

# Records kept in the controller's memory before they go to the spill file.
SPILL_RECORDS = 8192


class Spill:
    """Records of ``width`` floats, kept in a file, not in the process the bench measures.

    Kept in lists and arrays, the probe's own records grew the controller's memory by
    ~1.2 MiB a minute at 1,000 nodes (two floats per sample, a tuple per collection):
    about half the growth ``--minutes`` read from minute 5 to 15 was the bench's.
    """

    def __init__(self, path: Path, width: int) -> None:
        self.path = path
        self.width = width
        self._held = array("d")
        path.unlink(missing_ok=True)

    def add(self, *record: float) -> None:
        self._held.extend(record)
        if len(self._held) >= SPILL_RECORDS * self.width:
            self._spill()

    def columns(self) -> list[list[float]]:
        """Every record so far, as one list per field."""
        self._spill()
        data = array("d")
        if self.path.exists():
            data.frombytes(self.path.read_bytes())
        return [list(data[i :: self.width]) for i in range(self.width)]

    def _spill(self) -> None:
        if self._held:
            with self.path.open("ab") as out:
                self._held.tofile(out)
            del self._held[:]


class GcPauses:
    """Every collection's wall time and thread CPU time, from ``gc.callbacks``.

    On a busy shared machine the wall time includes time the process was not running.
    """

    def __init__(self, spill: Path) -> None:
        self.started = (0.0, 0.0)
        self.records = Spill(spill, 4)  # (at, gen, wall, cpu)
        self.muted = False  # the bench's own collections (FrozenGarbage) are not the product's

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if self.muted:
            return
        if phase == "start":
            self.started = (time.perf_counter(), time.thread_time())
        else:
            wall = time.perf_counter() - self.started[0]
            cpu = time.thread_time() - self.started[1]
            self.records.add(time.time(), info["generation"], wall, cpu)


class Gen2Census:
    """What each full collection scans, by type: the objects of the old generation that
    are not frozen, counted just before the collection starts (a ``gc.callbacks`` entry
    ahead of :class:`GcPauses`, so the count is not timed as the pause), and how many it
    then found unreachable."""

    TOP = 12

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if info["generation"] != 2:
            return
        if phase == "stop":
            if self.seen:  # what it found unreachable (freed, or uncollectable)
                self.seen[-1]["collected"] = info["collected"]
                self.seen[-1]["uncollectable"] = info["uncollectable"]
            return
        objects = gc.get_objects(2)
        types = Counter(f"{type(o).__module__}.{type(o).__qualname__}" for o in objects)
        young = len(gc.get_objects(0)) + len(gc.get_objects(1))
        self.seen.append(
            {
                "at": time.time(),
                "old": len(objects),
                "young": young,
                "types": types.most_common(self.TOP),
            }
        )
        del objects


class FrozenGarbage:
    """What a thaw would free, once, ``after_s`` after the heap froze at the settle.

    The runtime freezes the heap (gpufleet.runtime.HeapFreezer); an object frozen and
    later dropped in a reference cycle stays resident until a thaw. This thaws the heap
    once, keeps what the collection finds (``DEBUG_SAVEALL``) to count and size it, and
    freezes it again with the rest, so the resident set the bench reads stays what the
    product's would be. Its pauses are not recorded as the product's.
    """

    def __init__(self, after_s: float, pauses: GcPauses) -> None:
        self.after_s = after_s
        self.pauses = pauses
        self.found: dict[str, Any] | None = None
        self.kept: list[object] = []  # the garbage found, resident as it was

    def on_tick(self, runtime: FleetRuntime, snapshot: FleetSnapshot) -> None:
        frozen_at = runtime.heap.frozen_at
        if self.found is not None or frozen_at is None:
            return
        if snapshot.taken_at - frozen_at < self.after_s:
            return
        self.pauses.muted = True
        try:
            gc.collect()  # what is not frozen: not the freeze's doing
            gc.set_debug(gc.DEBUG_SAVEALL)
            gc.unfreeze()
            objects = gc.collect()
            self.kept = list(gc.garbage)
            gc.garbage.clear()
            gc.set_debug(0)
            gc.freeze()
        finally:
            gc.set_debug(0)
            self.pauses.muted = False
        self.found = {
            "after_s": self.after_s,
            "objects": objects,
            "kib": round(sum(map(sys.getsizeof, self.kept)) / 1024, 1),
            "types": Counter(type(o).__name__ for o in self.kept).most_common(8),
            "heap_steps": getattr(runtime.heap, "steps", 0),
        }


class SnapshotProbe:
    """Latency of each new sample to the first snapshot that shows it."""

    def __init__(self, progress: Path, spill: Path, timeline: Timeline | None = None) -> None:
        self.progress = progress
        self.timeline = timeline
        self.seen: dict[str, float | None] = {}
        # (send time, taken_at - send time) of each sample that reached a snapshot
        self.samples = Spill(spill, 2)
        self.ticks = array("d")  # taken_at of each snapshot (8 bytes a second)

    def __call__(self, snapshot: FleetSnapshot) -> None:
        self.ticks.append(snapshot.taken_at)
        record_new_samples(snapshot, snapshot.taken_at, self.seen, self.samples)
        if self.timeline is not None:
            self.timeline.on_snapshot(snapshot.nodes_streaming)
        if len(self.ticks) % 5 == 0:
            streaming = snapshot.nodes_streaming
            self.progress.write_text(json.dumps({"ticks": len(self.ticks), "streaming": streaming}))


class ScreenProbe:
    """Latency of each new sample to the first screen refresh after its snapshot is applied."""

    def __init__(self, spill: Path) -> None:
        self.seen: dict[str, float | None] = {}
        self.samples = Spill(spill, 2)  # (send time, on screen - send time)

    def install(self) -> None:
        from tui.app import GpuFleetApp

        apply = GpuFleetApp._apply
        probe = self

        def apply_probed(app: GpuFleetApp, snapshot: FleetSnapshot) -> None:
            apply(app, snapshot)
            app.call_after_refresh(probe.on_screen, snapshot)

        GpuFleetApp._apply = apply_probed  # type: ignore[method-assign,assignment]

    def on_screen(self, snapshot: FleetSnapshot) -> None:
        record_new_samples(snapshot, time.time(), self.seen, self.samples)


def record_new_samples(
    snapshot: FleetSnapshot, now: float, seen: dict[str, float | None], samples: Spill
) -> None:
    """Each node's sample not seen before: its send time and its age at ``now``."""
    for node in snapshot.nodes:
        sent = node.sampled_at
        if sent is not None and seen.get(node.name) != sent:
            seen[node.name] = sent
            samples.add(sent, now - sent)


class MemoryWatch:
    """Debug mode: where the heap grows (tracemalloc) and which object types multiply.

    Every ``every_s`` it also notes where memory is (bench/lib/memory_account.py): resident
    memory by mapping, the live allocation sites by file and by line, and, on the next
    tick in the event loop's thread, what each part of the runtime keeps reachable.
    """

    def __init__(self, every_s: float) -> None:
        self.every_s = every_s
        self.first: tracemalloc.Snapshot | None = None
        self.last: tracemalloc.Snapshot | None = None
        self.counts: list[tuple[float, dict[str, int]]] = []
        self.accounts: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._due = threading.Event()
        self.started = time.time()

    def start(self) -> None:
        # 0 frames: no tracemalloc, only mappings and parts. Tracing every allocation
        # starves 1,000 handshakes on a small machine (4 of 1,000 streaming after 180 s).
        frames = int(os.environ.get("GPUFLEET_BENCH_TRACEMALLOC_FRAMES", "8"))
        if frames:
            tracemalloc.start(frames)
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            snap = tracemalloc.take_snapshot() if tracemalloc.is_tracing() else None
            if snap is not None and self.first is None:
                self.first = snap
            self.last = snap
            kinds = Counter(type(o).__name__ for o in gc.get_objects())
            self.counts.append((time.time(), dict(kinds.most_common(15))))
            traced, _ = tracemalloc.get_traced_memory()
            from memory_account import glibc_heap, mappings  # debug mode only

            self.accounts.append(
                {
                    "minute": round((time.time() - self.started) / 60, 2),
                    "traced_mib": round(traced / 2**20, 1),
                    "mappings": mappings(os.getpid()),
                    "glibc_heap": glibc_heap(),
                    "files": _top(snap, "filename", 20) if snap else [],
                    "lines": _top(snap, "lineno", 30) if snap else [],
                }
            )
            self._due.set()

    def on_tick(self, runtime: FleetRuntime) -> None:
        """In the loop's thread, after a snapshot was taken: the runtime's parts."""
        if self._due.is_set() and self.accounts:
            self._due.clear()
            began = time.perf_counter()
            from memory_account import components, runtime_roots

            parts = components(runtime_roots(runtime))
            self.accounts[-1]["components"] = parts
            self.accounts[-1]["components_walk_s"] = round(time.perf_counter() - began, 1)

    def report(self) -> dict[str, Any]:
        self._stop.set()
        growth: list[str] = []
        if self.first is not None and self.last is not None:
            diff = self.last.compare_to(self.first, "traceback")
            growth = ["\n".join(stat.traceback.format()[-4:]) + f"\n  {stat}" for stat in diff[:12]]
        return {"memory_growth": growth, "object_counts": self.counts, "accounts": self.accounts}


def _top(snap: tracemalloc.Snapshot, key: str, n: int) -> list[tuple[str, float, int]]:
    root = str(Path(__file__).resolve().parents[2]) + "/"
    out = []
    for stat in snap.statistics(key)[:n]:
        frame = stat.traceback[0]
        where = frame.filename.replace(root, "").split("site-packages/")[-1]
        if key == "lineno":
            where += f":{frame.lineno}"
        out.append((where, round(stat.size / 2**20, 2), stat.count))
    return out


def run(stats_path: Path, argv: list[str]) -> int:
    from first_view import Timeline, process_started_at  # bench/lib, beside this file

    if young := os.environ.get("GPUFLEET_BENCH_YOUNG"):
        # gc_thresholds reads the constant when the runtime starts
        gpufleet.runtime.GC_YOUNG_THRESHOLD = int(young)
    census = Gen2Census() if os.environ.get("GPUFLEET_BENCH_GEN2_CENSUS") == "1" else None
    if census is not None:
        gc.callbacks.append(census)  # ahead of the timer: its count is not the pause
    pauses = GcPauses(stats_path.with_suffix(".gc"))
    gc.callbacks.append(pauses)
    timeline = Timeline() if os.environ.get("GPUFLEET_BENCH_TIMELINE") == "1" else None
    if timeline is not None:
        timeline.install()
    progress = stats_path.with_suffix(".progress")
    probe = SnapshotProbe(progress, stats_path.with_suffix(".samples"), timeline)
    screen = ScreenProbe(stats_path.with_suffix(".screen"))
    frozen = None
    if after := float(os.environ.get("GPUFLEET_BENCH_FROZEN_GARBAGE", "0")):
        frozen = FrozenGarbage(after, pauses)
    memory = None
    if every := float(os.environ.get("GPUFLEET_BENCH_TRACEMALLOC", "0")):
        memory = MemoryWatch(every)
        memory.start()
    start = FleetRuntime.start

    async def start_probed(self: FleetRuntime) -> None:
        self.subscribe(probe)
        if frozen is not None:
            self.subscribe(lambda snapshot: frozen.on_tick(self, snapshot))
        if memory is not None:
            self.subscribe(lambda _snapshot: memory.on_tick(self))
        await start(self)

    FleetRuntime.start = start_probed  # type: ignore[method-assign]

    def write_stats(status: int) -> None:
        at, generation, wall, cpu = pauses.records.columns()
        sample_t, latency = probe.samples.columns()
        screen_sample_t, screen_latency = screen.samples.columns()
        stats = {
            "status": status,
            "process_started_at": process_started_at(),
            "gc": [(a, int(g), w, c) for a, g, w, c in zip(at, generation, wall, cpu, strict=True)],
            "sample_t": sample_t,
            "latency": latency,
            "ticks": list(probe.ticks),
            "screen_sample_t": screen_sample_t,
            "screen_latency": screen_latency,
            **(memory.report() if memory is not None else {}),
            **({"timeline": timeline.report()} if timeline is not None else {}),
            **({"frozen_garbage": frozen.found} if frozen is not None else {}),
            **({"gen2_census": census.seen} if census is not None else {}),
        }
        stats_path.write_text(json.dumps(stats))

    if argv and argv[0] == "watch":
        screen.install()

        def stop(signum: int, frame: object) -> None:
            write_stats(0)  # the dashboard has no SIGTERM shutdown of its own
            os._exit(0)

        signal.signal(signal.SIGTERM, stop)
    status = main(argv)
    write_stats(status)
    return status


if __name__ == "__main__":
    sep = sys.argv.index("--")
    sys.exit(run(Path(sys.argv[1]), sys.argv[sep + 1 :]))
