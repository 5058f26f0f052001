"""The evidence bundle as an RMA desk reads it: causes, GPU identity, manifest, signature.

The signature is checked by OpenSSH itself (``ssh-keygen -Y verify`` with an allowed
signers file), the way a provider would, on the files read back from the zip.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from fleet.model import EventRecord
from gpufleet import __version__
from gpufleet.cli import main
from history import HistoryRecorder
from history.section import HistorySection
from testkit.synthetic_history import snapshot

T0 = datetime(2026, 9, 10, 10, 0, tzinfo=UTC).timestamp()
CONTRACT = """
[sla]
committed_nodes = 2
gpu_hour_price = 2.50
tiers = [{below = 99.5, credit_percent = 10}]
"""
# The driver logged the XID a second before the tick that judged the node broken.
XID = EventRecord(
    t=T0 + 1799, node="gpu-0001", kind="xid", gpu=3, uuid="GPU-0001-3", code=79,
    detail="GPU has fallen off the bus",
)  # fmt: skip


def record(data_dir: Path) -> None:
    """Ticks every 30 s for 2 h; node 1 broken from T0 + 30 min to T0 + 60 min."""
    recorder = HistoryRecorder(data_dir, HistorySection(), clock=lambda: T0)
    for k in range(240):

        def state(n: int, k: int = k) -> str:
            return "broken" if n == 1 and 60 <= k < 120 else "up"

        events = [XID] if k == 59 else []
        recorder.record(snapshot(T0 + 30 * k, 2, states=state, events=events))  # type: ignore[arg-type]
    recorder.close()


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path]:
    data_dir = tmp_path / "data"
    record(data_dir)
    config = tmp_path / "gpufleet.toml"
    config.write_text(CONTRACT)
    return data_dir, config


def bundle(setup: tuple[Path, Path], out: Path, *extra: str) -> dict[str, bytes]:
    data_dir, config = setup
    assert main(["sla", "--data-dir", str(data_dir), "-c", str(config), "--month", "2026-09",
                 "--bundle", str(out), *extra]) == 0  # fmt: skip
    with zipfile.ZipFile(out) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def test_an_xid_a_second_before_the_outage_is_its_cause_with_the_gpu_named(
    setup: tuple[Path, Path], tmp_path: Path
) -> None:
    files = bundle(setup, tmp_path / "claim.zip")
    (outage,) = json.loads(files["claim.json"])["outages"]
    assert outage["start"] == "2026-09-10T10:30:00Z"
    assert [(e["ts"], e["code"]) for e in outage["evidence"]] == [("2026-09-10T10:29:59Z", 79)]
    causes = json.loads(files["evidence/causes.json"])
    assert causes["tolerance_seconds"] == 60
    (cause,) = causes["outages"]
    assert cause["cause"]["detail"] == "GPU has fallen off the bus"
    assert cause["cause_relation"] == "started"
    gpu = cause["gpu"]
    assert (gpu["index"], gpu["uuid"]) == (3, "GPU-0001-3")
    # This history has no serial or PCI bus id columns: the bundle says so, not "".
    assert (gpu["serial"], gpu["pci_bus_id"]) == (None, None)
    assert gpu["missing"] == "serial, pci_bus_id: not recorded by this history"
    # Its minutes from 10:24:59 to 10:34:59: 10:25 to 10:34, failed from 10:30.
    around = cause["gpu_minutes_around_cause"]
    assert [m["minute"][11:16] for m in around] == [f"10:{m}" for m in range(25, 35)]
    assert [m["verdict"] for m in around] == ["ok"] * 5 + ["fail"] * 5
    assert [g["uuid"] for g in cause["node_gpus"]] == [f"GPU-0001-{g}" for g in range(8)]


def test_the_manifest_names_generator_time_period_contract_and_data(
    setup: tuple[Path, Path], tmp_path: Path
) -> None:
    files = bundle(setup, tmp_path / "claim.zip")
    manifest = json.loads(files["MANIFEST.json"])
    assert manifest["generator"] == f"gpufleet {__version__}"
    assert manifest["generated_at"].endswith("Z")
    assert manifest["period"] == {"start": "2026-09-01T00:00:00Z", "end": "2026-10-01T00:00:00Z"}
    assert manifest["contract_sha256"] == hashlib.sha256(files["contract.json"]).hexdigest()
    assert manifest["data_fingerprint"]["files"] > 0
    assert len(manifest["data_fingerprint"]["sha256"]) == 64
    assert {row["file"] for row in manifest["files"]} == set(files) - {"MANIFEST.json"}


def keypair(tmp_path: Path) -> tuple[Path, Path]:
    key = tmp_path / "claim_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ops@example.com",
                    "-f", str(key)], check=True)  # fmt: skip
    signers = tmp_path / "allowed_signers"
    public = key.with_suffix(".pub").read_text().split()
    signers.write_text(f'ops@example.com namespaces="gpufleet-claim" {public[0]} {public[1]}\n')
    return key, signers


def openssh_verifies(files: dict[str, bytes], tmp_path: Path, signers: Path) -> bool:
    sig = tmp_path / "MANIFEST.json.sig"
    sig.write_bytes(files["MANIFEST.json.sig"])
    done = subprocess.run(
        ["ssh-keygen", "-Y", "verify", "-f", str(signers), "-I", "ops@example.com",
         "-n", "gpufleet-claim", "-s", str(sig)],
        input=files["MANIFEST.json"], capture_output=True, check=False,
    )  # fmt: skip
    return done.returncode == 0


def test_a_signed_bundle_verifies_with_openssh_and_with_verify(
    setup: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key, signers = keypair(tmp_path)
    out = tmp_path / "claim.zip"
    files = bundle(setup, out, "--sign", str(key))
    assert openssh_verifies(files, tmp_path, signers)
    capsys.readouterr()
    assert main(["sla", "--verify", str(out)]) == 0
    assert "every file matches MANIFEST.json; signed by SHA256:" in capsys.readouterr().out
    assert main(["sla", "--verify", str(out), "--signer", str(signers), "ops@example.com"]) == 0
    assert "signed by ops@example.com (SHA256:" in capsys.readouterr().out
    assert main(["sla", "--verify", str(out), "--signer", str(signers), "mallory@example"]) == 1
    assert "MANIFEST.json.sig: bad signature" in capsys.readouterr().err


def rewrite(path: Path, name: str, body: bytes) -> None:
    with zipfile.ZipFile(path) as archive:
        files = {n: archive.read(n) for n in archive.namelist()}
    files[name] = body
    with zipfile.ZipFile(path, "w") as archive:
        for n, b in files.items():
            archive.writestr(n, b)


def test_a_tampered_evidence_file_or_manifest_fails(
    setup: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key, signers = keypair(tmp_path)
    out = tmp_path / "claim.zip"
    files = bundle(setup, out, "--sign", str(key))
    rewrite(out, "evidence/events.csv", files["evidence/events.csv"].replace(b"79", b"31"))
    capsys.readouterr()
    assert main(["sla", "--verify", str(out)]) == 1
    assert "evidence/events.csv: SHA-256 differs" in capsys.readouterr().err
    # Changing the manifest to match breaks the signature, for OpenSSH and for --verify.
    forged = files["MANIFEST.json"].replace(b'"month"', b'"month" ', 1)
    rewrite(out, "MANIFEST.json", forged)
    assert not openssh_verifies({**files, "MANIFEST.json": forged}, tmp_path, signers)
    assert main(["sla", "--verify", str(out)]) == 1
    assert "MANIFEST.json.sig: bad signature" in capsys.readouterr().err


def test_sign_without_a_bundle_or_with_a_missing_key_says_so(
    setup: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir, config = setup
    assert main(["sla", "--data-dir", str(data_dir), "-c", str(config), "--month", "2026-09",
                 "--sign", str(tmp_path / "k")]) == 2  # fmt: skip
    assert "give --bundle" in capsys.readouterr().err
    out = tmp_path / "claim.zip"
    assert main(["sla", "--data-dir", str(data_dir), "-c", str(config), "--month", "2026-09",
                 "--bundle", str(out), "--sign", str(tmp_path / "k")]) == 2  # fmt: skip
    assert "no such key file" in capsys.readouterr().err
    assert not out.exists()


def test_the_data_fingerprint_covers_the_claims_days_and_sees_a_change(
    setup: tuple[Path, Path], tmp_path: Path
) -> None:
    data_dir, _ = setup
    first = json.loads(bundle(setup, tmp_path / "a.zip")["MANIFEST.json"])["data_fingerprint"]
    assert first["days"] == "2026-09-01..2026-09-30"
    october = data_dir / "events" / "date=2026-10-02" / "x.parquet"
    october.parent.mkdir(parents=True)
    october.write_bytes(b"another month")  # not read by September's claim
    second = json.loads(bundle(setup, tmp_path / "b.zip")["MANIFEST.json"])["data_fingerprint"]
    assert second == first
    (events,) = (data_dir / "events" / "date=2026-09-10").glob("*.parquet")
    extra = events.with_name("zz-copy.parquet")
    extra.write_bytes(events.read_bytes())  # one more file of the claim's days
    third = json.loads(bundle(setup, tmp_path / "c.zip")["MANIFEST.json"])["data_fingerprint"]
    assert third["files"] == first["files"] + 1 and third["sha256"] != first["sha256"]


def test_the_events_name_the_gpu_uuid(setup: tuple[Path, Path], tmp_path: Path) -> None:
    events = bundle(setup, tmp_path / "claim.zip")["evidence/events.csv"].decode()
    assert events.splitlines()[0] == "ts,node,gpu,kind,code,detail,gpu_uuid"
    assert "2026-09-10T10:29:59Z,gpu-0001,3,xid,79,GPU has fallen off the bus,GPU-0001-3" in events
