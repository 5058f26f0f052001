"""Whole-process benchmark: ``gpufleet serve`` watching N simulated nodes at 1 Hz.

Three processes, so each one's CPU is its own:

1. the simulated nodes (bench/lib/fleet_nodes.py): one asyncssh listener on 127.0.0.1,
   canned protocol v1 lines in the real agent's shape (8 GPUs, 8 IB ports, 1 NIC;
   every value moves every tick; ``slow``/``links`` every 10th tick), ``t`` = send time,
   one SSH packet per line as OpenSSH's sshd sends them (``--node-framing split``: each
   line in 2-4 packets, as sshd sends a line it read from the agent's pipe in pieces;
   ``asyncssh``: asyncssh's ignore message before each, as runs before 2026-11-23 had
   it); XID events and jobs messages at a real fleet's rates beside the samples;
2. the controller, started through the real CLI (``gpufleet serve -c fleet.toml``)
   wrapped by bench/lib/fleet_probe.py (GC pause timer, sample -> snapshot latency);
   hosts ``node-00001...`` reach the listener through an ``~/.ssh/config`` in a
   private HOME (``HostName 127.0.0.1``), host keys checked against a known_hosts;
3. the naive stack (bench/lib/fleet_naive.py) on the same nodes, measured after ours.

The floor of the stack (bench/lib/fleet_floor.py) is measured just before and just after
ours on the same nodes, and ours is divided by the mean of the two (``ratio_to_floor``;
the two single ratios beside it show how far the load moved it).

Measured over a steady window after the fleet streams and a warm-up (one scrape at
its start, as Prometheus would have made): CPU of the controller from /proc/PID/stat,
RSS (VmRSS) during the window, the largest GC pause
(and the largest generation-2 pause), sample -> snapshot latency p50/p99, samples
sent in the window that never reached a snapshot, tick gaps, and /metrics scraped
every 15 s with the request Prometheus sends, gzip included (scrape time, bytes).
Then the naive stack's CPU, RSS and samples ingested, and the ratio. Every window
prints the machine's load average at its start and end and how busy the whole machine
was (/proc/stat): on a shared VM a process's CPU time grows with the load around it, so
a figure without its load compares nothing.

``--ui watch`` runs ``gpufleet watch`` on a 200x50 pseudo-terminal (bench/lib/fleet_watch.py)
with ``--metrics-addr``, scraped the same way, and adds sample -> screen latency.
``--minutes M`` keeps the controller running (scraped) until M minutes after it was
started and reports RSS at minutes 1, 5, 15 and 30 (those within M). ``--memory-debug S``
takes a tracemalloc snapshot every S seconds in the controller and prints where the
heap grew and which object types multiplied (slow: for finding leaks, not figures);
with ``GPUFLEET_BENCH_TRACEMALLOC_FRAMES=0`` it only reads the mappings and walks the
runtime's parts (bench/lib/memory_account.py), which a 1,000-node start survives.
``--pin`` keeps the controller (and the naive stack) to the first CPU and the simulated
nodes to the others, so at 5,000 nodes on a 2-core VM the two do not take turns on
both cores.

    .venv/bin/python bench/bench_fleet.py --nodes 1000 --warmup 20 --window 60
    .venv/bin/python bench/bench_fleet.py --nodes 1000 --ui watch --minutes 15 --no-naive
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.append(str(HERE / "lib"))  # fleet_watch

from fleet_watch import Terminal  # noqa: E402  (after the path above)
from memory_account import mappings  # noqa: E402

from testkit.ports import free_port  # noqa: E402

RSS_MINUTES = (1, 5, 15, 30)
SCRAPE_S = 15.0
# The request Prometheus 2.42 (Debian's, the one the tests start) sends, captured from
# a listener it scraped. Its Accept-Encoding is what makes the endpoint gzip the body,
# so a scrape costs the controller what a real one does. ``--scrape-encoding identity``
# scrapes as curl would (the figures before 2026-11-23 were taken that way).
PROMETHEUS_HEADERS = {
    "User-Agent": "Prometheus/2.42.0+ds",
    "Accept": "application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
    "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
    "Accept-Encoding": "gzip",
    "X-Prometheus-Scrape-Timeout-Seconds": "10",
}
_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` so far (/proc/PID/stat fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def rss_mib(pid: int) -> float:
    """Resident set size of ``pid`` in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


@dataclass(frozen=True)
class Scraper:
    """Scrapes ``/metrics`` the way Prometheus does (its headers, ``encoding`` aside)."""

    url: str
    encoding: str = "gzip"

    def scrape(self) -> tuple[float, int]:
        """Seconds the scrape took (inf past the timeout) and the body's bytes on the wire."""
        headers = PROMETHEUS_HEADERS | {"Accept-Encoding": self.encoding}
        request = urllib.request.Request(self.url, headers=headers)
        began = time.perf_counter()
        try:
            with urllib.request.urlopen(request, timeout=SCRAPE_S) as response:
                sent = response.headers.get("Content-Encoding", "identity")
                if sent != self.encoding:
                    raise SystemExit(f"asked /metrics for {self.encoding}, got {sent}")
                size = len(response.read())
        except TimeoutError:
            return float("inf"), 0  # Prometheus would have given up too
        return time.perf_counter() - began, size


@dataclass
class Window:
    """What one process cost over the measuring window."""

    cpu_s: float = 0.0
    wall_s: float = 0.0
    rss: list[float] = field(default_factory=list)
    scrapes: list[float] = field(default_factory=list)
    scrape_bytes: list[int] = field(default_factory=list)
    t0: float = 0.0
    t1: float = 0.0
    ingested: int = 0  # the naive stack's samples handled in the window
    received_bytes: int = 0  # the floor's SSH payload bytes in the window
    nodes_seen: int = 0  # nodes that sent the peer a sample
    failed: int = 0
    load: tuple[float, float] = (0.0, 0.0)  # 1-minute load average at start and end
    box_busy_pct: float = 0.0  # the whole machine's CPUs, busy share over the window

    @property
    def core_pct(self) -> float:
        return 100 * self.cpu_s / self.wall_s if self.wall_s else float("nan")


def box_ticks() -> tuple[int, int]:
    """The whole machine's busy and total CPU ticks so far (/proc/stat's ``cpu`` line)."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    return sum(values) - idle, sum(values)


def measure(pid: int, seconds: float, scraper: Scraper | None) -> Window:
    """CPU and RSS of ``pid`` over ``seconds`` (starting on a whole second), scraping."""
    time.sleep(1 - time.time() % 1)  # whole seconds: the node counts are per second
    w = Window(t0=time.time())
    load0, (busy0, total0) = os.getloadavg()[0], box_ticks()
    cpu0, start = cpu_seconds(pid), time.perf_counter()
    next_scrape = start + (1.0 if scraper else float("inf"))
    next_rss = start
    while (now := time.perf_counter()) - start < seconds:
        if now >= next_rss:
            w.rss.append(rss_mib(pid))
            next_rss += 5.0
        if now >= next_scrape and scraper:
            took, size = scraper.scrape()
            w.scrapes.append(took)
            w.scrape_bytes.append(size)
            next_scrape += SCRAPE_S
        time.sleep(0.2)  # a measuring window, not synchronisation
    w.cpu_s, w.wall_s, w.t1 = cpu_seconds(pid) - cpu0, time.perf_counter() - start, time.time()
    w.rss.append(rss_mib(pid))
    busy1, total1 = box_ticks()
    w.load = (round(load0, 2), round(os.getloadavg()[0], 2))
    w.box_busy_pct = round(100 * (busy1 - busy0) / max(1, total1 - total0), 1)
    return w


def load_line(name: str, w: Window) -> str:
    """One window's CPU beside the load it ran under."""
    return (
        f"{name}: {w.core_pct:.2f} % of a core with load {w.load[0]} -> {w.load[1]}, "
        f"machine {w.box_busy_pct} % busy"
    )


def streaming_count(progress: Path) -> int:
    """Nodes streaming at the controller's last progress note (bench/lib/fleet_probe.py)."""
    try:
        return int(json.loads(progress.read_text())["streaming"])
    except (OSError, ValueError, KeyError):
        return 0


def write_fleet(work: Path, nodes: int, announce: dict[str, Any]) -> Path:
    """The controller's config, known_hosts and a private HOME with an ssh config."""
    home = work / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "config").write_text("Host node-*\n  HostName 127.0.0.1\n")
    known = work / "known_hosts"
    known.write_text(f"* {announce['host_key']}\n")
    config = work / "fleet.toml"
    config.write_text(
        "[fleet]\n"
        f'hosts = ["node-[00001-{nodes:05d}]"]\n'
        f"port = {announce['port']}\n"
        f'identity_file = "{announce["client_key"]}"\n'
        f'known_hosts = "{known}"\n'
        "interval = 1.0\n"
        "slow_interval = 10.0\n"
        # A shared machine may starve handshakes: a timed-out connect backs off for long.
        "connect_timeout = 60.0\n"
    )
    return config


def host_cpu() -> str:
    """The CPU the run had: the same tree read 25 % of a core on one 2-core VM and 13-16 %
    on another (2026-11-23), so a figure without its host compares nothing."""
    fields: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    model = fields.get("model name", "unknown CPU")
    family, number = fields.get("cpu family", "?"), fields.get("model", "?")
    return f"{model} (family {family}, model {number}), {os.cpu_count()} CPUs"


def pinned(pin: bool, part: int) -> list[str]:
    """A ``taskset`` prefix that keeps a process to its part of the machine's CPUs: the
    controller (``part`` 0) to the first, the simulated nodes (1) to the rest. On a
    2-core VM the two otherwise share both cores, and when they contend each gets
    dearer; pinned, the controller's figures are its own core's (what a larger machine
    with the simulator elsewhere would show)."""
    if not pin:
        return []
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        raise SystemExit("--pin needs at least two CPUs")
    chosen = cpus[:1] if part == 0 else cpus[1:]
    return ["taskset", "--cpu-list", ",".join(map(str, chosen))]


def run_ours(args: argparse.Namespace, work: Path, announce: dict[str, Any]) -> dict[str, Any]:
    config = write_fleet(work, args.nodes, announce)
    stats = work / "stats.json"
    port = free_port()
    src = args.src.resolve()
    env = {**os.environ, "HOME": str(work / "home"), "PYTHONPATH": str(src)}
    if args.memory_debug:
        env["GPUFLEET_BENCH_TRACEMALLOC"] = str(args.memory_debug)
    if args.frozen_garbage:
        env["GPUFLEET_BENCH_FROZEN_GARBAGE"] = str(args.frozen_garbage)
    if args.gen2_census:
        env["GPUFLEET_BENCH_GEN2_CENSUS"] = "1"
    if args.young is not None:
        env["GPUFLEET_BENCH_YOUNG"] = str(args.young)
    if args.timeline:
        env["GPUFLEET_BENCH_TIMELINE"] = "1"
        env["GPUFLEET_BENCH_SIM_PID"] = str(announce["pid"])
    probe = src / "bench" / "lib" / "fleet_probe.py"
    if not probe.exists():  # a tree from before bench/lib
        probe = src / "bench" / "fleet_probe.py"
    argv = [*pinned(args.pin, 0), sys.executable, str(probe),
            str(stats), "--", args.ui, "-c", str(config), "--data-dir", str(work / "data"),
            "--metrics-addr", f"127.0.0.1:{port}"]  # fmt: skip
    terminal = None
    if args.ui == "watch":
        terminal = Terminal()
        controller = terminal.start(argv, env, work)
    else:
        argv += ["--log-level", "warning"]
        with (work / "serve.log").open("wb") as log:
            controller = subprocess.Popen(argv, env=env, stderr=log, cwd=work)
    try:
        return _measure_serve(args, controller, work, stats, port)
    except SystemExit:
        # The scratch folder goes with this process: show what the controller said now.
        said = terminal.tail if terminal is not None else (work / "serve.log").read_bytes()
        print(said[-4096:].decode(errors="replace"), file=sys.stderr)
        raise
    finally:
        if controller.poll() is None:
            controller.kill()
            controller.wait()
        if terminal is not None:
            terminal.close()


def _measure_serve(
    args: argparse.Namespace, serve: subprocess.Popen[bytes], work: Path, stats: Path, port: int
) -> dict[str, Any]:
    progress = stats.with_suffix(".progress")
    started = time.monotonic()
    launched = time.monotonic()

    def streaming() -> bool:
        if serve.poll() is not None:
            raise SystemExit(f"serve exited: see {work / 'serve.log'}")
        return streaming_count(progress) >= args.nodes

    deadline = time.monotonic() + args.connect_timeout
    while not streaming() and time.monotonic() < deadline:
        time.sleep(0.5)  # polling the controller's progress file, with a deadline
    took = time.monotonic() - started
    print(f"ours: {streaming_count(progress)} of {args.nodes} streaming after {took:.1f} s")
    scraper = Scraper(f"http://127.0.0.1:{port}/metrics", args.scrape_encoding)
    # Prometheus scrapes during the warm-up too: the first scrape fills the renderer's
    # kept texts (~60 MiB at 1,000 nodes), which "warm" RSS read before any scrape missed.
    scraper.scrape()
    time.sleep(args.warmup)  # warm-up before the window, not synchronisation
    rss_warm = rss_mib(serve.pid)
    window = measure(serve.pid, args.window, scraper)
    rss_at = soak(serve.pid, launched, args.minutes, scraper) if args.minutes else {}
    time.sleep(3)  # samples sent at the window's end still reach a snapshot
    serve.send_signal(signal.SIGTERM)
    try:
        serve.wait(120)
    except subprocess.TimeoutExpired:
        raise SystemExit("serve did not stop within 120 s of SIGTERM (overloaded?)") from None
    result = json.loads(stats.read_text())
    result["window"] = window
    result["rss_warm"] = rss_warm
    result["rss_at_minute"] = rss_at
    result["streaming"] = streaming_count(progress)
    return result


def soak(pid: int, launched: float, minutes: float, scraper: Scraper) -> dict[int, float]:
    """Keep the controller running (scraped every 15 s) to ``minutes`` after launch; RSS
    at each of :data:`RSS_MINUTES` reached."""
    rss_at: dict[int, float] = {}
    for minute in RSS_MINUTES:
        if minute > minutes:
            break
        left = launched + 60 * minute - time.monotonic()
        last_minute = ""
        if left > 0:
            # A scrape swings RSS by tens of MiB for seconds: one reading compares phases,
            # so the range over the minute before each mark (one reading per 5 s) goes too.
            readings = measure(pid, left, scraper).rss[-12:]
            last_minute = f" (minute before: {min(readings):.1f}-{max(readings):.1f})"
        rss_at[minute] = round(rss_mib(pid), 1)
        print(f"ours: RSS at minute {minute}: {rss_at[minute]} MiB{last_minute}", flush=True)
        # Read from outside the controller: costs it nothing, unlike --memory-debug.
        top = list(mappings(pid).items())[:4]
        print("      resident by mapping: " + ", ".join(f"{k} {v}" for k, v in top), flush=True)
    return rss_at


def run_naive(args: argparse.Namespace, work: Path, announce: dict[str, Any]) -> Window:
    return run_peer(args, work, announce, "naive")


def run_floor(args: argparse.Namespace, work: Path, announce: dict[str, Any]) -> Window:
    return run_peer(args, work, announce, "floor")


def run_peer(args: argparse.Namespace, work: Path, announce: dict[str, Any], name: str) -> Window:
    """The naive stack or the floor on the same nodes, measured as ours was."""
    progress = work / f"{name}.progress"
    argv = [*pinned(args.pin, 0), sys.executable, str(HERE / "lib" / f"fleet_{name}.py"),
            "--port", str(announce["port"]),
            "--key", announce["client_key"], "--nodes", str(args.nodes),
            "--progress", str(progress)]  # fmt: skip
    if name == "naive" and args.scrape_encoding == "gzip":
        argv.append("--gzip")
    terminal = None
    peer: subprocess.Popen[Any]
    if args.ui == "watch" and name == "naive":
        terminal = Terminal()
        peer = terminal.start([*argv, "--ui"], dict(os.environ), work)
    else:
        peer = subprocess.Popen(argv, stdin=subprocess.PIPE, text=True)

    def seen() -> int:
        return _naive_counts(progress).get("seen", 0)

    deadline = time.monotonic() + args.connect_timeout
    while seen() < args.nodes and time.monotonic() < deadline:
        time.sleep(0.5)  # polling the peer's progress file, with a deadline
    print(f"{name}: {seen()} of {args.nodes} nodes sent a sample", flush=True)
    time.sleep(args.warmup)  # warm-up before the window, not synchronisation
    before = _naive_counts(progress)
    window = measure(peer.pid, args.window, None)
    after = _naive_counts(progress)
    window.ingested = after.get("ingested", 0) - before.get("ingested", 0)
    window.received_bytes = after.get("bytes", 0) - before.get("bytes", 0)
    window.failed = after.get("failed", 0)
    window.nodes_seen = after.get("seen", 0)
    if peer.stdin is not None:
        peer.stdin.close()
    else:
        peer.terminate()
    try:
        peer.wait(60)
    except subprocess.TimeoutExpired:
        peer.kill()
        peer.wait()
    if terminal is not None:
        terminal.close()
    return window


def kept_up(window: Window, nodes: int, interval_s: float = 1.0) -> str | None:
    """Why a peer's CPU cannot be divided by, or None when it took every node's samples.

    A saturated peer spends a whole core on part of the traffic: a ratio to it would
    flatter us by an unknown amount, so none is printed.
    """
    expected = nodes * window.wall_s / interval_s
    if window.nodes_seen < nodes:
        return f"only {window.nodes_seen} of {nodes} nodes streamed"
    if window.ingested < 0.99 * expected:
        return f"took {window.ingested} of ~{expected:.0f} samples (saturated)"
    return None


def _naive_counts(progress: Path) -> dict[str, int]:
    try:
        counts: dict[str, int] = json.loads(progress.read_text())
        return counts
    except (OSError, ValueError):
        return {}


def summarise(
    args: argparse.Namespace, ours: dict[str, Any], sent: dict[str, int]
) -> dict[str, Any]:
    w: Window = ours["window"]
    t0, t1 = int(w.t0), int(w.t1)
    sent_n = sum(v for k, v in sent.items() if t0 <= int(k) < t1)
    pairs = [
        (t, lat) for t, lat in zip(ours["sample_t"], ours["latency"], strict=False) if t0 <= t < t1
    ]
    seen_n = len(pairs)
    lat = sorted(lat for _, lat in pairs)
    ticks = [t for t in ours["ticks"] if w.t0 <= t <= w.t1]
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    in_window = [(g, s, c) for at, g, s, c in ours["gc"] if w.t0 <= at <= w.t1]
    return {
        "nodes": args.nodes,
        "nodes_streaming": ours["streaming"],
        "window_s": round(w.wall_s, 1),
        "cpu_pct": round(w.core_pct, 1),
        # Per sample sent in the window (a starved controller ingests them late, still).
        "cpu_s_per_1000_msgs": round(1000 * w.cpu_s / max(1, sent_n), 3),
        "rss_mib_warm": round(ours["rss_warm"], 1),
        "rss_mib_window": [round(r, 1) for r in (min(w.rss), max(w.rss))],
        "gc_max_ms_wall": round(1000 * max((s for _, s, _ in in_window), default=0.0), 1),
        "gc_max_ms_cpu": round(1000 * max((c for _, _, c in in_window), default=0.0), 1),
        "gc2_max_ms_cpu": round(1000 * max((c for g, _, c in in_window if g == 2), default=0.0), 1),
        "gc2_count": sum(1 for g, _, _ in in_window if g == 2),
        # The collector's own CPU: its share of the process's, and collections per generation.
        "gc_cpu_pct_of_process": round(100 * sum(c for *_, c in in_window) / max(w.cpu_s, 1e-9), 1),
        "gc_collections": [sum(1 for g, _, _ in in_window if g == gen) for gen in (0, 1, 2)],
        "gc_max_ms_cpu_whole_run": round(
            1000 * max((c for _, _, _, c in ours["gc"]), default=0.0), 1
        ),
        # Where the whole run's largest pauses fell: (s after the process started,
        # generation, ms of CPU); the start-up and settle freezes show here.
        "gc_largest_whole_run": [
            (round(at - ours.get("process_started_at", at), 1), gen, round(1000 * c, 1))
            for at, gen, _, c in sorted(ours["gc"], key=lambda r: -r[3])[:4]
        ],
        "latency_p50_s": round(statistics.median(lat), 3) if lat else None,
        "latency_p99_s": round(lat[int(0.99 * (len(lat) - 1))], 3) if lat else None,
        "samples_sent": sent_n,
        "samples_in_snapshots": seen_n,
        "samples_lost_pct": round(100 * (sent_n - seen_n) / max(1, sent_n), 2),
        "tick_gap_max_s": round(max(gaps), 3) if gaps else None,
        "scrape_s": [round(s, 3) for s in w.scrapes],
        "scrape_encoding": args.scrape_encoding,
        "scrape_mib": [round(b / 2**20, 1) for b in w.scrape_bytes],
        "rss_mib_at_minute": ours.get("rss_at_minute", {}),
        **_screen(ours, w),
        **_memory(ours),
    }


def _screen(ours: dict[str, Any], w: Window) -> dict[str, Any]:
    """Sample -> screen latency of the window's samples (``--ui watch`` only)."""
    if "screen_latency" not in ours or not ours["screen_sample_t"]:
        return {}
    lat = sorted(
        lat
        for t, lat in zip(ours["screen_sample_t"], ours["screen_latency"], strict=True)
        if w.t0 <= t < w.t1
    )
    if not lat:
        return {"screen_latency_p99_s": None}
    return {
        "screen_latency_p50_s": round(statistics.median(lat), 3),
        "screen_latency_p99_s": round(lat[int(0.99 * (len(lat) - 1))], 3),
        "samples_on_screen": len(lat),
    }


def _memory(ours: dict[str, Any]) -> dict[str, Any]:
    if "memory_growth" not in ours:
        return {}
    for site in ours["memory_growth"]:
        print(site)
    counts = ours.get("object_counts", [])
    if counts:
        print("object counts, first and last:", counts[0][1], counts[-1][1], sep="\n  ")
    for account in ours.get("accounts", []):
        print_account(account)
    return {}


def print_account(account: dict[str, Any]) -> None:
    """One memory account of the controller (bench/lib/memory_account.py), as a table."""
    print(f"\n== memory at minute {account['minute']}: "
          f"tracemalloc {account['traced_mib']} MiB live")  # fmt: skip
    print("  resident by mapping (MiB):")
    for name, mib in account["mappings"].items():
        print(f"    {mib:8.1f}  {name}")
    if heap := account.get("glibc_heap"):
        print("  glibc heap (mallinfo2, MiB): " + ", ".join(f"{k} {v:g}" for k, v in heap.items()))
    parts = account.get("components", {})
    if parts:
        print(f"  reachable from each part (MiB, objects; walk {account['components_walk_s']} s):")
        for name, (mib, objects) in parts.items():
            print(f"    {mib:8.1f}  {objects:>9,}  {name}")
    for key in ("files", "lines"):
        print(f"  live allocations by {key} (MiB, blocks):")
        for where, mib, blocks in account[key]:
            print(f"    {mib:8.2f}  {blocks:>9,}  {where}")


def floor_figures(floors: list[Window], figures: dict[str, Any], nodes: int) -> dict[str, Any]:
    """The headline: our CPU as a multiple of the floor's, same run, same traffic.

    The floor is measured just before and just after ours, and ours is divided by the
    mean of the two: on a shared machine the load moves within minutes, and a floor
    measured only after ours saw another load (17-19 against 23-28 in one run). The
    two single ratios are printed beside it as the spread the load made.
    """
    cpu = [floor.core_pct for floor in floors]
    mean = sum(cpu) / len(cpu)
    out: dict[str, Any] = {"floor_cpu_pct": round(mean, 2)}
    out["floor_cpu_pct_each"] = [round(pct, 2) for pct in cpu]
    ingested = sum(floor.ingested for floor in floors)
    out["bytes_per_message"] = round(sum(f.received_bytes for f in floors) / max(1, ingested))
    # Comparable with cpu_s_per_1000_msgs above: CPU-seconds per 1,000 samples taken.
    out["floor_cpu_s_per_1000_msgs"] = round(
        1000 * sum(floor.cpu_s for floor in floors) / max(1, ingested), 3
    )
    why_not = next((w for w in (kept_up(floor, nodes) for floor in floors) if w), None)
    ours = figures["cpu_pct"]
    out["ratio_to_floor"] = round(ours / max(1e-9, mean), 2) if why_not is None else why_not
    if why_not is None:
        out["ratio_to_floor_each"] = [round(ours / max(1e-9, pct), 2) for pct in cpu]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--warmup", type=float, default=20.0)
    parser.add_argument("--window", type=float, default=60.0)
    parser.add_argument("--connect-timeout", type=float, default=180.0)
    parser.add_argument("--no-naive", action="store_true", help="skip the naive stack")
    parser.add_argument("--no-floor", action="store_true", help="skip the floor of the stack")
    parser.add_argument("--ui", choices=("serve", "watch"), default="serve")
    parser.add_argument("--minutes", type=float, default=0, help="run on; RSS at 1/5/15/30 min")
    parser.add_argument("--memory-debug", type=float, default=0, metavar="S")
    parser.add_argument(
        "--frozen-garbage",
        type=float,
        default=0,
        metavar="S",
        help="S s after the settle's freeze, size what a thaw would free (fleet_probe.py)",
    )
    parser.add_argument(
        "--gen2-census",
        action="store_true",
        help="before each full collection, what it scans, by type (fleet_probe.py)",
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument(
        "--young",
        type=int,
        metavar="N",
        help="collect the young generation every N new objects (the runtime's default: 200)",
    )
    parser.add_argument(
        "--timeline",
        action="store_true",
        help="time each node's start-up steps in the controller (bench/lib/first_view.py)",
    )
    parser.add_argument(
        "--scrape-encoding",
        choices=("gzip", "identity"),
        default="gzip",
        help="Accept-Encoding of the scrapes (gzip: as Prometheus asks by default)",
    )
    parser.add_argument(
        "--node-framing",
        choices=("openssh", "split", "asyncssh"),
        default="openssh",
        help="packets per line from the simulated nodes: one (sshd reading a line whole), "
        "2-4 (sshd reading the agent's pipe mid-line) or two (asyncssh's ignore)",
    )
    parser.add_argument(
        "--xids-per-node-hour",
        type=float,
        default=1.0,
        help="application XID events each node sends per hour (0: none)",
    )
    parser.add_argument(
        "--jobs-every",
        type=float,
        default=300.0,
        metavar="S",
        help="each node's jobs message period (the agent's refresh; 0: none)",
    )
    parser.add_argument(
        "--src",
        type=Path,
        default=ROOT,
        help="source tree whose gpufleet serve runs (an older checkout, for before/after)",
    )
    parser.add_argument(
        "--pin",
        action="store_true",
        help="the controller on the first CPU, the simulated nodes on the others (taskset)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as scratch:
        work = Path(scratch)
        nodes_argv = [*pinned(args.pin, 1), sys.executable, str(HERE / "lib" / "fleet_nodes.py")]
        nodes_argv += ["--workdir", str(work)]
        nodes_argv += ["--framing", args.node_framing, "--jobs-every", str(args.jobs_every)]
        nodes_argv += ["--xids-per-node-hour", str(args.xids_per_node_hour)]
        sim = subprocess.Popen(nodes_argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert sim.stdout is not None and sim.stdin is not None
        announce = json.loads(sim.stdout.readline())
        announce["pid"] = sim.pid
        try:
            floors = [] if args.no_floor else [run_floor(args, work, announce)]
            sim_cpu0 = cpu_seconds(sim.pid)
            ours = run_ours(args, work, announce)
            sim_cpu = cpu_seconds(sim.pid) - sim_cpu0
            if floors:  # the floor brackets ours: see floor_figures
                floors.append(run_floor(args, work, announce))
            naive = None if args.no_naive else run_naive(args, work, announce)
        finally:
            sim.stdin.close()
            tail = sim.stdout.read().strip().splitlines()
            sim.wait(60)
        said = json.loads(tail[-1]) if tail else {}
    sent = said.get("sent", {})
    figures = summarise(args, ours, sent)
    figures["node_lines_besides_samples"] = said.get("extra", {})
    figures["node_packets"] = said.get("packets")
    figures["simulator_cpu_s_during_ours"] = round(sim_cpu, 1)
    figures["node_framing"] = args.node_framing
    if floors:
        figures.update(floor_figures(floors, figures, args.nodes))
    if naive is not None:
        figures["naive_cpu_pct"] = round(naive.core_pct, 1)
        figures["naive_rss_mib"] = round(max(naive.rss), 1)
        why_not = kept_up(naive, args.nodes)
        # Ours over naive only where naive kept up; a saturated naive stack gives a
        # meaningless "x below" (it did part of the work), so the reason is printed instead.
        figures["naive_ratio"] = (
            round(naive.core_pct / max(1e-9, figures["cpu_pct"]), 2) if why_not is None else why_not
        )
        figures["naive_samples_per_s"] = round(naive.ingested / max(1e-9, naive.wall_s), 1)
        figures["naive_failed_lines"] = naive.failed
    figures["loadavg"] = os.getloadavg()
    windows = {"ours": ours["window"], "naive": naive}
    # no floors with --no-floor
    names = ("floor_before", "floor_after")
    windows.update(dict(zip(names, floors, strict=False)))
    for name, w in windows.items():
        if w is not None:
            figures[f"load_{name}"] = {"load1": w.load, "machine_busy_pct": w.box_busy_pct}
            print(load_line(name, w))
    if "timeline" in ours:
        figures["first_view"] = ours["timeline"]
    if "frozen_garbage" in ours:
        figures["frozen_garbage"] = ours["frozen_garbage"]
    if "gen2_census" in ours:
        figures["gen2_census"] = ours["gen2_census"]
    figures["host_cpu"] = host_cpu()
    figures["pinned"] = args.pin
    for key, value in figures.items():
        print(f"{key:28s} {value}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
