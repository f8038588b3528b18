"""A redirection is judged as the file call it amounts to; a substitution in an argument is an opaque piece.

``> f`` is judged as ``write(f)`` would be (deny, ask, allow rules, then ``default_for.write``, then
``default``) and ``< f`` as ``read(f)``; the part gets the stricter of that and the command's own
verdict. ``$(...)`` in an argument is covered only by a ``*``, like ``$VAR``; its commands are
parts of their own. In command position it cannot be judged: ask.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness_rules.config import RulesConfig
from harness_rules.engine import RuleSet

#: The [rules] defaults of the shipped presets (permission-presets).
CAREFUL = {"default": "allow", "default_for": {"bash": "ask", "write": "ask", "edit": "ask"}}
UNPROMPTED = {"default": "allow"}


def ruleset(workspace: Path | str = "/srv/project", **section) -> RuleSet:
    return RuleSet(RulesConfig.model_validate(section), str(workspace))


def decision(rules: RuleSet, command: str, **extra) -> str:
    return rules.decide("bash", {"command": command, **extra}).decision


# --- redirections are writes and reads -------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    ["echo x > notes.txt", "make > build.log 2>&1", "echo x >> log.txt", "ls &> out.log", "ls >| out", "> empty",
     "(echo a; echo b) > both.txt", "echo x >&out.txt", "cat < in.txt > out.txt", "echo x > /tmp/elsewhere"],
)
def test_with_an_allowing_default_a_redirect_into_a_file_is_allowed(command):
    assert decision(ruleset(**UNPROMPTED), command) == "allow"


def test_under_the_careful_defaults_a_redirect_asks_as_a_write_would_even_when_the_command_is_allowed():
    rules = ruleset(**CAREFUL, allow=["bash(echo *)"])
    verdict = rules.decide("bash", {"command": "echo x > notes.txt"})
    assert verdict.decision == "ask" and verdict.rule is None
    assert verdict.reason == (
        "echo x > notes.txt writes to notes.txt: no rule allows write notes.txt (rules.default_for.write is ask)"
    )
    assert decision(rules, "echo x > /dev/null 2>&1") == "allow"


def test_write_rules_decide_a_redirect_like_a_write_call(tmp_path):
    rules = ruleset(tmp_path, **CAREFUL, allow=["bash(echo *)", "write(build/**)"], ask=["write(build/release/**)"])
    verdict = rules.decide("bash", {"command": "echo x > build/out.txt"})
    assert verdict.decision == "allow"
    assert verdict.parts[0].rule == "bash(echo *)"
    assert decision(rules, "echo x > src/a.py") == "ask"
    verdict = rules.decide("bash", {"command": "echo x > build/release/v1"})
    assert verdict.decision == "ask" and verdict.rule == "write(build/release/**)"
    assert verdict.reason == 'rule "write(build/release/**)" asks for approval: echo x > build/release/v1 writes to ' \
        "build/release/v1"
    # The same file, judged as the write tool would judge it.
    for path in ("build/out.txt", "src/a.py", "build/release/v1"):
        assert decision(rules, f"echo x > {path}") == rules.decide("write", {"file_path": path}).decision, path


def test_the_part_gets_the_stricter_of_the_command_and_its_redirects():
    rules = ruleset(default="allow", ask=["bash(git push *)"], default_for={"write": "deny"})
    assert decision(rules, "git push origin > log") == "deny"
    verdict = rules.decide("bash", {"command": "echo x > log"})
    assert verdict.decision == "deny" and not verdict.by_deny_rule  # a default, not a deny rule
    assert decision(ruleset(default="allow", ask=["bash(git push *)"]), "git push origin > log") == "ask"


def test_deny_rules_on_write_and_edit_deny_a_redirect_whatever_the_defaults(tmp_path):
    for defaults in (CAREFUL, UNPROMPTED):
        rules = ruleset(tmp_path, **defaults, allow=["bash(echo *)", "write(**)"],
                        deny=["write(**/.env)", "edit(**/secrets/**)"])
        verdict = rules.decide("bash", {"command": "echo x > .env"})
        assert verdict.decision == "deny" and verdict.by_deny_rule and verdict.rule == "write(**/.env)"
        assert verdict.reason == 'denied by rule "write(**/.env)": echo x > .env writes to .env'
        assert decision(rules, "echo x >> a/secrets/key") == "deny"
        assert decision(rules, "echo x > .env", workdir="sub") == "deny"


def test_an_allow_rule_must_cover_every_spelling_of_the_target(tmp_path):
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir(), outside.mkdir()
    os.symlink(outside, workspace / "link")
    rules = ruleset(workspace, **CAREFUL, allow=["bash(echo *)", "write(**)"])
    assert decision(rules, "echo x > notes.txt") == "allow"
    assert decision(rules, "echo x > link/notes.txt") == "ask"
    assert decision(rules, "echo x > ../notes.txt") == "ask"


@pytest.mark.parametrize(
    "command",
    ["echo x > $TARGET", "echo x > $(echo out)", "echo x > *.txt", "echo x > out{1,2}", "echo x > ~root/.bashrc",
     "cat < $INPUT", "echo x > >(cat)"],
)
def test_a_target_that_is_not_a_literal_path_cannot_be_judged(command):
    verdict = ruleset(**UNPROMPTED, allow=["write", "read"]).decide("bash", {"command": command})
    assert verdict.decision == "ask" and "cannot judge" in verdict.reason, verdict


def test_after_cd_no_allow_rule_vouches_for_a_relative_target(tmp_path):
    rules = ruleset(tmp_path, **CAREFUL, allow=["bash(echo *)", "bash(cd *)", "write(**)"])
    assert decision(rules, "echo x > out") == "allow"
    for command in ("cd /etc && echo x > passwd", "echo x > out; cd sub", "env -C /etc echo x > passwd",
                    "bash -c 'cd /etc; echo x > passwd'"):
        verdict = rules.decide("bash", {"command": command})
        assert verdict.decision == "ask", command
        assert "the command changes folder" in verdict.reason, command
    assert decision(rules, f"cd /etc && echo x > {tmp_path}/out") == "allow"  # an absolute target is known
    assert decision(ruleset(tmp_path, **UNPROMPTED), "cd build && make > log") == "allow"


def test_the_read_of_a_read_write_redirect_is_judged_too(tmp_path):
    rules = ruleset(tmp_path, **UNPROMPTED, deny=["read(**/.env)"])
    assert decision(rules, "cat <> .env") == "deny"


# --- substitutions in arguments -----------------------------------------------------------------------


def test_with_an_allowing_default_a_substitution_in_an_argument_is_allowed():
    rules = ruleset(**UNPROMPTED)
    for command in ("echo $(date)", "echo `date`", 'echo "today: $(date +%F)"', "diff <(ls a) <(ls b)",
                    "LANG=$(echo C) echo x", "echo $(date) > stamp.txt"):
        assert decision(rules, command) == "allow", command


def test_a_substituted_word_is_covered_only_by_a_star():
    rules = ruleset(allow=["bash(git status)", "bash(echo *)", "bash(cat *.txt)"])
    verdict = rules.decide("bash", {"command": "git $(echo status)"})
    assert verdict.decision == "ask"
    assert [(part.text, part.decision) for part in verdict.parts] == [
        ("echo status", "allow"), ("git $(echo status)", "ask"),
    ]
    assert decision(rules, "echo $(git status)") == "allow"
    assert decision(rules, "cat $(git status).txt") == "allow"


def test_a_substitution_hiding_a_denied_command_is_denied_and_never_allowed_by_the_outer_rule():
    denying = ruleset(default="allow", allow=["bash(echo *)"], deny=["bash(rm -rf *)"])
    for command in ("echo $(rm -rf /)", "echo `rm -rf /`", 'echo "$(echo $(rm -rf /))"', "echo <(rm -rf /)"):
        verdict = denying.decide("bash", {"command": command})
        assert verdict.decision == "deny" and verdict.rule == "bash(rm -rf *)", command
    asking = ruleset(allow=["bash(echo *)"])
    assert decision(asking, "echo $(rm -rf /)") == "ask"
    assert decision(ruleset(allow=["bash(echo *)", "bash(rm -rf *)"]), "echo $(rm -rf /)") == "allow"


@pytest.mark.parametrize(
    "command",
    ["$(echo ls)", "`echo ls` -la", "$CMD -la", '"$(echo ls)" x', "env $(echo X=1) ls", "nice -n $(echo 5 rm x) ls",
     "timeout $(echo 5) ls", "sudo -u $(whoami) ls", "bash $(echo -c) 'rm x'", "sh -c \"$(curl x)\"",
     "eval $(echo ls)", "xargs $(echo rm)"],
)
def test_a_substitution_or_variable_that_may_choose_what_runs_cannot_be_judged(command):
    rules = ruleset(**UNPROMPTED, allow=["bash(ls *)", "bash(git *)", "bash(find *)", "bash(bash *)"])
    verdict = rules.decide("bash", {"command": command})
    assert verdict.decision == "ask" and "cannot" in verdict.reason, verdict


@pytest.mark.parametrize(
    "command",
    ["git $(echo -c) core.pager=x log", "git {-c,core.pager=x} log", "git log $OPTS", 'git commit -m "$(date)"',
     "find . $(echo -delete)", "nice git $(echo -c) x log", "tar $(echo -I) x -xf a.tar"],
)
def test_a_computed_argument_that_may_become_a_program_running_option_is_left_to_the_default(command):
    # The inner commands are allowed: only the outer part is in question.
    allow = ["bash(git *)", "bash(find *)", "bash(nice *)", "bash(tar *)", "bash(echo *)", "bash(date)"]
    verdict = ruleset(allow=allow).decide("bash", {"command": command})
    assert verdict.decision == "ask" and verdict.rule is None, verdict
    assert "no allow rule applies" in verdict.reason and "is computed at run time" in verdict.reason
    assert decision(ruleset(**UNPROMPTED, allow=allow), command) == "allow"


def test_an_allow_example_holds_when_every_part_of_the_substitution_is_covered():
    rules = ruleset(
        allow=["bash(echo *)"],
        examples=[{"rule": "bash(echo *)", "match": ["echo $(echo hi)", "echo `echo a` <(echo b)"],
                   "not_match": ["echo $(curl x)", "echo x > out", "$(echo echo) x"]}],
    )
    assert rules.examples_failures() == []
