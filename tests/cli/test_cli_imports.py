"""What the CLI imports before a command runs: no room a command does not use.

``serve`` and ``watch`` start by importing the CLI, which registers every command's
parser; the acceptance campaign's engine, launcher, journal and renderers used to come
with it (gpufleet/commands/accept.py), ~0.09 s and ~3 MiB in every process.
"""

from __future__ import annotations

import json
import subprocess
import sys

CAMPAIGN_RUN = ("campaign.engine", "campaign.fabric_launch", "campaign.journal", "campaign.render")


def _modules_after(code: str) -> set[str]:
    script = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True)
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_the_cli_does_not_import_the_campaign_run() -> None:
    loaded = _modules_after("import gpufleet.cli\ngpufleet.cli.build_parser()")
    assert not loaded & set(CAMPAIGN_RUN)


def test_the_accept_command_still_reaches_it() -> None:
    loaded = _modules_after("import gpufleet.accept_campaign")
    assert set(CAMPAIGN_RUN) <= loaded
