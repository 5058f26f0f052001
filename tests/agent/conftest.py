"""Run the real agent in-process against the simulated NVML node on a clock the test moves.

The sim's clock is the agent's clock: each wait of the agent jumps simulated time to
the next sample and ticks the node (sysfs rewritten, event waiters woken), so a
minute of node life takes a fraction of a second and nothing sleeps.
"""

from __future__ import annotations

import io
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pynvml
import pytest

from collectors import sim
from collectors.agent.cli import parse_args
from collectors.agent.fields import GPU_FIELDS, GPU_SLOW_FIELDS, PORT_FIELDS
from collectors.agent.main import run
from collectors.agent.wire import Writer
from collectors.protocol import Bye, Error, Event, Hello, Message, Sample, decode_line
from tests.agent.sim_clock import SimClock


class AlteredLibrary:
    """The simulated library with some symbols answering a fixed NVML return code.

    A code of None removes the symbol (an older driver: NVMLError_FunctionNotFound).
    Everything else is the simulated node unchanged.
    """

    def __init__(self, library: object, returns: dict[str, int | None]) -> None:
        self._library = library
        self._returns = returns

    def __getattr__(self, name: str) -> object:
        if name in self._returns:
            code = self._returns[name]
            if code is None:
                raise AttributeError(name)
            return lambda *args: code
        return getattr(self._library, name)


@dataclass
class Run:
    """What a controller would have received from one agent session."""

    lines: list[bytes]
    messages: list[Message] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.messages = [decode_line(line) for line in self.lines]

    @property
    def hello(self) -> Hello:
        first = self.messages[0]
        assert isinstance(first, Hello)
        return first

    @property
    def samples(self) -> list[Sample]:
        return [m for m in self.messages if isinstance(m, Sample)]

    @property
    def events(self) -> list[Event]:
        return [m for m in self.messages if isinstance(m, Event)]

    @property
    def errors(self) -> list[Error]:
        return [m for m in self.messages if isinstance(m, Error)]

    @property
    def bye(self) -> Bye:
        last = self.messages[-1]
        assert isinstance(last, Bye)
        return last

    def gpu(self, sample: Sample, index: int, name: str) -> object:
        row = sample.gpus[index]
        return None if row is None else row[GPU_FIELDS.index(name)]

    def slow(self, sample: Sample, index: int, name: str) -> object:
        assert sample.slow is not None, "not a slow sample"
        row = sample.slow[index]
        return None if row is None else row[GPU_SLOW_FIELDS.index(name)]

    def port(self, sample: Sample, index: int, name: str) -> object:
        return sample.ports[index][PORT_FIELDS.index(name)]


def run_agent(
    sysfs_root: Path,
    scenario: str = "",
    *,
    node: str = "node-001",
    samples: int = 10,
    interval: float = 1.0,
    slow_interval: float = 5.0,
    gpus: int = 8,
    returns: dict[str, int | None] | None = None,
    early: float = 0.0,
) -> Run:
    """Run the agent for ``samples`` samples on a simulated node and decode its output."""
    clock = SimClock(early)
    installed = sim.install(
        node,
        sim.parse_scenario(scenario, "test") if scenario else None,
        gpus=gpus,
        sysfs_root=sysfs_root,
        clock=clock.elapsed,
        refresh_s=None,
    )
    clock.node = installed
    if returns:
        with pynvml.libLoadLock:
            pynvml.nvmlLib = AlteredLibrary(installed.library, returns)
            pynvml._nvmlGetFunctionPointer_cache.clear()
    options = parse_args(
        [
            "--interval", str(interval),
            "--slow-interval", str(slow_interval),
            "--sysfs-root", str(installed.sysfs_root),
            "--host", node,
            "--max-samples", str(samples),
        ]
    )  # fmt: skip
    stream = io.BytesIO()
    try:
        code = run(options, Writer(stream), clock, inline_events=True)
    finally:
        installed.close()
    assert code == 0
    return Run(stream.getvalue().splitlines())


@pytest.fixture
def sysfs_dir(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A directory for the simulated sysfs tree, in memory where the machine allows.

    The sim rewrites ~100 files per tick with rename; on this disk that costs ~2 ms a
    file against ~50 us on tmpfs, which is the difference between a slow and a fast test.
    """
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path / "sys"
        return
    path = Path(tempfile.mkdtemp(prefix="gpufleet-agent-test-", dir=shm))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def agent_run(sysfs_dir: Path):  # type: ignore[no-untyped-def]
    """``agent_run(scenario_toml, **kw) -> Run`` with the sim's sysfs tree in ``sysfs_dir``."""

    def start(scenario: str = "", **kwargs: object) -> Run:
        return run_agent(sysfs_dir, scenario, **kwargs)  # type: ignore[arg-type]

    return start
