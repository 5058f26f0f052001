"""The nats-server ``authorization`` block gpufleet needs: who may publish and ask what.

Three kinds of user. A **shard** publishes only its own summaries and events and
answers requests on its own subjects; it publishes its heartbeat and follows every
shard's (takeover). A **viewer** follows every shard and asks for detail, series, a
node's processes, ledgers and exports, but publishes no summary or event and cannot ask
for a probe. An **operator** is a viewer that may also request and cancel probes.
docs/scale-out.md shows this block as rendered for three shards; the demo and the
tests run it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from cluster.takeover import HEARTBEAT_WILDCARD, heartbeat_subject
from cluster.wire import (
    EVENTS_WILDCARD,
    STREAM,
    SUBJECT_ROOT,
    SUMMARY_WILDCARD,
    events_subject,
    request_subject,
    summary_subject,
)

# Requests any viewer may make; a probe changes a node (GEMM and HBM load) and is not one.
# ``processes`` reads (NVML and /proc, as the node screen of a local read-only dashboard
# does) and the shard shares and caps those reads, so a viewer cannot load a node with it.
VIEW_REQUESTS = ("detail", "series", "processes", "ledger", "chunk", "export")
OPERATOR_REQUESTS = ("probe", "cancel")
# JetStream's API as an ordered consumer of the event log uses it (nats-py 2.x, server
# 2.9): find the stream, make and drop its own consumer, answer flow control.
_VIEWER_JS = (
    "$JS.API.INFO",
    "$JS.API.STREAM.NAMES",
    f"$JS.API.STREAM.INFO.{STREAM}",
    f"$JS.API.CONSUMER.CREATE.{STREAM}",
    f"$JS.API.CONSUMER.CREATE.{STREAM}.>",
    f"$JS.API.CONSUMER.DELETE.{STREAM}.>",
    f"$JS.API.CONSUMER.INFO.{STREAM}.>",
    "$JS.FC.>",
)
_SHARD_JS = (
    "$JS.API.INFO",
    f"$JS.API.STREAM.CREATE.{STREAM}",
    f"$JS.API.STREAM.UPDATE.{STREAM}",
    f"$JS.API.STREAM.INFO.{STREAM}",
)


@dataclass(frozen=True)
class NatsUser:
    """One user of the ``users`` list: a name, the password as the server stores it
    (a bcrypt hash, so the server's config holds no password), and what it may do."""

    name: str
    password_hash: str
    publish: tuple[str, ...]
    subscribe: tuple[str, ...]


def shard_user(name: str, password_hash: str, shard: int) -> NatsUser:
    """Shard ``shard``: its own summaries, events and heartbeats out, its own requests and
    every shard's heartbeats in (takeover), replies."""
    own = request_subject(shard, "*")
    return NatsUser(
        name,
        password_hash,
        publish=(
            summary_subject(shard),
            events_subject(shard),
            heartbeat_subject(shard),
            *_SHARD_JS,
            "_INBOX.>",
        ),
        subscribe=(own, HEARTBEAT_WILDCARD, "_INBOX.>"),
    )


def viewer_user(name: str, password_hash: str, *, operator: bool = False) -> NatsUser:
    """A dashboard; ``operator``: it may also request and cancel probes."""
    asks = VIEW_REQUESTS + (OPERATOR_REQUESTS if operator else ())
    return NatsUser(
        name,
        password_hash,
        publish=(*(f"{SUBJECT_ROOT}.shard.*.{what}" for what in asks), *_VIEWER_JS),
        subscribe=(SUMMARY_WILDCARD, EVENTS_WILDCARD, "_INBOX.>"),
    )


def authorization_block(users: Sequence[NatsUser]) -> str:
    """nats-server configuration text: an ``authorization`` block with these users, each
    allowed exactly its subjects (everything else denied)."""
    lines = ["authorization {", "  users = ["]
    for user in users:
        lines += [
            "    {",
            f"      user: {json.dumps(user.name)}",
            f"      password: {json.dumps(user.password_hash)}",
            "      permissions: {",
            f"        publish: {{ allow: {_subjects(user.publish)} }}",
            f"        subscribe: {{ allow: {_subjects(user.subscribe)} }}",
            "        allow_responses: true",
            "      }",
            "    }",
        ]
    lines += ["  ]", "}"]
    return "\n".join(lines) + "\n"


def tls_block(cert_file: str, key_file: str, ca_file: str | None = None) -> str:
    """nats-server ``tls`` block: the server's certificate; with ``ca_file``, clients must
    present a certificate that CA signed."""
    lines = [
        "tls {",
        f"  cert_file: {json.dumps(cert_file)}",
        f"  key_file: {json.dumps(key_file)}",
    ]
    if ca_file is not None:
        lines += [f"  ca_file: {json.dumps(ca_file)}", "  verify: true"]
    lines += ["  timeout: 2", "}"]
    return "\n".join(lines) + "\n"


def _subjects(subjects: Sequence[str]) -> str:
    return "[" + ", ".join(json.dumps(s) for s in subjects) + "]"


def hash_password(password: str) -> str:
    """The bcrypt hash nats-server accepts in place of a password (``$2a$``/``$2b$``)."""
    import bcrypt  # only for writing a server's configuration

    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=11)).decode()
