"""Reading the configuration for a command: a missing file says how to write one."""

from __future__ import annotations

from pathlib import Path

from gpufleet.config import Config, ConfigError, MissingConfigError, load_config
from gpufleet.invocation import command_line


def read_config(path: Path, *, given: bool = True) -> Config:
    """:func:`gpufleet.config.load_config`, but a missing file's error says how to write one.

    Args:
        path: the configuration file.
        given: whether the user named ``path`` (``-c``) rather than it being the default.

    Raises:
        ConfigError: the configuration is missing or invalid (the message says where).
    """
    try:
        return load_config(path)
    except MissingConfigError as exc:
        raise ConfigError(missing_config_message(exc.path, given=given)) from None


def missing_config_message(path: Path, *, given: bool) -> str:
    """One line: no file at ``path``, the ``init`` that writes it, where the keys are."""
    # Spelled as the running executable: the commands work when pasted as printed,
    # and `help config` is the reference a pip-installed user has (no docs/ tree).
    init = command_line("init", *(("-o", path) if given else ()), "HOST", "...")
    reference = command_line("help", "config")
    other = "" if given else "pass -c FILE, or "
    return (
        f"{path}: no configuration file; {other}write one with `{init}` (every key: `{reference}`)"
    )
