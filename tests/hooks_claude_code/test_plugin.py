"""reference/hook-bridges.md A, C.7, C.8, C.10, C.11: Claude Code hooks in the pipeline, with real processes."""

from __future__ import annotations

import json
import shutil
import sys
import time
from importlib.metadata import entry_points

import anyio
import pytest

from harness_core import ConfigError, Harness, MemoryEventSink, ToolCall, hookimpl, tool
from harness_core.config import ConfigSource, Layer
from harness_hooks_claude_code import ClaudeCodeHooks

PY = sys.executable


def test_the_entry_point_loads_the_plugin():
    (entry,) = [ep for ep in entry_points(group="harness") if ep.name == "claude-code"]
    assert entry.load() is ClaudeCodeHooks


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def project(tmp_path):
    folder = tmp_path / "project"
    (folder / ".claude").mkdir(parents=True)
    return folder


def script(folder, name: str, body: str) -> str:
    """A Python hook script; it reads the payload into ``data`` first."""
    path = folder / name
    path.write_text("import json, sys, time\ndata = json.load(sys.stdin)\n" + body)
    return f"{PY} {path}"


def settings(folder, hooks: dict, file: str = ".claude/settings.json") -> None:
    (folder / file).write_text(json.dumps({"hooks": hooks}))


def group(*commands: str, matcher: str | None = "Bash", **handler) -> dict:
    entry: dict = {"hooks": [{"type": "command", "command": command, **handler} for command in commands]}
    if matcher is not None:
        entry["matcher"] = matcher
    return entry


@tool
async def bash(command: str) -> dict:
    """Pretend to run a command."""
    return {"stdout": f"ran {command}", "exit_code": 0}


@tool
async def read(file_path: str) -> str:
    """Pretend to read a file."""
    return "text"


def make(project, section: dict | None = None, plugins=(), events=None) -> Harness:
    config = {"hooks": {"claude_code": section or {}}}
    source = ConfigSource(layers=(Layer("config", config),), project_dir=project)
    harness = Harness(plugins=[ClaudeCodeHooks(), *plugins], config=source, events=events)
    harness.tools.register(bash)
    harness.tools.register(read)
    return harness


def call(name="bash", agent: str | None = "main", **arguments) -> ToolCall:
    return ToolCall(call_id="c1", name=name, arguments=arguments or {"command": "rm -rf /"}, agent=agent)


def error_text(result) -> str:
    return result.content[0].text


class Answer:
    def __init__(self, outcome: str) -> None:
        self.outcome = outcome
        self.asked: list = []

    @hookimpl
    def approval_request(self, request):
        self.asked.append(request.reason)
        return self.outcome


# --- PreToolUse --------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_exit_2_denies_with_stderr_as_the_reason(project):
    settings(project, {"PreToolUse": [group(script(project, "h.py", "print('no rm', file=sys.stderr); sys.exit(2)"))]})
    result = await make(project).execute(call())
    assert result.is_error and error_text(result) == "Error: no rm"


@pytest.mark.skipif(shutil.which("jq") is None, reason="needs jq on PATH (.ci/run installs it)")
@pytest.mark.anyio
async def test_a_shell_script_hook_with_jq_denies_by_json(project):
    hook = project / "deny.sh"
    hook.write_text(
        "#!/bin/sh\ncmd=$(jq -r .tool_input.command)\n"
        'printf \'{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny",'
        '"permissionDecisionReason":"no %s"}}\' "$cmd"\n'
    )
    hook.chmod(0o755)
    settings(project, {"PreToolUse": [group(str(hook))]})
    result = await make(project).execute(call(command="ls"))
    assert error_text(result) == "Error: no ls"


def pre_json(decision: str, reason: str | None = None) -> str:
    out = {"hookEventName": "PreToolUse", "permissionDecision": decision}
    if reason is not None:
        out["permissionDecisionReason"] = reason
    return f"print(json.dumps({{'hookSpecificOutput': {out!r}}}))"


@pytest.mark.anyio
async def test_deny_by_json_without_a_reason_uses_the_fallback(project):
    settings(project, {"PreToolUse": [group(script(project, "h.py", pre_json("deny")))]})
    result = await make(project).execute(call())
    assert error_text(result) == "Error: blocked by PreToolUse hook"


@pytest.mark.anyio
async def test_allow_by_json_runs_the_call_but_never_overrides_an_inner_denial(project):
    settings(project, {"PreToolUse": [group(script(project, "h.py", pre_json("allow", "fine")))]})
    result = await make(project).execute(call(command="ls"))
    assert not result.is_error and result.value["stdout"] == "ran ls"

    class DenyAll:
        @hookimpl(trylast=True)
        async def tools_pre_execute(self, execution, call_next):
            from harness_core import Deny

            return Deny(reason="inner says no")

    result = await make(project, plugins=[DenyAll()]).execute(call(command="ls"))
    assert error_text(result) == "Error: inner says no"


@pytest.mark.anyio
async def test_ask_without_an_approval_service_fails_closed(project):
    settings(project, {"PreToolUse": [group(script(project, "h.py", pre_json("ask", "are you sure?")))]})
    result = await make(project).execute(call())
    assert result.is_error and "are you sure?" in error_text(result)


@pytest.mark.anyio
async def test_ask_goes_to_the_approval_answerer(project):
    settings(project, {"PreToolUse": [group(script(project, "h.py", pre_json("ask", "are you sure?")))]})
    yes = Answer("allowed-once")
    result = await make(project, plugins=[yes]).execute(call(command="ls"))
    assert not result.is_error and yes.asked == ["are you sure?"]
    no = Answer("rejected")
    result = await make(project, plugins=[no]).execute(call(command="ls"))
    assert result.is_error and no.asked == ["are you sure?"]


@pytest.mark.anyio
async def test_legacy_block_decision_denies(project):
    settings(project, {"PreToolUse": [group(script(project, "h.py", "print(json.dumps({'decision': 'block', 'reason': 'legacy'}))"))]})
    assert error_text(await make(project).execute(call())) == "Error: legacy"


@pytest.mark.anyio
async def test_updated_input_is_never_applied_and_denies_with_the_rewrite(project):
    body = "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse', 'permissionDecision': 'allow', 'updatedInput': {'command': 'ls -la'}}}))"
    settings(project, {"PreToolUse": [group(script(project, "h.py", body))]})
    result = await make(project).execute(call(command="ls"))
    assert result.is_error and "updatedInput" in error_text(result) and '{"command": "ls -la"}' in error_text(result)


@pytest.mark.anyio
async def test_the_payload_carries_every_field_and_the_environment(project):
    out = project / "seen.json"
    body = f"import os\ndata['env'] = os.environ['CLAUDE_PROJECT_DIR']; data['wd'] = os.getcwd()\nopen({str(out)!r}, 'w').write(json.dumps(data))\n"
    settings(project, {"PreToolUse": [group(script(project, "h.py", body), matcher="Read")]})
    await make(project).execute(call(name="read", file_path="a.txt"))
    seen = json.loads(out.read_text())
    assert seen["hook_event_name"] == "PreToolUse" and seen["tool_name"] == "Read"
    assert seen["tool_input"] == {"file_path": str(project.resolve() / "a.txt")}
    assert seen["tool_use_id"] == "c1" and seen["session_id"] and seen["transcript_path"] == ""
    assert seen["cwd"] == seen["env"] == seen["wd"] == str(project.resolve())


@pytest.mark.anyio
async def test_matchers_select_hooks_by_claude_code_tool_name(project, tmp_path):
    log = tmp_path / "log"
    hooks = {
        "PreToolUse": [
            group(f"echo exact >> {log}", matcher="Bash"),
            group(f"echo list >> {log}", matcher="Edit | Read"),
            group(f"echo regex >> {log}", matcher="^Re.*"),
            group(f"echo all >> {log}", matcher=None),
            group(f"echo star >> {log}", matcher="*"),
            group(f"echo prefix >> {log}", matcher="Bas"),
        ]
    }
    settings(project, hooks)
    await make(project).execute(call(name="read", file_path="x"))
    assert sorted(log.read_text().split()) == ["all", "list", "regex", "star"]


@pytest.mark.anyio
async def test_configured_tool_names_map_our_tools(project):
    settings(project, {"PreToolUse": [group(script(project, "h.py", "sys.exit(2)"), matcher="Shell")]})
    result = await make(project, {"tool_names": {"bash": "Shell"}}).execute(call())
    assert result.is_error


@pytest.mark.anyio
async def test_parallel_hooks_are_merged_deny_wins(project):
    commands = [script(project, f"h{i}.py", "time.sleep(0.2)\n" + pre_json(d, d)) for i, d in enumerate(["allow", "ask", "deny", "allow"])]
    settings(project, {"PreToolUse": [group(*commands)]})
    harness = make(project)
    start = time.monotonic()
    result = await harness.execute(call())
    elapsed = time.monotonic() - start
    assert error_text(result) == "Error: deny"
    assert elapsed < 0.6, f"4 hooks sleeping 0.2 s took {elapsed:.2f} s"


@pytest.mark.anyio
async def test_hooks_from_user_project_and_local_files_add_up_and_identical_ones_run_once(project, home, tmp_path):
    log = tmp_path / "log"
    (home / ".claude").mkdir()
    settings(home, {"PreToolUse": [group(f"echo user >> {log}")]})
    settings(project, {"PreToolUse": [group(f"echo project >> {log}"), group(f"echo user >> {log}")]})
    settings(project, {"PreToolUse": [group(f"echo local >> {log}")]}, file=".claude/settings.local.json")
    await make(project).execute(call())
    assert sorted(log.read_text().split()) == ["local", "project", "user"]


@pytest.mark.anyio
async def test_a_timeout_is_non_blocking_by_default_and_denies_when_strict(project):
    settings(project, {"PreToolUse": [group("sleep 30", timeout=0.3)]})
    start = time.monotonic()
    assert not (await make(project).execute(call(command="ls"))).is_error
    assert time.monotonic() - start < 5
    result = await make(project, {"strict": True}).execute(call(command="ls"))
    assert result.is_error and "'sleep 30'" in error_text(result) and "timed out" in error_text(result)


@pytest.mark.anyio
@pytest.mark.parametrize(
    "body, problem",
    [
        ("raise RuntimeError('crash')", "status code 1"),
        ("print('{not json')", "not valid JSON"),
        ("sys.stdout.write('{' + 'x' * 3_000_000)", "cap"),
        ("sys.stdout.buffer.write(b'{\\xff\\xfe}')", "not valid JSON"),
    ],
)
async def test_crashes_and_garbage_are_ignored_unless_strict(project, body, problem):
    settings(project, {"PreToolUse": [group(script(project, "h.py", body))]})
    section = {"max_output_bytes": 100_000}
    assert not (await make(project, section).execute(call(command="ls"))).is_error
    result = await make(project, {**section, "strict": True}).execute(call(command="ls"))
    assert result.is_error and problem in error_text(result) and "strict = true" in error_text(result)


@pytest.mark.anyio
async def test_hook_events_are_recorded(project):
    settings(project, {"PreToolUse": [group(script(project, "h.py", "print('x' * 900, file=sys.stderr); sys.exit(2)"))]})
    events = MemoryEventSink()
    await make(project, events=events).execute(call())
    (invoked,) = events.of_kind("hook/invoked")
    (result,) = events.of_kind("hook/result")
    assert invoked["event"] == "PreToolUse" and invoked["matcher"] == "Bash" and invoked["call_id"] == "c1"
    assert result["decision"] == "block" and result["exit_code"] == 2 and result["duration_ms"] > 0
    assert len(result["stderr_summary"]) == 501 and result["stderr_summary"].endswith("…")
    kinds = events.kinds()
    assert kinds.index("hook/invoked") < kinds.index("hook/result")


# --- PostToolUse -------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_post_tool_use_block_replaces_the_result_with_the_reason(project):
    settings(project, {"PostToolUse": [group(script(project, "h.py", "print(json.dumps({'decision': 'block', 'reason': 'leaked a secret'}))"))]})
    result = await make(project).execute(call(command="ls"))
    assert result.is_error and error_text(result) == "leaked a secret"


@pytest.mark.anyio
async def test_post_tool_use_additional_context_and_the_structured_tool_response(project):
    body = (
        "ctx = 'saw ' + data['tool_response']['stdout']\n"
        "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PostToolUse', 'additionalContext': ctx}}))\n"
    )
    settings(project, {"PostToolUse": [group(script(project, "h.py", body))]})
    result = await make(project).execute(call(command="ls"))
    assert not result.is_error
    (context,) = result.additional_contexts
    assert context.content[0].text == "saw ran ls" and context.source == "claude-code"


@pytest.mark.anyio
async def test_post_tool_use_hooks_skip_denied_calls(project, tmp_path):
    log = tmp_path / "log"
    settings(
        project,
        {"PreToolUse": [group(script(project, "h.py", "sys.exit(2)"))], "PostToolUse": [group(f"echo post >> {log}")]},
    )
    assert (await make(project).execute(call())).is_error
    assert not log.exists()


# --- settings and config -----------------------------------------------------------------------


@pytest.mark.anyio
async def test_unknown_keys_events_and_bad_matchers_are_tolerated_and_diagnosed(project):
    data = {
        "model": "whatever",
        "hooks": {
            "Futuristic": [group("true")],
            "Stop": [group("true", matcher=None)],
            "PreToolUse": [
                {"matcher": "(", "hooks": [{"type": "command", "command": "exit 2"}]},
                {"matcher": "Bash", "extra": 1, "hooks": [{"type": "prompt", "prompt": "x"}, {"type": "command", "command": "exit 2", "color": "red"}]},
            ],
        },
    }
    (project / ".claude" / "settings.json").write_text(json.dumps(data))
    harness = make(project)
    assert (await harness.execute(call())).is_error  # the valid hook still runs
    notes = "\n".join(f"{level}: {message}" for _, level, message in harness.diagnose())
    for expected in ("Futuristic", "Stop hooks are not run", "invalid regex", "'prompt'", "'color'", "'extra'"):
        assert expected in notes


@pytest.mark.anyio
async def test_an_unreadable_settings_file_is_skipped_with_a_warning(project):
    (project / ".claude" / "settings.json").write_text("{ nope")
    harness = make(project)
    assert not (await harness.execute(call(command="ls"))).is_error
    assert any(level == "warning" and "could not read" in message for _, level, message in harness.diagnose())


@pytest.mark.anyio
async def test_disabled_runs_no_hooks_and_settings_can_be_overridden(project, tmp_path):
    settings(project, {"PreToolUse": [group("exit 2")]})
    assert not (await make(project, {"enabled": False}).execute(call(command="ls"))).is_error
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"hooks": {"PreToolUse": [group("echo no >&2; exit 2")]}}))
    result = await make(project, {"settings": [str(other)]}).execute(call(command="ls"))
    assert error_text(result) == "Error: no"
    assert not (await make(project, {"settings": []}).execute(call(command="ls"))).is_error


def test_unknown_config_keys_are_errors(project):
    with pytest.raises(ConfigError):
        make(project, {"nope": 1})


@pytest.mark.anyio
async def test_an_aborted_call_kills_its_hook(project):
    settings(project, {"PreToolUse": [group("sleep 30")]})
    harness = make(project)
    the_call = call()

    async def abort_soon():
        await anyio.sleep(0.2)
        the_call.signal.abort("user pressed stop")

    start = time.monotonic()
    async with anyio.create_task_group() as group_:
        group_.start_soon(abort_soon)
        result = await harness.execute(the_call)
    assert result.is_error and time.monotonic() - start < 5


@pytest.mark.anyio
async def test_a_failing_post_tool_use_hook_blocks_only_when_strict(project):
    settings(project, {"PostToolUse": [group("exit 1")]})
    assert not (await make(project).execute(call(command="ls"))).is_error
    result = await make(project, {"strict": True}).execute(call(command="ls"))
    assert result.is_error and "'exit 1'" in error_text(result)


def test_doctor_lists_each_hook_with_its_matcher_and_warns_when_not_strict(project):
    settings(project, {"PreToolUse": [group("echo checking", matcher="Bash|Write")]})
    report = [(level, message) for source, level, message in make(project).diagnose() if source != "core"]
    assert ("info", "PreToolUse [Bash|Write]: echo checking") in report
    assert any(level == "warning" and message.startswith("not strict:") for level, message in report)
    strict = [(level, message) for _s, level, message in make(project, {"strict": True}).diagnose()]
    assert not any(message.startswith("not strict:") for _level, message in strict)
