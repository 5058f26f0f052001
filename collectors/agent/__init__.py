"""The node agent: samples NVML and sysfs on a GPU node and streams protocol v1 on stdout.

Everything under this package runs on the node with the node's own ``python3``
(3.8 or newer), the standard library and the bundled pure-Python ``pynvml``.
"""

AGENT_VERSION = "0.1.0"
