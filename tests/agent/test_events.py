"""The NVML event thread survives what the event wait can throw at it."""

from __future__ import annotations

import threading
from pathlib import Path

import pynvml

from collectors import sim
from collectors.agent import wire
from collectors.agent.events import EventWatcher
from collectors.agent.gpus import open_gpus


class CountedWait:
    """The simulated library, with an event wait that always answers one NVML code."""

    def __init__(self, library: object, code: int, calls_wanted: int) -> None:
        self._library = library
        self._code = code
        self.calls = 0
        self._wanted = calls_wanted
        self.reached = threading.Event()

    def __getattr__(self, name: str) -> object:
        if name != "nvmlEventSetWait_v2":
            return getattr(self._library, name)

        def wait(*args: object) -> int:
            self.calls += 1
            if self.calls >= self._wanted:
                self.reached.set()
            return self._code

        return wait


def test_gpu_is_lost_from_the_wait_does_not_kill_the_thread(sysfs_dir: Path) -> None:
    node = sim.install("node-001", gpus=2, sysfs_root=sysfs_dir, refresh_s=None)
    library = CountedWait(node.library, pynvml.NVML_ERROR_GPU_IS_LOST, calls_wanted=3)
    with pynvml.libLoadLock:
        pynvml.nvmlLib = library
        pynvml._nvmlGetFunctionPointer_cache.clear()
    pynvml.nvmlInit()
    messages: list[wire.Message] = []
    stop = threading.Event()
    try:
        watcher = EventWatcher(open_gpus(), messages.append, lambda: 0.0)
        thread = watcher.start(stop)
        assert thread is not None and watcher.registered == [0, 1]
        assert library.reached.wait(timeout=10), "the watcher stopped waiting"
        assert thread.is_alive()
    finally:
        stop.set()
        node.close()
    thread.join(timeout=5)
    assert not thread.is_alive()
    # GpuIsLost from the wait names no GPU: the sampler reports the lost GPU, not this.
    assert messages == []
    pynvml.nvmlShutdown()


def test_another_wait_error_is_reported_once(sysfs_dir: Path) -> None:
    node = sim.install("node-001", gpus=1, sysfs_root=sysfs_dir, refresh_s=None)
    library = CountedWait(node.library, pynvml.NVML_ERROR_UNKNOWN, calls_wanted=3)
    with pynvml.libLoadLock:
        pynvml.nvmlLib = library
        pynvml._nvmlGetFunctionPointer_cache.clear()
    pynvml.nvmlInit()
    messages: list[wire.Message] = []
    watcher = EventWatcher(open_gpus(), messages.append, lambda: 0.0)
    for _ in range(3):
        assert watcher.poll(0) is False
    node.close()
    pynvml.nvmlShutdown()
    assert [(m["type"], m["code"]) for m in messages] == [("error", "NVMLError_Unknown")]
