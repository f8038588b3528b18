"""`harness codex-hooks test NAME ARGS_JSON`: run the matching Codex PreToolUse hooks and print the verdict."""

from __future__ import annotations

import json

import pytest

from harness_core.cli import main


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_USER_CONFIG", "")
    monkeypatch.setenv("HARNESS_LOAD_PLUGINS", "codex")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    folder = tmp_path / "project"
    (folder / ".codex").mkdir(parents=True)
    hooks = {
        "PreToolUse": [
            {"matcher": "^Bash$", "hooks": [{"type": "command", "command": "grep -q 'rm -rf' && { echo 'no rm' >&2; exit 2; }; exit 0"}]}
        ]
    }
    (folder / ".codex" / "hooks.json").write_text(json.dumps({"hooks": hooks}))
    return folder


def enable(project) -> None:
    (project / "harness.toml").write_text("[hooks.codex]\nenabled = true\n")


def codex_test(project, *args: str) -> int:
    return main(["-C", str(project), "--no-user-config", "codex-hooks", "test", *args])


def test_a_denied_call_prints_the_hooks_and_exits_1(project, capsys):
    enable(project)
    assert codex_test(project, "bash", '{"command": "rm -rf /"}') == 1
    report = json.loads(capsys.readouterr().out)
    assert report["decision"] == "deny" and report["reason"] == "no rm" and report["tool_name"] == "Bash"
    assert [hook["exit_code"] for hook in report["hooks"]] == [2]


def test_an_allowed_call_exits_0(project, capsys):
    enable(project)
    assert codex_test(project, "bash", '{"command": "ls"}') == 0
    assert json.loads(capsys.readouterr().out)["decision"] == "continue"


def test_disabled_and_bad_arguments_are_usage_errors(project, capsys):
    assert codex_test(project, "bash", '{"command": "ls"}') == 2
    assert "disabled" in capsys.readouterr().err
    enable(project)
    assert codex_test(project, "bash", "[1]") == 2
    assert codex_test(project, "bash", "{nope") == 2
