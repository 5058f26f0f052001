"""The asyncssh options of a fleet's hosts, built once a host or shared (collectors/ssh/options.py).

N distinct host names with no ssh config file (the common case of a hostfile of IPs or
names and keys given in gpufleet's config): today's ``SshOptions.host_options`` against
the baseline in the same run, one ``asyncssh.SSHClientConnectionOptions`` built for
every host as before (``SshOptions._build_host_options`` called per host). CPU time,
best of ``--repeat``; HOME is an empty directory, so no ``~/.ssh/config`` is read.

    PYTHONPATH=. .venv/bin/python bench/bench_host_options.py --nodes 1000
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from collectors.ssh.options import SshOptions


def _ours(names: list[str]) -> tuple[float, int]:
    options = SshOptions()
    started = time.process_time()
    built = [options.host_options(name) for name in names]
    return time.process_time() - started, len({id(o) for o in built})


def _baseline(names: list[str]) -> tuple[float, int]:
    options = SshOptions()
    started = time.process_time()
    built = [options._build_host_options(options.resolved(name)) for name in names]
    return time.process_time() - started, len({id(o) for o in built})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    names = [f"gpu-{i:05d}.cluster.example" for i in range(args.nodes)]
    with tempfile.TemporaryDirectory() as home:
        os.environ["HOME"] = home
        best = {"ours": (float("inf"), 0), "one per host": (float("inf"), 0)}
        for _ in range(args.repeat):  # alternated, so both see the same machine state
            best["ours"] = min(best["ours"], _ours(names))
            best["one per host"] = min(best["one per host"], _baseline(names))
    print(f"{args.nodes} hosts, no ssh config file; CPU, best of {args.repeat}")
    for name, (seconds, objects) in best.items():
        print(f"  {name:13s} {1000 * seconds:7.1f} ms, {objects} options objects")
    print(f"  baseline / ours: {best['one per host'][0] / best['ours'][0]:.1f}x")


if __name__ == "__main__":
    main()
