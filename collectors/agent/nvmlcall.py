"""Small helpers around pynvml: error names, batched field values, fallback probing.

A "reader" is a callable ``handle -> tuple of values``. A field may have several
candidate readers (a batched field value first, then the classic call); at start
the agent keeps the first that the driver supports, so the hot path never retries
calls that cannot work.
"""

from __future__ import annotations

import ctypes
import struct
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

import pynvml

FieldId = Union[int, Tuple[int, int]]  # a field id, or (field id, scope id) e.g. a link

# The driver cannot do this at all (old GPU, old driver, no such field or link):
# reported once in hello.unsupported instead of on every tick.
UNSUPPORTED_CODES = (
    pynvml.NVML_ERROR_NOT_SUPPORTED,
    pynvml.NVML_ERROR_FUNCTION_NOT_FOUND,
    pynvml.NVML_ERROR_INVALID_ARGUMENT,
    # A driver that knows the symbol but not the struct version we pass (memory v2).
    pynvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH,
)

# ctypes union member for each NVML_VALUE_TYPE_*.
_VALUE_MEMBERS = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")

# Decoding a field value through pynvml's struct wrapper costs a Python-level
# __getattribute__ per member; a batch of ~100 fields per GPU is read straight
# from the array's bytes instead, at offsets and sizes taken from the ctypes types.
_ENTRY = pynvml.c_nvmlFieldValue_t
_RETURN = struct.Struct("=I")
_RETURN_AT = _ENTRY.nvmlReturn.offset
_TYPE_AT = _ENTRY.valueType.offset
_VALUE_AT = _ENTRY.value.offset
_VALUE_FORMATS = tuple(
    struct.Struct("=" + code)
    for code in (
        "d",
        "I",
        {4: "I", 8: "Q"}[ctypes.sizeof(ctypes.c_ulong)],
        "Q",
        "q",
        "i",
        "H",
    )
)


def error_name(exc: BaseException) -> str:
    """``NVMLError_NotSupported`` for an NVML error, the class name for anything else."""
    if isinstance(exc, pynvml.NVMLError):
        return type(exc).__name__ if type(exc) is not pynvml.NVMLError else code_name(exc.value)
    return type(exc).__name__


def code_name(code: int) -> str:
    """The exception class name pynvml uses for an NVML return code."""
    cls = pynvml.NVMLError._valClassMapping.get(code)
    return cls.__name__ if cls is not None else "NVMLError_" + str(code)


def is_gpu_lost(exc: BaseException) -> bool:
    """True for NVMLError_GpuIsLost: the GPU fell off the bus."""
    return isinstance(exc, pynvml.NVMLError) and exc.value == pynvml.NVML_ERROR_GPU_IS_LOST


def is_unsupported(exc: BaseException) -> bool:
    """True when the error means the call can never work on this GPU and driver."""
    return isinstance(exc, pynvml.NVMLError) and exc.value in UNSUPPORTED_CODES


def field_value(entry: Any) -> Any:
    """The value of one ``c_nvmlFieldValue_t`` by its declared type."""
    member = _VALUE_MEMBERS[entry.valueType] if 0 <= entry.valueType < 7 else "ullVal"
    return getattr(entry.value, member)


class FieldBatch:
    """Field ids read together in one ``nvmlDeviceGetFieldValues`` call.

    NVML fills fields that share a driver call from one call and reports a return
    code per field, so one failed field never hides the others.
    """

    def __init__(self, ids: Sequence[FieldId]) -> None:
        self.ids = list(ids)
        # (id, scope) pairs throughout: pynvml tries to unpack each id as a pair and
        # pays an exception for every plain int.
        self._pairs = [i if isinstance(i, tuple) else (i, 0) for i in self.ids]

    def read(self, handle: Any) -> List[Tuple[int, Any]]:
        """``(nvmlReturn, value)`` per id; raises only when the call as a whole fails."""
        if not self.ids:
            return []
        values = pynvml.nvmlDeviceGetFieldValues(handle, self._pairs)
        raw = memoryview(values).cast("B")
        size = ctypes.sizeof(_ENTRY)
        out = []
        for base in range(0, size * len(self._pairs), size):
            (code,) = _RETURN.unpack_from(raw, base + _RETURN_AT)
            if code != pynvml.NVML_SUCCESS:
                out.append((code, None))
                continue
            (kind,) = _RETURN.unpack_from(raw, base + _TYPE_AT)
            unpack = _VALUE_FORMATS[kind] if kind < len(_VALUE_FORMATS) else _VALUE_FORMATS[3]
            out.append((code, unpack.unpack_from(raw, base + _VALUE_AT)[0]))
        return out


def call_or_none(fn: Callable[..., Any], *args: Any) -> Optional[Any]:
    """Call an NVML function and return None instead of raising (static info only)."""
    try:
        return fn(*args)
    except pynvml.NVMLError:
        return None
