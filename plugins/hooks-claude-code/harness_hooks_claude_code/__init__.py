"""harness-hooks-claude-code: run Claude Code PreToolUse/PostToolUse command hooks in the pipeline.

The entry point ``claude-code`` is :class:`ClaudeCodeHooks`. Settings come from
``~/.claude/settings.json`` and the project's ``.claude/settings.json`` and
``.claude/settings.local.json`` (``[hooks.claude_code] settings``); see docs/hooks.md.
"""

from .plugin import DEFAULT_TOOL_NAMES, PLUGIN_NAME, ClaudeCodeHooks

__all__ = ["ClaudeCodeHooks", "DEFAULT_TOOL_NAMES", "PLUGIN_NAME"]
