"""A real controller process (tests/ledger/controller.py) stopped and killed under test.

SIGSTOP: the stall comes back as unmonitored time with its cause, never as down.
SIGKILL: a standby controller on the same data directory takes over recording.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from history.gaps import load_gaps
from history.layout import day_of_ms
from history.lock import read_heartbeat
from history.reader import load_coverage
from ledger.sla import sla_for_month
from ledger.sla.section import SlaSection
from testkit.loopback.fleet import LoopbackFleet
from tests.runtime.waits import wait_until

INTERVAL = 0.5
STOPPED_S = 5.0  # well past the watchdog's threshold (3 intervals, at least 2 s)


def spec_file(lf: LoopbackFleet, data_dir: Path, path: Path) -> Path:
    targets = [dataclasses.asdict(t) for t in lf.targets(interval=INTERVAL, slow_interval=1.0)]
    path.write_text(
        json.dumps({"targets": targets, "data_dir": str(data_dir), "interval": INTERVAL})
    )
    return path


def start_controller(spec: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.ledger.controller", str(spec)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
    )


async def read_line(child: subprocess.Popen[str], within_s: float = 60.0) -> str:
    assert child.stdout is not None
    line = await asyncio.wait_for(asyncio.to_thread(child.stdout.readline), within_s)
    assert line, f"controller exited with {child.poll()}"
    return line.strip()


async def stop_controller(child: subprocess.Popen[str]) -> None:
    child.send_signal(signal.SIGTERM)
    await asyncio.to_thread(child.wait, 60)


def today() -> str:
    return datetime.now(UTC).strftime("%Y-%m")


async def test_a_sigstopped_controller_records_the_stall_as_unmonitored(tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with LoopbackFleet(nodes=2, gpus=8, mode="canned") as lf:
        child = start_controller(spec_file(lf, data, tmp_path / "spec.json"))
        try:
            assert await read_line(child) == "started"
            assert await read_line(child) == "up"
            await wait_until(lambda: read_heartbeat(data) is not None, 30)
            child.send_signal(signal.SIGSTOP)
            stopped_at = time.time()
            await asyncio.sleep(STOPPED_S)  # the stimulus: how long the controller is frozen
            child.send_signal(signal.SIGCONT)
            day = day_of_ms(round(stopped_at * 1000))
            await wait_until(lambda: load_gaps(data, day, day) != [], 30)
            resumed_after = load_gaps(data, day, day)[0].end_ms
            await wait_until(
                lambda: any(s >= resumed_after for s, _ in load_coverage(data, day, day)), 30
            )
        finally:
            child.send_signal(signal.SIGCONT)
            await stop_controller(child)
    stopped_ms = round(stopped_at * 1000)
    gaps = load_gaps(data, day, day)
    # On a loaded machine the catch-up after SIGCONT can itself hold the loop past the
    # watchdog's limit: a second, real stall. Every gap is a stall; one covers the stop.
    assert all(g.cause.startswith("controller stalled") for g in gaps), gaps
    (gap,) = [g for g in gaps if g.start_ms <= stopped_ms + 1000 < g.end_ms]
    assert gap.end_ms - gap.start_ms >= STOPPED_S * 1000
    # Coverage has a hole over the stall: nothing observed while frozen counts.
    spans = load_coverage(data, day, day)
    assert not any(s < stopped_ms + 1000 < e for s, e in spans)
    assert any(s >= gap.end_ms for s, _ in spans)  # observation resumed after settling
    result = sla_for_month(data, SlaSection(committed_nodes=2), today(), time.time())
    assert result.down_node_ms == 0 and result.outages == ()
    assert result.availability_pct == 100


async def test_a_standby_takes_over_recording_when_the_recorder_is_killed(tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with LoopbackFleet(nodes=2, gpus=8, mode="canned") as lf:
        spec = spec_file(lf, data, tmp_path / "spec.json")
        recorder = start_controller(spec)
        standby: subprocess.Popen[str] | None = None
        try:
            assert await read_line(recorder) == "started"
            await wait_until(lambda: read_heartbeat(data) is not None, 30)
            standby = start_controller(spec)  # finds the lock held: it stands by
            assert await read_line(standby) == "started"
            first = read_heartbeat(data)
            assert first is not None and first.pid == recorder.pid
            recorder.send_signal(signal.SIGKILL)
            await asyncio.to_thread(recorder.wait, 30)
            killed_at = time.time()

            def standby_records() -> bool:
                beat = read_heartbeat(data)
                return beat is not None and standby is not None and beat.pid == standby.pid

            took = await wait_until(standby_records, 30)
        finally:
            if recorder.poll() is None:
                recorder.kill()
                recorder.wait()
            if standby is not None:
                await stop_controller(standby)
    assert took < 5.0  # within a few seconds of the recorder's death
    day = day_of_ms(round(killed_at * 1000))
    spans = load_coverage(data, day, day)
    assert any(s >= round(killed_at * 1000) for s, _ in spans)  # recording went on
    result = sla_for_month(data, SlaSection(committed_nodes=2), today(), time.time())
    assert result.down_node_ms == 0
