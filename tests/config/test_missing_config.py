"""A missing configuration file is its own error, so the command line can say what to do."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpufleet.config import ConfigError, MissingConfigError, load_config


def test_a_missing_file_is_a_missing_config_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "absent.toml"
    with pytest.raises(MissingConfigError) as caught:
        load_config(path)
    assert caught.value.path == path
    assert str(caught.value) == f"{path}: no configuration file"
    assert isinstance(caught.value, ConfigError)  # callers that catch ConfigError still do


def test_an_unreadable_path_is_not_called_missing(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)  # a directory
    assert not isinstance(caught.value, MissingConfigError)
    assert "cannot read the configuration" in str(caught.value)
