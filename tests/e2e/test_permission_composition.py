"""reference/plugins.md §16: the permission presets composed with the real, installed plugins.

The approval, sandbox, timeout-policy, tools, rules, permission-presets and Claude Code hook
distributions are loaded through their entry points for a project with a ``harness.toml``, and
real ``bash`` commands run through the pipeline: each preset's effect on a write inside and
outside the workspace, an ask with and without an answerer, a Claude Code hook's deny, and a deny
rule that nothing later can lift.
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from harness_core import Allow, ConfigSource, FrozenDict, Harness, MemoryEventSink, ToolCall, ToolResult, hookimpl
from harness_sandbox.selection import default_backends

from ..sandbox_support import outside_folder

PLUGINS = ("approval", "claude-code", "permission-presets", "rules", "sandbox", "timeout-policy", "tools")
#: Lets the ask that the presets' rules make for every bash call through, as a person would.
ANSWER_BASH = """
[approval]
answerers = ["scripted"]
[[approval.scripted]]
tool = "bash"
outcome = "allowed-once"
"""


@pytest.fixture(autouse=True)
def installed_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_LOAD_PLUGINS", ",".join(PLUGINS))
    monkeypatch.setenv("HARNESS_USER_CONFIG", "")


@pytest.fixture(scope="module")
def backend_works() -> bool:
    return any(backend.probe(False, 10.0).usable for backend in default_backends().values())


@pytest.fixture
def confining(backend_works: bool) -> None:
    if not backend_works:
        pytest.skip("no sandbox backend works on this machine (see `harness sandbox`)")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


@pytest.fixture
def outside() -> Iterator[Path]:
    """A fresh folder that no writable root covers (not under the workspace or a temp root)."""
    with outside_folder("harness-presets-e2e-") as folder:
        yield folder


def start(
    folder: Path, toml: str, *overrides: str, user_file: Path | None = None, plugins: tuple[object, ...] = ()
) -> Harness:
    (folder / "harness.toml").write_text(textwrap.dedent(toml), encoding="utf-8")
    source = ConfigSource.for_project(folder, overrides, user_file=user_file if user_file is not None else False)
    return Harness(plugins=plugins, config=source, load_entrypoints=True, events=MemoryEventSink())


def bash(harness: Harness, command: str) -> ToolResult:
    async def run() -> ToolResult:
        async with harness:
            return await harness.execute(
                ToolCall(call_id="c1", name="bash", arguments={"command": command, "description": "e2e"}, agent="main")
            )

    return anyio.run(run)


def log(harness: Harness) -> MemoryEventSink:
    """The in-memory session log ``start`` gave the harness."""
    sink = harness.events
    assert isinstance(sink, MemoryEventSink)
    return sink


def text(result: ToolResult) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def touch(target: Path) -> str:
    return f"touch {target}"


def redirect(target: Path) -> str:
    # A redirect into a file is judged as a write of that file (rules.default_for.write, write rules).
    return f"echo written > {target}"


def succeeded(result: ToolResult) -> bool:
    value = result.value
    return not result.is_error and isinstance(value, dict | FrozenDict) and value["exit_code"] == 0


# --- each preset on a real bash write --------------------------------------------------------------


def test_read_only_denies_a_write_inside_and_outside_the_workspace_with_the_sandbox_marker(
    workspace: Path, outside: Path, confining: None
) -> None:
    for target in (workspace / "inside.txt", outside / "outside.txt"):
        harness = start(workspace, 'preset = "read-only"\n' + ANSWER_BASH)
        result = bash(harness, touch(target))
        assert "[sandbox: file access denied under read-only mode]" in text(result)
        assert not target.exists()
        # The preset's rules asked first, and the scripted answer let the command run (into the sandbox).
        assert [event["outcome"] for event in log(harness).of_kind("approval/decided")] == ["allowed-once"]


def test_workspace_write_writes_inside_and_the_sandbox_denies_outside(
    workspace: Path, outside: Path, confining: None
) -> None:
    inside = bash(start(workspace, 'preset = "workspace-write"\n' + ANSWER_BASH), redirect(workspace / "inside.txt"))
    assert succeeded(inside), text(inside)
    assert (workspace / "inside.txt").read_text() == "written\n"
    denied = bash(start(workspace, 'preset = "workspace-write"\n' + ANSWER_BASH), touch(outside / "outside.txt"))
    assert "[sandbox: file access denied under workspace-write mode]" in text(denied)
    assert not (outside / "outside.txt").exists()


def test_danger_full_access_writes_inside_and_outside_without_asking(workspace: Path, outside: Path) -> None:
    # No answerer at all: approval "never" and rules that ask nothing, so nobody is asked.
    toml = 'preset = "danger-full-access"\n[approval]\nanswerers = []\n'
    for write in (touch, redirect):
        for target in (workspace / f"inside-{write.__name__}.txt", outside / f"outside-{write.__name__}.txt"):
            harness = start(workspace, toml)
            result = bash(harness, write(target))
            assert succeeded(result), text(result)
            assert target.exists()
            assert log(harness).of_kind("approval/asked") == []


# --- asks ------------------------------------------------------------------------------------------


def test_a_bash_ask_runs_with_an_answerer_and_fails_closed_without_one(workspace: Path, confining: None) -> None:
    answered = start(workspace, ANSWER_BASH)
    result = bash(answered, "echo hello")
    assert not result.is_error and "hello" in text(result), text(result)
    assert [event["outcome"] for event in log(answered).of_kind("approval/decided")] == ["allowed-once"]

    unanswered = start(workspace, "[approval]\nanswerers = []\n")
    result = bash(unanswered, "echo hello")
    assert result.is_error
    assert (
        result.error is not None and "requires approval, but no approval channel is available" in result.error.message
    )
    assert [event["outcome"] for event in log(unanswered).of_kind("approval/decided")] == ["unavailable"]


def test_under_danger_full_access_an_ask_is_rejected_without_consulting_anyone(workspace: Path) -> None:
    # A rule that asks, under approval "never": the ask is rejected at once, even with an answerer.
    harness = start(workspace, 'preset = "danger-full-access"\n[rules]\nask = ["bash(echo *)"]\n' + ANSWER_BASH)
    result = bash(harness, "echo hello")
    assert result.is_error and result.error is not None
    assert result.error.message == 'the user rejected tool "bash"'


# --- a Claude Code hook's deny ------------------------------------------------------------------------


def test_a_claude_code_pre_tool_use_hook_denies_under_every_preset(workspace: Path, outside: Path) -> None:
    hook = workspace / "deny_hook.py"
    hook.write_text(
        "import json, sys\n"
        "data = json.load(sys.stdin)\n"
        "if 'forbidden' in data['tool_input'].get('command', ''):\n"
        "    print('no forbidden commands here', file=sys.stderr)\n"
        "    sys.exit(2)\n"
    )
    (workspace / ".claude").mkdir()
    settings = {
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": f"{sys.executable} {hook}"}]}]
        }
    }
    (workspace / ".claude" / "settings.json").write_text(json.dumps(settings))
    for preset in ("read-only", "workspace-write", "danger-full-access"):
        harness = start(workspace, f'preset = "{preset}"\n' + ANSWER_BASH)
        target = outside / f"{preset}.txt"
        result = bash(harness, f"echo forbidden > {target}")
        assert result.is_error and result.error is not None, preset
        assert "no forbidden commands here" in result.error.message, (preset, result.error.message)
        assert not target.exists()
        assert log(harness).of_kind("approval/asked") == []


# --- a deny nothing can lift ----------------------------------------------------------------------------


class AllowEverything:
    """A tryfirst pre-execute listener that allows every call without asking the others."""

    @hookimpl(tryfirst=True)
    def tools_pre_execute(self) -> Allow:
        return Allow()


DENIED_RULE = "bash(echo denied*)"


def test_a_deny_rule_survives_presets_later_layers_and_a_tryfirst_allow(workspace: Path, tmp_path: Path) -> None:
    locked = f'[presets.locked]\nextends = ["danger-full-access"]\nrules.deny = ["{DENIED_RULE}"]\n'
    user_file = tmp_path / "user.toml"
    user_file.write_text(f'[rules]\ndeny = ["{DENIED_RULE}"]\n')
    lift = '[rules]\ndeny = []\ndefault = "allow"\n'
    cases: list[tuple[str, str, tuple[str, ...], Path | None, tuple[Any, ...]]] = [
        # A preset's deny: the project file and -c try to clear it.
        ("preset", 'preset = "locked"\n' + locked + lift, ("rules.deny=[]",), None, ()),
        # The user file's deny under the most permissive preset: the project file and -c try.
        ("user file", 'preset = "danger-full-access"\n' + lift, ("rules.deny=[]",), user_file, ()),
        # The project file's deny: -c tries.
        ("-c", f'preset = "danger-full-access"\n[rules]\ndeny = ["{DENIED_RULE}"]\n', ("rules.deny=[]",), None, ()),
        # A listener that allows everything, first, without asking the others.
        (
            "tryfirst",
            f'preset = "danger-full-access"\n[rules]\ndeny = ["{DENIED_RULE}"]\n',
            (),
            None,
            (AllowEverything(),),
        ),
    ]
    for label, toml, overrides, user, plugins in cases:
        harness = start(workspace, toml + ANSWER_BASH, *overrides, user_file=user, plugins=plugins)
        assert DENIED_RULE in harness.config.section("rules").deny, label
        result = bash(harness, f"echo denied > {workspace / 'denied.txt'}")
        assert result.is_error, (label, text(result))
        assert not (workspace / "denied.txt").exists(), label


def test_under_danger_full_access_redirects_and_substitutions_run_and_only_what_cannot_be_judged_is_rejected(
    workspace: Path,
) -> None:
    # A redirect is a write, which danger-full-access allows; a substitution in an argument is judged
    # by its own commands. No answerer is consulted under approval "never".
    harness = start(workspace, 'preset = "danger-full-access"\n' + ANSWER_BASH)
    target = workspace / "redirected.txt"
    result = bash(harness, f"echo $(echo written) > {target} && cat < {target} >> {workspace / 'copy.txt'}")
    assert succeeded(result), text(result)
    assert target.read_text() == (workspace / "copy.txt").read_text() == "written\n"
    assert log(harness).of_kind("approval/asked") == []
    # A command name computed at run time cannot be judged: asked about, so rejected under "never".
    harness = start(workspace, 'preset = "danger-full-access"\n' + ANSWER_BASH)
    result = bash(harness, f"$(echo touch) {workspace / 'computed.txt'}")
    assert result.is_error and result.error is not None
    assert result.error.message == 'the user rejected tool "bash"'
    assert not (workspace / "computed.txt").exists()
    assert [event["outcome"] for event in log(harness).of_kind("approval/decided")] == ["rejected"]
    # A write deny rule still denies the same redirect.
    harness = start(workspace, 'preset = "danger-full-access"\n[rules]\ndeny = ["write(**/.env)"]\n')
    result = bash(harness, "echo SECRET=1 > .env")
    assert result.is_error and result.error is not None
    assert result.error.message == 'denied by rule "write(**/.env)": echo SECRET=1 > .env writes to .env'
    assert not (workspace / ".env").exists()
