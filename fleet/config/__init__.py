"""The one typed configuration: loaded once, passed down, never a module global."""

from fleet.config.loader import ConfigError, default_config_path, load_config, parse_config
from fleet.config.model import Config

__all__ = ["Config", "ConfigError", "default_config_path", "load_config", "parse_config"]
