"""What a signed summary or event batch may claim: its own shard, its own nodes.

A valid signature says which shard sent a message; it does not make everything in it
true. A shard's key signing a summary "from shard 2", or nodes rendezvous hashing gives
to another shard (or that do not exist), is dropped and counted in ``ShardKeys.dropped``.
"""

from __future__ import annotations

import msgspec

from cluster.signing import ShardKeys
from cluster.wire import ShardEvents, ShardSummary


def owned_summary(keys: ShardKeys, signer: int, summary: ShardSummary) -> ShardSummary | None:
    """``summary`` with only the nodes ``signer`` owns; None when it claims another shard
    or another fleet size."""
    if summary.shard != signer or summary.count != keys.count:
        keys.dropped["claims another shard"] += 1
        return None
    nodes = tuple(node for node in summary.nodes if keys.owns(signer, node.name))
    if len(nodes) == len(summary.nodes):
        return summary
    return msgspec.structs.replace(summary, nodes=nodes)


def owned_events(keys: ShardKeys, signer: int, batch: ShardEvents) -> ShardEvents | None:
    """``batch`` with only what happened on nodes ``signer`` owns; None when it claims
    another shard."""
    if batch.shard != signer:
        keys.dropped["claims another shard"] += 1
        return None
    return msgspec.structs.replace(
        batch,
        transitions=tuple(t for t in batch.transitions if keys.owns(signer, t.node)),
        events=tuple(e for e in batch.events if keys.owns(signer, e.node)),
        gpu_changes=tuple(g for g in batch.gpu_changes if keys.owns(signer, g.node)),
        probes=tuple(p for p in batch.probes if keys.owns(signer, p.node)),
    )
