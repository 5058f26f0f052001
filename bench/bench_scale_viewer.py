"""The attached viewer's tick, in process: ShardBoard against a board that converts every
node every tick (bench/lib/scale_viewer.py).

    PYTHONPATH=. .venv/bin/python bench/bench_scale_viewer.py --nodes 12500 --shards 13
"""

import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent / "lib"))  # after PYTHONPATH's tree

from scale_viewer import main

if __name__ == "__main__":
    main()
