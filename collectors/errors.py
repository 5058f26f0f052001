"""The root of gpufleet's input failures: what the command line reports in one line.

Every error that bad input can cause (a config, a hostfile, an inventory expression,
a node's line) derives from :class:`FleetError`, so ``gpufleet`` maps all of them to
one line on stderr in one place and never prints a traceback for them.
"""

from __future__ import annotations


class FleetError(Exception):
    """Bad input: the message is one line naming the file, the key and the expectation."""
