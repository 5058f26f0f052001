"""One plain HTTP request to a test endpoint's /metrics, answered whole."""

from __future__ import annotations

import http.client

Answer = tuple[int, dict[str, str], bytes]


def get_metrics(port: int, method: str = "GET", **headers: str) -> Answer:
    """Status, headers (lower-case names) and body; ``accept_encoding=`` → ``Accept-Encoding``."""
    client = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        client.request(
            method, "/metrics", headers={k.replace("_", "-"): v for k, v in headers.items()}
        )
        response = client.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        client.close()
