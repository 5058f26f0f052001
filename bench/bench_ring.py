"""Memory of the full-resolution history ring: ours against the frame-per-tick ring.

Each variant runs in its own process (so one's freed memory does not hide the other's
growth) and is fed the same ticks: 8,000 GPUs (1,000 nodes x 8) at 1 Hz with
values that change every tick, for ``--minutes`` (default 16) with the default
15-minute ring. Printed per variant: resident memory (VmRSS) before the ring exists
and after minute 1, 5 and 15 of ticks, the growth from minute 5 to 15, and what the
ring's own arrays or frames hold.

- ``frames``: the ring up to commit e80ac40, one narrow polars frame per tick kept in
  a deque and dropped when older than the span (the baseline, rebuilt here from the
  same ``_frame`` builder the recorder still uses for a tick);
- ``ring``: :class:`history.sample_ring.SampleRing`, preallocated ticks x GPUs
  arrays written in place.

Run: ``PYTHONPATH=. .venv/bin/python bench/bench_ring.py [--gpus 8000] [--minutes 16]``
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import deque
from pathlib import Path

import numpy as np

from history.ring import Layout, TickFrame, _frame
from history.sample_ring import RING_COLUMNS, SampleRing, ring_bytes

MINUTES_SHOWN = (1, 5, 15)


def rss_mib() -> float:
    """This process's resident set size in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class FramePerTickRing:
    """The baseline: the previous ``SampleRing`` (a deque of per-tick frames)."""

    def __init__(self, minutes: float) -> None:
        self.span_s = minutes * 60.0
        self.ticks: deque[TickFrame] = deque()

    def append(self, tick: TickFrame) -> None:
        self.ticks.append(tick)
        while self.ticks and self.ticks[0].t < tick.t - self.span_s:
            self.ticks.popleft()

    def nbytes(self) -> int:
        return sum(int(t.frame.estimated_size()) for t in self.ticks)


def run_variant(variant: str, gpus: int, minutes: int) -> dict[str, float]:
    """Feed one variant ``minutes`` of 1 Hz ticks; RSS at the shown minutes."""
    rng = np.random.default_rng(7)
    keys = np.arange(gpus, dtype=np.uint32)
    layout = Layout((("fleet", gpus),), keys, True)
    out = {"rss_start": rss_mib()}
    frames = FramePerTickRing(15)
    ring = SampleRing(15, 1.0, gpus) if variant == "ring" else None
    out["rss_allocated"] = rss_mib()
    for second in range(minutes * 60 + 1):
        frame = _frame(
            rng.uniform(0, 100, gpus),
            rng.uniform(0, 100, gpus),
            rng.uniform(0, 80_000, gpus),
            rng.uniform(50, 700, gpus),
            rng.uniform(30, 90, gpus),
            np.zeros(gpus, dtype=np.uint8),
        )
        if ring is not None:
            ring.append(float(second), layout, {c: frame[c].to_numpy() for c in RING_COLUMNS})
        else:
            frames.append(TickFrame(float(second), layout, frame))
        if second and second % 60 == 0 and second // 60 in MINUTES_SHOWN:
            out[f"rss_minute_{second // 60}"] = rss_mib()
    out["held_mib"] = (ring.nbytes() if ring is not None else frames.nbytes()) / 2**20
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpus", type=int, default=8000)
    parser.add_argument("--minutes", type=int, default=16)
    parser.add_argument("--variant", choices=("frames", "ring"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.variant:
        print(json.dumps(run_variant(args.variant, args.gpus, args.minutes)))
        return
    results = {}
    for variant in ("frames", "ring"):
        child = [sys.executable, __file__, "--variant", variant]
        child += ["--gpus", str(args.gpus), "--minutes", str(args.minutes)]
        results[variant] = json.loads(subprocess.run(child, check=True, capture_output=True).stdout)
    expected = ring_bytes(15, 1.0, args.gpus) / 2**20
    print(f"{args.gpus:,} GPUs at 1 Hz, 15-minute ring, {args.minutes} minutes of ticks "
          f"(ring_bytes() says {expected:.1f} MiB for ours)")  # fmt: skip
    for variant, r in results.items():
        at = "  ".join(f"min {m}: {r[f'rss_minute_{m}']:.0f}" for m in MINUTES_SHOWN)
        growth = 100 * (r["rss_minute_15"] / r["rss_minute_5"] - 1)
        print(f"{variant:7s} RSS MiB start {r['rss_start']:.0f}, allocated "
              f"{r['rss_allocated']:.0f}, {at}; growth 5->15 {growth:+.1f} %; "
              f"held by the ring {r['held_mib']:.1f} MiB")  # fmt: skip
    saved = results["frames"]["rss_minute_15"] - results["ring"]["rss_minute_15"]
    ratio = results["frames"]["held_mib"] / results["ring"]["held_mib"]
    print(f"at minute 15 ours holds {ratio:.1f}x less in the ring, {saved:.0f} MiB less RSS")


if __name__ == "__main__":
    main()
