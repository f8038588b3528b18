"""``harness config init``: a commented starter harness.toml for the installed plugins."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pydantic
import tomli_w

if TYPE_CHECKING:
    from .host import Harness

__all__ = ["starter_config"]


def _value(value: Any) -> str:
    """One TOML value on one line (arrays and tables inline), so it can be commented out whole."""
    if isinstance(value, list):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    if isinstance(value, dict):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{_key(key)} = {_value(item)}" for key, item in value.items()) + " }"
    return tomli_w.dumps({"v": value}).strip()[len("v = ") :]


def _key(key: str) -> str:
    return key if key.replace("_", "").replace("-", "").isalnum() else tomli_w.dumps({key: 0}).split(" = ")[0]


def starter_config(harness: Harness) -> str:
    """Every section of the current composition with its keys commented out at their defaults."""
    config = harness.config
    lines = [
        "# harness.toml: the project's Harness configuration.",
        "# Layers, later winning: presets -> the user file -> this file -> `-c key=value`.",
        "# Deny-type lists (such as [plugins] block) only grow: no layer can remove an entry.",
        "# `harness config show --origin` tells where each value comes from.",
        "",
    ]
    presets = sorted(config.available_presets)
    if presets:
        lines.append(f"# Presets available: {', '.join(presets)} (`harness presets` shows what each sets).")
        chosen = config.presets[0] if config.presets else presets[0]
        lines.append(f'# preset = "{chosen}"')
        lines.append("")
    for name, model in config.sections.items():
        lines.append(f"[{name}]")
        doc = (type(model).__doc__ or "").strip().splitlines()
        if doc:
            lines.append(f"# {doc[0]}")
        for field_name, info in type(model).model_fields.items():
            if info.description:
                lines.append(f"# {info.description}")
            default = getattr(model, field_name)
            if isinstance(default, pydantic.BaseModel):
                default = default.model_dump(mode="json")
            try:
                rendered = _value(default)
            except (TypeError, ValueError):
                continue  # not representable in TOML (None): leave the key out
            lines.append(f"# {info.alias or field_name} = {rendered}")
        lines.append("")
    return "\n".join(lines)
