"""The ``[sandbox]`` section: default mode, network, extra writable roots, backend, probe timeout."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["SandboxConfig"]


class SandboxConfig(BaseModel):
    """The [sandbox] section: how the commands that tools spawn are confined (DESIGN §7)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Literal["read-only", "workspace-write", "danger-full-access"] = Field(
        default="workspace-write",
        description="default mode of a session: read-only, workspace-write or danger-full-access (unconfined)",
    )
    # Strict: a string such as "no" or "off" is an error, not a truthy value.
    network: bool = Field(default=False, strict=True, description="let confined commands use the network (danger-full-access always may)")
    writable_roots: list[str] = Field(
        default=[],
        description="folders writable under workspace-write beside the workspace and temp, relative to the project",
    )
    backend: Literal["auto", "bubblewrap", "landlock", "seatbelt"] = Field(
        default="auto",
        description="auto tries bubblewrap then Landlock on Linux and Seatbelt on macOS; a name uses only that one",
    )
    probe_timeout_ms: int = Field(
        default=5000, gt=0, strict=True, description="how long one backend probe may take before that backend counts as unusable"
    )

    @field_validator("writable_roots")
    @classmethod
    def _roots_are_paths(cls, roots: list[str]) -> list[str]:
        for index, root in enumerate(roots):
            if not root.strip():
                raise ValueError(f"writable_roots[{index}] is empty; name a folder, relative to the project or absolute")
            if "\0" in root:
                raise ValueError(f"writable_roots[{index}] contains a NUL character")
        return roots
