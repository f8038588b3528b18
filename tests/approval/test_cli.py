"""DESIGN §7 (exit statuses) and §5 (revocable grants): ``harness call`` answered by the approval
plugin's scripted answerer, and ``harness approvals list|revoke`` over the session log.

Each test writes a project into ``tmp_path``: a plugin module with an ``echo`` tool and an
ask-everything listener (a fresh module name per test, so no import is reused), and a
``harness.toml`` that loads them next to the ``approval`` entry point.
"""

from __future__ import annotations

import json
import textwrap
import uuid
from pathlib import Path

import pytest

from harness_core.cli import main

UNAVAILABLE = 'tool "echo" requires approval, but no approval channel is available'

PLUGIN_SOURCE = '''
from harness_core import Ask, hookimpl, tool


@tool
async def echo(text: str) -> str:
    """Echo text back."""
    return text


class Tools:
    @hookimpl
    def harness_register_tools(self, register):
        register(echo)


class AskAll:
    @hookimpl
    async def tools_pre_execute(self, execution, call_next):
        return Ask(reason="the test asks for everything")
'''

GRANTING = """
[approval]
answerers = ["scripted"]
grants = true
[[approval.scripted]]
tool = "echo"
outcome = "allowed-session"
"""

NOT_MATCHING = """
[approval]
answerers = ["scripted"]
[[approval.scripted]]
tool = "bash"
outcome = "allowed-once"
"""


def write_project(project: Path, approval: str) -> None:
    module = f"approval_cli_{uuid.uuid4().hex[:8]}"
    (project / f"{module}.py").write_text(PLUGIN_SOURCE)
    (project / "harness.toml").write_text(
        textwrap.dedent(
            f"""
            [plugins]
            modules = ["{module}:Tools", "{module}:AskAll"]
            """
        )
        + approval
    )


@pytest.fixture
def project(tmp_path, monkeypatch):
    """An empty project folder as the current directory; only the approval entry point loads."""
    monkeypatch.setenv("HARNESS_USER_CONFIG", "")
    monkeypatch.setenv("HARNESS_LOAD_PLUGINS", "approval")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def listed(capsys) -> list[dict]:
    capsys.readouterr()
    assert main(["approvals", "list", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_an_allowed_session_answer_runs_the_call_and_lists_one_grant(project, capsys):
    write_project(project, GRANTING)
    assert main(["call", "echo", '{"text": "hi"}']) == 0
    out = capsys.readouterr().out
    assert "✔ ok" in out and "hi" in out
    grants = listed(capsys)
    assert len(grants) == 1
    (grant,) = grants
    assert grant["tool_name"] == "echo" and grant["call_id"] == "cli-1"
    assert set(grant) == {"id", "tool_name", "fingerprint", "reason", "call_id"}


def test_the_call_with_json_output_reports_success(project, capsys):
    write_project(project, GRANTING)
    assert main(["call", "echo", '{"text": "hi"}', "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["is_error"] is False


def test_the_plain_list_names_the_grant(project, capsys):
    write_project(project, GRANTING)
    assert main(["call", "echo", '{"text": "hi"}']) == 0
    (grant,) = listed(capsys)
    assert main(["approvals", "list"]) == 0
    out = capsys.readouterr().out
    assert grant["id"] in out and "echo" in out


def test_revoking_a_grant_exits_0_and_the_list_is_empty_afterwards(project, capsys):
    write_project(project, GRANTING)
    assert main(["call", "echo", '{"text": "hi"}']) == 0
    (grant,) = listed(capsys)
    assert main(["approvals", "revoke", grant["id"]]) == 0
    assert f"revoked grant {grant['id']}" in capsys.readouterr().out
    assert listed(capsys) == []
    assert main(["approvals", "list"]) == 0
    assert "no active grants in session" in capsys.readouterr().out


def test_the_revocation_is_recorded_in_the_session_log(project, capsys):
    write_project(project, GRANTING)
    assert main(["call", "echo", '{"text": "hi"}']) == 0
    (grant,) = listed(capsys)
    assert main(["approvals", "revoke", grant["id"]]) == 0
    (session,) = (project / ".harness" / "sessions").glob("*.jsonl")
    events = [json.loads(line) for line in session.read_text().splitlines()]
    kinds = [event["type"] for event in events]
    assert kinds.count("approval/asked") == kinds.count("approval/decided") == 1
    assert kinds.index("approval/grant") < kinds.index("tool/result") < kinds.index("approval/revoke")
    revoke = next(event for event in events if event["type"] == "approval/revoke")
    assert revoke["data"] == {"id": grant["id"], "source": "cli"}


def test_revoking_an_unknown_grant_exits_2(project, capsys):
    write_project(project, GRANTING)
    assert main(["call", "echo", '{"text": "hi"}']) == 0
    capsys.readouterr()
    assert main(["approvals", "revoke", "no-such-grant"]) == 2
    assert "no active grant 'no-such-grant'" in capsys.readouterr().err
    assert len(listed(capsys)) == 1


def test_revoking_a_grant_twice_exits_2_the_second_time(project, capsys):
    write_project(project, GRANTING)
    assert main(["call", "echo", '{"text": "hi"}']) == 0
    (grant,) = listed(capsys)
    assert main(["approvals", "revoke", grant["id"]]) == 0
    assert main(["approvals", "revoke", grant["id"]]) == 2


def test_approvals_without_an_action_exits_2(project, capsys):
    write_project(project, GRANTING)
    assert main(["approvals"]) == 2
    assert "choose an action: list or revoke" in capsys.readouterr().err


def test_approvals_list_without_any_session_exits_2(project, capsys):
    write_project(project, GRANTING)
    assert main(["approvals", "list"]) == 2
    assert "no sessions in" in capsys.readouterr().err


def test_a_call_whose_scripted_rules_do_not_match_exits_1_with_the_unavailable_string(project, capsys):
    write_project(project, NOT_MATCHING)
    assert main(["call", "echo", '{"text": "hi"}']) == 1
    assert f"Error: {UNAVAILABLE}" in capsys.readouterr().out


def test_the_unanswered_ask_in_json_output_carries_the_unavailable_string(project, capsys):
    write_project(project, NOT_MATCHING)
    assert main(["call", "echo", '{"text": "hi"}', "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["is_error"] is True and result["error"] == {"message": UNAVAILABLE, "info": None}


def test_a_dry_run_reports_the_ask_and_the_final_denial(project, capsys):
    write_project(project, NOT_MATCHING)
    assert main(["call", "echo", '{"text": "hi"}', "--dry-run", "--json"]) == 1
    assert json.loads(capsys.readouterr().out) == {"pre_execute": "ask", "decision": "deny", "reason": UNAVAILABLE}


def test_policy_never_from_the_command_line_rejects_the_call(project, capsys):
    write_project(project, GRANTING)
    assert main(["-c", 'approval.policy="never"', "call", "echo", '{"text": "hi"}', "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["error"]["message"] == 'the user rejected tool "echo"'


def test_a_bad_approval_section_exits_2(project, capsys):
    write_project(project, '\n[approval]\nanswerers = ["nobody"]\n')
    assert main(["call", "echo", '{"text": "hi"}']) == 2
    assert 'unknown answerer "nobody"' in capsys.readouterr().err
