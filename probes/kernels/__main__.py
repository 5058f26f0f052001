"""``python -m probes.kernels``: the probe program (bundled as ``probes-<sha12>.pyz``)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
