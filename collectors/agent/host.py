"""Who the node is across reboots: the kernel's boot id and systemd's machine id.

A new boot id is a reboot; a new machine id is another machine (reinstalled or
replaced) under the same name. Both are read once, for ``hello``, under the agent's
proc and etc roots (a simulated node points them at its own tree). Python 3.8,
standard library only.
"""

import os
from typing import Dict, Optional

MAX_ID_CHARS = 64  # a boot id is 36 characters, a machine id 32; more is not an id


def read_id(path: str) -> Optional[str]:
    """The first line of ``path``, stripped and bounded, or None (unreadable or empty).

    Nothing from the file is trusted: only printable ASCII is kept, at most
    ``MAX_ID_CHARS`` characters of it.
    """
    try:
        with open(path, "rb") as handle:
            data = handle.read(4 * MAX_ID_CHARS)
    except OSError:
        return None
    line = data.split(b"\n", 1)[0].strip()
    try:
        text = line.decode("ascii")
    except UnicodeDecodeError:
        return None
    if not text or not text.isprintable():
        return None
    return text[:MAX_ID_CHARS]


def node_identity(proc_root: str, etc_root: str) -> Dict[str, Optional[str]]:
    """``boot_id`` and ``machine_id`` for ``hello`` (None where unreadable)."""
    return {
        "boot_id": read_id(os.path.join(proc_root, "sys", "kernel", "random", "boot_id")),
        "machine_id": read_id(os.path.join(etc_root, "machine-id")),
    }
