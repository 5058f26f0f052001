"""gpufleet."""
