"""AttachedFleet's failures cross the facade as FleetErrors (and still as the builtins)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cluster.attach import AttachedFleet, as_fleet_error
from fleet.facade import (
    ExportRequest,
    FleetError,
    FleetUnreachable,
    ReadOnlyFleet,
    RequestFailed,
    UnknownNode,
)

# Never connected: every request below fails before anything is sent.
URL = "nats://127.0.0.1:1"


async def test_a_read_only_viewer_refuses_a_probe_with_a_fleet_error() -> None:
    with pytest.raises(ReadOnlyFleet) as caught:
        await AttachedFleet(URL, read_only=True).probe("node-001")
    assert isinstance(caught.value, PermissionError)


async def test_a_node_no_shard_reports_is_unknown() -> None:
    with pytest.raises(UnknownNode, match=r"^node-001 is not part of the fleet$") as caught:
        await AttachedFleet(URL).probe("node-001")
    assert isinstance(caught.value, KeyError)


async def test_an_export_with_no_shard_heard_is_a_failed_request(tmp_path: Path) -> None:
    with pytest.raises(RequestFailed, match="no shard heard yet") as caught:
        await AttachedFleet(URL).export(ExportRequest(path=tmp_path / "x.csv"))
    assert isinstance(caught.value, RuntimeError)


def test_builtins_map_to_their_fleet_errors() -> None:
    assert isinstance(as_fleet_error(ConnectionError("gone")), FleetUnreachable)
    assert str(as_fleet_error(TimeoutError())) == "TimeoutError"
    kept = UnknownNode("x")
    assert as_fleet_error(kept) is kept
    assert all(
        isinstance(as_fleet_error(e), FleetError) for e in (OSError("disk"), ValueError("v"))
    )
