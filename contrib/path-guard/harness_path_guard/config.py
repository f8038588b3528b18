"""The ``[path_guard]`` section: deny globs, the argument that holds each tool's path, the workspace."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

from harness_core import DenyList

from .matching import compile_pattern

__all__ = ["PathGuardConfig"]


class PathGuardConfig(BaseModel):
    """``[path_guard]``: paths that no file tool may touch, as globs relative to the workspace."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    deny: DenyList = Field(
        default=[],
        description='globs of protected paths, relative to the workspace ("**" spans folders); '
        "grows across presets and layers, never shrinks",
    )
    tools: dict[str, str] = Field(
        default={"write": "file_path", "edit": "file_path", "read": "file_path"},
        description="tool name -> the argument holding its path; setting it replaces this default mapping",
    )
    workspace: str = Field(default=".", description="the workspace folder, relative to the project folder")

    @field_validator("deny")
    @classmethod
    def _patterns_compile(cls, patterns: list[str]) -> list[str]:
        # Fail at load, not on the first call: a pattern that cannot match protects nothing.
        for index, pattern in enumerate(patterns):
            try:
                compile_pattern(pattern)
            except ValueError as exc:
                raise PydanticCustomError(
                    "deny_pattern", "deny[{index}]: {reason}", {"index": index, "reason": str(exc)}
                ) from None
        return patterns

    @field_validator("tools")
    @classmethod
    def _names_are_not_empty(cls, tools: dict[str, str]) -> dict[str, str]:
        for name, argument in tools.items():
            if not name or not argument:
                raise PydanticCustomError(
                    "tool_argument",
                    "tool {name} -> argument {argument}: neither may be empty",
                    {"name": repr(name), "argument": repr(argument)},
                )
        return tools
