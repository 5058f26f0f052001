"""gpufleet: the application shell. It wires the rooms together and may import all of them."""

from fleet.native_heap import configure_malloc

__version__ = "0.1.0"

# Every gpufleet process enters here, before polars (imported further on) starts its
# threads: glibc's one-arena setting only holds for threads that have not allocated yet.
configure_malloc()
