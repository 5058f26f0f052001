"""From the [fleet] config section to the SSH transport's node targets and options."""

from __future__ import annotations

import os
from pathlib import Path

from collectors.inventory import InventoryError, expand_hosts, read_hostfile
from collectors.ssh import KnownHostsDefault, NodeTarget, SshOptions
from fleet.settings.contract_section import ContractSection, renter_agent_args
from fleet.settings.fleet_section import FleetSection, HostOverride
from fleet.settings.jobs_section import JobsSection
from gpufleet.config.loader import ConfigError


def fleet_hosts(
    section: FleetSection, base_dir: Path | None = None, source: str = "<config>"
) -> list[str]:
    """Every host of the section: ``hosts`` expanded, then the hostfile's.

    Raises:
        ConfigError: the hostfile cannot be read or has a bad line.
    """
    names = expand_hosts(section.hosts, section.max_hosts)
    if section.hostfile is not None:
        path = Path(os.path.expanduser(section.hostfile))
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        try:
            listed = read_hostfile(path, section.max_hosts)
            names = expand_hosts([*names, *listed], section.max_hosts)
        except InventoryError as exc:
            raise ConfigError(f"{source}: key 'fleet.hostfile': {exc}") from None
    return names


def jobs_agent_args(jobs: JobsSection | None) -> tuple[str, ...]:
    """The agent's job-attribution options for ``[jobs]`` (none: the agent's defaults)."""
    if jobs is None:
        return ()
    if not jobs.enabled:
        return ("--no-jobs",)
    return ("--jobs-refresh", repr(float(jobs.refresh_s)))


def targets_from_config(
    section: FleetSection,
    base_dir: Path | None = None,
    source: str = "<config>",
    *,
    contract: ContractSection | None = None,
    jobs: JobsSection | None = None,
) -> list[NodeTarget]:
    """One :class:`NodeTarget` per host, with [fleet] defaults and matching overrides.

    Overrides apply in file order, so a later, more specific table wins.

    Args:
        section: the validated [fleet] section.
        base_dir: directory of the config file, for a relative ``hostfile``.
        source: the config file's name, for error messages.
        contract: [contract], whose renter users and processes the agent is told, so
            it can report the provider's own processes as foreign.
        jobs: [jobs], whether and how often the agent reports scheduler jobs.

    Raises:
        ConfigError: the hostfile is unusable or an override matches no host.
    """
    names = fleet_hosts(section, base_dir, source)
    # Each override's hosts expanded once: matching per name would re-expand per host.
    overrides = [
        (set(expand_hosts([key], section.max_hosts)), key, o)
        for key, o in section.overrides.items()
    ]
    for hosts, key, _ in overrides:
        if hosts.isdisjoint(names):
            raise ConfigError(
                f"{source}: key 'fleet.overrides.\"{key}\"': matches no host of the fleet"
            )
    agent_args = renter_agent_args(contract) + jobs_agent_args(jobs)
    return [
        _target(section, name, [o for h, _, o in overrides if name in h], agent_args)
        for name in names
    ]


def _target(
    section: FleetSection,
    name: str,
    overrides: list[HostOverride],
    agent_args: tuple[str, ...] = (),
) -> NodeTarget:
    values = section.model_dump(
        include={"user", "port", "identity_file", "jump_host", "python", "expected_gpus"}
        | {"remote_cache_dir"}
    )
    for override in overrides:
        values.update(override.model_dump(exclude_none=True))
    known = section.known_hosts
    identity = values["identity_file"]
    return NodeTarget(
        name=name,
        host=name,
        port=values["port"],
        user=values["user"],
        identity_files=() if identity is None else (os.path.expanduser(identity),),
        jump_host=values["jump_host"],
        python=values["python"],
        interval=section.interval,
        slow_interval=section.slow_interval,
        expected_gpus=values["expected_gpus"],
        known_hosts=KnownHostsDefault.SSH_CONFIG if known is None else os.path.expanduser(known),
        host_key_policy=section.host_key_policy,
        remote_cache_dir=values["remote_cache_dir"],
        agent_args=agent_args,
    )


def options_from_config(section: FleetSection) -> SshOptions:
    """The fleet-wide transport settings of the [fleet] section."""
    return SshOptions(
        connect_timeout=section.connect_timeout,
        keepalive_interval=section.keepalive_interval,
        keepalive_count_max=section.keepalive_count_max,
        max_concurrent_connects=section.max_concurrent_connects,
        backoff_cap=section.backoff_cap,
    )
