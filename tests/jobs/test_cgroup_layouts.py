"""The node agent's job attribution: cgroup layouts, CUDA_VISIBLE_DEVICES, the message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collectors.agent.jobs import (
    JobWatch,
    attribute,
    jobs_message,
    placement,
    visible_gpus,
)
from collectors.protocol import Jobs, ProtocolError, decode_line

FIXTURES = Path(__file__).parent / "fixtures" / "cgroup"
UUIDS = [
    "GPU-8f1c2d3e-0000-1111-2222-333344445555",
    "GPU-a07e9b10-6666-7777-8888-9999aaaabbbb",
    "GPU-a07f0000-cccc-dddd-eeee-ffff00001111",
]


@pytest.mark.parametrize(
    ("fixture", "expected"),
    [
        ("slurm_v1_batch.txt", {"scheduler": "slurm", "job": "1", "step": "batch"}),
        ("slurm_v1_step_task.txt", {"scheduler": "slurm", "job": "4242", "step": "0"}),
        ("slurm_v2_step.txt", {"scheduler": "slurm", "job": "987654", "step": "0"}),
        ("slurm_v2_multi_slurmd_extern.txt", {"scheduler": "slurm", "job": "77", "step": "extern"}),
        (
            "k8s_v1_cgroupfs.txt",
            {
                "scheduler": "k8s",
                "pod": "74c13223-5a00-11e9-b385-42010a80018d",
                "container": "34dc0b5e626f2c5c4c5170e34b10e7654ce36f0fcd532739f4445baabea03376",
            },
        ),
        (
            "k8s_v2_systemd.txt",
            {
                "scheduler": "k8s",
                "pod": "28c6b84f-4b17-4bac-9ca4-c7c794ebfefc",
                "container": "2403fae93d37e1f9a0b6c5d3f1a2b4c6d8e0f1a3b5c7d9e1f3a5b7c9d1e3f5a7",
            },
        ),
        (
            "k8s_v2_guaranteed_crio.txt",
            {
                "scheduler": "k8s",
                "pod": "0b1f6c2e-8a31-4d55-9e0c-3f2a1b4c5d6e",
                "container": "9ec39b91f3d70e1beff50a308f77067065ea6be0d91a3378375056cd4422cf3d",
            },
        ),
        ("plain_v2_user.txt", None),
    ],
)
def test_each_recorded_layout_names_its_job_or_pod(fixture: str, expected: object) -> None:
    assert placement((FIXTURES / fixture).read_text()) == expected


def test_a_job_word_outside_a_path_segment_is_not_a_job() -> None:
    assert placement("0::/user.slice/my_job_12x/step_0\n") is None
    assert placement("0::/system.slice/notjob_5/step_1\n") is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0,2", [0, 2]),
        ("1", [1]),
        # Slurm 25.11: UUIDs, in the job's own order
        (f"{UUIDS[2]},{UUIDS[0]}", [2, 0]),
        ("gpu-8f1c2d3e-0000-1111-2222-333344445555", [0]),  # case as CUDA accepts
        ("GPU-a07e9b10", [1]),  # a unique prefix, as CUDA accepts
        ("GPU-a07", []),  # ambiguous prefix: CUDA stops there
        ("MIG-8f1c2d3e-0000-1111-2222-333344445555/1/0", [0]),
        ("0,7,1", [0]),  # CUDA stops at the first invalid entry
        ("", []),
        ("NoDevFiles", []),
    ],
)
def test_cuda_visible_devices_indices_and_uuids(value: str, expected: list[int]) -> None:
    assert visible_gpus(value, UUIDS) == expected


def _proc(
    root: Path, pid: int, cgroup: str, uid: int, environ: dict[str, str] | None = None
) -> None:
    entry = root / str(pid)
    entry.mkdir(parents=True)
    (entry / "cgroup").write_text(cgroup)
    (entry / "status").write_text(f"Name:\tpython3\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n")
    if environ is not None:
        (entry / "environ").write_bytes(
            b"".join(f"{k}={v}".encode() + b"\0" for k, v in environ.items())
        )


def test_processes_and_idle_allocations_are_attributed(tmp_path: Path) -> None:
    slurm = (FIXTURES / "slurm_v2_step.txt").read_text()
    pod = (FIXTURES / "k8s_v2_systemd.txt").read_text()
    _proc(tmp_path, 100, slurm, 0, {"CUDA_VISIBLE_DEVICES": f"{UUIDS[0]},{UUIDS[1]}"})
    _proc(tmp_path, 101, slurm, 0)
    _proc(tmp_path, 200, pod, 0)
    _proc(tmp_path, 300, (FIXTURES / "plain_v2_user.txt").read_text(), 0)
    # GPU 0: two processes of job 987654; GPU 2: the pod; GPU 1 allocated to the job, idle.
    jobs = attribute(str(tmp_path), [(0, 100), (0, 101), (2, 200), (1, 300), (0, 999)], UUIDS)
    summary = [
        (e["gpu"], e["scheduler"], e.get("job") or e.get("pod"), e["processes"], e["via"])
        for e in jobs
    ]
    assert summary == [
        (0, "slurm", "987654", 2, "nvml"),
        (1, "slurm", "987654", 0, "env"),
        (2, "k8s", "28c6b84f-4b17-4bac-9ca4-c7c794ebfefc", 1, "nvml"),
    ]
    assert {e["user"] for e in jobs} == {"root"}


def test_the_message_decodes_as_protocol_and_hostile_values_are_refused(tmp_path: Path) -> None:
    _proc(tmp_path, 100, (FIXTURES / "slurm_v1_batch.txt").read_text(), 0)
    body = JobWatch().body(10.0, attribute(str(tmp_path), [(1, 100)], UUIDS))
    assert body is not None
    line = json.dumps(jobs_message(10.0, body)).encode()
    message = decode_line(line)
    assert isinstance(message, Jobs)
    assert [(j.gpu, j.uuid, j.job, j.step, j.user) for j in message.jobs] == [
        (1, UUIDS[1], "1", "batch", "root")
    ]
    hostile = json.loads(line)
    hostile["jobs"][0]["job"] = "1;rm -rf /"
    with pytest.raises(ProtocolError):
        decode_line(json.dumps(hostile).encode())
    hostile["jobs"][0]["job"] = "1"
    hostile["schema"] = 2
    with pytest.raises(ProtocolError):
        decode_line(json.dumps(hostile).encode())
    hostile["schema"] = 1
    hostile["jobs"][0]["user"] = "\x1b[31mroot"
    cleaned = decode_line(json.dumps(hostile).encode())
    assert isinstance(cleaned, Jobs)
    assert "\x1b" not in (cleaned.jobs[0].user or "")


def test_the_watch_sends_on_change_and_on_refresh_only() -> None:
    watch = JobWatch(refresh_s=300.0)
    one = [{"gpu": 0, "scheduler": "slurm", "job": "5", "step": "0", "uid": 1, "processes": 1}]
    more = [{**one[0], "processes": 4}]
    assert watch.body(0.0, one) is not None
    assert watch.body(10.0, more) is None  # a fork is not a change
    assert watch.body(20.0, []) == {"schema": 1, "jobs": []}  # the job ended
    assert watch.body(30.0, []) is None
    assert watch.body(320.0, []) is not None  # refreshed


def test_a_process_gone_between_nvml_and_proc_is_skipped(tmp_path: Path) -> None:
    assert attribute(str(tmp_path), [(0, 4321)], UUIDS, pids=[]) == []
