"""reference/hook-bridges.md A.6–A.9, C.2, C.4: decoding a Claude Code hook run and merging outcomes."""

from __future__ import annotations

import json

from harness_hook_runner import HookOutcome, HookRun, decode_claude_code, merge


def run(exit_code: int | None = 0, stdout: str = "", stderr: str = "", **extra) -> HookRun:
    return HookRun(command="hook", exit_code=exit_code, stdout=stdout, stderr=stderr, duration_ms=1.0, **extra)


def pre(**specific) -> str:
    return json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", **specific}})


def test_exit_2_blocks_with_stderr_and_ignores_stdout():
    outcome = decode_claude_code(run(2, stdout=pre(permissionDecision="allow"), stderr=" no rm \n"), "PreToolUse")
    assert (outcome.decision, outcome.reason, outcome.error) == ("block", "no rm", None)


def test_exit_2_with_empty_stderr_still_blocks_without_a_reason():
    assert decode_claude_code(run(2), "PreToolUse").decision == "block"


def test_other_exit_codes_are_non_blocking_errors():
    outcome = decode_claude_code(run(1, stderr="boom\nmore"), "PreToolUse")
    assert outcome.decision == "pass" and outcome.error == "failed with non-blocking status code 1: boom"


def test_timeouts_and_spawn_failures_are_errors():
    assert "timed out" in decode_claude_code(run(None, timed_out=True), "PreToolUse").error
    assert "could not start" in decode_claude_code(run(None, spawn_error="no sh"), "PreToolUse").error


def test_permission_decisions_and_reasons():
    for decision in ("allow", "deny", "ask"):
        outcome = decode_claude_code(run(stdout=pre(permissionDecision=decision, permissionDecisionReason="r")), "PreToolUse")
        assert (outcome.decision, outcome.reason) == (decision, "r")


def test_legacy_top_level_decisions():
    assert decode_claude_code(run(stdout='{"decision": "block", "reason": "x"}'), "PreToolUse").decision == "block"
    assert decode_claude_code(run(stdout='{"decision": "approve"}'), "PreToolUse").decision == "allow"
    assert decode_claude_code(run(stdout='{"decision": "deny"}'), "PreToolUse").error


def test_defer_is_ignored_and_silence_or_plain_text_is_no_decision():
    assert decode_claude_code(run(stdout=pre(permissionDecision="defer")), "PreToolUse") == HookOutcome(command="hook")
    assert decode_claude_code(run(stdout=""), "PreToolUse").decision == "pass"
    assert decode_claude_code(run(stdout="hello"), "PreToolUse").error is None


def test_garbage_json_is_an_error():
    assert "not valid JSON" in decode_claude_code(run(stdout="{nope"), "PreToolUse").error
    assert decode_claude_code(run(stdout='{"continue": "yes"}'), "PreToolUse").error


def test_truncated_json_is_an_error():
    assert "cap" in decode_claude_code(run(stdout='{"a": 1', stdout_truncated=True), "PreToolUse").error


def test_hook_specific_output_for_another_event_is_an_error():
    outcome = decode_claude_code(run(stdout=pre(permissionDecision="deny")), "PostToolUse")
    assert outcome.decision == "pass" and "expected 'PostToolUse'" in outcome.error


def test_post_tool_use_block_and_context():
    stdout = json.dumps(
        {"decision": "block", "reason": "bad", "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "note"}}
    )
    outcome = decode_claude_code(run(stdout=stdout), "PostToolUse")
    assert (outcome.decision, outcome.reason, outcome.additional_context) == ("block", "bad", "note")


def test_continue_false_stops_and_updated_input_is_kept():
    outcome = decode_claude_code(
        run(stdout=json.dumps({"continue": False, "stopReason": "s", **json.loads(pre(updatedInput={"command": "ls"}))})),
        "PreToolUse",
    )
    assert outcome.stop and outcome.stop_reason == "s" and outcome.updated_input == {"command": "ls"}


def test_merge_most_restrictive_wins_and_keeps_only_winning_reasons():
    merged = merge(
        [
            HookOutcome(decision="allow", reason="fine"),
            HookOutcome(decision="ask", reason="check"),
            HookOutcome(decision="deny", reason="no"),
            HookOutcome(decision="block", reason="never"),
            HookOutcome(additional_context="c1"),
            HookOutcome(additional_context="c2", error="x", command="h"),
        ]
    )
    assert merged.decision == "deny" and merged.reason == "no\n\nnever"
    assert merged.additional_context == "c1\n\nc2" and merged.error == "h: x"
    assert merge([HookOutcome(decision="allow"), HookOutcome(decision="ask", reason="q")]).decision == "ask"
    assert merge([HookOutcome(decision="allow", reason="r")]).reason is None
    assert merge([]).decision == "pass"
