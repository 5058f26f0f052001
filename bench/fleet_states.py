"""Where tests import the canned-fleet snapshots from: the code is bench/lib/fleet_states.py.

Tests still import ``bench.fleet_states``; once they import ``bench.lib.fleet_states``
this file goes.
"""

from bench.lib.fleet_states import T0, LineEdit, state_ticks

__all__ = ["T0", "LineEdit", "state_ticks"]
