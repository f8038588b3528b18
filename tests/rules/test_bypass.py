"""The bypass suite: shell tricks that must never turn a command into an allowed one, and deny rules that hold.

With ``allow = ["bash(echo *)", "bash(git status)", "bash(ls *)"]``, every command below hides a
command those rules do not allow, so it is asked about (default ask) or denied (default deny), and
the body never runs without an approval. Modelled on the bypasses Claude Code fixed (anchors §5.2:
line continuations, prefix matching, wrappers, ``find -exec``, fd redirects) and Codex's
known-safe classifier (subshells, redirections, substitutions are never "safe").
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pydantic
import pytest

from harness_core import ConfigSource, Harness, ToolCall, hookimpl
from harness_rules import RulesPlugin
from harness_rules.config import RulesConfig
from harness_rules.engine import RuleSet

from .support import AllowEveryAsk, Recorder, Tools, bash, make_harness

ALLOW = ["bash(echo *)", "bash(git status)", "bash(ls *)"]
DENY = ["bash(rm -rf *)", "write(**/.env)", "edit(**/.env)"]


def assert_never_allowed(command: str, default: str, allow: list[str], deny: list[str]) -> None:
    """The command asks (or, under ``default = "deny"``, is denied): no allow rule lets it through."""
    rules = RuleSet(RulesConfig(default=default, allow=allow, deny=deny), "/srv/project")
    verdict = rules.decide("bash", {"command": command})
    assert verdict.decision in ("ask", "deny"), verdict
    if default == "deny":
        assert verdict.decision == "deny", verdict


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


# --- issue #8: bypasses found by an audit, each confirmed in real bash -----------------------------------------

AUDIT_ALLOW = ["bash(echo *)", "bash(ls *)", "bash(git status)", "bash(git diff *)", "bash(cat *)", "bash(grep *)",
               "bash(sort *)", "bash(sed *)", "bash(awk *)", "bash(less *)", "bash(tar *)", "bash(find *)",
               "bash(printf *)", "bash(declare *)", "bash(test *)", "bash([ *)", "bash(man *)", "bash(vim *)",
               "write(src/**)"]
AUDIT_DENY = ["bash(rm *)", "write(.git/**)", "edit(.git/**)"]

AUDIT_NEVER_ALLOWED = [
    # 1. quotes inside ${...} hiding a chain
    "echo ${x:-'}'} ; rm -rf DIR #'",
    'echo ${x:-"}"} ; rm -rf DIR #"',
    "echo \"${x:-'}'}\" ; touch DIR #'",
    # 2. expansions that run code
    "echo ${x:=$'\\x24(touch /tmp/p1)'} ${x@P}",
    "echo ${y:=$'a[\\x24(touch /tmp/p2)]'} $((y))",
    "echo ${z:=$'a[\\x24(touch /tmp/p3)]'} ${!z}",
    "ls ${x:=$'\\x60touch /tmp/p5\\x60'} ${x@P}",
    "echo $[y]",
    "echo ${a[$(touch p)]}",
    "echo ${x:y}",
    "echo ${x/a/b}",
    "echo ${x^^}",
    "echo ${x:-$'\\x41'}",
    "echo $((y + 1))",
    "echo $((a[1]))",
    "let y",
    "declare 'a[$(touch p)]'",
    "declare -i n=y",
    "printf -v 'a[$(touch p)]' 1",
    "command printf -v 'a[$(touch p)]' 1",
    "printf -v'a[$(touch p)]' 1",
    "[ -v 'a[$(touch p)]' ]",
    "test -v 'a[$(touch p)]'",
    "read 'a[$(touch p)]' < /dev/null",
    "unset 'a[$(touch p)]'",
    "compgen -W '$(touch p)' x",
    "mapfile -C 'touch p' -c 1 arr < /dev/null",
    "hash -p /usr/bin/touch ls; ls p",
    "enable -f ./evil.so evil",
    # 3. options that write files or run programs
    "git diff --output=/tmp/x.diff",
    "git diff --ext-diff",
    "git diff --textconv",
    "git diff --ext=x",
    "git -C /tmp/evil status",
    "git --git-dir=/tmp/evil diff",
    "git --work-tree=/tmp diff",
    "git -c core.pager=touch diff",
    "git diff --exec=x",
    "git diff --upload-pack=x",
    "git grep -O foo",
    "git grep -iO foo",
    "git format-patch -o /tmp HEAD~1",
    "sort -o /tmp/out a",
    "sort --out=/tmp/out a",
    "sort -ro /tmp/out a",
    "sort --compress-prog=touch a",
    "cat a | tee /tmp/out",
    "find . -fprint /tmp/out",
    "find . -fprintf /tmp/out %p",
    "find . -fls /tmp/out",
    "find . -delete",
    "find . -okdir touch {} ;",
    "sed -i s/a/b/ f",
    "sed -ni s/a/b/p f",
    "sed --in-place s/a/b/ f",
    "sed 'w /tmp/out' f",
    "sed 's/a/b/w /tmp/out' f",
    "sed -n '1e touch p' f",
    "sed --expr='w /tmp/out' f",
    "sed 's/a/b/' f -e 'w /tmp/out'",
    "sed -nes/a/b/w f",
    "awk -e '{print}' -e 'BEGIN{system(\"touch p\")}'",
    "gawk --source='BEGIN{system(\"touch p\")}'",
    "sed -f script.sed f",
    "awk '{system(\"touch p\")}' f",
    "awk '{print > \"/tmp/out\"}' f",
    "awk '{print | \"sh\"}' f",
    "awk -f prog.awk f",
    "less '+!touch p' f",
    "less -o /tmp/out f",
    "less --log-file=/tmp/out f",
    "tar -xf a.tar --to-command=sh",
    "tar -I 'sh -c x' -xf a.tar",
    "tar xIf prog a.tar",
    "tar --checkpoint-action=exec=sh -xf a.tar",
    "man -P 'sh -c x' ls",
    "vim -c '!touch p' f",
    "vim '+!touch p' f",
    "echo / | xargs touch",
    "env -S 'touch p'",
    # 4. here-documents with continuations
    "cat <<'EOF'\nfoo\\\nEOF\ntouch /tmp/zz\nEOF",
    "cat <<EOF\nE\\\nOF\ntouch /tmp/zz\nEOF",
    "cat <<EOF\nfoo\\\nEOF\ntouch /tmp/zz\nEOF",
    "cat <<-'EOF'\n\tfoo\\\n\tEOF\ntouch /tmp/zz\nEOF",
    "echo $((1<<2))\\\n; cat <<EOF\nx\nEOF",
    # found by the differential check: bash expands a ">&WORD" target twice
    "echo x >&$'\\x24(touch p)'",
    "echo x >&$'a[\\x24(touch p)]'",
    "echo x >&$'\\x60touch p\\x60'",
    "echo x >&'$(touch p)'",
    "echo x <&'$(touch p)'",
]


@pytest.mark.parametrize("default", ["ask", "deny"])
@pytest.mark.parametrize("command", AUDIT_NEVER_ALLOWED)
def test_the_audit_commands_are_never_allowed(command, default):
    assert_never_allowed(command, default, AUDIT_ALLOW, AUDIT_DENY)


@pytest.mark.parametrize("default", ["ask", "deny"])
@pytest.mark.parametrize(
    ("command", "rule"),
    [
        ("echo ${x:-'}'} ; rm -rf DIR #'", "bash(rm *)"),
        ('echo ${x:-"}"} ; rm -rf DIR #"', "bash(rm *)"),
        ("echo ${x:-$(rm -rf /)}", "bash(rm *)"),
        ('echo "${x:-`rm -rf /`}"', "bash(rm *)"),
        ("cat <<'EOF'\nfoo\\\nEOF\nrm -rf /tmp/zz\nEOF", "bash(rm *)"),
        ("cat <<EOF\nE\\\nOF\nrm -rf /tmp/zz\nEOF", "bash(rm *)"),
        ("cat <<-EOF\n\tfoo\\\\\n\tEOF\nrm -rf /tmp/zz\n", "bash(rm *)"),
        ("git diff --output=.git/hooks/pre-commit", "write(.git/**)"),
        ("git diff --output .git/hooks/pre-commit", "write(.git/**)"),
        ("git diff HEAD --output=src/../.git/config", "write(.git/**)"),
        ("sort -o .git/config a", "write(.git/**)"),
        ("sort --output=.git/config a", "write(.git/**)"),
        ("sort -o.git/config a", "write(.git/**)"),
        ("cat a | tee src/x .git/hooks/pre-commit", "write(.git/**)"),
    ],
)
def test_the_audit_commands_with_a_deny_rule_are_denied(command, rule, default):
    rules = RuleSet(RulesConfig(default=default, allow=AUDIT_ALLOW, deny=AUDIT_DENY), "/srv/project")
    verdict = rules.decide("bash", {"command": command})
    assert verdict.decision == "deny" and verdict.by_deny_rule and verdict.rule == rule, verdict


@pytest.mark.parametrize(
    "command",
    ["echo $HOME ${HOME} ${#HOME} ${X:-foo} ${X-a.b/c} ${X:+on} $((1+2)) ${1} ${@} $# ${#}",
     "git diff --output=src/x.diff", "git diff -C HEAD", "git log -Scode", "sort -o src/out a", "cat a | tee src/out",
     "sed -n 's/a/b/p' f", "sed --sandbox 's/a/b/w x' f", "awk -F: '{print $1}' f",
     "declare -a x", "[ -n \"$x\" ]", "less -R f", "tar -tzf a.tgz", "find . -name '*.py'", "echo ${x:-'}'}"],
)
def test_plain_forms_stay_judgeable(command):
    # What a rule can judge is still allowed by it (the last one: a quoted word, judged as a whole).
    allow = [*AUDIT_ALLOW, "bash(git log *)", "bash(tee *)"]
    rules = RuleSet(RulesConfig(default="ask", allow=allow, deny=AUDIT_DENY), "/srv/project")
    verdict = rules.decide("bash", {"command": command})
    expected = "ask" if command == "echo ${x:-'}'}" else "allow"
    assert verdict.decision == expected, verdict


BASH = shutil.which("bash")


@pytest.mark.skipif(BASH is None, reason="needs bash")
@pytest.mark.parametrize(
    "command",
    [
        "echo ${x:-'}'} ; touch MARK #'",
        'echo ${x:-"}"} ; touch MARK #"',
        "echo ${x:=$'\\x24(touch MARK)'} ${x@P}",
        "echo ${y:=$'a[\\x24(touch MARK)]'} $((y))",
        "echo ${z:=$'a[\\x24(touch MARK)]'} ${!z}",
        "ls ${x:=$'\\x60touch MARK\\x60'} ${x@P}",
        "echo ${y:=$'a[\\x24(touch MARK)]'} $[y]",
        "y=$'a[\\x24(touch MARK)]'; declare -i n=y",
        "printf -v 'a[$(touch MARK)]' 1",
        "printf -v'a[$(touch MARK)]' 1",
        "declare 'a[$(touch MARK)]=1'",
        "read 'a[$(touch MARK)]' <<< x",
        "a=(1); unset 'a[$(touch MARK)]'",
        "[ -v 'a[$(touch MARK)]' ]",
        "cat <<'EOF'\nfoo\\\nEOF\ntouch MARK\nEOF",
        "cat <<EOF\nE\\\nOF\ntouch MARK\nEOF",
        "git diff --no-index --output=MARK /dev/null /dev/null",
        "sort -o MARK /dev/null",
        "echo | tee MARK",
        "printf 'a\\nb\\n' | { mapfile -C 'touch MARK' -c 1 arr; }",
        "hash -p \"$(command -v touch)\" ls; ls MARK",
        "echo x >&$'\\x24(touch MARK)'",
        "echo x >&'`touch MARK`'",
    ],
)
def test_each_audit_command_really_runs_the_hidden_command_and_is_not_allowed(command, tmp_path):
    # The command does what the audit says in real bash (it creates MARK) ...
    subprocess.run([str(BASH), "--norc", "--noprofile", "-c", command], cwd=tmp_path, capture_output=True,
                   timeout=30, stdin=subprocess.DEVNULL, env={"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)})
    if "git" in command and shutil.which("git") is None:
        pytest.skip("needs git")
    assert (tmp_path / "MARK").exists(), command
    # ... and the rules never allow it, and deny it when a deny rule names what it hides.
    rules = RuleSet(RulesConfig(default="ask", allow=AUDIT_ALLOW, deny=["bash(touch *)", "write(MARK)"]), str(tmp_path))
    verdict = rules.decide("bash", {"command": command})
    assert verdict.decision in ("ask", "deny"), verdict
    if "; touch MARK" in command or "\ntouch MARK" in command:  # a plain command the reader must see
        assert verdict.decision == "deny", verdict


# --- issue #8, item 5: no later layer can weaken deny rules ----------------------------------------------------


def test_a_renamed_command_argument_is_checked_in_addition_to_the_built_in_one():
    settings = RulesConfig(default="ask", allow=["bash(echo *)"], deny=["bash(rm *)"], command_tools={"bash": "cmd"})
    rules = RuleSet(settings, "/srv/project")
    for arguments in ({"command": "rm -rf x"}, {"command": "rm -rf x", "cmd": "echo"}, {"cmd": "rm -rf x"},
                      {"cmd": "rm -rf x", "command": "echo"}):
        verdict = rules.decide("bash", arguments)
        assert verdict.decision == "deny" and verdict.rule == "bash(rm *)", (arguments, verdict)
    assert rules.decide("bash", {"cmd": "echo hi"}).decision == "allow"
    assert rules.decide("bash", {"cmd": "echo hi", "command": 3}).decision == "ask"


def test_a_renamed_path_argument_is_checked_in_addition_to_the_built_in_one():
    settings = RulesConfig(default="allow", deny=["write(.git/**)"], path_tools={"write": "path"})
    rules = RuleSet(settings, "/srv/project")
    for arguments in ({"file_path": ".git/config"}, {"file_path": ".git/config", "path": "src/a"},
                      {"path": ".git/config", "file_path": "src/a"}):
        assert rules.decide("write", arguments).decision == "deny", arguments
    assert rules.decide("write", {"path": "src/a"}).decision == "allow"


def test_the_built_in_tools_keep_their_kind_whatever_a_layer_says():
    with pytest.raises(pydantic.ValidationError, match="a tool takes a command or a path"):
        RulesConfig(command_tools={"write": "file_path"}, path_tools={})
    with pytest.raises(pydantic.ValidationError, match="a tool takes a command or a path"):
        RulesConfig(command_tools={}, path_tools={"bash": "command"})


def test_a_moved_workspace_does_not_move_deny_rules():
    rules = RuleSet(RulesConfig(default="allow", deny=["write(.git/**)", "bash(rm *)"]), "/nonexistent",
                    "/srv/project")
    assert rules.decide("write", {"file_path": ".git/config"}).decision == "deny"
    assert rules.decide("write", {"file_path": "/srv/project/.git/config"}).decision == "deny"
    verdict = rules.decide("bash", {"command": "echo x > .git/config"})
    assert verdict.decision == "deny" and verdict.rule == "write(.git/**)", verdict
    verdict = rules.decide("bash", {"command": "echo x > /srv/project/.git/config"})
    assert verdict.decision == "deny", verdict


def _cli(project: Path, *args: str, user_file: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HARNESS_LOAD_PLUGINS": "rules", "HARNESS_USER_CONFIG": user_file}
    return subprocess.run([sys.executable, "-m", "harness_core", "-C", str(project), *args],
                          capture_output=True, text=True, env=env, timeout=120)


PROJECT_RULES = '[rules]\ndefault = "ask"\nallow = ["bash(echo *)"]\ndeny = ["bash(rm *)", "write(.git/**)"]\n'


@pytest.mark.parametrize(
    ("override", "tool", "arguments"),
    [
        ('rules.command_tools.bash="cmd"', "bash", {"command": "rm -rf x"}),
        ('rules.command_tools.bash="cmd"', "bash", {"command": "rm -rf x", "cmd": "echo"}),
        ('rules.command_tools={bash="cmd"}', "bash", {"command": "rm -rf x", "cmd": "echo"}),
        ('rules.path_tools.write="path"', "write", {"file_path": ".git/config", "path": "x"}),
        ('rules.workspace="/nonexistent"', "write", {"file_path": ".git/config"}),
        ('rules.workspace="/nonexistent"', "write", {"file_path": "{project}/.git/config"}),
        ('rules.workspace="/nonexistent"', "bash", {"command": "echo x > {project}/.git/config"}),
        ('rules.workspace="sub"', "bash", {"command": "echo x > ../.git/config"}),
    ],
)
def test_an_override_cannot_lift_a_deny_rule(tmp_path, override, tool, arguments):
    (tmp_path / "harness.toml").write_text(PROJECT_RULES)
    arguments = {key: value.replace("{project}", str(tmp_path)) for key, value in arguments.items()}
    result = _cli(tmp_path, "-c", override, "rules", "explain", tool, json.dumps(arguments), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["decision"] == "deny", result.stdout


@pytest.mark.parametrize(
    ("user_rules", "tool", "arguments"),
    [
        ('[rules]\ncommand_tools = { bash = "cmd" }\n', "bash", {"command": "rm -rf x", "cmd": "echo"}),
        ('[rules]\nworkspace = "/nonexistent"\n', "write", {"file_path": "{project}/.git/config"}),
    ],
)
def test_the_user_file_cannot_lift_a_deny_rule_of_the_project(tmp_path, user_rules, tool, arguments):
    project = tmp_path / "project"
    project.mkdir()
    arguments = {key: value.replace("{project}", str(project)) for key, value in arguments.items()}
    (project / "harness.toml").write_text(PROJECT_RULES)
    user = tmp_path / "user.toml"
    user.write_text(user_rules)
    result = _cli(project, "rules", "explain", tool, json.dumps(arguments), "--json", user_file=str(user))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["decision"] == "deny", result.stdout


class _Preset:
    @hookimpl
    def harness_register_presets(self, register: Any) -> None:
        register("team", {"rules": {"default": "allow", "deny": ["bash(rm *)", "write(.git/**)"]}})


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("project_rules", "name", "arguments"),
    [
        ('command_tools = { bash = "cmd" }', "bash", {"command": "rm -rf x", "cmd": "echo"}),
        ('workspace = "/nonexistent"', "write", {"file_path": "{project}/.git/config"}),
        ('workspace = "/nonexistent"', "bash", {"command": "echo x > {project}/.git/config"}),
    ],
)
async def test_a_project_file_cannot_lift_a_deny_rule_of_a_preset(project_rules, name, arguments, tmp_path):
    (tmp_path / "harness.toml").write_text(f'preset = "team"\n[rules]\n{project_rules}\n')
    recorder = Recorder()
    harness = Harness(plugins=[RulesPlugin(), Tools(recorder), _Preset()],
                      config=ConfigSource.for_project(tmp_path, [], user_file=False))
    arguments = {key: value.replace("{project}", str(tmp_path)) for key, value in arguments.items()}
    result = await harness.execute(ToolCall(call_id="c1", name=name, agent="main", arguments=arguments))
    assert result.is_error and "denied by rule" in result.error.message, result
    assert recorder.calls == []


def test_explain_into_a_closed_pipe_prints_no_traceback(tmp_path):
    (tmp_path / "harness.toml").write_text(PROJECT_RULES)
    command = "; ".join(["echo x"] * 2000)
    env = {**os.environ, "HARNESS_LOAD_PLUGINS": "rules", "HARNESS_USER_CONFIG": ""}
    process = subprocess.Popen(
        [sys.executable, "-m", "harness_core", "-C", str(tmp_path), "rules", "explain", "bash",
         json.dumps({"command": command})],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # the reader is gone before anything is written
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=120) == 0
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr


@pytest.mark.skipif(BASH is None, reason="needs bash")
def test_through_harness_call_with_the_real_bash_tool_the_audit_commands_run_nothing(tmp_path):
    (tmp_path / "harness.toml").write_text(
        '[rules]\ndefault = "ask"\nallow = ["bash(echo *)", "bash(ls *)", "bash(git diff *)", "write(src/**)"]\n'
        'deny = ["bash(rm *)", "bash(touch *)", "write(.git/**)", "edit(.git/**)"]\n'
    )
    (tmp_path / ".git").mkdir()
    env = {**os.environ, "HARNESS_LOAD_PLUGINS": "rules,tools", "HARNESS_USER_CONFIG": ""}
    commands = [
        "echo ${x:-'}'} ; touch MARK1 #'",
        "echo ${x:=$'\\x24(touch MARK2)'} ${x@P}",
        "echo ${y:=$'a[\\x24(touch MARK3)]'} $((y))",
        "ls ${x:=$'\\x60touch MARK4\\x60'} ${x@P}",
        "cat <<'EOF'\nfoo\\\nEOF\ntouch MARK5\nEOF",
        "echo x >&$'\\x24(touch MARK6)'",
        "git diff --no-index --output=.git/MARK7 /dev/null /dev/null",
    ]
    for command in commands:
        completed = subprocess.run(
            [sys.executable, "-m", "harness_core", "-C", str(tmp_path), "call", "bash",
             json.dumps({"command": command}), "--json"],
            capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path,
        )
        assert completed.returncode == 1, (command, completed.stdout, completed.stderr)
    made = sorted(path.name for path in (*tmp_path.iterdir(), *(tmp_path / ".git").iterdir()))
    assert not [name for name in made if name.startswith("MARK")], made


# --- issue: second round of reader bypasses ($'...' escapes, brace groups), each confirmed in real bash ------------

ROUND2_ALLOW = ["bash(echo *)", "bash(ls *)", "bash(git status)", "bash(git diff *)", "bash(git log *)", "bash(cat *)",
                "write(src/**)"]
ROUND2_DENY = ["bash(rm *)", "bash(curl *)", "write(.git/**)", "edit(.git/**)", "write(**/.env)"]

ROUND2_NEVER_ALLOWED = [
    # 1. "\c" in $'...': the string ends at the quote after it
    "echo $'\\c'; touch /tmp/p #'",
    "echo $'\\c'; rm x #'",
    "echo $'\\c' > .env #'",
    # 2. octal escapes keep the low byte, and a NUL cuts the string
    "git diff $'\\455-output=.git/x'",
    "git diff $'\\0'--output=F",
    "echo x >> src/$'\\456\\456'/.git/config; git status",
    "echo x > src/$'\\456\\456'/$'\\456'env",
    "echo $'\\u0041'",
    "echo $'\\U00000041'",
    "echo $'\\377'",
    "echo $'\\xff'",
    # 3. brace groups with quotes, backslashes or long text
    'git diff {"HEAD",--output=/tmp/p}',
    "git diff {'HEAD',--output=/tmp/p}",
    "git diff {\\HEAD,--output=/tmp/p}",
    'git log {"-1",--ext-diff,-p}',
    "git diff {" + "a" * 70 + ",--output=/tmp/p}",
    "git diff {HEAD,--output=/tmp/p}",
    "git diff {$x,--output=/tmp/p}",
    # deny rules that must hold
    "env -S 'rm x'",
    "time -- rm x",
    "time -p -- rm x",
    "$'\\562'm x",
    "$'r\\0abc'm x",
    '{"rm",x}',
    "setpriv rm x",
    # a NUL in a redirection path
    "echo hi > src/$'\\0'x",
]


@pytest.mark.parametrize("default", ["ask", "deny"])
@pytest.mark.parametrize("command", ROUND2_NEVER_ALLOWED)
def test_round2_commands_are_never_allowed(command, default):
    assert_never_allowed(command, default, ROUND2_ALLOW, ROUND2_DENY)


@pytest.mark.parametrize("default", ["ask", "deny"])
@pytest.mark.parametrize(
    ("command", "rule"),
    [
        ("echo $'\\c'; rm x #'", "bash(rm *)"),
        ("echo $'\\c' > .env #'", "write(**/.env)"),
        ("git diff $'\\455-output=.git/x'", "write(.git/**)"),
        ("echo x >> src/$'\\456\\456'/.git/config; git status", "write(.git/**)"),
        ("echo x > src/$'\\456\\456'/$'\\456'env", "write(**/.env)"),
        ("env -S 'rm x'", "bash(rm *)"),
        ("env --split-string='rm -rf /'", "bash(rm *)"),
        ("time -- rm x", "bash(rm *)"),
        ("$'\\562'm x", "bash(rm *)"),
        ("$'r\\0abc'm x", "bash(rm *)"),
        ('{"rm",x}', "bash(rm *)"),
        ("{r,}m x", "bash(rm *)"),
        ("setpriv rm x", "bash(rm *)"),
    ],
)
def test_round2_commands_with_a_deny_rule_are_denied(command, rule, default):
    rules = RuleSet(RulesConfig(default=default, allow=ROUND2_ALLOW, deny=ROUND2_DENY), "/srv/project")
    verdict = rules.decide("bash", {"command": command})
    assert verdict.decision == "deny" and verdict.by_deny_rule and verdict.rule == rule, verdict


@pytest.mark.parametrize(
    "command",
    ["echo $'a\\tb\\x41\\101\\n'", "echo {a,b} x{1..3}", "echo '{\"a\",b}'", "echo {\"a\"}", "echo rm x",
     "git diff HEAD~1 -- src", "find . -name '{x}'", "echo $'\\x4g'"],
)
def test_round2_plain_forms_stay_allowed(command):
    rules = RuleSet(RulesConfig(default="ask", allow=[*ROUND2_ALLOW, "bash(find *)"], deny=ROUND2_DENY),
                    "/srv/project")
    assert rules.decide("bash", {"command": command}).decision == "allow"


@pytest.mark.parametrize("path", ["src/a/\0x", ".git/\0x", "src/\0/../../.git/config"])
def test_a_nul_in_a_path_argument_never_raises(path):
    rules = RuleSet(RulesConfig(default="ask", allow=ROUND2_ALLOW, deny=ROUND2_DENY), "/srv/project")
    verdict = rules.decide("write", {"file_path": path})
    assert verdict.decision == "ask" and "not a path" in verdict.reason, verdict
    # Spellings of a path with a NUL (from a shell word or a working folder) never raise either.
    assert rules.path_candidates(path) and rules.deny_candidates("x", ["/srv/\0project"])
    verdict = rules.decide("bash", {"command": "echo x > y", "workdir": path})
    assert verdict.decision == "ask" and "not a path" in verdict.reason, verdict


def test_explain_of_a_nul_in_a_redirection_is_cannot_judge_not_a_traceback(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "harness.toml").write_text(PROJECT_RULES)
    result = _cli(project, "rules", "explain", "bash", json.dumps({"command": "echo hi > src/$'\\0'x"}))
    assert "Traceback" not in result.stderr, result.stderr
    assert "cannot judge" in result.stdout + result.stderr, (result.stdout, result.stderr)


@pytest.mark.skipif(BASH is None, reason="needs bash")
@pytest.mark.parametrize(
    ("command", "made"),
    [
        ("echo $'\\c'; touch MARK #'", "MARK"),
        ("echo $'\\c' > MARK #'", "MARK"),
        ("git diff --no-index $'\\455-output=MARK' /dev/null /dev/null", "MARK"),
        ("git diff --no-index $'\\0'--output=MARK /dev/null /dev/null", "MARK"),
        ("echo x > $'\\515'ARK", "MARK"),
        ("git diff --no-index {\"/dev/null\",--output=MARK} /dev/null", "MARK"),
        ("git diff --no-index {'/dev/null',--output=MARK} /dev/null", "MARK"),
        ("time -- touch MARK", "MARK"),
        ("$'\\564'ouch MARK", "MARK"),
        ("$'t\\0abc'ouch MARK", "MARK"),
        ("{\"touch\",MARK}", "MARK"),
        ("env -S 'touch MARK'", "MARK"),
    ],
)
def test_each_round2_command_really_runs_in_bash_and_is_not_allowed(command, made, tmp_path):
    if "git" in command and shutil.which("git") is None:
        pytest.skip("needs git")
    subprocess.run([str(BASH), "--norc", "--noprofile", "-c", command], cwd=tmp_path, capture_output=True,
                   timeout=30, stdin=subprocess.DEVNULL, env={"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)})
    assert (tmp_path / made).exists(), command
    rules = RuleSet(RulesConfig(default="ask", allow=[*ROUND2_ALLOW, "bash(git diff *)"],
                                deny=["bash(touch *)", "write(MARK)"]), str(tmp_path))
    verdict = rules.decide("bash", {"command": command})
    assert verdict.decision in ("ask", "deny"), verdict
    if "touch" in command:
        assert verdict.decision == "deny", verdict


# --- Third audit: an allowed builtin that assigns a variable later parts run under ------------------

THIRD_AUDIT_ALLOW = [*AUDIT_ALLOW, "bash(printf *)", "bash(git log *)"]


@pytest.mark.parametrize("default", ["ask", "deny"])
@pytest.mark.parametrize(
    "command",
    [
        # HOME pointed at a folder holding a .gitconfig whose fsmonitor / diff.external runs a command.
        "printf '[core]\\n\\tfsmonitor = touch pwn #\\n' > src/.gitconfig; printf -v HOME %s src; git status",
        "printf -v HOME %s /srv/project/src && git diff --no-index a b",
        "command printf -v HOME %s src; git status",
        "builtin printf -vHOME %s src; git status",
        "printf -v PATH %s src; ls",
        "printf $X %s src; git status",  # a computed argument may spell -v
    ],
)
def test_printf_v_assigning_a_variable_is_never_allowed(command, default):
    assert_never_allowed(command, default, THIRD_AUDIT_ALLOW, AUDIT_DENY)


def test_printf_without_v_stays_allowed():
    rules = RuleSet(RulesConfig(default="ask", allow=THIRD_AUDIT_ALLOW, deny=AUDIT_DENY), "/srv/project")
    assert rules.decide("bash", {"command": "printf '%s\\n' hello"}).decision == "allow"


@pytest.mark.skipif(BASH is None, reason="needs bash")
def test_printf_v_home_really_makes_git_run_a_configured_command(tmp_path):
    # The audit's finding, replayed in real bash: the command must not be allowed.
    (tmp_path / "src").mkdir()
    marker = tmp_path / "pwned"
    command = (
        f"printf '[diff]\\n\\texternal = touch {marker} #\\n' > src/.gitconfig; "
        "printf -v HOME %s \"$PWD/src\"; echo a > a; echo b > b; git diff --no-index a b"
    )
    if shutil.which("git") is None:
        pytest.skip("needs git")
    subprocess.run([BASH, "-c", command], cwd=tmp_path, capture_output=True, timeout=30)
    assert marker.exists(), "bash and git really ran the configured command"
    rules = RuleSet(RulesConfig(default="ask", allow=[*THIRD_AUDIT_ALLOW, "write(**)"], deny=AUDIT_DENY), str(tmp_path))
    assert rules.decide("bash", {"command": command}).decision != "allow"


# --- Fourth audit: where a comment ends, and \" inside backticks -------------------------------------

FOURTH_AUDIT = [
    'echo "`echo \\"\'\\" ; touch /tmp/pwnB1 ; \\"\'\\"`"',
    'echo $"`echo \\"\'\\" ; touch /tmp/pwnD6 ; \\"\'\\"`"',
    'echo "$(true # \\\ntouch /tmp/pwnC1\n)"',
    'echo "$(true\n# \\\ntouch /tmp/pwnC7\n)"',
    'echo "$(echo "x" # \\\ntouch /tmp/pwnC2\n)"',
    'echo $(true)#"\n" # \\\ntouch /tmp/pwnD1',
    'echo $((1))#"\n" # \\\ntouch /tmp/pwnD2',
    'echo <(true)#"\n" # \\\ntouch /tmp/pwnD3',
    'echo $(true)#"\n"\n#\\\ntouch /tmp/pwnD8',
]


@pytest.mark.parametrize("default", ["ask", "deny"])
@pytest.mark.parametrize("command", FOURTH_AUDIT)
def test_the_fourth_audit_commands_are_never_allowed(command, default):
    assert_never_allowed(command, default, ALLOW, DENY)


@pytest.mark.skipif(BASH is None, reason="needs bash")
@pytest.mark.parametrize("command", [FOURTH_AUDIT[0], FOURTH_AUDIT[2], FOURTH_AUDIT[5]])
def test_each_fourth_audit_command_really_runs_the_hidden_command(command, tmp_path):
    marker = tmp_path / "pwned"
    spelled = command.replace(command[command.index("/tmp/pwn") : command.index("/tmp/pwn") + 10], str(marker))
    subprocess.run([BASH, "-c", spelled], cwd=tmp_path, capture_output=True, timeout=30)
    assert marker.exists(), spelled
    rules = RuleSet(RulesConfig(default="ask", allow=ALLOW, deny=DENY), str(tmp_path))
    assert rules.decide("bash", {"command": spelled}).decision != "allow"
