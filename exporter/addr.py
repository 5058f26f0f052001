"""Listen addresses (``host:port``) for the metrics endpoint."""

from __future__ import annotations

import ipaddress

DEFAULT_METRICS_ADDR = "127.0.0.1:9400"
"""Loopback only: exposing telemetry to the network is a decision the user makes."""


def parse_addr(addr: str) -> tuple[str, int]:
    """Split ``host:port`` (``[v6]:port`` for IPv6) into host and port.

    Raises:
        ValueError: no host, no port, or a port outside 0-65535 (0 picks a free one).
    """
    host, sep, port_text = addr.rpartition(":")
    if not sep or not host:
        raise ValueError(
            f"{addr!r}: expected host:port, e.g. 127.0.0.1:9400 (0.0.0.0:9400 listens on every"
            " interface)"
        )
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"{addr!r}: the port {port_text!r} is not a number") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"{addr!r}: the port must be between 0 and 65535")
    return host, port


def is_loopback(host: str) -> bool:
    """Whether ``host`` (as ``parse_addr`` returns it) reaches this machine only.

    A name other than ``localhost`` counts as not loopback: what it resolves to can
    change, and the warning it earns is cheap.
    """
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False
