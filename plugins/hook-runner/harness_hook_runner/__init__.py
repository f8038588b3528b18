"""harness-hook-runner: run hook commands, decode their output to a neutral outcome, merge outcomes.

A library shared by the hook bridges; it registers nothing. ``run_hook``/``run_hooks`` spawn the
processes (own process group, JSON on stdin, capped output, group kill on timeout or abort),
``decode_claude_code`` reads one run per the Claude Code protocol and ``merge`` folds several
outcomes, most restrictive first (deny > ask > allow > pass).
"""

from .codec import Decision, HookOutcome, decode_claude_code, merge
from .runner import DEFAULT_MAX_OUTPUT_BYTES, HookHandler, HookRun, run_hook, run_hooks, unique_handlers

__all__ = [
    "DEFAULT_MAX_OUTPUT_BYTES",
    "Decision",
    "HookHandler",
    "HookOutcome",
    "HookRun",
    "decode_claude_code",
    "merge",
    "run_hook",
    "run_hooks",
    "unique_handlers",
]
