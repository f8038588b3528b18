"""`harness hooks test NAME ARGS_JSON`: run the matching PreToolUse hooks and print their verdict."""

from __future__ import annotations

import json

import pytest

from harness_core.cli import main


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_USER_CONFIG", "")
    monkeypatch.setenv("HARNESS_LOAD_PLUGINS", "claude-code")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    folder = tmp_path / "project"
    (folder / ".claude").mkdir(parents=True)
    hooks = {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "grep -q rm && { echo 'no rm' >&2; exit 2; }; exit 0"}]}
        ]
    }
    (folder / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))
    return folder


def hooks_test(project, *args: str) -> int:
    return main(["-C", str(project), "--no-user-config", "hooks", "test", *args])


def test_a_denied_call_prints_the_hooks_and_exits_1(project, capsys):
    assert hooks_test(project, "bash", '{"command": "rm -rf /"}') == 1
    report = json.loads(capsys.readouterr().out)
    assert report["decision"] == "deny" and report["reason"] == "no rm" and report["tool_name"] == "Bash"
    assert [hook["exit_code"] for hook in report["hooks"]] == [2]


def test_an_allowed_call_exits_0(project, capsys):
    assert hooks_test(project, "bash", '{"command": "ls"}') == 0
    assert json.loads(capsys.readouterr().out)["decision"] == "continue"


def test_bad_arguments_are_a_usage_error(project, capsys):
    assert hooks_test(project, "bash", "[1]") == 2
    assert hooks_test(project, "bash", "{nope") == 2
