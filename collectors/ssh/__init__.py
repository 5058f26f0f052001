"""The SSH transport: one connection and one streaming agent channel per node."""

from collectors.ssh.check import NodeCheck, check_node
from collectors.ssh.connect import HostKeyMismatchError, connect_node, jump_hops
from collectors.ssh.fleet import SshFleet
from collectors.ssh.node import agent_command
from collectors.ssh.options import PREFERRED_CIPHERS, SshOptions
from collectors.ssh.target import HostKeyPolicy, KnownHosts, KnownHostsDefault, NodeTarget
from collectors.ssh.upload import agent_missing, ensure_uploaded, remote_file

__all__ = [
    "PREFERRED_CIPHERS",
    "HostKeyMismatchError",
    "HostKeyPolicy",
    "KnownHosts",
    "KnownHostsDefault",
    "NodeCheck",
    "NodeTarget",
    "SshFleet",
    "SshOptions",
    "agent_command",
    "agent_missing",
    "check_node",
    "connect_node",
    "ensure_uploaded",
    "jump_hops",
    "remote_file",
]
