"""A month's first delivery build on a fresh data dir, as a new process pays it at start-up.

``serve`` makes the month's delivery figures on a thread a few seconds after it starts,
beside the fleet's handshakes. With no history yet every hour since the 1st is empty.
Ours: :class:`ledger.delivery.month.DeliveryMonth`, which judges an hour that no file
reaches without reading it. Baseline in the same run: the whole month judged at once
(``ledger.delivery.ledger.build_ledger``). Both give the same ledger (checked). CPU
seconds, best of ``--repeat``; ``--src`` runs an older tree's month instead (before/after).

    PYTHONPATH=. .venv/bin/python bench/bench_month_first_build.py [--day 29] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--day", type=int, default=29, help="day of the month it runs on")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--src", type=Path, default=None, help="an older tree's code")
    args = parser.parse_args()
    sys.path.insert(0, str((args.src or Path(__file__).resolve().parent.parent).resolve()))

    from fleet.settings.contract_section import ContractSection
    from history.reader import HistoryReader
    from ledger.delivery.ledger import build_ledger, period_of
    from ledger.delivery.month import DeliveryMonth
    from ledger.delivery.section import EnergySection

    now = datetime(2026, 11, args.day, 12, 0, tzinfo=UTC)
    start_ms, now_ms = (
        round(now.replace(day=1, hour=0).timestamp() * 1000),
        round(now.timestamp() * 1000),
    )
    contract, energy = ContractSection(), EnergySection()
    period = period_of(start_ms, now_ms)
    ours, whole = [], []
    with tempfile.TemporaryDirectory() as data:
        reader = HistoryReader(Path(data))
        for _ in range(args.repeat):
            start = time.process_time()
            kept = DeliveryMonth().build(reader, period, contract, energy, now_ms)
            ours.append(time.process_time() - start)
            start = time.process_time()
            full = build_ledger(reader, period, contract, energy, now_ms)
            whole.append(time.process_time() - start)
            if kept != full:
                raise SystemExit("the kept month and the whole judgement differ")
    load = os.getloadavg()[0]
    print(f"day {args.day}: {(args.day - 1) * 24 + 12} hours, no history; load {load:.2f}")
    print(f"ours (DeliveryMonth, first build): {min(ours):.3f} s CPU (best of {args.repeat})")
    print(f"baseline (build_ledger, whole month): {min(whole):.3f} s CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
