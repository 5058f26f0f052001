"""docs/dashboard.md says what the code does: the [alerts] example lists every key the
section has, and the browser section's options and defaults are the command's; the filter table
names every filter term."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from fleet.settings.alerts_section import AlertsSection
from gpufleet.commands import web
from gpufleet.web.section import DEFAULT_WEB_ADDR, WebSection
from tui.delivery_terms import DEV_WORDS
from tui.node_view import FILTER_HELP, STATE_WORDS

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "dashboard.md").read_text(encoding="utf-8")


def toml_block(header: str) -> str:
    start = DOC.index(f"```toml\n{header}\n")
    return DOC[start : DOC.index("```\n", start + 8)]


def test_the_alerts_example_shows_every_alerts_key() -> None:
    shown = set(re.findall(r"^([a-z_]+) =", toml_block("[alerts]"), re.MULTILINE))
    # retry_backoff_max_s is named in the comments and the paragraph below the block.
    assert set(AlertsSection.model_fields) - shown == {"retry_backoff_max_s"}
    assert "retry_backoff_max_s" in DOC
    for word in ("storm", "alert_failed", "`nodes`", "`count`"):
        assert word in DOC


def test_the_browser_section_names_the_command_s_options_and_defaults() -> None:
    section = DOC[DOC.index("## In a browser: `gpufleet web`") :].split("\n## ")[0]
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers()
    web.register(commands)
    sub = commands.choices["web"]
    options = {o for a in sub._actions for o in a.option_strings}
    named = set(re.findall(r"(--[a-z-]+)", section)) - {"--nats-url", "--attach"}
    assert named <= options, named - options
    assert DEFAULT_WEB_ADDR in section
    for key in WebSection.model_fields:
        assert f"[web] {key}" in section
    image = re.search(r"!\[[^]]*\]\(([^)]+)\)", section)
    assert image is not None and (ROOT / "docs" / image.group(1)).is_file()


def test_every_filter_term_is_in_the_filter_table() -> None:
    table = DOC[DOC.index("### Filter and sort") :].split("\n### ")[0].split("\n## ")[0]
    for word in STATE_WORDS:
        assert f"state:{word}" in table
    for prefix in set(re.findall(r"\b([a-z]+):", FILTER_HELP)) - {"terms"}:
        assert f"`{prefix}:" in table, prefix
    bar = "\\|"  # a | inside a Markdown table cell
    assert "`dev:" + bar.join(DEV_WORDS) + "`" in table
