"""Probe kernels: torch code that runs ON THE NODE with the node's probe Python.

Only the standard library and torch, and Python 3.8-compatible syntax: this package
is bundled into ``probes-<sha12>.pyz`` and run as ``python3 probes.pyz --suite quick``.
Imports inside the package are relative so that it works both as ``probes.kernels``
(tests on the controller) and under its bundled name.
"""

PROTOCOL_VERSION = 1
