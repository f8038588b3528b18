"""harness-hooks-codex: run Codex PreToolUse/PostToolUse command hooks in the pipeline.

The entry point ``codex`` is :class:`CodexHooks`. It is off until ``[hooks.codex] enabled = true``;
hooks come from ``~/.codex/hooks.json``, ``~/.codex/config.toml`` and the project's
``.codex/hooks.json`` and ``.codex/config.toml``; see docs/hooks.md ("Codex").
"""

from .plugin import DEFAULT_TOOL_NAMES, PLUGIN_NAME, CodexHooks

__all__ = ["CodexHooks", "DEFAULT_TOOL_NAMES", "PLUGIN_NAME"]
