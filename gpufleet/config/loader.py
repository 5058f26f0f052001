"""Reading the TOML file into ``Config`` with errors that name file, key and expectation."""

from __future__ import annotations

import difflib
import tomllib
from pathlib import Path
from typing import Any, get_args

import platformdirs
from pydantic import BaseModel, ValidationError

from collectors.errors import FleetError
from collectors.limits import (
    MAX_CONFIG_BYTES,
    InputLimitError,
    loads_bounded_toml,
    read_bounded_text,
)
from collectors.sanitize import clean_text
from gpufleet.config.model import Config


class ConfigError(FleetError, ValueError):
    """The configuration is unusable; the message names the file, the key and what was expected."""


class MissingConfigError(ConfigError):
    """No file where the configuration was looked for.

    The command line turns this into one line that also says how to write one
    (``gpufleet init``) and where every key is documented (``gpufleet help config``),
    spelled as the running executable; this room cannot know that executable.

    Attributes:
        path: where the configuration was looked for.
    """

    def __init__(self, path: Path) -> None:
        super().__init__(f"{path}: no configuration file")
        self.path = path


def default_config_path() -> Path:
    """``$XDG_CONFIG_HOME/gpufleet/config.toml`` (or the platform's equivalent)."""
    return Path(platformdirs.user_config_dir("gpufleet")) / "config.toml"


def load_config(path: Path) -> Config:
    """Read and validate the configuration file at ``path``.

    Raises:
        MissingConfigError: there is no file at ``path``.
        ConfigError: the file is unreadable, over 1 MiB, not UTF-8, not TOML, nested
            too deeply, or does not match the schema.
    """
    try:
        text = read_bounded_text(path, MAX_CONFIG_BYTES)
    except FileNotFoundError:
        raise MissingConfigError(path) from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the configuration: {exc.strerror}") from None
    except InputLimitError as exc:
        raise ConfigError(f"{path}: the configuration is {exc}") from None
    try:
        data = loads_bounded_toml(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except InputLimitError as exc:
        raise ConfigError(f"{path}: the configuration is {exc}") from None
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
            near = _near_key(err["loc"])
            hint = f" (did you mean '{near}'?)" if near else ""
            lines.append(f"{source}: unknown key '{key}'{hint}")
        else:
            got = err.get("input")
            shown = "" if isinstance(got, dict) else f" (got {_bounded(repr(got))})"
            lines.append(f"{source}: key '{key}': {err['msg']}{shown}")
    # One line per problem, whatever a key or value holds (a key may contain a newline).
    return "\n".join(clean_text(line, 1000) for line in lines)


def _near_key(loc: tuple[int | str, ...]) -> str | None:
    """The known key closest to a misspelt one at the same place (``host_key_polcy``)."""
    if not loc:
        return None
    models: list[type[BaseModel]] = [Config]
    for part in loc[:-1]:
        inner: list[type[BaseModel]] = []
        for model in models:
            field = model.model_fields.get(str(part))
            # Not a field: a table's own key or a list index; the model stays the same.
            inner.extend(_models_in(field.annotation) if field is not None else [model])
        models = inner
    known = {name for model in models for name in model.model_fields}
    close = difflib.get_close_matches(str(loc[-1]), sorted(known), n=1, cutoff=0.75)
    return close[0] if close else None


def _models_in(annotation: object) -> list[type[BaseModel]]:
    """The config models an annotation holds (``X | None``, ``dict[str, X]``, ``list[X]``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in get_args(annotation) for m in _models_in(arg)]


def _bounded(text: str, limit: int = 120) -> str:
    # A 20,000-name host list or a megabyte string is not worth echoing whole.
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"
