"""The SSH transport: one connection and one streaming agent channel per node."""

from collectors.ssh.connect import HostKeyMismatchError, connect_node
from collectors.ssh.fleet import SshFleet
from collectors.ssh.node import agent_command
from collectors.ssh.options import PREFERRED_CIPHERS, SshOptions
from collectors.ssh.target import HostKeyPolicy, KnownHosts, KnownHostsDefault, NodeTarget
from collectors.ssh.upload import ensure_uploaded

__all__ = [
    "PREFERRED_CIPHERS",
    "HostKeyMismatchError",
    "HostKeyPolicy",
    "KnownHosts",
    "KnownHostsDefault",
    "NodeTarget",
    "SshFleet",
    "SshOptions",
    "agent_command",
    "connect_node",
    "ensure_uploaded",
]
