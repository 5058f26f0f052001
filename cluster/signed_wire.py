"""What a signed summary or event batch may claim: its own shard, its own nodes.

A valid signature says which shard sent a message; it does not make everything in it
true. A shard's key signing a summary "from shard 2", or nodes rendezvous hashing gives
to another shard (or that do not exist), is dropped and counted in ``ShardKeys.dropped``.
A silent shard's nodes are taken from the shard standing in for it only while the
viewer sees that shard ``silent`` too (``ShardKeys.owns``).
"""

from __future__ import annotations

from collections.abc import Collection

import msgspec

from cluster.signing import ShardKeys
from cluster.wire import NODES_PER_MESSAGE, ShardEvents, ShardSummary

MAX_SHARDS = 256  # 12,500 nodes take 13 shards; a count far beyond is not a fleet
MAX_PARTS = 128  # NODES_PER_MESSAGE nodes each: 32,000 nodes per shard
# Four times the 12,500-node fleet the design is sized for: a viewer holds no more.
MAX_FLEET_NODES = 50_000


def within_bounds(summary: ShardSummary, others: int) -> bool:
    """Whether a summary is one a real shard could send and the viewer can hold: shard
    K of N within the limits, part below parts, at most NODES_PER_MESSAGE nodes, and
    with the ``others`` nodes already held (in other shards' and parts' summaries) no
    more than MAX_FLEET_NODES. A flood under made-up shard numbers or parts grows the
    viewer no further, signed or not."""
    return (
        1 <= summary.shard <= summary.count <= MAX_SHARDS
        and 0 <= summary.part < summary.parts <= MAX_PARTS
        and len(summary.nodes) <= NODES_PER_MESSAGE
        and others + len(summary.nodes) <= MAX_FLEET_NODES
    )


def owned_summary(
    keys: ShardKeys, signer: int, summary: ShardSummary, silent: Collection[int] = ()
) -> ShardSummary | None:
    """``summary`` with only the nodes ``signer`` owns or stands in for while the viewer
    sees their shard ``silent``; None when it claims another shard or fleet size."""
    if summary.shard != signer or summary.count != keys.count:
        keys.dropped["claims another shard"] += 1
        return None
    nodes = tuple(node for node in summary.nodes if keys.owns(signer, node.name, silent))
    if len(nodes) == len(summary.nodes):
        return summary
    return msgspec.structs.replace(summary, nodes=nodes)


def owned_events(
    keys: ShardKeys, signer: int, batch: ShardEvents, silent: Collection[int] = ()
) -> ShardEvents | None:
    """``batch`` with only what happened on nodes ``signer`` owns or stands in for
    (as :func:`owned_summary`); None when it claims another shard."""
    if batch.shard != signer:
        keys.dropped["claims another shard"] += 1
        return None

    def mine(node: str) -> bool:
        return keys.owns(signer, node, silent)

    return msgspec.structs.replace(
        batch,
        transitions=tuple(t for t in batch.transitions if mine(t.node)),
        events=tuple(e for e in batch.events if mine(e.node)),
        gpu_changes=tuple(g for g in batch.gpu_changes if mine(g.node)),
        probes=tuple(p for p in batch.probes if mine(p.node)),
    )
