"""Hook codec: one hook run decoded to a neutral outcome, and several outcomes merged into one.

reference/hook-bridges.md A.6–A.9 (Claude Code exit codes and JSON) and C.2/C.4 (neutral outcome,
most-restrictive merge). Decoding never raises: a crash, a timeout or unreadable output is an
outcome with ``error`` set, which the bridge treats as non-blocking unless it is strict.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from .runner import HookRun

__all__ = ["Decision", "HookOutcome", "decode_claude_code", "merge"]

Decision: TypeAlias = Literal["pass", "allow", "deny", "ask", "block"]

#: C.4: deny (and block) > ask > allow > pass.
_RANK: dict[str, int] = {"pass": 0, "allow": 1, "ask": 2, "deny": 3, "block": 3}


@dataclass(frozen=True, slots=True, kw_only=True)
class HookOutcome:
    """What one hook (or the merge of several) decided, independent of the dialect.

    ``decision`` is ``pass`` when the hook said nothing; ``block`` comes from exit 2 or a
    top-level ``decision: "block"``; ``deny``/``ask``/``allow`` from ``permissionDecision``.
    ``error`` says why the hook's output could not count (crash, timeout, malformed JSON).
    """

    decision: Decision = "pass"
    reason: str | None = None
    additional_context: str | None = None
    system_message: str | None = None
    stop: bool = False
    stop_reason: str | None = None
    updated_input: Any = None
    error: str | None = None
    command: str | None = None

    @property
    def blocks(self) -> bool:
        """True for ``deny`` and ``block``."""
        return _RANK[self.decision] == 3


def _first_line(text: str) -> str:
    stripped = text.strip()
    return stripped.splitlines()[0] if stripped else ""


def _run_error(run: HookRun) -> str | None:
    if run.spawn_error is not None:
        return f"could not start: {run.spawn_error}"
    if run.timed_out:
        return f"timed out after {run.duration_ms / 1000:.1f}s and was killed"
    if run.aborted:
        return "aborted (the call was cancelled)"
    if run.exit_code is None:
        return "killed by a signal"
    return None


def decode_claude_code(run: HookRun, event: str) -> HookOutcome:
    """Decode a Claude Code hook run for ``event`` (``PreToolUse``, ``PostToolUse``, ...).

    Exit 2 blocks with stderr as the reason and stdout ignored (A.6); exit 0 parses stdout as JSON
    when it starts with ``{`` (A.7); any other exit, a kill or a spawn failure is an error.
    """
    command = run.command
    failure = _run_error(run)
    if failure is not None:
        return HookOutcome(error=failure, command=command)
    if run.exit_code == 2:
        return HookOutcome(decision="block", reason=run.stderr.strip() or None, command=command)
    if run.exit_code != 0:
        line = _first_line(run.stderr)
        detail = f": {line}" if line else ""
        return HookOutcome(error=f"failed with non-blocking status code {run.exit_code}{detail}", command=command)
    text = run.stdout.strip()
    if not text.startswith("{"):
        return HookOutcome(command=command)  # silence or plain text: no decision (A.6, A.7)
    if run.stdout_truncated:
        return HookOutcome(error="stdout exceeded the output cap; the JSON was not parsed", command=command)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return HookOutcome(error=f"stdout is not valid JSON ({exc.msg} at line {exc.lineno})", command=command)
    except (ValueError, RecursionError) as exc:
        return HookOutcome(error=f"stdout is not valid JSON ({exc})", command=command)
    if not isinstance(data, dict):
        return HookOutcome(error="stdout JSON is not an object", command=command)
    return _decode_json(data, event, command)


def _string(data: dict[str, Any], key: str, problems: list[str]) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        problems.append(f"{key} must be a string, got {type(value).__name__}")
        return None
    return value


def _decode_json(data: dict[str, Any], event: str, command: str) -> HookOutcome:
    problems: list[str] = []
    decision: Decision = "pass"
    stop = False
    cont = data.get("continue", True)
    if not isinstance(cont, bool):
        problems.append(f"continue must be a boolean, got {type(cont).__name__}")
    else:
        stop = not cont
    stop_reason = _string(data, "stopReason", problems)
    system_message = _string(data, "systemMessage", problems)
    reason = _string(data, "reason", problems)
    top = data.get("decision")
    # C.2: top level accepts only the legacy approve/block; allow/deny/ask belong in permissionDecision.
    if top == "block":
        decision = "block"
    elif top == "approve":
        decision = "allow"
    elif top is not None:
        problems.append(f'decision must be "block" or "approve", got {top!r}')
    additional_context: str | None = None
    updated_input: Any = None
    specific = data.get("hookSpecificOutput")
    if specific is not None:
        if not isinstance(specific, dict):
            problems.append("hookSpecificOutput must be an object")
        elif specific.get("hookEventName") != event:
            # C.2 guard: fields meant for another event never apply to this one.
            problems.append(f"hookSpecificOutput.hookEventName is {specific.get('hookEventName')!r}, expected {event!r}")
        else:
            additional_context = _string(specific, "additionalContext", problems)
            if event == "PreToolUse":
                permission = specific.get("permissionDecision")
                if permission in ("allow", "deny", "ask"):
                    decision = permission
                elif permission not in (None, "defer"):  # defer is ignored outside -p mode (A.8)
                    problems.append(f'permissionDecision must be "allow", "deny" or "ask", got {permission!r}')
                specific_reason = _string(specific, "permissionDecisionReason", problems)
                if specific_reason is not None:
                    reason = specific_reason
                if "updatedInput" in specific:
                    updated_input = specific["updatedInput"]
                    if not isinstance(updated_input, dict):
                        problems.append("updatedInput must be an object")
                        updated_input = None
    if problems:
        # A.7: output that fails validation is dropped as a whole, as a non-blocking error.
        return HookOutcome(error="hook JSON output validation failed: " + "; ".join(problems), command=command)
    return HookOutcome(
        decision=decision,
        reason=reason or None,
        additional_context=additional_context or None,
        system_message=system_message or None,
        stop=stop,
        stop_reason=stop_reason,
        updated_input=updated_input,
        command=command,
    )


def merge(outcomes: Sequence[HookOutcome]) -> HookOutcome:
    """Fold several outcomes: the most restrictive decision wins (C.4).

    Only the reasons of the winning rank are kept, joined by blank lines; contexts and system
    messages accumulate in order; ``stop`` if any hook stopped (first stop reason); errors are
    joined, each prefixed with its command.
    """
    if not outcomes:
        return HookOutcome()
    top = max(_RANK[outcome.decision] for outcome in outcomes)
    winners = [outcome for outcome in outcomes if _RANK[outcome.decision] == top]
    # deny and block share a rank; a deny anywhere keeps the pre-execute meaning.
    decision: Decision = winners[0].decision
    if top == 3 and any(outcome.decision == "deny" for outcome in winners):
        decision = "deny"
    reasons = [outcome.reason for outcome in winners if outcome.reason] if top >= 2 else []
    contexts = [outcome.additional_context for outcome in outcomes if outcome.additional_context]
    messages = [outcome.system_message for outcome in outcomes if outcome.system_message]
    stops = [outcome for outcome in outcomes if outcome.stop]
    errors = [f"{outcome.command or 'hook'}: {outcome.error}" for outcome in outcomes if outcome.error]
    updated = next((outcome.updated_input for outcome in outcomes if outcome.updated_input is not None), None)
    return HookOutcome(
        decision=decision,
        reason="\n\n".join(reasons) or None,
        additional_context="\n\n".join(contexts) or None,
        system_message="\n\n".join(messages) or None,
        stop=bool(stops),
        stop_reason=stops[0].stop_reason if stops else None,
        updated_input=updated,
        error="\n".join(errors) or None,
    )
