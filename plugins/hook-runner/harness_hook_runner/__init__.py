"""harness-hook-runner: run hook commands, decode their output to a neutral outcome, merge outcomes.

A library shared by the hook bridges; it registers nothing. ``run_hook``/``run_hooks`` spawn the
processes (own process group, JSON on stdin, capped output, group kill on timeout or abort),
``decode_claude_code`` reads one run per the Claude Code protocol and ``merge`` folds several
outcomes, most restrictive first (deny > ask > allow > pass).
"""

from .codec import Decision, HookOutcome, decode_claude_code, merge
from .records import SUMMARY_MAX, result_record
from .runner import DEFAULT_MAX_OUTPUT_BYTES, HookHandler, HookRun, run_hook, run_hooks, unique_handlers

__all__ = [
    "DEFAULT_MAX_OUTPUT_BYTES",
    "Decision",
    "HookHandler",
    "HookOutcome",
    "HookRun",
    "SUMMARY_MAX",
    "decode_claude_code",
    "merge",
    "result_record",
    "run_hook",
    "run_hooks",
    "unique_handlers",
]
