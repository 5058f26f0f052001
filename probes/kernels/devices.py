"""Which devices a probe runs on: real CUDA GPUs, simulated GPUs, or the CPU.

A simulated node (env ``GPUFLEET_SIM_PROBE_FAULTS``, JSON such as
``{"gpus": 8, "slow": {"3": 3.0}, "sdc": [5]}``) has no GPU: every simulated GPU
runs the kernels for real on the CPU, one after the other. A GPU listed in ``slow``
repeats each timed kernel factor times (so it really measures slower), and a GPU
listed in ``sdc`` really corrupts its GEMM output (see ``sdc.py``).
"""

import json
import os
from typing import Any, Dict, List, Optional

SIM_ENV = "GPUFLEET_SIM_PROBE_FAULTS"
SIM_NAME = "Simulated GPU (CPU)"
CPU_NAME = "CPU (no GPU)"


class NoDeviceError(Exception):
    """No GPU is visible and CPU runs were not allowed."""


class ProbeDevice:
    """One GPU as the kernels see it.

    Attributes:
        index: the GPU index reported in results (the CUDA index, or the simulated one).
        torch_device: where tensors go (``cuda:N`` or ``cpu``).
        name: the model name (``torch.cuda.get_device_name``) or a CPU label.
        slow_factor: how many times each timed kernel is repeated (simulated slowness).
        sdc: whether this (simulated) GPU corrupts its GEMM output.
        stream: the CUDA stream used for this device (None on CPU).
    """

    def __init__(
        self,
        index: int,
        torch_device: Any,
        name: str,
        slow_factor: float = 1.0,
        sdc: bool = False,
        stream: Any = None,
    ) -> None:
        self.index = index
        self.torch_device = torch_device
        self.name = name
        self.slow_factor = slow_factor
        self.sdc = sdc
        self.stream = stream

    @property
    def is_cuda(self) -> bool:
        """True for a real GPU."""
        return self.stream is not None

    def describe(self) -> Dict[str, Any]:
        """What the hello message says about this device."""
        return {"index": self.index, "name": self.name}


def parse_gpu_selection(text: str) -> Optional[List[int]]:
    """``"all"`` gives None (every GPU); ``"0,3"`` gives ``[0, 3]``.

    Raises:
        ValueError: the text is neither ``all`` nor a comma-separated list of indices.
    """
    if text.strip() == "all":
        return None
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if not parts or not all(part.isdigit() for part in parts):
        raise ValueError("--gpus takes 'all' or a list like 0,3, not %r" % text)
    indices = [int(part) for part in parts]
    return sorted(set(indices))


def simulated_faults(environ: Optional[Dict[str, str]] = None) -> Optional[Dict[str, Any]]:
    """The simulated node's fault declaration, or None on a real node."""
    raw = (os.environ if environ is None else environ).get(SIM_ENV)
    if not raw:
        return None
    faults = json.loads(raw)
    if not isinstance(faults, dict):
        raise ValueError(SIM_ENV + " must hold a JSON object")
    return faults


def discover(
    torch: Any, selection: Optional[List[int]], allow_cpu: bool, faults: Optional[Dict[str, Any]]
) -> List[ProbeDevice]:
    """The devices to probe, in index order.

    Raises:
        NoDeviceError: no GPU, not simulated, and ``allow_cpu`` is false.
        ValueError: ``selection`` names a GPU that does not exist.
    """
    if faults is not None:
        devices = _simulated(torch, faults)
    elif torch.cuda.is_available():
        devices = _cuda(torch)
    elif allow_cpu:
        devices = [ProbeDevice(0, torch.device("cpu"), CPU_NAME)]
    else:
        raise NoDeviceError("no CUDA GPU is visible to torch on this node")
    if selection is None:
        return devices
    known = {d.index: d for d in devices}
    missing = [i for i in selection if i not in known]
    if missing:
        raise ValueError("no GPU with index " + ",".join(str(i) for i in missing))
    return [known[i] for i in selection]


def _cuda(torch: Any) -> List[ProbeDevice]:
    devices = []
    for index in range(torch.cuda.device_count()):
        with torch.cuda.device(index):
            # One stream per device so that each GPU's timing covers only its own work.
            stream = torch.cuda.Stream()
        name = torch.cuda.get_device_name(index)
        devices.append(ProbeDevice(index, torch.device("cuda", index), name, stream=stream))
    return devices


def _simulated(torch: Any, faults: Dict[str, Any]) -> List[ProbeDevice]:
    count = int(faults.get("gpus", 8))
    slow = {int(k): float(v) for k, v in dict(faults.get("slow", {})).items()}
    sdc = {int(i) for i in faults.get("sdc", [])}
    cpu = torch.device("cpu")
    return [
        ProbeDevice(i, cpu, SIM_NAME, slow_factor=max(1.0, slow.get(i, 1.0)), sdc=i in sdc)
        for i in range(count)
    ]
