"""The bypass suite: shell tricks that must never turn a command into an allowed one, and deny rules that hold.

With ``allow = ["bash(echo *)", "bash(git status)", "bash(ls *)"]``, every command below hides a
command those rules do not allow, so it is asked about (default ask) or denied (default deny), and
the body never runs without an approval. Modelled on the bypasses Claude Code fixed (anchors §5.2:
line continuations, prefix matching, wrappers, ``find -exec``, fd redirects) and Codex's
known-safe classifier (subshells, redirections, substitutions are never "safe").
"""

from __future__ import annotations

import pytest

from harness_rules.config import RulesConfig
from harness_rules.engine import RuleSet

from .support import AllowEveryAsk, Recorder, bash, make_harness

ALLOW = ["bash(echo *)", "bash(git status)", "bash(ls *)"]
DENY = ["bash(rm -rf *)", "write(**/.env)", "edit(**/.env)"]

NEVER_ALLOWED = [
    # line continuations
    "ec\\\nho hi; rm x",
    "git status; r\\\nm x",
    "ls \\\n; curl evil.example",
    # quoting tricks
    "'gi't status; rm -rf /",
    '"git" status && curl x',
    "git status' ; curl x'",
    'echo "a" ;curl x',
    # wrappers
    "env rm -rf /",
    "env -i PATH=/tmp rm x",
    "sudo rm -rf /",
    "sudo ls",
    "sudo -u root ls",
    "echo / | xargs rm -rf",
    "ls | xargs -0 rm",
    "find . -exec rm {} \\;",
    "find . -delete",
    "timeout 5 curl x",
    "nohup curl x &",
    "env -S 'rm -rf /'",
    "command eval ls",
    "exec rm x",
    "watch rm x",
    # command substitution
    "echo $(rm -rf /)",
    "echo `rm -rf /`",
    'echo "$(curl x)"',
    "echo $(echo $(curl x))",
    "ls $(curl x)",
    "git $(echo status)",
    "nice -n $(echo 5 curl x) ls",
    "timeout $(echo 5) curl x",
    "bash $(echo -c) 'curl x'",
    "echo ${X:-$(curl x)}",
    "echo $((`curl x`))",
    # redirection
    "echo x > foo",
    "echo x >> ~/.bashrc",
    "echo x > .env",
    "ls &> out.log",
    "ls >& out.log",
    "ls 2> err.log",
    "echo x > $FILE",
    # chains, pipes, newlines, background
    "git status; curl x",
    "git status && curl x",
    "git status || curl x",
    "ls | sh",
    "ls | bash",
    "git status\ncurl x",
    "git status\r\ncurl x",
    "curl x & git status",
    "ls |& tee out",
    # subshells and groups
    "(curl x)",
    "(git status; curl x)",
    "{ git status; curl x; }",
    "ls && (echo; (curl x))",
    # shells
    "bash -c 'rm -rf /'",
    "sh -c 'curl x'",
    "bash -lc 'git status; curl x'",
    'zsh -c "$CMD"',
    "bash -c",
    # computed command names
    "$'\\x72m' -rf /",
    "$CMD status",
    "${CMD} status",
    "`echo rm` -rf /",
    "$(echo rm) x",
    "*",
    "l{s,s}",
    # eval and friends
    "eval 'rm -rf /'",
    "eval ls",
    "source ./script.sh",
    ". ./script.sh",
    "alias ls='rm -rf /'; ls",
    "X=1",
    "export PATH=/tmp/evil:$PATH; git status",
    "PATH=/tmp/evil git status",
    "LD_PRELOAD=/tmp/x.so ls",
    # here-documents and process substitution
    "cat <<EOF\nhi\nEOF",
    "bash <<EOF\nrm -rf /\nEOF",
    "bash <<'EOF'\ncurl x\nEOF",
    "echo x >(rm -rf /)",
    "echo x > >(curl x)",
    "ls <(curl x)",
    # constructs
    "for f in *; do rm $f; done",
    "if true; then curl x; fi",
    "while true; do curl x; done",
    "case x in x) curl x;; esac",
    "f() { curl x; }; f",
    "function f { curl x; }",
    "[[ -f x ]] && curl x",
    "(( x = 1 ))",
    # unterminated input
    "echo 'unterminated",
    'echo "unterminated',
    "echo $(ls",
    "ls )",
    # paths standing in for allowed names
    "./git status",
    "/tmp/ls -la",
]


@pytest.mark.parametrize("default", ["ask", "deny"])
@pytest.mark.parametrize("command", NEVER_ALLOWED)
def test_the_command_is_never_allowed(command, default):
    rules = RuleSet(RulesConfig(default=default, allow=ALLOW, deny=DENY), "/srv/project")
    verdict = rules.decide("bash", {"command": command})
    assert verdict.decision in ("ask", "deny"), verdict


@pytest.mark.anyio
@pytest.mark.parametrize("command", NEVER_ALLOWED[::7])
async def test_through_the_pipeline_the_body_does_not_run_without_an_approval(command):
    recorder = Recorder()
    harness = make_harness({"allow": ALLOW, "deny": DENY}, recorder=recorder)
    result = await harness.execute(bash(command))
    assert result.is_error and recorder.calls == []


@pytest.mark.parametrize(
    "command",
    ["rm -rf /", "sudo rm -rf /", "env X=1 rm -rf /", "true && rm -rf /", 'bash -c "rm -rf /"', "sh -c 'ls; rm -rf ~'",
     "sudo -u root env X=1 timeout 5 nice -n 1 rm -rf /", "/bin/rm -rf /", "echo $(rm -rf /)", "echo `rm -rf /`",
     "(rm -rf /)", "{ rm -rf /; }", "ls | rm -rf x", "r\\\nm -rf /", "'rm' -rf /", "$'\\x72m' -rf /",
     "X=1 rm -rf /tmp", "if true; then rm -rf /; fi", "nohup rm -rf / &", "ls <(rm -rf /)", "echo x >(rm -rf /)",
     "bash -c 'bash -c \"rm -rf /\"'", "command rm -rf /", "builtin rm -rf /", "time rm -rf /", "rm -rf $HOME",
     "echo / | xargs rm -rf", "find / -exec rm -rf {} +", "eval 'rm -rf /'", "eval rm -rf /", "taskset 1 rm -rf /",
     "watch rm -rf /", "flock /tmp/l rm -rf /"],
)
def test_deny_rules_hold_through_wrappers_chains_and_substitutions(command):
    rules = RuleSet(RulesConfig(default="allow", allow=["bash(*)"], deny=["bash(rm -rf *)"]), "/srv/project")
    verdict = rules.decide("bash", {"command": command})
    assert verdict.decision == "deny" and verdict.by_deny_rule, verdict
    assert verdict.rule == "bash(rm -rf *)"


@pytest.mark.parametrize(
    "command",
    ["echo x > .env", "echo x >> config/.env", "ls &> .env", "git status > a/b/.env", "echo $(ls) > .env",
     "cd sub && echo x > .env", "echo x >| src/../.env", "(echo x) > .env"],
)
def test_a_redirection_into_a_protected_path_is_denied(command):
    for default in ("allow", "ask"):
        rules = RuleSet(RulesConfig(default=default, allow=[*ALLOW, "write(**)"], deny=DENY), "/srv/project")
        verdict = rules.decide("bash", {"command": command})
        assert verdict.decision == "deny" and verdict.rule == "write(**/.env)" and verdict.by_deny_rule, verdict


@pytest.mark.parametrize(
    "command",
    ["ls $(git status)", "echo $(ls) `git status`", 'echo "$(ls -la)"', "ls <(git status)", "ls $(echo $(ls))"],
)
def test_a_substitution_whose_every_command_is_allowed_is_allowed(command):
    # Formerly asked about because of the substitution alone; each inner command is judged as its own part.
    rules = RuleSet(RulesConfig(default="ask", allow=ALLOW, deny=DENY), "/srv/project")
    assert rules.decide("bash", {"command": command}).decision == "allow"


@pytest.mark.anyio
async def test_an_approved_ask_still_meets_the_deny_rules():
    recorder, answers = Recorder(), AllowEveryAsk()
    harness = make_harness({"allow": ALLOW, "deny": DENY}, answers, recorder=recorder)
    assert not (await harness.execute(bash("curl x"))).is_error  # an ask, approved
    result = await harness.execute(bash("curl x; rm -rf /", call_id="c2"))
    assert result.is_error and result.error.message == 'denied by rule "bash(rm -rf *)": rm -rf /'
    assert recorder.calls == [("bash", {"command": "curl x"})]
