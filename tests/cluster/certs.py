"""A private CA, a server certificate for 127.0.0.1 and a client certificate, made with
``cryptography`` for the TLS tests (nothing here is trusted by the system store)."""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def make_pki(folder: Path) -> Pki:
    """Write a CA and two certificates it signed into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "gpufleet test CA")])
    ca = _cert(ca_name, ca_name, ca_key.public_key(), ca_key, is_ca=True)
    _write(folder / "ca.pem", ca, None)
    paths = []
    for role in ("server", "client"):
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"gpufleet {role}")])
        cert = _cert(name, ca_name, key.public_key(), ca_key, is_ca=False)
        _write(folder / f"{role}.pem", cert, folder / f"{role}-key.pem", key)
        paths += [folder / f"{role}.pem", folder / f"{role}-key.pem"]
    return Pki(folder / "ca.pem", *paths)


def _cert(
    subject: x509.Name,
    issuer: x509.Name,
    public_key: ec.EllipticCurvePublicKey,
    signer: ec.EllipticCurvePrivateKey,
    *,
    is_ca: bool,
) -> x509.Certificate:
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=is_ca, path_length=None), critical=True)
    )
    if not is_ca:
        san = [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
        builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
    return builder.sign(signer, hashes.SHA256())


def _write(
    cert_path: Path,
    cert: x509.Certificate,
    key_path: Path | None,
    key: ec.EllipticCurvePrivateKey | None = None,
) -> None:
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    if key_path is not None and key is not None:
        key_path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
