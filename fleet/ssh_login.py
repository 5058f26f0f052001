"""The ``ssh`` command line that logs an operator into a node the way gpufleet reaches it.

Built from the node's resolved target (host, port, user, identity files, jump host,
known_hosts and host-key policy) and the fleet's SSH options, as an argument list for
``subprocess`` (never a shell string: nothing from the config reaches a shell).
"""

from __future__ import annotations

from collectors.ssh.options import SshOptions
from collectors.ssh.target import NodeTarget


def ssh_login_argv(target: NodeTarget, options: SshOptions, ssh: str = "ssh") -> list[str]:
    """``ssh`` with the options gpufleet uses for ``target``, ending ``-- HOST``."""
    argv = [ssh]
    if options.ssh_config is None:
        argv += ["-F", "/dev/null"]  # gpufleet reads no ssh config for this fleet
    elif options.ssh_config:
        argv += ["-F", options.ssh_config[0]]
    if target.port is not None:
        argv += ["-p", str(target.port)]
    if target.user:
        argv += ["-l", target.user]
    for identity in target.identity_files:
        argv += ["-i", identity]
    if target.jump_host:
        argv += ["-J", target.jump_host]
    if isinstance(target.known_hosts, str):
        argv += ["-o", f"UserKnownHostsFile={target.known_hosts}"]
    strict = "accept-new" if target.host_key_policy == "accept-new" else "yes"
    argv += ["-o", f"StrictHostKeyChecking={strict}", "--", target.host]
    return argv
