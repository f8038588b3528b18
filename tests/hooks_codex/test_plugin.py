"""reference/hook-bridges.md B and C.13: Codex hooks in the pipeline, with real hook processes."""

from __future__ import annotations

import json
import shutil
import sys
import time
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from harness_core import ConfigError, Harness, MemoryEventSink, ToolCall, hookimpl, tool
from harness_core.config import ConfigSource, Layer
from harness_hooks_codex import CodexHooks

PY = sys.executable


def test_the_entry_point_loads_the_plugin():
    (entry,) = [ep for ep in entry_points(group="harness") if ep.name == "codex"]
    assert entry.load() is CodexHooks


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return home


@pytest.fixture
def project(tmp_path):
    folder = tmp_path / "project"
    (folder / ".codex").mkdir(parents=True)
    return folder


def script(folder, name: str, body: str) -> str:
    """A Python hook script; it reads the payload into ``data`` first."""
    path = folder / name
    path.write_text("import json, sys, time\ndata = json.load(sys.stdin)\n" + body)
    return f"{PY} {path}"


def hooks_file(folder, hooks: dict, file: str = ".codex/hooks.json") -> None:
    (folder / file).write_text(json.dumps({"hooks": hooks}))


def group(*commands: str, matcher: str | None = "^Bash$", **handler) -> dict:
    entry: dict = {"hooks": [{"type": "command", "command": command, **handler} for command in commands]}
    if matcher is not None:
        entry["matcher"] = matcher
    return entry


def pre(out: dict) -> str:
    return f"print(json.dumps({out!r}))"


def pre_specific(**fields) -> str:
    return pre({"hookSpecificOutput": {"hookEventName": "PreToolUse", **fields}})


@tool
async def bash(command: str) -> dict:
    """Pretend to run a command."""
    return {"stdout": f"ran {command}", "exit_code": 0}


@tool
async def write(file_path: str, content: str) -> str:
    """Pretend to write a file."""
    return "written"


@tool
async def read(file_path: str) -> str:
    """Pretend to read a file."""
    return "text"


def make(project, section: dict | None = None, plugins=(), events=None, enabled: bool = True) -> Harness:
    section = {"enabled": enabled, **(section or {})}
    source = ConfigSource(layers=(Layer("config", {"hooks": {"codex": section}}),), project_dir=project)
    harness = Harness(plugins=[CodexHooks(), *plugins], config=source, events=events)
    for function in (bash, write, read):
        harness.tools.register(function)
    return harness


def call(name="bash", **arguments) -> ToolCall:
    return ToolCall(call_id="c1", name=name, arguments=arguments or {"command": "rm -rf /"}, agent="main")


def error_text(result) -> str:
    return result.content[0].text


# --- enablement --------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_disabled_by_default_runs_nothing_and_doctor_says_so(project, tmp_path):
    marker = tmp_path / "ran"
    hooks_file(project, {"PreToolUse": [group(f"touch {marker}; echo no >&2; exit 2", matcher=None)]})
    source = ConfigSource(layers=(Layer("config", {}),), project_dir=project)
    harness = Harness(plugins=[CodexHooks()], config=source)
    harness.tools.register(bash)
    result = await harness.execute(call(command="ls"))
    assert not result.is_error and not marker.exists()
    report = [(level, message) for source_, level, message in harness.diagnose() if source_ != "core"]
    assert ("info", "disabled ([hooks.codex] enabled = false): no Codex hooks run") in report


# --- PreToolUse: Codex's decision dialect ------------------------------------------------------


@pytest.mark.anyio
async def test_deny_with_a_reason_denies(project):
    hooks_file(project, {"PreToolUse": [group(script(project, "h.py", pre_specific(permissionDecision="deny", permissionDecisionReason="no rm")))]})
    result = await make(project).execute(call())
    assert result.is_error and error_text(result) == "Error: no rm"


@pytest.mark.skipif(shutil.which("jq") is None, reason="needs jq on PATH (.ci/run installs it)")
@pytest.mark.anyio
async def test_a_shell_script_reads_stdin_without_a_trailing_newline_and_denies(project, tmp_path):
    raw = tmp_path / "raw"
    hook = project / "deny.sh"
    hook.write_text(
        f"#!/bin/sh\ninput=$(cat)\nprintf '%s' \"$input\" > {raw}\n"
        "cmd=$(printf '%s' \"$input\" | jq -r .tool_input.command)\n"
        'printf \'{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny",'
        '"permissionDecisionReason":"no %s"}}\' "$cmd"\n'
    )
    hook.chmod(0o755)
    hooks_file(project, {"PreToolUse": [group(str(hook))]})
    result = await make(project).execute(call(command="ls"))
    assert error_text(result) == "Error: no ls"
    assert raw.read_bytes().endswith(b"}")  # B.4: no trailing newline


@pytest.mark.anyio
@pytest.mark.parametrize(
    "body, problem",
    [
        (pre_specific(permissionDecision="allow"), "allow is only supported with updatedInput"),
        (pre_specific(permissionDecision="ask", permissionDecisionReason="sure?"), "ask is not supported"),
        (pre_specific(permissionDecision="deny"), "non-empty permissionDecisionReason"),
        (pre({"decision": "approve"}), "approve"),
        (pre({"decision": "block"}), "non-empty reason"),
        (pre({"reason": "why"}), "reason without decision"),
        (pre({"continue": False, "stopReason": "halt"}), "does not support"),
        (pre({"surprise": 1}), "unknown field 'surprise'"),
        (pre_specific(permissionDecision="deny", permissionDecisionReason="x", color="red"), "unknown field hookSpecificOutput.color"),
        ("print('{not json')", "invalid pre-tool-use JSON output"),
        ("sys.exit(0)", None),
        ("print('plain text is ignored')", None),
    ],
)
async def test_what_codex_treats_as_a_failed_run_proceeds_unless_strict(project, body, problem):
    hooks_file(project, {"PreToolUse": [group(script(project, "h.py", body))]})
    events = MemoryEventSink()
    assert not (await make(project, events=events).execute(call(command="ls"))).is_error
    (result_event,) = events.of_kind("hook/result")
    strict = await make(project, {"strict": True}).execute(call(command="ls"))
    if problem is None:
        assert result_event["decision"] == "pass" and not strict.is_error
    else:
        assert result_event["decision"] == "error" and problem in result_event["error"]
        assert strict.is_error and problem in error_text(strict) and "strict = true" in error_text(strict)


@pytest.mark.anyio
async def test_exit_codes(project):
    cases = {
        "echo 'no rm' >&2; exit 2": "Error: no rm",  # exit 2 with stderr blocks; stdout ignored
        "exit 2": None,  # exit 2 without stderr is a failed run: the call proceeds
        "echo oops >&2; exit 1": None,
        "exit 7": None,
    }
    for command, expected in cases.items():
        hooks_file(project, {"PreToolUse": [group(command)]})
        result = await make(project).execute(call(command="ls"))
        if expected is None:
            assert not result.is_error, command
        else:
            assert error_text(result) == expected
    hooks_file(project, {"PreToolUse": [group("exit 2")]})
    strict = await make(project, {"strict": True}).execute(call(command="ls"))
    assert "did not write a blocking reason to stderr" in error_text(strict)


@pytest.mark.anyio
async def test_legacy_block_with_a_reason_denies(project):
    hooks_file(project, {"PreToolUse": [group(script(project, "h.py", pre({"decision": "block", "reason": "legacy"})))]})
    assert error_text(await make(project).execute(call())) == "Error: legacy"


@pytest.mark.anyio
async def test_additional_context_and_system_message_on_pre_tool_use_are_recorded(project):
    body = pre({"systemMessage": "careful", "hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "ctx"}})
    hooks_file(project, {"PreToolUse": [group(script(project, "h.py", body))]})
    events = MemoryEventSink()
    assert not (await make(project, events=events).execute(call(command="ls"))).is_error
    (result,) = events.of_kind("hook/result")
    assert result["decision"] == "pass" and result["additional_context"] == "ctx" and result["system_message"] == "careful"


@pytest.mark.anyio
async def test_allow_with_updated_input_denies_with_the_rewrite(project):
    body = pre_specific(permissionDecision="allow", updatedInput={"command": "ls -la"})
    hooks_file(project, {"PreToolUse": [group(script(project, "h.py", body))]})
    result = await make(project).execute(call(command="ls"))
    assert result.is_error and '{"command": "ls -la"}' in error_text(result)


@pytest.mark.anyio
async def test_concurrent_hooks_deny_wins_over_failed_runs_and_strictness(project):
    commands = [
        script(project, "a.py", "time.sleep(0.3)\n" + pre_specific(permissionDecision="ask", permissionDecisionReason="?")),
        script(project, "b.py", "time.sleep(0.3)\n" + pre_specific(permissionDecision="deny", permissionDecisionReason="denied")),
        script(project, "c.py", "time.sleep(0.3)\nraise SystemExit(1)"),
    ]
    hooks_file(project, {"PreToolUse": [group(*commands)]})
    start = time.monotonic()
    result = await make(project, {"strict": True}).execute(call())
    assert error_text(result) == "Error: denied"
    assert time.monotonic() - start < 0.85, "hooks did not run concurrently"


@pytest.mark.anyio
async def test_the_payload_follows_codex(project, tmp_path):
    out = tmp_path / "seen"
    body = f"import os\ndata['wd'] = os.getcwd()\nopen({str(out)!r}, 'a').write(json.dumps(data) + '\\n')\n"
    hooks_file(project, {"PreToolUse": [group(script(project, "h.py", body), matcher=None)]})
    harness = make(project)
    await harness.execute(call(command="ls -l"))
    await harness.execute(call(name="write", file_path="a.txt", content="one\ntwo"))
    await harness.execute(call(name="read", file_path="a.txt"))
    shell, patch, other = (json.loads(line) for line in out.read_text().splitlines())
    assert shell["tool_name"] == "Bash" and shell["tool_input"] == {"command": "ls -l"}
    assert shell["transcript_path"] is None and shell["permission_mode"] == "default" and "model" in shell
    assert shell["hook_event_name"] == "PreToolUse" and shell["tool_use_id"] == "c1" and shell["session_id"] == "main"
    assert shell["cwd"] == shell["wd"] == str(project.resolve())
    assert patch["tool_name"] == "apply_patch"
    assert patch["tool_input"] == {"command": "*** Begin Patch\n*** Add File: a.txt\n+one\n+two\n*** End Patch"}
    assert other["tool_name"] == "read" and other["tool_input"] == {"file_path": "a.txt"}


@pytest.mark.anyio
async def test_matchers_are_unanchored_regexes_and_apply_patch_answers_to_edit_and_write(project, tmp_path):
    log = tmp_path / "log"
    hooks_file(
        project,
        {
            "PreToolUse": [
                group(f"echo anchored >> {log}", matcher="^Bash$"),
                group(f"echo prefix >> {log}", matcher="Bas"),
                group(f"echo all >> {log}", matcher=None),
                group(f"echo star >> {log}", matcher="*"),
                group(f"echo empty >> {log}", matcher=""),
                group(f"echo edit >> {log}", matcher="^Edit$"),
                group(f"echo write >> {log}", matcher="Write|Edit"),
                group(f"echo patch >> {log}", matcher="^apply_patch$"),
            ]
        },
    )
    await make(project).execute(call(command="ls"))
    assert sorted(log.read_text().split()) == ["all", "anchored", "empty", "prefix", "star"]
    log.unlink()
    await make(project).execute(call(name="write", file_path="x", content="y"))
    assert sorted(log.read_text().split()) == ["all", "edit", "empty", "patch", "star", "write"]


@pytest.mark.anyio
async def test_hooks_from_user_and_project_files_and_toml_add_up_without_deduplication(project, home, tmp_path):
    log = tmp_path / "log"
    (home / ".codex").mkdir()
    hooks_file(home, {"PreToolUse": [group(f"echo same >> {log}")]})
    hooks_file(project, {"PreToolUse": [group(f"echo same >> {log}")]})
    (project / ".codex" / "config.toml").write_text(
        'model = "o3"\n\n[[hooks.PreToolUse]]\nmatcher = "^Bash$"\n\n'
        f'[[hooks.PreToolUse.hooks]]\ntype = "command"\ncommand = "echo toml >> {log}"\ntimeout = 30\n'
    )
    harness = make(project)
    await harness.execute(call(command="ls"))
    assert sorted(log.read_text().split()) == ["same", "same", "toml"]
    notes = [message for _s, level, message in harness.diagnose() if level == "warning"]
    assert any("both hooks.json and config.toml" in message for message in notes)


@pytest.mark.anyio
async def test_codex_home_and_configured_files(project, tmp_path, monkeypatch):
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    hooks_file(codex_home, {"PreToolUse": [group("echo from-codex-home >&2; exit 2")]}, file="hooks.json")
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    assert error_text(await make(project).execute(call())) == "Error: from-codex-home"
    assert not (await make(project, {"user_files": False}).execute(call())).is_error
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"hooks": {"PreToolUse": [group("echo other >&2; exit 2")]}}))
    result = await make(project, {"user_files": False, "files": [str(other)]}).execute(call())
    assert error_text(result) == "Error: other"


# --- failures, strict mode, timeouts -----------------------------------------------------------


@pytest.mark.anyio
async def test_a_crashing_hook_is_ignored_unless_strict(project):
    hooks_file(project, {"PreToolUse": [group(script(project, "h.py", "raise RuntimeError('crash')"))]})
    assert not (await make(project).execute(call(command="ls"))).is_error
    result = await make(project, {"strict": True}).execute(call(command="ls"))
    assert result.is_error and "hook exited with code 1" in error_text(result) and "strict = true" in error_text(result)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


@pytest.mark.anyio
async def test_a_timeout_kills_the_whole_process_group(project, tmp_path):
    pids = tmp_path / "pids"
    command = f"sleep 300 & echo $! >> {pids}; sh -c 'echo $$ >> {pids}; sleep 300'"
    hooks_file(project, {"PreToolUse": [group(command, timeout=0.5)]})
    start = time.monotonic()
    events = MemoryEventSink()
    assert not (await make(project, events=events).execute(call(command="ls"))).is_error  # fails open
    assert time.monotonic() - start < 5
    (result,) = events.of_kind("hook/result")
    assert result["timed_out"] and result["exit_code"] is None and "timed out" in result["error"]
    recorded = [int(pid) for pid in pids.read_text().split()]
    assert len(recorded) == 2
    deadline = time.monotonic() + 3
    while any(_alive(pid) for pid in recorded) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in recorded if _alive(pid)]
    strict = await make(project, {"strict": True}).execute(call(command="ls"))
    assert strict.is_error and "timed out" in error_text(strict)


# --- PostToolUse -------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_post_tool_use_block_replaces_the_result_with_the_feedback(project):
    hooks_file(project, {"PostToolUse": [group(script(project, "h.py", pre({"decision": "block", "reason": "leaked a secret"})))]})
    result = await make(project).execute(call(command="ls"))
    assert result.is_error and error_text(result) == "leaked a secret"


@pytest.mark.anyio
async def test_post_tool_use_feedback_of_several_hooks_is_joined_and_exit_2_counts(project):
    hooks_file(
        project,
        {
            "PostToolUse": [
                group(script(project, "h.py", pre({"decision": "block", "reason": "first"})), "echo second >&2; exit 2")
            ]
        },
    )
    result = await make(project).execute(call(command="ls"))
    assert error_text(result) == "first\n\nsecond"


@pytest.mark.anyio
async def test_post_tool_use_continue_false_stops_with_its_reason(project):
    hooks_file(project, {"PostToolUse": [group(script(project, "h.py", pre({"continue": False, "stopReason": "halt"})))]})
    assert error_text(await make(project).execute(call(command="ls"))) == "halt"
    hooks_file(project, {"PostToolUse": [group(script(project, "h.py", pre({"continue": False})))]})
    assert error_text(await make(project).execute(call(command="ls"))) == "PostToolUse hook stopped execution"


@pytest.mark.anyio
async def test_post_tool_use_additional_context_and_tool_response(project):
    body = (
        "ctx = 'saw ' + data['tool_response']['stdout']\n"
        "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PostToolUse', 'additionalContext': ctx}}))\n"
    )
    hooks_file(project, {"PostToolUse": [group(script(project, "h.py", body))]})
    result = await make(project).execute(call(command="ls"))
    assert not result.is_error
    (context,) = result.additional_contexts
    assert context.content[0].text == "saw ran ls" and context.source == "codex"


@pytest.mark.anyio
@pytest.mark.parametrize(
    "body",
    [
        "sys.exit(2)",
        pre({"decision": "block"}),
        pre({"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedMCPToolOutput": {}}}),
        pre({"suppressOutput": True}),
    ],
)
async def test_post_tool_use_failed_runs_keep_the_result_unless_strict(project, body):
    hooks_file(project, {"PostToolUse": [group(script(project, "h.py", body))]})
    result = await make(project).execute(call(command="ls"))
    assert not result.is_error and result.value["stdout"] == "ran ls"
    assert (await make(project, {"strict": True}).execute(call(command="ls"))).is_error


@pytest.mark.anyio
async def test_post_tool_use_hooks_skip_denied_calls(project, tmp_path):
    log = tmp_path / "log"
    hooks_file(project, {"PreToolUse": [group("echo no >&2; exit 2")], "PostToolUse": [group(f"echo post >> {log}")]})
    assert (await make(project).execute(call())).is_error
    assert not log.exists()


# --- events, files and doctor ------------------------------------------------------------------


@pytest.mark.anyio
async def test_hook_events_are_recorded(project):
    hooks_file(project, {"PreToolUse": [group(script(project, "h.py", "print('x' * 900, file=sys.stderr); sys.exit(2)"))]})
    events = MemoryEventSink()
    await make(project, events=events).execute(call())
    (invoked,) = events.of_kind("hook/invoked")
    (result,) = events.of_kind("hook/result")
    assert invoked["dialect"] == "codex" and invoked["event"] == "PreToolUse" and invoked["matcher"] == "^Bash$"
    assert invoked["call_id"] == "c1"
    assert result["decision"] == "block" and result["exit_code"] == 2 and result["duration_ms"] > 0
    assert len(result["stderr_summary"]) == 501 and result["stderr_summary"].endswith("…")
    kinds = events.kinds()
    assert kinds.index("hook/invoked") < kinds.index("hook/result")


@pytest.mark.anyio
async def test_unknown_keys_events_and_bad_entries_are_tolerated_and_reported(project):
    data = {
        "version": 2,
        "hooks": {
            "Futuristic": [group("true")],
            "Stop": [group("true", matcher=None)],
            "PreToolUse": [
                {"matcher": "(", "hooks": [{"type": "command", "command": "exit 2"}]},
                {
                    "matcher": "Bash",
                    "extra": 1,
                    "hooks": [
                        {"type": "prompt", "prompt": "x"},
                        {"type": "command", "command": "true", "async": True},
                        {"type": "command", "command": "echo no >&2; exit 2", "color": "red", "statusMessage": "checking"},
                    ],
                },
            ],
        },
    }
    (project / ".codex" / "hooks.json").write_text(json.dumps(data))
    harness = make(project)
    assert error_text(await harness.execute(call())) == "Error: no"  # the valid hook still runs
    notes = "\n".join(f"{level}: {message}" for _, level, message in harness.diagnose())
    for expected in ("Futuristic", "Stop hooks are not run", "invalid regex", "'prompt'", "async", "'color'", "'extra'"):
        assert expected in notes
    assert "statusMessage" not in notes


@pytest.mark.anyio
async def test_an_unreadable_file_is_skipped_with_a_warning(project):
    (project / ".codex" / "hooks.json").write_text("{ nope")
    (project / ".codex" / "config.toml").write_text("[[hooks")
    harness = make(project)
    assert not (await harness.execute(call(command="ls"))).is_error
    warnings = [message for _, level, message in harness.diagnose() if level == "warning"]
    assert sum("could not read" in message for message in warnings) == 2


def test_unknown_config_keys_are_errors(project):
    with pytest.raises(ConfigError):
        make(project, {"nope": 1})


def test_doctor_lists_each_hook_and_warns_when_not_strict(project):
    hooks_file(project, {"PreToolUse": [group("echo checking", matcher="Bash|apply_patch")]})
    report = [(level, message) for source, level, message in make(project).diagnose() if source != "core"]
    assert ("info", "PreToolUse [Bash|apply_patch]: echo checking") in report
    assert any(level == "warning" and message.startswith("not strict:") for level, message in report)
    strict = [message for _s, _level, message in make(project, {"strict": True}).diagnose()]
    assert not any(message.startswith("not strict:") for message in strict)


@pytest.mark.anyio
async def test_a_hook_never_overrides_an_inner_denial(project):
    class DenyAll:
        @hookimpl(trylast=True)
        async def tools_pre_execute(self, execution, call_next):
            from harness_core import Deny

            return Deny(reason="inner says no")

    hooks_file(project, {"PreToolUse": [group("exit 0")]})
    result = await make(project, plugins=[DenyAll()]).execute(call(command="ls"))
    assert error_text(result) == "Error: inner says no"

