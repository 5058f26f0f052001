"""A Kubernetes pod's name and namespace, read by the agent from a procfs-like tree.

The tree is laid out as a node's: ``proc/<pid>/cgroup`` (the recorded kubelet systemd
layout, tests/jobs/fixtures/cgroup), ``proc/<pid>/environ`` (NUL-separated, with the
``HOSTNAME`` the kubelet sets), and ``proc/<pid>/root`` (here a link to the container's
root directory, as procfs's magic link is) where, as in Debian-based images, ``var/run``
is the absolute symlink ``/run`` and the service account's ``namespace`` file sits under
``run/secrets/kubernetes.io/serviceaccount``. The node's own files sit beside it: a
link that climbs or jumps out of the container must never reach them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from collectors.agent.jobs import attribute, jobs_message
from collectors.agent.pod_identity import pod_identity, read_in_root
from collectors.protocol import Jobs, decode_line

FIXTURES = Path(__file__).parent / "fixtures" / "cgroup"
POD_UID = "28c6b84f-4b17-4bac-9ca4-c7c794ebfefc"
UUIDS = ["GPU-00000000-1111-2222-3333-444444444444"]
SECRET = "var/run/secrets/kubernetes.io/serviceaccount/namespace"


def _process(proc: Path, pid: int, environ: dict[str, str], rootfs: Path) -> None:
    entry = proc / str(pid)
    entry.mkdir(parents=True)
    (entry / "cgroup").write_text((FIXTURES / "k8s_v2_systemd.txt").read_text())
    (entry / "environ").write_bytes(b"".join(f"{k}={v}\0".encode() for k, v in environ.items()))
    (entry / "status").write_text(f"Name:\tpython3\nPid:\t{pid}\nUid:\t0\t0\t0\t0\n")
    (entry / "root").symlink_to(rootfs)


def _rootfs(base: Path, namespace: str | None = "ml-team\n") -> Path:
    rootfs = base / "rootfs"
    (rootfs / "var").mkdir(parents=True)
    (rootfs / "var" / "run").symlink_to("/run")  # absolute: /run of the container
    account = rootfs / "run" / "secrets" / "kubernetes.io" / "serviceaccount"
    account.mkdir(parents=True)
    if namespace is not None:
        (account / "namespace").write_text(namespace)
    return rootfs


def test_a_pod_on_a_gpu_carries_its_name_and_namespace(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    env = {"PATH": "/usr/bin", "HOSTNAME": "trainer-7f9c5d-0", "CUDA_VISIBLE_DEVICES": "0"}
    _process(proc, 4100, env, _rootfs(tmp_path))
    (entry,) = attribute(str(proc), [(0, 4100)], UUIDS, pids=[])
    assert (entry["pod"], entry["pod_name"], entry["namespace"]) == (
        POD_UID,
        "trainer-7f9c5d-0",
        "ml-team",
    )
    # Protocol: the body stays schema 1 and the fields are additive; the controller's
    # decoder (a v1 reader) takes the line and keeps the pod's UID as before.
    line = json.dumps(jobs_message(10.0, {"schema": 1, "jobs": [entry], "errors": []}))
    message = decode_line(line.encode())
    assert isinstance(message, Jobs) and message.schema == 1
    assert [(j.scheduler, j.pod, j.gpu) for j in message.jobs] == [("k8s", POD_UID, 0)]


def test_unreadable_or_odd_values_are_absent(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    hostile = {"HOSTNAME": "Trainer\x1b]52;c;aGk=\x07"}  # not a DNS name: dropped
    _process(proc, 4200, hostile, _rootfs(tmp_path / "a", namespace="Not_A_Label"))
    assert pod_identity(str(proc), 4200) == {}
    _process(proc, 4201, {"HOSTNAME": "a" * 254}, _rootfs(tmp_path / "b", namespace=None))
    assert pod_identity(str(proc), 4201) == {}
    assert pod_identity(str(proc), 4299) == {}  # gone: nothing to read
    # The pod is still attributed without them.
    (entry,) = attribute(str(proc), [(0, 4200)], UUIDS, pids=[])
    assert entry["pod"] == POD_UID and "pod_name" not in entry and "namespace" not in entry


def test_links_resolve_inside_the_container_root(tmp_path: Path) -> None:
    host = tmp_path / "host-only"
    host.write_text("leaked\n")  # a valid DNS label: only its path could keep it out
    rootfs = _rootfs(tmp_path, namespace=None)
    account = rootfs / "run" / "secrets" / "kubernetes.io" / "serviceaccount"
    for target in (str(host), "../" * 12 + str(host).lstrip("/")):
        link = account / "namespace"
        link.unlink(missing_ok=True)
        link.symlink_to(target)
        assert read_in_root(str(rootfs), SECRET) is None, target
    # The same file inside the container's root is read.
    inside = rootfs / str(host).lstrip("/")
    inside.parent.mkdir(parents=True)
    inside.write_text("team-a\n")
    assert read_in_root(str(rootfs), SECRET) == b"team-a\n"


def test_loops_fifos_and_large_files_are_bounded(tmp_path: Path) -> None:
    rootfs = _rootfs(tmp_path, namespace=None)
    account = rootfs / "run" / "secrets" / "kubernetes.io" / "serviceaccount"
    (account / "namespace").symlink_to("loop")
    (account / "loop").symlink_to("namespace")
    assert read_in_root(str(rootfs), SECRET) is None
    (account / "namespace").unlink()
    os.mkfifo(account / "namespace")  # opening it to read would block: never opened
    assert read_in_root(str(rootfs), SECRET) is None
    (account / "namespace").unlink()
    (account / "namespace").write_bytes(b"x" * 10_000)
    assert read_in_root(str(rootfs), SECRET, limit=256) == b"x" * 256


@pytest.mark.parametrize("name", ["a", "trainer-0", "web.default-7d4b9c"])
def test_dns_subdomain_pod_names_are_kept(tmp_path: Path, name: str) -> None:
    _process(tmp_path / "proc", 1, {"HOSTNAME": name}, _rootfs(tmp_path))
    assert pod_identity(str(tmp_path / "proc"), 1)["pod_name"] == name
