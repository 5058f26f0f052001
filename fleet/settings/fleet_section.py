"""[fleet] which nodes to watch and how to reach them."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, ValidationInfo, field_validator

from collectors.inventory import (
    DEFAULT_MAX_HOSTS,
    InventoryError,
    expand_hosts,
    validate_jump_hosts,
)
from fleet.settings.base import Section

# The most [fleet] max_hosts may allow: one controller process is sized for ~5,000
# nodes (docs/scale-out.md); beyond this a typo, not a fleet, is the likelier cause.
MAX_HOSTS_CEILING = 200_000


def _expanded(expressions: list[str], info: ValidationInfo) -> list[str]:
    """Check that ``expressions`` expand, within the max_hosts validated before them."""
    limit = info.data.get("max_hosts", DEFAULT_MAX_HOSTS)
    try:
        expand_hosts(expressions, limit)
    except InventoryError as exc:
        raise ValueError(str(exc)) from None
    return expressions


def _host_expression(expression: str, info: ValidationInfo) -> str:
    return _expanded([expression], info)[0]


# Each expression is checked on its own (errors name its position); the whole list
# is then checked against max_hosts together.
HostExpression = Annotated[str, AfterValidator(_host_expression)]


def _jump_host(spec: str) -> str:
    try:
        return validate_jump_hosts(spec)
    except InventoryError as exc:
        raise ValueError(str(exc)) from None


def _remote_dir(path: str) -> str:
    if path.startswith("~") and not (path == "~" or path.startswith("~/")):
        raise ValueError("must be absolute, relative to the home directory, or start with '~/'")
    if not path.strip():
        raise ValueError("must not be empty")
    return path


RemoteDir = Annotated[str, AfterValidator(_remote_dir)]
JumpHost = Annotated[str, AfterValidator(_jump_host)]


class HostOverride(Section):
    """[fleet.overrides."<host or hostlist>"] settings for some hosts only.

    Any key left out keeps the value from [fleet].
    """

    user: str | None = None
    """Login user for these hosts."""
    port: Annotated[int, Field(ge=1, le=65535)] | None = None
    """SSH port for these hosts."""
    identity_file: str | None = None
    """Private key file for these hosts."""
    jump_host: JumpHost | None = None
    """Bastion for these hosts ("user@host:port"), as ssh's ProxyJump."""
    python: str | None = None
    """Remote Python interpreter (3.8 or newer) for these hosts."""
    expected_gpus: Annotated[int, Field(ge=0, le=64)] | None = None
    """GPUs these nodes should have; fewer healthy ones make a node broken."""
    remote_cache_dir: RemoteDir | None = None
    """Where the agent is kept on these hosts."""


class FleetSection(Section):
    """[fleet] which nodes to watch and how to reach them."""

    max_hosts: Annotated[int, Field(ge=1, le=MAX_HOSTS_CEILING)] = DEFAULT_MAX_HOSTS
    """The most hosts `hosts` and `hostfile` may name together; counted before anything
    is expanded, so a typo like "gpu-[1-10000000]" fails at once instead of eating memory."""
    hosts: list[HostExpression] = Field(default_factory=list)
    """Node names and hostlist expressions, e.g. ["gpu-[001-128]", "10.0.0.7"].
    Names must be RFC 1123 hostnames (or ~/.ssh/config aliases that are) or IP literals."""
    hostfile: str | None = None
    """A file with one name or hostlist expression per line (# comments, blank lines
    allowed), relative to the config file; its hosts are added to `hosts`."""
    user: str | None = None
    """Login user; unset means ~/.ssh/config's User, else the local user (as ssh does)."""
    port: Annotated[int, Field(ge=1, le=65535)] | None = None
    """SSH port; unset means ~/.ssh/config's Port, else 22."""
    identity_file: str | None = None
    """Private key file; unset means ~/.ssh/config's IdentityFile, the ssh-agent and the
    default keys (~/.ssh/id_ed25519, ...)."""
    jump_host: JumpHost | None = None
    """Bastions ("user@host:port", "ssh://user@host:port" or "user@[IPv6]:port", several
    comma-separated, first hop first), reached with the same identity file, known_hosts
    and host_key_policy as the nodes; unset means ~/.ssh/config's ProxyJump, if any."""
    python: str = "python3"
    """Remote Python interpreter that runs the agent (3.8 or newer, no packages needed)."""
    expected_gpus: Annotated[int, Field(ge=0, le=64)] = 8
    """GPUs each node should have; a node with fewer healthy GPUs is broken."""
    interval: Annotated[float, Field(ge=0.1, le=60)] = 1.0
    """Seconds between samples."""
    slow_interval: Annotated[float, Field(ge=1, le=600)] = 10.0
    """Seconds between reads of slow counters (ECC, retired pages, row remap, NVLink)."""
    connect_timeout: Annotated[float, Field(gt=0, le=300)] = 10.0
    """Seconds allowed for TCP connect, key exchange and authentication."""
    keepalive_interval: Annotated[float, Field(gt=0, le=600)] = 5.0
    """Seconds between SSH keepalives; a dead link is noticed after
    keepalive_interval x (keepalive_count_max + 1): the check that finds count_max
    keepalives unanswered comes one interval after the last of them was sent."""
    keepalive_count_max: Annotated[int, Field(ge=1, le=100)] = 3
    """Unanswered keepalives before a connection counts as dead."""
    max_concurrent_connects: Annotated[int, Field(ge=1, le=1024)] = 64
    """SSH handshakes in flight at once (keep below the servers' MaxStartups)."""
    backoff_cap: Annotated[float, Field(ge=1, le=3600)] = 60.0
    """Longest wait in seconds between retries of a failing node (backoff doubles from 1 s)."""
    host_key_policy: Literal["strict", "accept-new"] = "strict"
    """strict: unknown or changed host keys are refused. accept-new: a host with no
    recorded key has its key recorded in known_hosts; a changed key is still refused."""
    known_hosts: str | None = None
    """known_hosts file; unset means what ssh reads: ~/.ssh/config's UserKnownHostsFile
    (tokens such as %h expanded), else ~/.ssh/known_hosts and ~/.ssh/known_hosts2, plus
    GlobalKnownHostsFile; accept-new records into the first UserKnownHostsFile."""
    remote_cache_dir: RemoteDir = "~/.cache/gpufleet"
    """Directory on each node where the agent zipapp is uploaded once per version."""
    overrides: dict[str, HostOverride] = Field(default_factory=dict)
    """Per-host settings, keyed by a host name or hostlist expression."""

    @field_validator("hosts")
    @classmethod
    def _hosts_expand(cls, value: list[str], info: ValidationInfo) -> list[str]:
        return _expanded(value, info)

    @field_validator("overrides")
    @classmethod
    def _override_keys_are_hostlists(
        cls, value: dict[str, HostOverride], info: ValidationInfo
    ) -> dict[str, HostOverride]:
        for key in value:
            try:
                _expanded([key], info)
            except ValueError as exc:
                raise ValueError(f"override key {key!r}: {exc}") from None
        return value
