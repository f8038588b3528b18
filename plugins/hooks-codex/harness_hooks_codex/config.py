"""The [hooks.codex] section: whether Codex hooks run, which files to read, how failures count."""

from __future__ import annotations

import pydantic

__all__ = ["CodexConfig"]


class CodexConfig(pydantic.BaseModel):
    """[hooks.codex]: whether Codex hooks run, which files to read and how hook failures count."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    enabled: bool = pydantic.Field(
        default=False, description="run the Codex hooks at all (off by default: turning it on trusts the files)"
    )
    strict: bool = pydantic.Field(
        default=False, description="true: failed hook runs (errors, timeouts, invalid output) deny (default: ignored)"
    )
    files: list[str] = pydantic.Field(
        default_factory=lambda: [".codex/hooks.json", ".codex/config.toml"],
        description="hook files, relative to the project folder (~ is the user's home); .toml files use [hooks]",
    )
    user_files: bool = pydantic.Field(
        default=True, description="also read hooks.json and config.toml of $CODEX_HOME (default ~/.codex), first"
    )
    tool_names: dict[str, str] = pydantic.Field(
        default_factory=dict, description="harness tool name -> Codex tool name, beside bash/write/edit"
    )
    timeout_s: pydantic.PositiveFloat = pydantic.Field(
        default=600.0, description="timeout of a hook that sets none (Codex's default is 600 s)"
    )
    max_output_bytes: pydantic.PositiveInt = pydantic.Field(
        default=1_000_000, description="bytes kept of each hook's stdout and of its stderr"
    )
    shell: str = pydantic.Field(default="sh", description="the shell that runs each command as SHELL -c COMMAND")
