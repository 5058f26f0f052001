"""The little of HTTP/1.1 requests the metrics endpoint reads: GET and HEAD, no bodies."""

from __future__ import annotations


class Request:
    """One request's line and headers (no body: GET and HEAD only)."""

    __slots__ = ("close_after", "headers", "method", "path", "version")

    def __init__(self, method: str, path: str, version: str, headers: dict[str, str]) -> None:
        self.method, self.path, self.version, self.headers = method, path, version, headers
        self.close_after = False  # the answer's end is the connection's end (HTTP/1.0 stream)

    @property
    def keep_alive(self) -> bool:
        connection = self.headers.get("connection", "").lower()
        if self.version == "HTTP/1.0":
            return connection == "keep-alive"
        return connection != "close"

    @property
    def wants_gzip(self) -> bool:
        accepted = self.headers.get("accept-encoding", "")
        return any(part.split(";")[0].strip().lower() == "gzip" for part in accepted.split(","))


class BadRequest(Exception):
    """A request to refuse with ``status``."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def parse_request(head: bytes) -> Request:
    """The request in ``head`` (request line and headers, up to the blank line).

    Raises:
        BadRequest: not HTTP/1.x, not GET or HEAD, or carrying a body.
    """
    try:
        lines = head.decode("latin-1").split("\r\n")
        method, target, version = lines[0].split(" ")
    except ValueError:
        raise BadRequest(400) from None
    if not version.startswith("HTTP/1."):
        raise BadRequest(400)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    if method not in ("GET", "HEAD"):
        raise BadRequest(405)
    if headers.get("content-length", "0") != "0" or "transfer-encoding" in headers:
        raise BadRequest(400)  # GET and HEAD carry no body; reading one is not worth it
    return Request(method, target, version, headers)
