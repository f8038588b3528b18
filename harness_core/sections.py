"""The core's own config sections: [plugins], [session] and [code_mode] (pydantic models, loaded on demand)."""

from __future__ import annotations

from typing import Literal

import pydantic

from .config import DenyList

__all__ = ["CodeModeSection", "PluginsSection", "SessionSection"]


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


class CodeModeSection(pydantic.BaseModel):
    """The [code_mode] section: how tools are presented to each agent, and a program's sub-call lane.

    ``native`` sends every tool; ``code`` sends only ``run_code`` (direct calls to the other tools
    fail, they are called from inside programs); ``both`` sends the tools and ``run_code``.
    """

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    mode: Literal["native", "code", "both"] = pydantic.Field(
        default="native", description='the deployment default presentation mode: "native", "code" or "both"'
    )
    agents: dict[str, Literal["native", "code", "both"]] = pydantic.Field(
        default_factory=dict, description="per-agent presentation modes that override mode"
    )
    max_parallel_sub_calls: int = pydantic.Field(
        default=10, gt=0, strict=True, description="sub-calls of one program running at once, at most"
    )
