"""Torch probes: kernels that run on the node and the runner that ships them."""
