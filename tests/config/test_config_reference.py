"""docs/config.md's key tables are the models' field docstrings, kept current."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpufleet.config.reference import GENERATED, key_table, render

DOC = Path(__file__).resolve().parents[2] / "docs" / "config.md"


def test_config_doc_matches_the_field_docstrings() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert render(text) == text, "run: python -m gpufleet.config.reference docs/config.md"


@pytest.mark.parametrize("section", GENERATED)
def test_every_section_has_its_table_in_the_doc(section: str) -> None:
    text = DOC.read_text(encoding="utf-8")
    assert f"<!-- keys:{section} -->\n{key_table(section)}<!-- /keys -->" in text


def test_a_field_without_docs_would_show_as_an_empty_meaning() -> None:
    # Every generated row carries a meaning: an undocumented field is a doc bug.
    for section in GENERATED:
        for row in key_table(section).splitlines()[2:]:
            assert not row.endswith("|  |"), f"[{section}] {row}"
