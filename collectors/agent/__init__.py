"""The node agent: samples NVML and sysfs on a GPU node and streams protocol v1 on stdout."""
