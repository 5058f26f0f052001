"""Whether this tree's history files are byte for byte those of another revision.

Records a fixed series of the state's own snapshots (40 canned nodes with hostile
labels, a lost GPU, failed readings and exact big integers: bench/lib/metrics_fleets.py,
150 ticks across two minute boundaries) into a fresh data directory under a fixed
session name, and prints the SHA-256 of every parquet file written. With ``--against
REV`` it records the same series under the tree at git revision ``REV`` in a subprocess
and says which files differ.

    PYTHONPATH=. .venv/bin/python bench/bench_export_same_files.py --against HEAD
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
T0 = 1.8e9 - 1.8e9 % 60 + 30  # mid-minute: the series closes two minutes


def digests() -> dict[str, str]:
    """Each parquet file's path in the data directory and its digest."""
    from bench.lib.fleet_states import state_ticks
    from bench.lib.metrics_fleets import _hostile_hello, _troubled_sample
    from history import HistoryRecorder
    from history import recorder as recorder_module
    from history.section import HistorySection

    recorder_module.session_name = lambda started: "SESSION"  # file names without a token
    snapshots = state_ticks(40, 150, _troubled_sample, t0=T0, edit_hello=_hostile_hello)
    with tempfile.TemporaryDirectory(prefix="same-files-") as tmp:
        data_dir = Path(tmp)
        recorder = HistoryRecorder(data_dir, HistorySection(), clock=lambda: T0)
        for snapshot in snapshots:
            recorder.record(snapshot)
        recorder.close()
        return {
            str(path.relative_to(data_dir)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(data_dir.rglob("*.parquet"))
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", metavar="REV", help="compare with the files at REV")
    args = parser.parse_args()
    ours = digests()
    if not args.against:
        print(json.dumps(ours))
        return
    # Imported here: the other tree runs this script too, and may not have the module.
    from bench.lib.other_tree import run_script_in

    theirs: dict[str, str] = run_script_in(args.against, Path(__file__), ROOT)
    differ = sorted(p for p in ours.keys() | theirs.keys() if ours.get(p) != theirs.get(p))
    print(f"{len(ours)} files compared with {args.against}: {len(differ)} differ {differ}")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
