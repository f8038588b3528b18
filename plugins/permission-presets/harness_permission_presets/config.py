"""The [permission] section: no keys yet; it exists so a misplaced key gets a clear error."""

from __future__ import annotations

from typing import Any

import pydantic

__all__ = ["PermissionConfig"]


class PermissionConfig(pydantic.BaseModel):
    """The [permission] section: select presets with the top-level ``preset`` key, not here."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    @pydantic.model_validator(mode="before")
    @classmethod
    def _has_no_keys(cls, data: Any) -> Any:
        # reference/plugins.md §9 (b) has a defaultPreset setting and a presets table here; in
        # Harness the core's `preset` key is the one selector and [presets.NAME] the one table,
        # so a second place for either would only disagree with them.
        if isinstance(data, dict) and data:
            key = next(iter(data))
            raise ValueError(
                f'"{key}" is not a key of [permission], which has none: select presets with the top-level '
                'preset = "NAME" and define more as [presets.NAME] tables'
            )
        return data
