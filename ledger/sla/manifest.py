"""The bundle's manifest, its SSH signature, and the check a provider can redo.

``MANIFEST.json`` names what made the bundle (generator version, generation time), what
it claims (the period, the contract's SHA-256), what it was made from (a fingerprint of
every history file) and every other file's SHA-256. Signing the manifest with
``ssh-keygen -Y sign -n gpufleet-claim`` therefore signs the whole bundle, and a
provider verifies it with OpenSSH alone::

    unzip claim.zip MANIFEST.json MANIFEST.json.sig
    ssh-keygen -Y verify -f allowed_signers -I ops@example.com -n gpufleet-claim \\
        -s MANIFEST.json.sig < MANIFEST.json
    sha256sum -c SHA256SUMS
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import tempfile
import zipfile
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

NAMESPACE = "gpufleet-claim"
MANIFEST = "MANIFEST.json"
SIGNATURE = "MANIFEST.json.sig"
_DAY = re.compile(r"^date=(\d{4}-\d{2}-\d{2})$")
SIGN_TIMEOUT_S = 30  # ssh-keygen asks no questions of an unencrypted key


class SigningError(Exception):
    """The manifest could not be signed or verified (the message says why)."""


def _read_by_claim(relative: Path, first: date, last: date) -> bool:
    """Whether the claim of ``first``..``last`` reads this history file: its days, the
    state intervals that began before them, and files kept without a day."""
    match = next((_DAY.match(part) for part in relative.parts if _DAY.match(part)), None)
    if match is None:
        return True
    day = date.fromisoformat(match.group(1))
    if relative.parts[0] == "node_states":
        return day <= last
    return first <= day <= last


def data_fingerprint(data_dir: Path, first: date, last: date) -> dict[str, Any]:
    """SHA-256 over the path, size and content of every history file the claim of the
    days ``first`` to ``last`` reads, in path order (other months are not hashed)."""
    digest = hashlib.sha256()
    count = 0
    for path in sorted(p for p in data_dir.rglob("*.parquet") if p.is_file()):
        relative = path.relative_to(data_dir)
        if any(part.startswith(".") for part in relative.parts):
            continue  # a temporary being written is not part of the history
        if not _read_by_claim(relative, first, last):
            continue
        file_digest = hashlib.sha256(path.read_bytes()).hexdigest()
        digest.update(f"{relative.as_posix()}\0{path.stat().st_size}\0{file_digest}\n".encode())
        count += 1
    return {"sha256": digest.hexdigest(), "files": count, "days": f"{first}..{last}"}


def manifest_json(files: dict[str, bytes], header: dict[str, Any]) -> bytes:
    """``MANIFEST.json``: ``header`` (generator, time, period, contract, data) and the files."""
    listing = [
        {"file": name, "sha256": hashlib.sha256(body).hexdigest(), "bytes": len(body)}
        for name, body in sorted(files.items())
    ]
    return (json.dumps({**header, "files": listing}, indent=2) + "\n").encode()


def _ssh_keygen(args: list[str], stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(
            ["ssh-keygen", *args],
            input=stdin,
            capture_output=True,
            timeout=SIGN_TIMEOUT_S,
            check=False,
        )
    except FileNotFoundError as exc:
        raise SigningError("ssh-keygen not found (OpenSSH 8.1 or later signs files)") from exc
    except subprocess.TimeoutExpired as exc:
        raise SigningError(f"ssh-keygen did not answer in {SIGN_TIMEOUT_S} s") from exc


def sign(manifest: bytes, key: Path) -> bytes:
    """The SSH signature of ``manifest`` by the private ``key`` (namespace gpufleet-claim)."""
    if not key.is_file():
        raise SigningError(f"{key}: no such key file")
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / MANIFEST
        target.write_bytes(manifest)
        done = _ssh_keygen(["-Y", "sign", "-q", "-f", str(key), "-n", NAMESPACE, str(target)], b"")
        signature = target.with_name(SIGNATURE)
        if done.returncode != 0 or not signature.is_file():
            raise SigningError(f"ssh-keygen -Y sign failed: {_first_line(done.stderr)}")
        return signature.read_bytes()


@dataclass(frozen=True, slots=True)
class Verdict:
    """What ``--verify`` found: problems (empty when the bundle checks) and the signer."""

    problems: tuple[str, ...]
    signer: str  # the key fingerprint, or "" when unsigned

    @property
    def ok(self) -> bool:
        """Whether every hash matched and the signature, if any, is good."""
        return not self.problems


def _first_line(stderr: bytes) -> str:
    lines = stderr.decode("utf-8", "replace").strip().splitlines()
    return lines[0][:200] if lines else "no message"


def _check_hashes(files: dict[str, bytes], manifest: dict[str, Any]) -> list[str]:
    problems = []
    listed = {row["file"]: row["sha256"] for row in manifest.get("files", [])}
    for name, digest in sorted(listed.items()):
        if name not in files:
            problems.append(f"{name}: listed in the manifest, missing from the bundle")
        elif hashlib.sha256(files[name]).hexdigest() != digest:
            problems.append(f"{name}: SHA-256 differs from the manifest (changed after signing)")
    for name in sorted(set(files) - set(listed) - {MANIFEST, SIGNATURE}):
        problems.append(f"{name}: not listed in the manifest")
    return problems


@dataclass(frozen=True, slots=True)
class Signers:
    """Whom to accept: an ``allowed_signers`` file (ssh-keygen's format) and an identity."""

    allowed: Path
    identity: str


def _check_signature(
    manifest: bytes, signature: bytes, signers: Signers | None
) -> tuple[list[str], str]:
    with tempfile.TemporaryDirectory() as tmp:
        sig = Path(tmp) / SIGNATURE
        sig.write_bytes(signature)
        if signers is None:  # a good signature by some key; its fingerprint is printed
            args = ["-Y", "check-novalidate", "-n", NAMESPACE, "-s", str(sig)]
        else:
            args = ["-Y", "verify", "-f", str(signers.allowed), "-I", signers.identity,
                    "-n", NAMESPACE, "-s", str(sig)]  # fmt: skip
        done = _ssh_keygen(args, manifest)
    text = (done.stdout + done.stderr).decode("utf-8", "replace")
    if done.returncode != 0:
        return [f"{SIGNATURE}: bad signature ({_first_line(done.stderr or done.stdout)})"], ""
    signer = next((w for w in text.split() if w.startswith("SHA256:")), "")
    if signers is not None:
        signer = f"{signers.identity} ({signer})" if signer else signers.identity
    return [], signer


def verify_bundle(path: Path, signers: Signers | None = None) -> Verdict:
    """Check every file against the manifest, and the manifest against its signature
    (made by ``signers.identity`` as ``signers.allowed`` lists it, when given; a bundle
    without a signature then fails)."""
    try:
        with zipfile.ZipFile(path) as archive:
            files = {name: archive.read(name) for name in archive.namelist()}
    except (OSError, zipfile.BadZipFile) as exc:
        return Verdict((f"{path}: not a readable zip ({exc})",), "")
    if MANIFEST not in files:
        return Verdict((f"{path}: no {MANIFEST}",), "")
    try:
        manifest = json.loads(files[MANIFEST])
    except ValueError:
        return Verdict((f"{MANIFEST}: not JSON",), "")
    problems = _check_hashes(files, manifest)
    signer = ""
    if SIGNATURE in files:
        bad, signer = _check_signature(files[MANIFEST], files[SIGNATURE], signers)
        problems += bad
    elif signers is not None:
        problems.append(f"{path}: not signed, and a signer was asked for")
    return Verdict(tuple(problems), signer)
