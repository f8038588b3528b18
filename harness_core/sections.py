"""The core's own config sections: [plugins] and [session] (pydantic models, loaded on demand)."""

from __future__ import annotations

import pydantic

from .config import DenyList

__all__ = ["PluginsSection", "SessionSection"]


class PluginsSection(pydantic.BaseModel):
    """The [plugins] section: which plugins must load, which never load, and their order."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    require: list[str] = pydantic.Field(
        default_factory=list, description="entry-point names that must load, or the harness refuses to start"
    )
    block: DenyList = pydantic.Field(default_factory=list, description="entry-point names that are never imported")
    order: list[str] = pydantic.Field(
        default_factory=list,
        description="pin the registration order: these first, in this order, the rest sorted by name",
    )
    modules: list[str] = pydantic.Field(
        default_factory=list,
        description='plugins loaded by import path, "package.module" or "package.module:attribute"',
    )


class SessionSection(pydantic.BaseModel):
    """The [session] section: where the session log goes."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    log: bool = pydantic.Field(default=True, description="append session events to a JSONL file")
    dir: str = pydantic.Field(default=".harness/sessions", description="session log folder, relative to the project")
