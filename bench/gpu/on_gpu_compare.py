"""Our agent against nvidia-smi on the same GPU over the same seconds.

Run: ``python bench/gpu/on_gpu_compare.py DIR`` where DIR holds what ``bench/gpu/on_gpu.sh``
wrote on a GPU node (agent.jsonl, smi.csv, cpu.txt). For each agent sample the
nvidia-smi row nearest in time is the reference (nvidia-smi reads the same NVML, so
the two disagree only by when each read happened); prints how often each field agrees
within a tolerance, and both programs' CPU over the window.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
from pathlib import Path

# agent field -> (nvidia-smi column, how to read it, tolerance)
COMPARED = {
    "util_gpu": ("utilization.gpu [%]", float, 5.0),
    "mem_used_mib": ("memory.used [MiB]", float, 64.0),
    "power_w": ("power.draw [W]", float, 25.0),
    "temp_c": ("temperature.gpu", float, 1.0),
    "sm_clock_mhz": ("clocks.current.sm [MHz]", float, 60.0),
    "clock_reasons": ("clocks_event_reasons.active", lambda s: float(int(s, 16)), 0.0),
    "pstate": ("pstate", lambda s: float(s.lstrip("P")), 0.0),
}


def smi_rows(path: Path) -> list[tuple[float, dict[str, str]]]:
    """nvidia-smi's CSV rows with their timestamps (UTC, as the VM's clock gave them)."""
    with path.open() as handle:
        reader = csv.reader(handle)
        header = [h.strip() for h in next(reader)]
        rows = []
        for raw in reader:
            row = dict(zip(header, (v.strip() for v in raw), strict=True))
            stamp = datetime.datetime.strptime(row["timestamp"], "%Y/%m/%d %H:%M:%S.%f")
            rows.append((stamp.replace(tzinfo=datetime.UTC).timestamp(), row))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path)
    args = parser.parse_args()
    lines = [json.loads(line) for line in (args.dir / "agent.jsonl").open()]
    fields = lines[0]["gpu_fields"]
    samples = [m for m in lines if m["type"] == "sample"]
    reference = smi_rows(args.dir / "smi.csv")
    agree = {name: 0 for name in COMPARED}
    offsets = []
    for sample in samples:
        values = dict(zip(fields, sample["gpus"][0], strict=True))
        when, row = min(reference, key=lambda r: abs(r[0] - sample["t"]))
        offsets.append(abs(when - sample["t"]))
        for name, (column, read, tolerance) in COMPARED.items():
            if abs(float(values[name]) - read(row[column])) <= tolerance:
                agree[name] += 1
    print(f"{len(samples)} agent samples, nearest nvidia-smi row {max(offsets):.2f} s away at most")
    print("| field | nvidia-smi column | tolerance | agree |")
    print("|---|---|---|---|")
    for name, (column, _, tolerance) in COMPARED.items():
        print(f"| {name} | {column} | {tolerance:g} | {agree[name]} of {len(samples)} |")
    print((args.dir / "cpu.txt").read_text().strip())


if __name__ == "__main__":
    main()
