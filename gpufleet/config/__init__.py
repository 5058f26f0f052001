"""The one typed configuration: loaded once, passed down, never a module global."""

from gpufleet.config.loader import (
    ConfigError,
    MissingConfigError,
    default_config_path,
    load_config,
    parse_config,
)
from gpufleet.config.model import Config

__all__ = [
    "Config",
    "ConfigError",
    "MissingConfigError",
    "default_config_path",
    "load_config",
    "parse_config",
]
