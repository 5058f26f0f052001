"""gpufleet: the application shell. It wires the rooms together and may import all of them."""

__version__ = "0.1.0"
