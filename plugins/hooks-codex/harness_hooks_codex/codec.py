"""Decode one Codex hook run (B.6) into the runner's neutral :class:`HookOutcome`.

Codex is stricter than Claude Code: output it cannot honour is a *failed run* (``error`` set), and a
failed run never blocks in Codex (the bridge denies only when ``strict``). In particular ``ask``,
``allow`` without ``updatedInput``, a deny without a reason, exit 2 with empty stderr, unknown keys and
``continue: false`` on PreToolUse are failed runs.
"""

from __future__ import annotations

import json
from typing import Any

from harness_hook_runner import HookOutcome, HookRun

__all__ = ["decode_codex"]

_COMMON = frozenset({"continue", "stopReason", "suppressOutput", "systemMessage", "decision", "reason", "hookSpecificOutput"})
_SPECIFIC = {
    "PreToolUse": frozenset({"hookEventName", "permissionDecision", "permissionDecisionReason", "updatedInput", "additionalContext"}),
    "PostToolUse": frozenset({"hookEventName", "additionalContext", "updatedMCPToolOutput"}),
}


def _run_error(run: HookRun) -> str | None:
    if run.spawn_error is not None:
        return f"could not start: {run.spawn_error}"
    if run.timed_out:
        return f"hook timed out after {run.duration_ms / 1000:.1f}s and was killed"
    if run.aborted:
        return "aborted (the call was cancelled)"
    if run.exit_code is None:
        return "hook exited without an exit status (killed by a signal)"
    return None


def decode_codex(run: HookRun, event: str) -> HookOutcome:
    """Decode a Codex hook run for ``PreToolUse`` or ``PostToolUse`` per B.6; never raises."""
    command = run.command
    failure = _run_error(run)
    if failure is not None:
        return HookOutcome(error=failure, command=command)
    if run.exit_code == 2:
        reason = run.stderr.strip()
        if not reason:
            return HookOutcome(
                error=f"{event} hook exited with code 2 but did not write a blocking reason to stderr", command=command
            )
        return HookOutcome(decision="block", reason=reason, command=command)
    if run.exit_code != 0:
        return HookOutcome(error=f"hook exited with code {run.exit_code}", command=command)
    text = run.stdout.strip()
    if not text.startswith(("{", "[")):
        return HookOutcome(command=command)  # silence or plain text: ignored
    invalid = f"hook returned invalid {event.lower().replace('tooluse', '-tool-use')} JSON output"
    if run.stdout_truncated:
        return HookOutcome(error=f"{invalid}: stdout exceeded the output cap", command=command)
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return HookOutcome(error=f"{invalid}: {exc}", command=command)
    if not isinstance(data, dict):
        return HookOutcome(error=f"{invalid}: not an object", command=command)
    problems = _schema_problems(data, event)
    if problems:
        return HookOutcome(error=f"{invalid}: " + "; ".join(problems), command=command)
    if event == "PreToolUse":
        return _pre(data, command)
    return _post(data, command)


def _schema_problems(data: dict[str, Any], event: str) -> list[str]:
    """B.6: the schema rejects unknown fields and wrong types (``additionalProperties: false``)."""
    problems = [f"unknown field {key!r}" for key in sorted(set(data) - _COMMON)]
    for key in ("stopReason", "systemMessage", "reason"):
        if key in data and not isinstance(data[key], str | None):
            problems.append(f"{key} must be a string")
    for key in ("continue", "suppressOutput"):
        if key in data and not isinstance(data[key], bool):
            problems.append(f"{key} must be a boolean")
    if "decision" in data and data["decision"] not in ("approve", "block", None):
        problems.append(f'decision must be "approve" or "block", got {data["decision"]!r}')
    specific = data.get("hookSpecificOutput")
    if specific is not None:
        if not isinstance(specific, dict):
            return [*problems, "hookSpecificOutput must be an object"]
        problems += [f"unknown field hookSpecificOutput.{key}" for key in sorted(set(specific) - _SPECIFIC.get(event, frozenset()))]
        if specific.get("hookEventName") != event:
            problems.append(f"hookSpecificOutput.hookEventName is {specific.get('hookEventName')!r}, expected {event!r}")
        for key in ("additionalContext", "permissionDecisionReason"):
            if key in specific and not isinstance(specific[key], str | None):
                problems.append(f"hookSpecificOutput.{key} must be a string")
    return problems


def _pre(data: dict[str, Any], command: str) -> HookOutcome:
    specific: dict[str, Any] = data.get("hookSpecificOutput") or {}
    context = specific.get("additionalContext") or None
    message = data.get("systemMessage") or None
    problems: list[str] = []
    for key in ("continue", "stopReason", "suppressOutput"):
        if key in data and (key != "continue" or data[key] is False) and (key != "suppressOutput" or data[key]):
            problems.append(f"PreToolUse does not support {key}")
    permission = specific.get("permissionDecision")
    permission_reason = (specific.get("permissionDecisionReason") or "").strip()
    legacy = data.get("decision")
    reason = (data.get("reason") or "").strip()
    decision: str = "pass"
    updated: Any = None
    if permission is not None:
        if permission == "deny":
            if permission_reason:
                decision, reason = "deny", permission_reason
            else:
                problems.append("permissionDecision deny needs a non-empty permissionDecisionReason")
        elif permission == "allow":
            if "updatedInput" in specific:
                updated = specific["updatedInput"]
                if not isinstance(updated, dict):
                    problems.append("updatedInput must be an object")
                decision = "allow"
            else:
                problems.append("permissionDecision allow is only supported with updatedInput")
        elif permission == "ask":
            problems.append("permissionDecision ask is not supported by Codex")
        else:
            problems.append(f"unsupported permissionDecision {permission!r}")
    else:
        if "permissionDecisionReason" in specific:
            problems.append("permissionDecisionReason without permissionDecision")
        if "updatedInput" in specific:
            problems.append("updatedInput without permissionDecision allow")
    if legacy == "block":
        if reason:
            decision = "block" if decision != "deny" else decision
        else:
            problems.append('decision "block" needs a non-empty reason')
    elif legacy == "approve":
        problems.append('legacy decision "approve" is not supported')
    elif reason and permission is None:
        problems.append("reason without decision")
    if problems:
        return HookOutcome(error="; ".join(problems), system_message=message, command=command)
    if decision == "allow":
        return HookOutcome(decision="allow", updated_input=updated, additional_context=context, system_message=message, command=command)
    return HookOutcome(
        decision=decision,  # type: ignore[arg-type]
        reason=(reason or None) if decision != "pass" else None,
        additional_context=context,
        system_message=message,
        command=command,
    )


def _post(data: dict[str, Any], command: str) -> HookOutcome:
    specific: dict[str, Any] = data.get("hookSpecificOutput") or {}
    context = specific.get("additionalContext") or None
    message = data.get("systemMessage") or None
    problems: list[str] = []
    if "updatedMCPToolOutput" in specific:
        problems.append("updatedMCPToolOutput is not supported")
    if data.get("suppressOutput"):
        problems.append("suppressOutput is not supported")
    stop = data.get("continue") is False
    reason = (data.get("reason") or "").strip()
    decision = "pass"
    if data.get("decision") == "block":
        if reason:
            decision = "block"
        else:
            problems.append('decision "block" needs a non-empty reason')
    elif data.get("decision") == "approve":
        problems.append('decision "approve" is not supported on PostToolUse')
    elif reason and not stop:
        problems.append("reason without decision")
    if problems:
        return HookOutcome(error="; ".join(problems), system_message=message, command=command)
    return HookOutcome(
        decision="block" if decision == "block" else "pass",
        reason=reason or None,
        additional_context=context,
        system_message=message,
        stop=stop,
        stop_reason=(data.get("stopReason") or None) if stop else None,
        command=command,
    )
