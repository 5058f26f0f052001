"""``nats_nkey_seed_file`` against a real nats-server that knows the user only by its
public NKey: the seed signs the server's nonce, and a wrong seed is refused."""

from __future__ import annotations

import os
from pathlib import Path

import nkeys  # type: ignore[import-untyped]  # nats-py[nkeys] ships no type information
import pytest

from cluster.auth import NatsAuth
from cluster.bus import BusError, connect
from cluster.natsd import start_nats_server


def user_seed(folder: Path, name: str) -> tuple[Path, str]:
    """A fresh user NKey: its seed file (``SU...``, owner-only) and its public key."""
    seed = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER)
    path = folder / f"{name}.nk"
    path.write_bytes(seed + b"\n")
    path.chmod(0o600)
    return path, nkeys.from_seed(seed).public_key.decode()


async def test_a_shard_logs_in_with_its_nkey_seed_and_a_stranger_is_refused(
    tmp_path: Path,
) -> None:
    known, public = user_seed(tmp_path, "shard-1")
    stranger, _ = user_seed(tmp_path, "stranger")
    config = f'authorization {{\n  users = [\n    {{ nkey: "{public}" }}\n  ]\n}}\n'
    server = await start_nats_server(tmp_path / "nats", config=config)
    try:
        nc = await connect(server.url, "shard", NatsAuth(nkey_seed_file=known))
        await nc.publish("gpufleet.summary.1", b"x")
        await nc.flush()
        await nc.close()
        with pytest.raises(BusError, match="uthorization") as caught:
            await connect(server.url, "stranger", NatsAuth(nkey_seed_file=stranger))
    finally:
        await server.stop()
    assert stranger.read_text().strip() not in str(caught.value)  # the seed is a secret
