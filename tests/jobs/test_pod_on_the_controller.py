"""A pod's name and namespace from the agent reach the live jobs as name and account."""

from __future__ import annotations

import json

import pytest

from collectors.protocol import Jobs, ProtocolError, decode_line
from fleet.jobs import LiveJobs, matches_job

POD = "28c6b84f-4b17-4bac-9ca4-c7c794ebfefc"


def _line(**pod: str) -> bytes:
    entry = {"gpu": 0, "uuid": "GPU-0", "scheduler": "k8s", "pod": POD, "uid": 0, **pod}
    body = {"type": "jobs", "v": 1, "t": 1.0, "schema": 1, "jobs": [entry]}
    return json.dumps(body).encode()


def test_a_pod_reads_as_its_name_and_namespace() -> None:
    message = decode_line(_line(pod_name="trainer-7f9c5d-0", namespace="ml-team"))
    assert isinstance(message, Jobs)
    live = LiveJobs()
    live.ingest("n1", message, 10.0)
    (interval,) = live.node_jobs("n1")
    assert (interval.job, interval.name, interval.account) == (POD, "trainer-7f9c5d-0", "ml-team")
    assert matches_job([interval], "trainer")
    # An agent that does not know them (or could not read them): as before.
    older = decode_line(_line())
    assert isinstance(older, Jobs)
    live.ingest("n2", older, 10.0)
    (bare,) = live.node_jobs("n2")
    assert (bare.name, bare.account) == ("", "")


@pytest.mark.parametrize(
    "pod", [{"pod_name": "Trainer\x1b[31m"}, {"namespace": "a" * 64}, {"pod_name": "-x"}]
)
def test_a_name_that_is_not_a_dns_name_is_refused(pod: dict[str, str]) -> None:
    with pytest.raises(ProtocolError):
        decode_line(_line(**pod))
