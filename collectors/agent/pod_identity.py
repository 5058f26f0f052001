"""A Kubernetes pod's name and namespace as its node can see them, without an API client.

Both are heuristics, read from what the pod's own process carries (docs/jobs.md):

- the **name** is ``HOSTNAME`` in ``/proc/<pid>/environ``: the kubelet sets it to the
  pod's hostname, which is the pod's name unless the pod sets ``spec.hostname``; the
  process can also rewrite its own environment;
- the **namespace** is the service account's ``namespace`` file in the container,
  ``/var/run/secrets/kubernetes.io/serviceaccount/namespace``, present only while
  the pod mounts its service account token (the default).

The namespace file is read through ``/proc/<pid>/root`` with every symlink resolved
inside the container's root, never the node's (a container could point
``var/run`` at ``/etc`` on the node otherwise), and only when it is a regular file
(opening a device or a FIFO could block or act). Every read is bounded, and a value
that is not a DNS name as Kubernetes requires is dropped: an unreadable or odd value is
absent, never guessed. Python 3.8, standard library only.
"""

import os
import re
import stat
from typing import Dict, List, Optional

SERVICE_ACCOUNT_NAMESPACE = "var/run/secrets/kubernetes.io/serviceaccount/namespace"
MAX_FILE_BYTES = 256
MAX_ENVIRON_BYTES = 1 << 20  # ARG_MAX-sized environments exist; nothing larger is read
MAX_LINK_HOPS = 16
MAX_PATH_PARTS = 64
# A pod name is a DNS subdomain (RFC 1123, at most 253 characters); a namespace a DNS
# label (at most 63).
_POD_NAME = re.compile(r"^[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?$")
_NAMESPACE = re.compile(r"^[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?$")


def pod_identity(proc_root: str, pid: int) -> Dict[str, str]:
    """``{"pod_name": ..., "namespace": ...}`` for a pod's process; a key is left out
    when the node cannot tell (unreadable, missing, or not a valid name)."""
    found: Dict[str, str] = {}
    name = read_environ_value(proc_root, pid, "HOSTNAME")
    if name is not None and _POD_NAME.match(name):
        found["pod_name"] = name
    raw = read_in_root(os.path.join(proc_root, str(pid), "root"), SERVICE_ACCOUNT_NAMESPACE)
    if raw is not None:
        namespace = raw.decode("ascii", "replace").strip()
        if _NAMESPACE.match(namespace):
            found["namespace"] = namespace
    return found


def read_environ_value(proc_root: str, pid: int, name: str) -> Optional[str]:
    """One variable of ``/proc/<pid>/environ`` (None: unset or unreadable)."""
    try:
        with open(os.path.join(proc_root, str(pid), "environ"), "rb") as stream:
            raw = stream.read(MAX_ENVIRON_BYTES)
    except OSError:
        return None
    prefix = name.encode("ascii") + b"="
    for item in raw.split(b"\0"):
        if item.startswith(prefix):
            return item[len(prefix) :].decode("ascii", "replace")
    return None


def read_in_root(root: str, path: str, limit: int = MAX_FILE_BYTES) -> Optional[bytes]:
    """The first ``limit`` bytes of ``path`` as a process whose root is ``root`` sees it.

    Symlinks are followed as that process would: an absolute target starts again at
    ``root``, ``..`` stops at ``root``. None: missing, unreadable, too many links, or
    not a regular file.
    """
    try:
        top = os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    opened: List[int] = [top]
    try:
        final = _walk(top, opened, _parts(path))
        return None if final is None else _read_regular(final, limit)
    finally:
        for fd in opened:
            os.close(fd)


def _parts(path: str) -> List[str]:
    return [part for part in path.split("/") if part and part != "."]


def _walk(top: int, opened: List[int], parts: List[str]) -> Optional[int]:
    """The O_PATH descriptor of ``parts`` under ``top`` (added to ``opened``), or None."""
    stack = [top]
    hops = 0
    while parts:
        name = parts.pop(0)
        if name == "..":
            if len(stack) > 1:
                stack.pop()
            continue
        try:
            fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=stack[-1])
        except OSError:
            return None
        opened.append(fd)
        mode = os.fstat(fd).st_mode
        if stat.S_ISLNK(mode):
            hops += 1
            target = _link(name, stack[-1])
            if target is None or hops > MAX_LINK_HOPS:
                return None
            if target.startswith("/"):
                stack = [top]
            parts = _parts(target) + parts
            if len(parts) > MAX_PATH_PARTS:
                return None
            continue
        if not parts:
            return fd
        if not stat.S_ISDIR(mode):
            return None
        stack.append(fd)
    return stack[-1] if len(stack) > 1 else None


def _link(name: str, directory: int) -> Optional[str]:
    try:
        return os.readlink(name, dir_fd=directory)
    except OSError:
        return None


def _read_regular(fd: int, limit: int) -> Optional[bytes]:
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        return None
    # Reopened through the O_PATH descriptor: the file checked is the file read.
    try:
        reader = os.open("/proc/self/fd/%d" % fd, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        return os.read(reader, limit)
    except OSError:
        return None
    finally:
        os.close(reader)
