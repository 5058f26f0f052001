"""TLS and basic auth from a web.yml, checked with real Prometheus and an HTTPS client."""

from __future__ import annotations

import asyncio
import base64
import datetime
import ipaddress
import logging
import ssl
import urllib.error
import urllib.request
from pathlib import Path

import bcrypt
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from bench.lib.metrics_fleets import troubled_fleet
from exporter.addr import is_loopback
from exporter.endpoint import start_metrics_endpoint
from exporter.server import MetricsServer
from exporter.web_config import WebConfigError, load_web_config
from tests.metrics.prom import running_prometheus
from tests.metrics.test_endpoint import PublishingFleet

USER, PASSWORD = "prometheus", "s3cret pass"


def _write_cert(directory: Path) -> Path:
    """A self-signed certificate for 127.0.0.1 (server.crt, server.key); returns the cert."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "gpufleet test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    (directory / "server.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (directory / "server.key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return directory / "server.crt"


def _web_yml(directory: Path) -> Path:
    _write_cert(directory)
    hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()
    path = directory / "web.yml"
    path.write_text(
        "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
        f"basic_auth_users:\n  {USER}: '{hashed}'\n"
    )
    return path


def _https_get(url: str, cafile: Path, user: str | None, password: str) -> int:
    request = urllib.request.Request(url)
    if user is not None:
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    context = ssl.create_default_context(cafile=str(cafile))
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as response:
            return int(response.status)
    except urllib.error.HTTPError as err:
        assert err.headers["WWW-Authenticate"] == 'Basic realm="gpufleet"'
        return int(err.code)


async def test_https_client_needs_the_password(tmp_path: Path) -> None:
    web = load_web_config(_web_yml(tmp_path))
    fleet = PublishingFleet()
    fleet.publish(troubled_fleet())
    server = await start_metrics_endpoint("127.0.0.1:0", fleet, web=web)
    cafile = tmp_path / "server.crt"
    try:
        assert server.url.startswith("https://127.0.0.1:")
        url = f"{server.url}/metrics"
        assert await asyncio.to_thread(_https_get, url, cafile, USER, PASSWORD) == 200
        assert await asyncio.to_thread(_https_get, url, cafile, None, "") == 401
        assert await asyncio.to_thread(_https_get, url, cafile, USER, "wrong") == 401
        assert await asyncio.to_thread(_https_get, url, cafile, "root", PASSWORD) == 401
        sd = f"{server.url}/sd"  # every path is guarded, not only /metrics
        assert await asyncio.to_thread(_https_get, sd, cafile, None, "") == 401
        plain = f"http://127.0.0.1:{server.bound_port}/metrics"
        with pytest.raises((urllib.error.URLError, ConnectionError)):
            await asyncio.to_thread(urllib.request.urlopen, plain, timeout=10)
    finally:
        await server.stop()


async def test_prometheus_scrapes_over_tls_with_basic_auth(tmp_path: Path) -> None:
    web = load_web_config(_web_yml(tmp_path))
    fleet = PublishingFleet()
    fleet.publish(troubled_fleet())
    server = await start_metrics_endpoint("127.0.0.1:0", fleet, web=web)
    config = (
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
        "scrape_configs:\n  - job_name: gpufleet\n    scheme: https\n"
        f"    tls_config:\n      ca_file: {tmp_path / 'server.crt'}\n"
        f"    basic_auth:\n      username: {USER}\n      password: '{PASSWORD}'\n"
        f"    static_configs:\n      - targets: ['127.0.0.1:{server.bound_port}']\n"
        "  - job_name: no_password\n    scheme: https\n"
        f"    tls_config:\n      ca_file: {tmp_path / 'server.crt'}\n"
        f"    static_configs:\n      - targets: ['127.0.0.1:{server.bound_port}']\n"
    )
    try:
        async with running_prometheus([], tmp_path, config_text=config) as prom:
            await prom.wait_for('up{job="gpufleet"} == 1', bool)
            broken = await prom.wait_for("gpufleet_node_broken == 1", bool)
            assert sorted(r["metric"]["node"] for r in broken) == ["n2", "n3"]
            refused = await prom.wait_for('up{job="no_password"}', bool)
            assert refused[0]["value"][1] == "0"
    finally:
        await server.stop()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("http_server_config:\n  http2: false\n", "web.yml: http_server_config: not supported"),
        ("basic_auth_users:\n  bob: plain\n", "basic_auth_users.bob: expected a bcrypt hash"),
        ("basic_auth_users: [bob]\n", "basic_auth_users: expected user: bcrypt-hash pairs"),
        ("tls_server_config:\n  cert_file: a.crt\n", "tls_server_config.key_file: required"),
        (
            "tls_server_config:\n  cert_file: none.crt\n  key_file: none.key\n",
            "tls_server_config.cert_file: cannot load certificate and key",
        ),
        (
            "tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS10\n",
            "tls_server_config.min_version: expected TLS12 or TLS13",
        ),
        ("tls_server_config: [\n", "web.yml: not valid YAML"),
        ("- a\n", "web.yml: expected a mapping at the top level"),
    ],
)
def test_bad_web_config_is_one_line_naming_file_and_key(
    tmp_path: Path, text: str, expected: str
) -> None:
    path = tmp_path / "web.yml"
    path.write_text(text)
    with pytest.raises(WebConfigError) as caught:
        load_web_config(path)
    message = str(caught.value)
    assert expected in message and str(path) in message and "\n" not in message


def test_client_certificates_need_a_ca(tmp_path: Path) -> None:
    _write_cert(tmp_path)
    path = tmp_path / "web.yml"
    path.write_text(
        "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
        "  client_auth_type: RequireAndVerifyClientCert\n"
    )
    with pytest.raises(WebConfigError, match="client_ca_file: required"):
        load_web_config(path)
    path.write_text(path.read_text() + "  client_ca_file: server.crt\n")
    assert load_web_config(path).tls is not None


@pytest.mark.parametrize(("addr", "warned"), [("0.0.0.0:0", True), ("127.0.0.1:0", False)])
async def test_listening_beyond_loopback_warns(
    caplog: pytest.LogCaptureFixture, addr: str, warned: bool
) -> None:
    server = MetricsServer(addr, stream=lambda: iter(()))
    with caplog.at_level(logging.WARNING, logger="exporter.server"):
        await server.start()
    await server.stop()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert bool(warnings) == warned
    if warned:
        assert "beyond loopback" in warnings[0] and "without authentication" in warnings[0]


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.3.2.1", True),
        ("::1", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("10.1.2.3", False),
        ("gpu-controller", False),
        ("", False),
    ],
)
def test_loopback_hosts(host: str, loopback: bool) -> None:
    assert is_loopback(host) == loopback
