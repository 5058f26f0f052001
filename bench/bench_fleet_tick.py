"""The controller's own work per tick, in one process, without SSH (bench/lib/fleet_tick.py).

The robust half of bench/bench_fleet.py: N canned nodes decoded, ingested and ticked by a
real ``FleetRuntime``, /metrics rendered every 15th tick, CPU and GC timed apart. Run it
against two trees, interleaved, for before/after on the same machine state:

    PYTHONPATH=OLD .venv/bin/python bench/bench_fleet_tick.py --nodes 1000 --ticks 30
    PYTHONPATH=.   .venv/bin/python bench/bench_fleet_tick.py --nodes 1000 --ticks 30
"""

import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent / "lib"))  # after PYTHONPATH's tree

from fleet_tick import main

if __name__ == "__main__":
    main()
