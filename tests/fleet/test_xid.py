"""The XID catalog follows the reference table (nvml-ib.md §2.1)."""

from __future__ import annotations

import pytest

from fleet.config.health_section import HealthSection
from fleet.health import xid_verdict
from fleet.xid import CATALOG, describe, xid_text


@pytest.mark.parametrize("code", [13, 31, 43, 45, 68, 109])
def test_application_xids_warn(code: int) -> None:
    assert (describe(code).xid_class, describe(code).verdict) == ("app", "warn")


@pytest.mark.parametrize("code", [48, 62, 64, 74, 79, 95, 119, 120, 140])
def test_hardware_xids_fail(code: int) -> None:
    assert (describe(code).xid_class, describe(code).verdict) == ("hardware", "fail")


def test_contained_ecc_warns_and_informational_ones_pass() -> None:
    assert describe(94).verdict == "warn"
    assert {describe(c).verdict for c in (63, 92, 154)} == {"ok"}


def test_text_carries_the_meaning() -> None:
    assert xid_text(79) == "XID 79: GPU has fallen off the bus"


def test_unknown_xid_uses_the_configured_verdict() -> None:
    assert 9999 not in CATALOG
    assert xid_verdict(9999, HealthSection()) == "warn"
    assert xid_verdict(9999, HealthSection(unknown_xid_verdict="fail")) == "fail"


def test_override_beats_the_catalog() -> None:
    cfg = HealthSection.model_validate({"xid_verdicts": {"13": "ok"}})
    assert xid_verdict(13, cfg) == "ok"
    assert xid_verdict(79, cfg) == "fail"
