"""The ``[tools]`` section: bash timeouts, output caps and spill files; read windows and file limits."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StrictInt, model_validator

__all__ = ["ToolsConfig"]

PositiveInt = Annotated[StrictInt, Field(gt=0)]


class ToolsConfig(BaseModel):
    """``[tools]``: the limits of the bash, read, write and edit tools (every number is positive)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    bash_timeout_ms: PositiveInt = Field(
        default=120_000, description="bash: the timeout of a command that sets no timeout_ms (milliseconds)"
    )
    bash_max_timeout_ms: PositiveInt = Field(
        default=600_000, description="bash: the largest timeout_ms a call may ask for; larger requests are lowered to it"
    )
    bash_max_output_chars: PositiveInt = Field(
        default=30_000,
        description="bash: characters of each stream (stdout, stderr) shown to the model; beyond it the model sees "
        "the head and the tail and the path of a spill file holding everything",
    )
    bash_max_spill_bytes: PositiveInt = Field(
        default=256 * 1024 * 1024,
        description="bash: the largest spill file per stream; a longer stream keeps no spill file (the path is "
        "then shown as (unavailable))",
    )
    bash_grace_ms: PositiveInt = Field(
        default=3_000,
        description="bash: how long a process group gets between SIGTERM and SIGKILL, and how long the pipes may "
        "drain once the command has ended",
    )
    bash_env_scrub: list[str] = Field(
        default=["*KEY*", "*PASSWORD*", "*SECRET*", "*TOKEN*"],
        description="bash: environment variables left out of the command's environment, as case-insensitive globs",
    )
    spill_dir: str = Field(
        default=".harness/spill", description="where bash writes spill files, relative to the project folder"
    )
    read_limit: PositiveInt = Field(default=2_000, description="read: the default and largest number of lines per call")
    read_max_line_length: PositiveInt = Field(
        default=2_000, description="read: characters kept of each line; longer lines are cut and say so"
    )
    read_max_bytes: PositiveInt = Field(
        default=51_200, description="read: bytes of numbered lines returned by one call; the rest is offered by offset"
    )
    read_max_file_bytes: PositiveInt = Field(
        default=1024 * 1024 * 1024,
        description="read: the largest file read agrees to scan (it streams, hashing the whole file); larger files "
        "are refused with advice to use bash",
    )
    edit_max_file_bytes: PositiveInt = Field(
        default=16 * 1024 * 1024, description="edit: the largest file edit loads into memory"
    )

    @model_validator(mode="after")
    def _default_timeout_within_the_maximum(self) -> ToolsConfig:
        if self.bash_timeout_ms > self.bash_max_timeout_ms:
            raise ValueError(
                f"bash_timeout_ms ({self.bash_timeout_ms}) exceeds bash_max_timeout_ms ({self.bash_max_timeout_ms}); "
                "lower the default or raise the maximum"
            )
        return self
