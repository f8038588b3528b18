"""The [hooks.claude_code] section: which settings files to read and how hook failures count."""

from __future__ import annotations

import pydantic

__all__ = ["ClaudeCodeConfig"]


class ClaudeCodeConfig(pydantic.BaseModel):
    """[hooks.claude_code]: which settings files to read and how hook failures count."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    enabled: bool = pydantic.Field(default=True, description="run the Claude Code hooks at all")
    strict: bool = pydantic.Field(
        default=False, description="true: hook errors, timeouts and malformed output deny (default: they are ignored)"
    )
    settings: list[str] = pydantic.Field(
        default_factory=lambda: [".claude/settings.json", ".claude/settings.local.json"],
        description="settings files, relative to the project folder (~ is the user's home)",
    )
    user_settings: bool = pydantic.Field(default=True, description="also read ~/.claude/settings.json (first)")
    tool_names: dict[str, str] = pydantic.Field(
        default_factory=dict, description="harness tool name -> Claude Code tool name, beside bash/read/write/edit"
    )
    timeout_s: pydantic.PositiveFloat = pydantic.Field(
        default=600.0, description="timeout of a hook that sets none (Claude Code's default is 600 s)"
    )
    max_output_bytes: pydantic.PositiveInt = pydantic.Field(
        default=1_000_000, description="bytes kept of each hook's stdout and of its stderr"
    )
