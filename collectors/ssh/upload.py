"""Putting a content-addressed file (the agent or a probe zipapp) on a node, and trusting it.

The file's name carries a hash (``agent-<sha12>.pyz``), but a name proves nothing: a
file planted under that name on a shared or compromised node would run with the
operator's login. So the node checks the content itself before running it: the
remote command is a short Python bootstrap (:func:`verified_run_command`) that reads
the file, compares its SHA-256 with the one the controller computed, and only then
runs it; a mismatch exits with :data:`MISMATCH_STATUS` and the controller uploads the
file again, once.

Uploads go to a temporary name (mode 0600) in a 0700 directory, are set to 0500 and
renamed into place, so a half-written file never carries the final name and the
modes never depend on the node's umask. Nodes without an SFTP subsystem get the same
through one exec channel running Python, which also checks the hash of what arrived.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import posixpath
import secrets
import shlex

import asyncssh

from collectors.sanitize import clean_bytes
from collectors.ssh.target import sftp_dir

log = logging.getLogger(__name__)

DIR_MODE = 0o700
PART_MODE = 0o600
FILE_MODE = 0o500
MISSING_STATUS = 2  # what Python itself exits with when the script is missing
MISMATCH_STATUS = 3
MISMATCH_MESSAGE = "does not match its SHA-256"

# Runs on the node (Python 3.8+, stdlib only): argv is PATH SHA256 ARGS...
_BOOTSTRAP = f"""\
import hashlib, runpy, sys
path, digest = sys.argv[1], sys.argv[2]
try:
    with open(path, "rb") as stream:
        data = stream.read()
except OSError as exc:
    sys.stderr.write("gpufleet: can't open file %r: %s\\n" % (path, exc))
    sys.exit({MISSING_STATUS})
if hashlib.sha256(data).hexdigest() != digest:
    sys.stderr.write("gpufleet: %s {MISMATCH_MESSAGE}; refusing to run it\\n" % path)
    sys.exit({MISMATCH_STATUS})
del data
sys.argv = [path] + sys.argv[3:]
runpy.run_path(path, run_name="__main__")
"""

# Runs on the node for the exec-channel upload: argv is DIR NAME SHA256, content on stdin.
_EXEC_UPLOAD = f"""\
import hashlib, os, sys
directory, name, digest = sys.argv[1], sys.argv[2], sys.argv[3]
data = sys.stdin.buffer.read()
if hashlib.sha256(data).hexdigest() != digest:
    sys.stderr.write("gpufleet: upload of %s arrived damaged\\n" % name)
    sys.exit(4)
os.makedirs(directory, mode=0o{DIR_MODE:o}, exist_ok=True)
os.chmod(directory, 0o{DIR_MODE:o})
temp = os.path.join(directory, ".%s.%s.part" % (name, os.getpid()))
fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o{PART_MODE:o})
with os.fdopen(fd, "wb") as stream:
    stream.write(data)
os.chmod(temp, 0o{FILE_MODE:o})
os.replace(temp, os.path.join(directory, name))
"""


@functools.lru_cache(maxsize=4)
def sha256_hex(content: bytes) -> str:
    """The digest the node checks the file against.

    Kept for the few bundles a process sends: every node's session asks for the same
    agent's (~110 KiB, 0.2 ms a hash: 0.2 s of a 1,000-node start-up), and a bytes
    object's hash, which the lookup needs, is worked out once per object.
    """
    return hashlib.sha256(content).hexdigest()


def verified_argv(python: str, path: str, digest: str, args: list[str]) -> list[str]:
    """The words that run ``path`` only if its content hashes to ``digest`` (unquoted)."""
    return [python, "-c", _BOOTSTRAP, path, digest, *args]


def verified_run_command(python: str, path: str, digest: str, args: list[str]) -> str:
    """The remote command that runs ``path`` only if its content hashes to ``digest``.

    Every piece is shell-quoted; ``args`` reach the program as its ``sys.argv[1:]``.
    """
    return " ".join(shlex.quote(arg) for arg in verified_argv(python, path, digest, args))


async def ensure_uploaded(
    conn: asyncssh.SSHClientConnection,
    name: str,
    content: bytes,
    remote_dir: str,
    *,
    replace: bool = False,
    python: str = "python3",
) -> str:
    """Make sure ``<remote_dir>/<name>`` holds ``content``; upload only when needed.

    Args:
        conn: an open connection to the node.
        name: the file name, without directories.
        content: the bytes the file must hold.
        remote_dir: where to keep it; ``~/`` means the login's home directory.
        replace: upload even when a file of the right size is there (the node found
            its content wrong).
        python: the node's Python, for the exec-channel upload when there is no SFTP.

    Returns:
        The remote path, relative to the home directory when ``remote_dir`` starts
        with ``~/``, as an exec'd command (which starts in the home directory) sees it.
    """
    path = remote_file(remote_dir, name)
    try:
        sftp = await conn.start_sftp_client()
    except (asyncssh.ChannelOpenError, asyncssh.SFTPError) as exc:
        log.info("node has no SFTP (%s): uploading %s over an exec channel", exc, name)
        await _exec_upload(conn, python, path, content)
        return path
    try:
        if replace or not await _has_size(sftp, path, len(content)):
            await _sftp_upload(sftp, path, content)
    finally:
        sftp.exit()
        await sftp.wait_closed()
    return path


def remote_file(remote_dir: str, name: str) -> str:
    """Where :func:`ensure_uploaded` puts ``name``, as an exec'd command sees the path."""
    if "/" in name or name in ("", ".", ".."):
        raise ValueError(f"not a plain file name: {name!r}")
    return posixpath.join(sftp_dir(remote_dir), name)


def agent_missing(ended: BaseException) -> bool:
    """Whether the agent's run ended because its file is not on the node.

    The transport runs the agent before checking for it (one SFTP session less per
    connection in the usual case, where it is already there); Python (or the
    bootstrap) says this on stderr and exits with status 2 when the file is absent.
    """
    return "can't open file" in str(ended) and f"status {MISSING_STATUS}" in str(ended)


def agent_mismatch(ended: BaseException) -> bool:
    """Whether the agent's run ended because the file on the node has other content."""
    return MISMATCH_MESSAGE in str(ended) and f"status {MISMATCH_STATUS}" in str(ended)


async def _sftp_upload(sftp: asyncssh.SFTPClient, path: str, content: bytes) -> None:
    directory = posixpath.dirname(path) or "."
    await sftp.makedirs(directory, attrs=asyncssh.SFTPAttrs(permissions=DIR_MODE), exist_ok=True)
    if directory != ".":
        try:
            await sftp.chmod(directory, DIR_MODE)  # created earlier with the umask's mode
        except asyncssh.SFTPPermissionDenied:
            log.warning("cannot make %s private (mode 0700): not its owner", directory)
    temp = posixpath.join(directory, f".{posixpath.basename(path)}.{secrets.token_hex(4)}.part")
    attrs = asyncssh.SFTPAttrs(permissions=PART_MODE)
    async with sftp.open(temp, "wb", attrs) as remote:
        await remote.write(content)
    await sftp.chmod(temp, FILE_MODE)
    try:
        await sftp.posix_rename(temp, path)
    except asyncssh.SFTPError:
        await _rename_fallback(sftp, temp, path)


async def _exec_upload(
    conn: asyncssh.SSHClientConnection, python: str, path: str, content: bytes
) -> None:
    directory, name = posixpath.split(path)
    argv = [python, "-c", _EXEC_UPLOAD, directory or ".", name, sha256_hex(content)]
    command = " ".join(shlex.quote(arg) for arg in argv)
    result = await conn.run(command, input=content, encoding=None, check=False)
    if result.exit_status != 0:
        stderr = result.stderr if isinstance(result.stderr, bytes) else b""
        reason = clean_bytes(stderr.strip()[-300:])
        raise asyncssh.SFTPFailure(f"exec upload exited with {result.exit_status}: {reason}")


async def _has_size(sftp: asyncssh.SFTPClient, path: str, size: int) -> bool:
    try:
        attrs = await sftp.stat(path)
    except asyncssh.SFTPNoSuchFile:
        return False
    return attrs.size == size


async def _rename_fallback(sftp: asyncssh.SFTPClient, temp: str, path: str) -> None:
    # Servers without posix-rename refuse to replace a file: remove the old one first
    # (a planted file must not survive), then rename.
    try:
        await sftp.rename(temp, path)
        return
    except asyncssh.SFTPError:
        pass
    try:
        await sftp.remove(path)
        await sftp.rename(temp, path)
    except asyncssh.SFTPError:
        await sftp.remove(temp)
        if not await sftp.exists(path):
            raise
