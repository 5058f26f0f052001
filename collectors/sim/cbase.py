"""Shared machinery of the fake NVML library: C-style out-params, handles, return codes.

The real ``pynvml`` wrappers call a library symbol with ctypes arguments: out-params
as ``byref(x)`` (the object is ``ref._obj``), strings as ``create_string_buffer``
arrays, handles as opaque pointers, and they turn a nonzero int result into the
matching ``NVMLError_*`` class. These helpers let the fake speak that dialect.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from typing import Any

from collectors.sim.model import GpuView, NodeModel

SUCCESS = 0
ERROR_UNINITIALIZED = 1
ERROR_INVALID_ARGUMENT = 2
ERROR_NOT_SUPPORTED = 3
ERROR_NOT_FOUND = 6
ERROR_INSUFFICIENT_SIZE = 7
ERROR_TIMEOUT = 10
ERROR_GPU_IS_LOST = 15

# How often a call held by ``agent_hang`` looks at the clock again (real seconds).
HANG_POLL_S = 0.05

HANDLE_BASE = 0x7E5A_0000_0000
HANDLE_STRIDE = 0x100
_VOID_PP = ctypes.POINTER(ctypes.c_void_p)


def out(ref: Any) -> Any:
    """The ctypes object behind a ``byref(...)`` argument."""
    return ref._obj


def value(arg: Any) -> int:
    """An int from a plain int or a ctypes scalar such as ``c_uint(3)``."""
    return int(arg.value) if hasattr(arg, "value") else int(arg)


def set_pointer(pointer: Any, address: int) -> None:
    """Store ``address`` into a ctypes pointer object (an opaque NVML handle)."""
    ctypes.cast(ctypes.pointer(pointer), _VOID_PP)[0] = address


def address_of(pointer: Any) -> int | None:
    """The address an opaque handle holds (None for NULL)."""
    return ctypes.cast(pointer, ctypes.c_void_p).value


def put_string(buffer: Any, length: Any, text: str) -> int:
    """Copy ``text`` into a ``create_string_buffer`` of ``length`` bytes, NVML-style."""
    data = text.encode()
    if len(data) + 1 > value(length):
        return ERROR_INSUFFICIENT_SIZE
    buffer.value = data
    return SUCCESS


class Symbol:
    """A callable C symbol; ``restype``/``argtypes`` may be set on it as on a CDLL function."""

    def __init__(
        self, name: str, impl: Callable[..., int], hold: Callable[[], None] | None = None
    ) -> None:
        self.__name__ = name
        self._impl = impl
        self._hold = hold
        self.restype: Any = ctypes.c_int
        self.argtypes: Any = None

    def __call__(self, *args: Any) -> Any:
        if self._hold is not None:
            self._hold()
        return self._impl(*args)


class LibraryBase:
    """State shared by every group of fake calls."""

    def __init__(self, model: NodeModel, clock: Callable[[], float], wall_start: float) -> None:
        self._model = model
        self._clock = clock
        self._wall_start = wall_start
        self._lock = threading.Lock()
        self._init_count = 0
        self._visible: list[int] = []
        self._released = threading.Event()  # set by release(): no call hangs any more

    def __getattr__(self, name: str) -> Symbol:
        # Only NVML symbol names resolve; anything else is FunctionNotFound in pynvml.
        if name.startswith("nvml"):
            impl = getattr(type(self), "_c_" + name, None)
            if impl is not None:
                return Symbol(name, impl.__get__(self), self.hold_while_hung)
        raise AttributeError(name)

    def hold_while_hung(self) -> None:
        """Block the calling thread while an ``agent_hang`` fault holds.

        A hung driver blocks every NVML call, so the agent stops writing while its
        process and SSH channel stay up. The clock is read again every
        :data:`HANG_POLL_S`: a scenario clock that moves past the fault's end frees it.
        """
        while self._model.faults.hung(self.now()) and not self._released.is_set():
            self._released.wait(HANG_POLL_S)

    def release(self) -> None:
        """Let every held call return and no new one hang (the node is closing)."""
        self._released.set()

    def now(self) -> float:
        """Seconds since the node's start, from the injected clock."""
        return self._clock()

    def wall_us(self, t: float) -> int:
        """Microseconds since the epoch for simulated time ``t``."""
        return int((self._wall_start + t) * 1_000_000)

    def handle_for(self, gpu: int) -> int:
        """The opaque handle address of physical GPU ``gpu``."""
        return HANDLE_BASE + (gpu + 1) * HANDLE_STRIDE

    def gpu_of(self, handle: Any) -> int | None:
        """The physical GPU a handle names, or None when it names none."""
        address = handle if isinstance(handle, int) else address_of(handle)
        if address is None or (address - HANDLE_BASE) % HANDLE_STRIDE:
            return None
        gpu = (address - HANDLE_BASE) // HANDLE_STRIDE - 1
        return gpu if 0 <= gpu < self._model.gpus else None

    def device(self, handle: Any, *, allow_lost: bool = False) -> tuple[int, GpuView | None]:
        """Resolve a handle to the GPU's current view, or an NVML error code."""
        if self._init_count == 0:
            return ERROR_UNINITIALIZED, None
        gpu = self.gpu_of(handle)
        if gpu is None or gpu not in self._visible:
            return ERROR_INVALID_ARGUMENT, None
        view = self._model.view(gpu, self.now())
        if view.faults.lost and not allow_lost:
            return ERROR_GPU_IS_LOST, view
        return SUCCESS, view
