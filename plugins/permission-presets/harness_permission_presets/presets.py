"""The three shipped presets: their knob bundles, descriptions and config fragments."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["SHIPPED", "Bundle", "ShippedPreset", "fragment"]


@dataclass(frozen=True, slots=True)
class Bundle:
    """The two knobs a preset sets: the sandbox mode and the approval policy."""

    sandbox: str
    approval: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ShippedPreset:
    """One preset this plugin contributes."""

    name: str
    bundle: Bundle
    description: str
    default: bool = False


#: Calls no rule matches are allowed, except the tools that change things, which ask: the shell,
#: the file writers, and Code Mode's run_code (a program's own code can do what a shell can; its
#: tool calls are each judged again as sub-calls).
CAREFUL_RULES: dict[str, Any] = {
    "default": "allow",
    "default_for": {"bash": "ask", "write": "ask", "edit": "ask", "run_code": "ask"},
}
#: Under approval "never" every ask is rejected, so the unprompted preset asks for nothing.
UNPROMPTED_RULES: dict[str, Any] = {"default": "allow"}

#: In table order: derivation breaks ties between identical bundles by this order.
SHIPPED: tuple[ShippedPreset, ...] = (
    ShippedPreset(
        name="read-only",
        bundle=Bundle("read-only", "ask"),
        description="Read inside and outside the workspace but write nowhere; commands, edits and programs ask first, "
        "and a wider retry requires approval.",
    ),
    ShippedPreset(
        name="workspace-write",
        bundle=Bundle("workspace-write", "ask"),
        # reference/plugins.md §9 (a): the source description, verbatim.
        description="Write inside the workspace and permitted temporary directories; wider retries require approval.",
        default=True,
    ),
    ShippedPreset(
        name="danger-full-access",
        bundle=Bundle("danger-full-access", "never"),
        description="Full file access without approval prompts.",
    ),
)


def fragment(preset: ShippedPreset) -> dict[str, Any]:
    """The config fragment of a shipped preset: both knobs, the timeout policy on, the rules defaults."""
    rules = UNPROMPTED_RULES if preset.bundle.approval == "never" else CAREFUL_RULES
    return {
        "sandbox": {"mode": preset.bundle.sandbox},
        "approval": {"policy": preset.bundle.approval},
        "timeout": {"enabled": True},
        "rules": {key: (dict(value) if isinstance(value, dict) else value) for key, value in rules.items()},
    }
