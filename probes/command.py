"""The shell commands the runner sends to a node, every word quoted."""

from __future__ import annotations

import re
import shlex

from collectors.ssh.upload import verified_argv

_GPU_SELECTION = re.compile(r"^(all|\d+(,\d+)*)$")


def shell_word(word: str) -> str:
    """``word`` quoted for ``sh``; a leading ``~/`` still means the login's home."""
    if word.startswith("~/"):
        return '"$HOME"/' + shlex.quote(word[2:])
    return shlex.quote(word)


def validate_gpu_selection(gpus: str) -> str:
    """``gpus`` itself when it is ``all`` or indices like ``0,3``.

    Raises:
        ValueError: anything else.
    """
    if not _GPU_SELECTION.match(gpus):
        raise ValueError(f"GPU selection {gpus!r}: expected 'all' or indices like 0,3")
    return gpus


def probe_command(
    python: str,
    bundle_path: str,
    digest: str,
    suite: str,
    timeout_s: float,
    gpus: str,
    allow_cpu: bool,
) -> str:
    """``sh -c 'echo $$; exec PYTHON -c BOOTSTRAP BUNDLE SHA256 --suite ...'``.

    The shell prints its pid and then becomes the probe (``exec`` keeps the pid), so
    the controller knows the pid before Python even starts; the probe then makes
    that pid its process group, which ``kill_command`` ends as a whole. The bootstrap
    runs the bundle only when its content hashes to ``digest``: a file planted under
    the bundle's name on the node is refused, never run.

    Raises:
        ValueError: ``gpus`` is neither ``all`` nor a list of indices like ``0,3``.
    """
    args = ["--suite", suite, "--timeout", f"{timeout_s:g}"]
    args += ["--gpus", validate_gpu_selection(gpus)]
    if allow_cpu:
        args.append("--allow-cpu")
    argv = verified_argv(python, bundle_path, digest, args)
    inner = "echo $$; exec " + " ".join(shell_word(word) for word in argv)
    return "sh -c " + shlex.quote(inner)


def kill_command(pgid: int, grace_s: float = 2.0) -> str:
    """End process group ``pgid``: SIGTERM, up to ``grace_s`` to exit, then SIGKILL.

    The last ``kill`` covers the instant between ``exec`` and the probe's
    ``setpgid``, when the pid is not yet a group of its own.
    """
    group = int(pgid)  # an int, never text from the node
    rounds = max(1, int(grace_s / 0.1))
    script = (
        f"g={group}; "
        'if kill -0 "-$g" 2>/dev/null; then '
        'kill -15 "-$g" 2>/dev/null; i=0; '
        f'while [ "$i" -lt {rounds} ] && kill -0 "-$g" 2>/dev/null; '
        "do sleep 0.1; i=$((i+1)); done; "
        'kill -9 "-$g" 2>/dev/null; fi; '
        'kill -9 "$g" 2>/dev/null; true'
    )
    return "sh -c " + shlex.quote(script)
