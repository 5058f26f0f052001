"""Reading the TOML file into ``Config`` with errors that name file, key and expectation."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import platformdirs
from pydantic import ValidationError

from fleet.config.model import Config


class ConfigError(ValueError):
    """The configuration is unusable; the message names the file, the key and what was expected."""


def default_config_path() -> Path:
    """``$XDG_CONFIG_HOME/gpufleet/config.toml`` (or the platform's equivalent)."""
    return Path(platformdirs.user_config_dir("gpufleet")) / "config.toml"


def load_config(path: Path) -> Config:
    """Read and validate the configuration file at ``path``.

    Raises:
        ConfigError: the file is missing, not TOML, or does not match the schema.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the configuration: {exc.strerror}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    return parse_config(data, source=str(path))


def parse_config(data: dict[str, Any], source: str = "<config>") -> Config:
    """Validate already-parsed TOML data; ``source`` names it in errors."""
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, source)) from None


def _describe(exc: ValidationError, source: str) -> str:
    lines = []
    for err in exc.errors():
        key = ".".join(str(part) for part in err["loc"]) or "(top level)"
        if err["type"] == "extra_forbidden":
            lines.append(f"{source}: unknown key '{key}'")
        else:
            got = err.get("input")
            shown = "" if isinstance(got, dict) else f" (got {got!r})"
            lines.append(f"{source}: key '{key}': {err['msg']}{shown}")
    return "\n".join(lines)
