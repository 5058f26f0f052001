"""gpufleet: the application shell. It wires the rooms together and may import all of them."""

import gc

from fleet.native_heap import configure_malloc

__version__ = "0.1.0"

# Every gpufleet process enters here, before polars (imported further on) starts its
# threads: glibc's one-arena setting only holds for threads that have not allocated yet.
configure_malloc()

# Importing the application builds ~90,000 objects that live as long as the process
# (modules, classes, functions). CPython's automatic full collection scanned them while
# they were imported (21-47 ms, among a start-up's largest pauses) and the runtime's
# first freeze scanned them all again. So the full trigger is off while the process
# imports, and the command line freezes what the imports built (:func:`imports_done`);
# importing leaves no cyclic garbage behind (a DEBUG_SAVEALL collection after importing
# the serve path finds none), so nothing is frozen that a collection would have freed.
IMPORT_GC_THRESHOLDS = gc.get_threshold()
IMPORT_FULL_TRIGGER_OFF = 1_000_000
gc.set_threshold(IMPORT_GC_THRESHOLDS[0], IMPORT_GC_THRESHOLDS[1], IMPORT_FULL_TRIGGER_OFF)


def imports_done() -> None:
    """Freeze what the imports built and give the collector its usual thresholds back."""
    gc.collect(1)  # the young garbage of parsing the command line (argparse's cycles)
    gc.freeze()
    gc.set_threshold(*IMPORT_GC_THRESHOLDS)
