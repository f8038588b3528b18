"""DESIGN §7 [rules]: deny over ask over allow, then the default; every part of a command is judged.

Through :class:`harness_rules.engine.RuleSet` directly (the plugin and the CLI call the same object).
"""

from __future__ import annotations

import os
from pathlib import Path

import pydantic
import pytest

from harness_core import Harness
from harness_rules import RulesPlugin
from harness_rules.config import RulesConfig
from harness_rules.engine import RuleSet


def ruleset(workspace: Path | str = "/srv/project", **section) -> RuleSet:
    return RuleSet(RulesConfig.model_validate(section), str(workspace))


def decision(rules: RuleSet, command: str, **extra) -> str:
    return rules.decide("bash", {"command": command, **extra}).decision


# --- command patterns ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "command", "matches"),
    [
        ("git status", "git status", True),
        ("git status", "git status -s", False),
        ("git status", "git  status", True),
        ("git diff *", "git diff", True),
        ("git diff *", "git diff HEAD~1", True),
        ("git diff *", "git diffs", False),
        ("git diff:*", "git diff --stat", True),
        ("git * --oneline", "git log --oneline", True),
        ("git * --oneline", "git log --stat", False),
        ("npm run test*", "npm run test:unit", True),
        ("echo \\*", "echo '*'", True),
        ("echo \\*", "echo x", False),
        ("*", "anything at all", True),
    ],
)
def test_a_command_pattern_matches_the_normalized_command(pattern, command, matches):
    rules = ruleset(allow=[f"bash({pattern})"])
    assert (decision(rules, command) == "allow") is matches


def test_a_bare_tool_name_and_star_match_every_call_of_the_tool():
    for rule in ("bash", "bash(*)"):
        assert decision(ruleset(allow=[rule]), "curl example.com") == "allow"
        assert ruleset(allow=[rule]).decide("read", {"file_path": "x"}).decision == "ask"


def test_deny_wins_over_ask_and_ask_over_allow_whatever_their_order():
    rules = ruleset(allow=["bash(git *)"], ask=["bash(git push *)"], deny=["bash(git push --force *)"])
    assert decision(rules, "git status") == "allow"
    assert decision(rules, "git push origin") == "ask"
    assert decision(rules, "git push --force origin") == "deny"


def test_the_verdict_names_the_deciding_rule_and_every_part():
    rules = ruleset(allow=["bash(git status)"], deny=["bash(rm -rf *)"])
    verdict = rules.decide("bash", {"command": "git status && rm -rf /"})
    assert verdict.decision == "deny" and verdict.rule == "bash(rm -rf *)" and verdict.by_deny_rule
    assert verdict.reason == 'denied by rule "bash(rm -rf *)": rm -rf /'
    assert [(p.text, p.decision, p.rule) for p in verdict.parts] == [
        ("git status", "allow", "bash(git status)"),
        ("rm -rf /", "deny", "bash(rm -rf *)"),
    ]


def test_a_command_is_allowed_only_when_every_part_is():
    rules = ruleset(allow=["bash(git status)", "bash(ls *)"])
    assert decision(rules, "git status; ls -la | ls") == "allow"
    verdict = rules.decide("bash", {"command": "git status; curl x"})
    assert verdict.decision == "ask" and verdict.rule is None
    assert verdict.reason == "no rule allows curl x (rules.default is ask)"


def test_default_for_overrides_the_default_per_tool():
    rules = ruleset(default="allow", default_for={"bash": "ask"})
    assert decision(rules, "curl x") == "ask"
    assert rules.decide("fetch", {"url": "x"}).decision == "allow"
    verdict = rules.decide("bash", {"command": "curl x"})
    assert "rules.default_for.bash is ask" in verdict.reason


def test_default_deny_denies_unmatched_calls_but_not_by_a_deny_rule():
    verdict = ruleset(default="deny").decide("bash", {"command": "ls"})
    assert verdict.decision == "deny" and not verdict.by_deny_rule


def test_an_expanded_argument_can_only_be_absorbed_by_a_star():
    rules = ruleset(allow=["bash(echo *)", "bash(git log --oneline)", "bash(cat *.txt)"])
    assert decision(rules, "echo $HOME") == "allow"
    assert decision(rules, "git log $FLAGS") == "ask"
    assert decision(rules, "cat $NAME.txt") == "allow"
    assert decision(rules, "cat notes.$EXT") == "ask"


def test_an_expanded_argument_still_meets_deny_rules_as_spelled():
    assert decision(ruleset(deny=["bash(rm -rf *)"]), "rm -rf $HOME") == "deny"


def test_a_command_named_by_path_meets_deny_rules_but_not_allow_rules():
    rules = ruleset(allow=["bash(git status)"], deny=["bash(rm *)"])
    assert decision(rules, "/bin/rm -rf x") == "deny"
    assert decision(rules, "./git status") == "ask"


def test_harmless_leading_assignments_are_stripped_risky_ones_need_a_full_rule():
    rules = ruleset(allow=["bash(ls *)", "bash(GIT_PAGER=cat git log *)"])
    assert decision(rules, "LANG=C LC_ALL=C ls") == "allow"
    assert decision(rules, "PATH=/tmp/evil ls") == "ask"
    assert decision(rules, "LD_PRELOAD=/tmp/x.so ls") == "ask"
    assert decision(rules, "GIT_PAGER=cat git log -3") == "allow"


def test_wrappers_are_looked_through_for_allow_rules():
    rules = ruleset(allow=["bash(ls *)"])
    for command in ("timeout 5 ls", "timeout -s KILL 5 ls -la", "nice -n 5 ls", "nohup ls", "env LANG=C ls",
                    "stdbuf -o L ls", "command ls", "time ls", "nice -10 ls", "setsid ls", "ionice -c 3 ls"):
        assert decision(rules, command) == "allow", command


def test_sudo_is_allowed_only_by_a_rule_that_names_sudo():
    rules = ruleset(allow=["bash(ls *)", "bash(sudo apt update)"])
    assert decision(rules, "sudo ls") == "ask"
    assert decision(rules, "sudo apt update") == "allow"
    assert decision(ruleset(default="allow"), "sudo ls") == "ask"


def test_wrapper_and_inner_command_both_meet_deny_and_ask_rules():
    rules = ruleset(ask=["bash(nohup *)"], deny=["bash(sudo *)"])
    assert decision(rules, "nohup ls") == "ask"
    assert decision(rules, "sudo ls") == "deny"


def test_command_v_is_not_a_wrapper():
    rules = ruleset(allow=["bash(command -v *)"], deny=["bash(rm *)"])
    assert decision(rules, "command -v rm") == "allow"


def test_a_shell_c_script_is_judged_part_by_part():
    rules = ruleset(allow=["bash(git status)", "bash(ls *)"])
    assert decision(rules, "bash -c 'git status && ls'") == "allow"
    assert decision(rules, "sh -ec 'git status; curl x'") == "ask"
    assert decision(rules, 'bash -c "$SCRIPT"') == "ask"


def test_output_redirection_to_a_file_is_at_least_ask_and_dev_null_is_fine():
    rules = ruleset(allow=["bash(echo *)"])
    assert decision(rules, "echo x > /dev/null 2>&1") == "allow"
    assert decision(rules, "echo x >&2") == "allow"
    assert decision(rules, "echo x > out.txt") == "ask"
    assert decision(rules, "echo x >> out.txt") == "ask"
    assert decision(rules, "echo x &> out.txt") == "ask"
    assert decision(rules, "echo x >&out.txt") == "ask"
    assert decision(rules, "echo x > $TARGET") == "ask"


def test_a_redirection_into_a_protected_path_is_denied_relative_to_the_workdir(tmp_path):
    rules = ruleset(tmp_path, allow=["bash(echo *)"], deny=["write(config/.env)"])
    assert decision(rules, "echo x > config/.env") == "deny"
    assert decision(rules, "echo x > .env", workdir="config") == "deny"
    assert decision(rules, "echo x > .env") == "ask"


def test_an_input_redirection_is_judged_as_a_read_of_the_file(tmp_path):
    rules = ruleset(tmp_path, allow=["bash(cat *)", "read(**)"], deny=["read(**/.env)"])
    assert decision(rules, "cat < .env") == "deny"
    assert decision(rules, "cat < notes.txt") == "allow"
    # No rule allows reading it: the read gets the default, as read(notes.txt) would.
    verdict = ruleset(tmp_path, allow=["bash(cat *)"]).decide("bash", {"command": "cat < notes.txt"})
    assert verdict.decision == "ask"
    assert verdict.reason == "cat < notes.txt reads notes.txt: no rule allows read notes.txt (rules.default is ask)"


def test_a_command_argument_that_is_not_a_string_is_never_allowed():
    rules = ruleset(default="allow")
    assert rules.decide("bash", {"command": ["ls"]}).decision == "ask"
    assert rules.decide("bash", None).decision == "ask"


def test_an_empty_command_gets_the_default():
    assert ruleset(default="allow").decide("bash", {"command": "  # nothing"}).decision == "allow"
    assert ruleset().decide("bash", {"command": ""}).decision == "ask"


# --- file tools -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("glob", "path", "matches"),
    [
        ("**", "a/b/c.py", True),
        ("src/**", "src/a/b.py", True),
        ("src/**", "src", True),
        ("src/*", "src/a/b.py", False),
        ("src/*.py", "src/b.py", True),
        ("**/.env", ".env", True),
        ("**/.env", "a/b/.env", True),
        ("**/.env", "a/b/.envrc", False),
        (".env", "a/.env", False),
        ("src/?.py", "src/a.py", True),
        ("src/[ab].py", "src/c.py", False),
        ("src/**/test_*.py", "src/x/y/test_a.py", True),
    ],
)
def test_a_relative_glob_matches_the_path_relative_to_the_workspace(tmp_path, glob, path, matches):
    rules = ruleset(tmp_path, allow=[f"read({glob})"])
    assert (rules.decide("read", {"file_path": path}).decision == "allow") is matches
    assert (rules.decide("read", {"file_path": str(tmp_path / path)}).decision == "allow") is matches


def test_dot_dot_is_resolved_before_matching_and_outside_paths_never_match_relative_globs(tmp_path):
    rules = ruleset(tmp_path, allow=["read(**)"], deny=["read(secret/**)"])
    assert rules.decide("read", {"file_path": "src/../secret/key"}).decision == "deny"
    assert rules.decide("read", {"file_path": "../outside.txt"}).decision == "ask"
    assert rules.decide("read", {"file_path": "/etc/passwd"}).decision == "ask"


def test_a_symlink_out_of_the_workspace_is_not_allowed_by_a_workspace_glob(tmp_path):
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir(), outside.mkdir()
    (outside / "id_rsa").write_text("key")
    os.symlink(outside, workspace / "link")
    rules = ruleset(workspace, allow=["read(**)"], deny=[f"read({outside}/**)"])
    verdict = rules.decide("read", {"file_path": "link/id_rsa"})
    assert verdict.decision == "deny" and verdict.rule == f"read({outside}/**)"
    assert ruleset(workspace, allow=["read(**)"]).decide("read", {"file_path": "link/id_rsa"}).decision == "ask"


def test_a_symlink_onto_a_denied_path_is_denied(tmp_path):
    (tmp_path / ".env").write_text("SECRET=1")
    os.symlink(tmp_path / ".env", tmp_path / "harmless.txt")
    rules = ruleset(tmp_path, allow=["read(**)"], deny=["read(**/.env)"])
    assert rules.decide("read", {"file_path": "harmless.txt"}).decision == "deny"


def test_absolute_and_home_globs_name_outside_paths(tmp_path):
    home = Path(os.path.expanduser("~"))
    rules = ruleset(tmp_path, allow=["read(/etc/hosts)"], deny=["read(~/.ssh/**)"])
    assert rules.decide("read", {"file_path": "/etc/hosts"}).decision == "allow"
    assert rules.decide("read", {"file_path": str(home / ".ssh" / "id_rsa")}).decision == "deny"
    assert rules.decide("read", {"file_path": "~/.ssh/id_rsa"}).decision == "deny"


def test_a_file_call_without_a_path_string_is_never_allowed(tmp_path):
    rules = ruleset(tmp_path, default="allow")
    assert rules.decide("read", {"file_path": 3}).decision == "ask"
    assert rules.decide("write", {}).decision == "ask"


def test_the_path_argument_of_a_file_tool_is_configurable(tmp_path):
    rules = ruleset(tmp_path, path_tools={"open": "path"}, deny=["open(**/.env)"])
    assert rules.decide("open", {"path": "a/.env"}).decision == "deny"
    assert rules.decide("read", {"file_path": "a/.env"}).decision == "ask"  # no longer a file tool


# --- other tools ----------------------------------------------------------------------------------


def test_argument_conditions_match_other_tools():
    rules = ruleset(allow=["fetch(url=https://docs.python.org/*)"], deny=["fetch(url=*://localhost*)"],
                    ask=["deploy(env=prod, force=true)"])
    assert rules.decide("fetch", {"url": "https://docs.python.org/3/"}).decision == "allow"
    assert rules.decide("fetch", {"url": "http://localhost:8080"}).decision == "deny"
    assert rules.decide("fetch", {"url": "https://example.com"}).decision == "ask"
    assert rules.decide("deploy", {"env": "prod", "force": True}).decision == "ask"
    assert rules.decide("fetch", {}).decision == "ask"


def test_a_tool_name_glob_names_a_family_of_tools():
    rules = ruleset(default="allow", deny=["mcp__github__*"])
    assert rules.decide("mcp__github__push", {}).decision == "deny"
    assert rules.decide("mcp__slack__post", {}).decision == "allow"


# --- examples ---------------------------------------------------------------------------------------


def test_examples_that_hold_report_no_failure():
    rules = ruleset(
        allow=["bash(git diff *)", "read(src/**)"],
        deny=["bash(rm -rf *)"],
        examples=[
            {"rule": "bash(git diff *)", "match": ["git diff HEAD~1", "git diff"], "not_match": ["git diff; rm -rf /"]},
            {"rule": "bash(rm -rf *)", "match": ["true && rm -rf /", "sudo rm -rf /"], "not_match": ["rm -r x"]},
            {"rule": "read(src/**)", "match": ["src/a.py"], "not_match": ["../src/a.py", "docs/x.md"]},
        ],
    )
    assert rules.examples_failures() == []


def test_each_failing_example_is_named_with_the_reason():
    rules = ruleset(
        allow=["bash(git diff *)"],
        examples=[
            {"rule": "bash(git diff *)", "match": ["git diff $(curl x)"], "not_match": ["git diff --stat"]},
            {"rule": "bash(git log *)", "match": ["git log"]},
        ],
    )
    failures = rules.examples_failures()
    assert failures == [
        'rules.examples[0] (bash(git diff *)): should match "git diff $(curl x)", but does not '
        '(part "curl x" is not matched)',
        'rules.examples[0] (bash(git diff *)): should not match "git diff --stat", but does',
        "rules.examples[1] (bash(git log *)): the rule is not in rules.allow, rules.ask or rules.deny",
    ]


def test_examples_of_other_tools_are_argument_tables_or_json():
    rules = ruleset(
        allow=["fetch(url=https://x.org/*)"],
        examples=[
            {
                "rule": "fetch(url=https://x.org/*)",
                "match": [{"url": "https://x.org/a"}, '{"url": "https://x.org/"}'],
                "not_match": [{"url": "https://y.org/"}, "not json"],
            }
        ],
    )
    assert rules.examples_failures() == []


# --- cannot_judge ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    ["eval $X", "$CMD status", "$(echo ls) -la", "echo 'unterminated", "for f in *; do echo $f; done",
     "cat <<EOF\nx\nEOF", "echo x > $TARGET", "ls | xargs echo", "bash -c \"$SCRIPT\""],
)
def test_cannot_judge_deny_denies_what_the_rules_cannot_judge(command):
    rules = ruleset(default="allow", cannot_judge="deny", allow=["bash(echo *)"])
    verdict = rules.decide("bash", {"command": command})
    assert verdict.decision == "deny" and not verdict.by_deny_rule and verdict.rule is None, verdict
    assert "cannot judge" in verdict.reason
    assert decision(ruleset(default="allow"), command) == "ask"  # the default value: ask


def test_cannot_judge_deny_leaves_judgeable_commands_to_the_rules():
    rules = ruleset(default="allow", cannot_judge="deny", deny=["bash(rm -rf *)"], ask=["bash(git push *)"])
    assert decision(rules, "echo $(date) > notes.txt") == "allow"
    assert decision(rules, "git push origin") == "ask"
    assert decision(rules, "sudo ls") == "ask"  # needs a rule naming sudo: not a parsing failure
    verdict = rules.decide("bash", {"command": "echo $(rm -rf /)"})
    assert verdict.decision == "deny" and verdict.by_deny_rule
    assert rules.decide("bash", {"command": ["ls"]}).decision == "deny"
    assert rules.decide("write", {"file_path": 3}).decision == "deny"


@pytest.mark.parametrize("value", ["default", "allow", "", 1])
def test_cannot_judge_accepts_only_ask_and_deny(value):
    with pytest.raises(pydantic.ValidationError) as caught:
        RulesConfig.model_validate({"cannot_judge": value})
    (error,) = caught.value.errors()
    assert error["loc"] == ("cannot_judge",)
    assert error["msg"] == 'allowed values are "ask" and "deny" (a command the rules cannot judge is never allowed)'


def test_a_bare_deny_or_ask_rule_covers_every_command_even_one_without_a_command():
    for command in ("> out", "", "for f in x; do :; done", "ls"):
        verdict = ruleset(default="allow", deny=["bash"]).decide("bash", {"command": command})
        assert verdict.decision == "deny" and verdict.by_deny_rule, command
    assert decision(ruleset(default="allow", ask=["bash(*)"]), "< in.txt") == "ask"


def test_the_workspace_can_be_set_relative_to_the_project_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    plugin = RulesPlugin()
    Harness(plugins=[plugin], config={"rules": {"workspace": "sub", "allow": ["read(**)"]}})
    assert plugin.ruleset is not None and plugin.ruleset.workspace == str((tmp_path / "sub").resolve())
    assert plugin.decide("read", {"file_path": "a.txt"}).decision == "allow"
    assert plugin.decide("read", {"file_path": "../a.txt"}).decision == "ask"


def test_a_command_too_long_to_analyse_is_asked_about_never_allowed():
    rules = ruleset(default="allow", allow=["bash(ls *)"])
    verdict = rules.decide("bash", {"command": "ls " + "a" * 40000})
    assert verdict.decision == "ask" and "longer than 32768 characters" in verdict.reason
    assert decision(rules, "env " * 20 + "ls") == "ask"


@pytest.mark.parametrize(
    "command",
    ["rg --pre ./evil pattern", "rg --pre=./evil x", "git -c core.pager=evil log", "git -ccore.pager=evil log",
     "tar -I ./evil -xf a.tar", "tar --to-command=evil -xf a.tar", "sort --compress-program=evil x",
     "rsync -e ./evil a b", "man -P evil ls"],
)
def test_options_that_run_another_program_are_not_allowed_by_a_rule_for_the_command(command):
    rules = ruleset(allow=["bash(rg *)", "bash(git *)", "bash(tar *)", "bash(sort *)", "bash(rsync *)", "bash(man *)"])
    assert decision(rules, command) == "ask"


def test_wrappers_stop_reading_options_at_their_first_operand():
    rules = ruleset(deny=["bash(-i *)"], allow=["bash(ls *)"])
    assert decision(rules, "env A=1 -i x") == "deny"  # env runs the program "-i"
    assert decision(rules, "env -i ls") == "allow"
