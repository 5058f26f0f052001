"""Base class of every config section: unknown keys are errors, docstrings are docs."""

from pydantic import BaseModel, ConfigDict


class Section(BaseModel):
    """A config table. Field docstrings are the user documentation (docs/config.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
