"""The ``hook/result`` session-event data of one hook run, the same for every bridge."""

from __future__ import annotations

from typing import Any

from .codec import HookOutcome
from .runner import HookRun

__all__ = ["SUMMARY_MAX", "result_record"]

#: Characters kept of a hook's stderr (and of its messages) in a session event.
SUMMARY_MAX = 500


def _summary(text: str) -> str | None:
    stripped = text.strip()
    if not stripped:
        return None
    return stripped if len(stripped) <= SUMMARY_MAX else stripped[:SUMMARY_MAX] + "…"


def result_record(dialect: str, event: str, run: HookRun, outcome: HookOutcome) -> dict[str, Any]:
    """What ``hook/result`` records: command, event, decision, duration, exit code, stderr summary."""
    if outcome.error is not None:
        label = "error"
    elif outcome.decision == "pass" and outcome.stop:
        label = "stop"
    else:
        label = outcome.decision
    data: dict[str, Any] = {
        "dialect": dialect,
        "event": event,
        "command": run.command,
        "decision": label,
        "duration_ms": run.duration_ms,
        "exit_code": run.exit_code,
        "timed_out": run.timed_out,
    }
    summary = _summary(run.stderr)
    if summary is not None:
        data["stderr_summary"] = summary
    if outcome.error is not None:
        data["error"] = outcome.error
    if outcome.updated_input is not None:
        data["updated_input"] = outcome.updated_input
    if outcome.system_message is not None:
        data["system_message"] = outcome.system_message[:SUMMARY_MAX]
    if outcome.additional_context is not None:
        data["additional_context"] = outcome.additional_context[:SUMMARY_MAX]
    return data
