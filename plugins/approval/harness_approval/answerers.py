"""The built-in answerers: scripted rules from the config (the terminal one is in terminal.py)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

from harness_core import ApprovalRequest, Execution, hookimpl

if TYPE_CHECKING:
    # Only for annotations: importing the config module defines pydantic models (slow start-up).
    from .config import ScriptedRule

__all__ = ["ScriptedAnswerer", "rule_matches"]


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)


def rule_matches(rule: ScriptedRule, tool_name: str, arguments: Any) -> bool:
    """Whether ``rule`` covers this call: the tool glob and every argument glob must match."""
    if not fnmatchcase(tool_name, rule.tool):
        return False
    if not rule.arguments:
        return True
    if not isinstance(arguments, Mapping):
        return False
    for name, pattern in rule.arguments.items():
        if name not in arguments or not fnmatchcase(_as_text(arguments[name]), pattern):
            return False
    return True


class ScriptedAnswerer:
    """Answers from ``[[approval.scripted]]`` rules, for CI, demos and headless runs.

    The first rule that matches answers; with no match the next answerer decides (and past the
    last one the ask is ``unavailable``). A rule with argument patterns never matches a call whose
    arguments it cannot see.
    """

    def __init__(self, rules: Sequence[ScriptedRule]) -> None:
        self.rules = tuple(rules)

    @hookimpl
    async def approval_answer(
        self, request: ApprovalRequest, call: Execution | None, call_next: Callable[[], Awaitable[str]]
    ) -> str:
        arguments = call.arguments if call is not None else None
        for rule in self.rules:
            if rule.arguments and call is None:
                continue
            if rule_matches(rule, request.tool_name, arguments):
                return rule.outcome
        return await call_next()
