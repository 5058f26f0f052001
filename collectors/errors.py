"""The root of gpufleet's failures that are told in one line: bad input and refused requests.

Every error that bad input can cause (a config, a hostfile, an inventory expression,
a node's line) derives from :class:`FleetError`, so ``gpufleet`` maps all of them to
one line on stderr in one place and never prints a traceback for them.

The fleet facade (``fleet.facade``) raises the subclasses below for a request it
cannot serve, so the dashboard shows their message as is. Each also derives from the
builtin that callers caught before (``KeyError``, ``PermissionError``,
``ConnectionError``, ``RuntimeError``), so code that catches those keeps working.
"""

from __future__ import annotations


class FleetError(Exception):
    """Bad input: the message is one line naming the file, the key and the expectation."""


class UnknownNode(FleetError, KeyError):
    """A request named a node that is not part of the fleet."""

    def __str__(self) -> str:
        # KeyError's own str() quotes its argument; the operator reads a sentence.
        return str(self.args[0]) if self.args else "unknown node"


class ReadOnlyFleet(FleetError, PermissionError):
    """The fleet runs read-only and the request would change a node (a probe)."""


class NotAvailable(FleetError, RuntimeError):
    """This fleet cannot serve the request at all (no history recorded, a preview's
    nodes to probe, a capability a remote fleet lacks). A RuntimeError too: that is what
    such a request raised before, and what the shards' publisher still catches."""


class FleetUnreachable(FleetError, ConnectionError):
    """The fleet's source (the NATS server of the shards) is not connected."""


class RequestFailed(FleetError, RuntimeError):
    """The fleet took the request and it failed on the way (a shard's own error, an
    export a shard could not write); the message is the failure's own."""
