"""Differential checks against real bash: the rules see every command bash would run.

Commands are built at random from shell tokens (operators, quotes, substitutions, escapes, line
continuations, redirections, keywords, wrappers). Stub programs ``ok``, ``bad`` and ``sh`` record
each run in a log, and bash runs the command with only the stubs on ``PATH``:

- with ``allow = ["bash(ok *)"]`` and ``default = "deny"``, a command the rules allow runs nothing
  but ``ok`` and writes no file;
- with ``deny = ["bash(bad *)"]`` and ``default = "allow"``, a command that runs ``bad`` is never
  allowed;
- with ``allow = ["bash(ok *)", "write(out)"]`` and ``default = "deny"``, a command the rules allow
  runs nothing but ``ok`` and writes no file but ``out`` (in the workspace, and nothing beside it);
- with ``deny = ["bash(bad *)", "write(**/secret)"]`` and ``default = "allow"``, a command the
  rules allow (redirections and substitutions included) never runs ``bad`` and never creates
  ``secret``; the same with real ``sort``, ``find``, ``tee`` and ``git`` and their file-writing
  options (``sort -o``, ``find -fprint``, ``git diff --output``);
- parameter expansions with operators and quotes (``${x:-'}'}``, ``${x@P}``, ``${!x}``,
  ``$((x))``, ``$'\\x24(...)'``) never hide a command from an allow rule;
- with here-documents and line continuations (and nothing computed), a command that runs ``bad``
  is denied by ``bash(bad *)``, not merely asked about;
- ``$'...'`` escapes (``\\c``, octal above 0o377, ``\\0``, ``\\x``, ``\\u``) and brace groups
  with quotes, backslashes or long text never hide a program or a written file from the rules, and
  ``bad`` spelled with octal or hex escapes (or cut at a NUL) is denied by ``bash(bad *)``.

``HARNESS_DIFFERENTIAL_EXAMPLES`` raises the number of examples of each check (for a long local run).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness_rules.config import RulesConfig
from harness_rules.engine import RuleSet

BASH = shutil.which("bash")
TOKENS = [
    "ok", "bad", "b\\ad", "'bad'", "ok", " ", " ", "x", ";", "&&", "||", "|", "&", "\n", "\\\n", "$(", ")", "(",
    "`", "'", '"', "\\", "#", "{", "}", "$", "=", ">", "<", "2>&1", "*", "${", "$'\\x62ad'", "-c", "sh", "b", "ad",
]
RULES = RuleSet(RulesConfig(default="deny", allow=["bash(ok *)"]), "/nonexistent")
DENY_RULES = RuleSet(RulesConfig(default="allow", deny=["bash(bad *)"]), "/nonexistent")
#: Redirections, substitutions and folder changes, for the write invariants.
WRITE_TOKENS = [
    " > out", ">>out", " > secret", ">secret", "2>secret", "&>secret", "<>secret", " > 'sec'ret", "> sec\\\nret",
    " > s*", " > $F", " > out", "cd sub;", "cd sub && ", "echo ", "$(", "`", ")", ">(", "<(", "ok ", "bad ", ";", "|",
    "> /dev/null", "2>&1", " x", "\n", "{ ", " }", "(", "$(echo secret)", ">&", "secret", "out", "sub/",
]
#: Parameter expansions with operators, quotes and ANSI-C strings: code that runs without "$(" in sight.
PARAMETER_TOKENS = [
    "${x:-'}'}", '${x:-"}"}', "${x@P}", "${!x}", "${!z}", "$((x))", "$((y))", "$[y]", "${x:=$'\\x24(bad)'}",
    "${y:=$'a[\\x24(bad)]'}", "${z:=$'a[\\x24(bad)]'}", "${x:=$'\\x60bad\\x60'}", "$'\\x24(bad)'", "'}'", "${x:-",
    "}", "${x}", "$x", "${#x}", "${x:-ok}", "${x-'", "printf -v 'a[$(bad)]' 1", "[ -v 'a[$(bad)]' ]",
    "declare -i n=y", "y=$'a[\\x24(bad)]' ", "${x:y}", ">&$'\\x24(bad)'", "<&", ">&", "declare ", "local ", "read ",
    "unset ", "let ", "'a[$(bad)]'", "'a[`bad`]'", "$'\\x60bad\\x60'",
]
EXAMPLES = int(os.environ.get("HARNESS_DIFFERENTIAL_EXAMPLES", "0") or 0)


def examples(default: int) -> int:
    """The example count of a check: ``default``, or ``HARNESS_DIFFERENTIAL_EXAMPLES`` when set."""
    return EXAMPLES or default


MORE_TOKENS = ["if ", "then ", "fi", "do ", "done", "! ", "time ", "env ", "nice ", "timeout 1 ", "command ", "'",
               "\\'", "$'", "\t", "<<<", "<(", ">(", "[", "]", "?", "~", "a=", "$((", "))"]


@pytest.fixture(scope="module")
def stubs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("stubs")
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    for name in ("ok", "bad", "sh"):
        script = bin_dir / name
        log = folder / "log"
        script.write_text(f"#!{BASH}\necho {name} >> {log}\n")
        script.chmod(0o755)
    for name in ("sort", "find", "tee", "git"):
        real = shutil.which(name)
        if real is not None:
            (bin_dir / name).symlink_to(real)
    return folder


@pytest.mark.skipif(BASH is None, reason="needs bash")
@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(st.just("ok "), st.sampled_from(TOKENS + PARAMETER_TOKENS)), min_size=1, max_size=10))
def test_an_allowed_command_runs_nothing_but_allowed_programs(stubs: Path, tokens: list[str]) -> None:
    command = "".join(tokens)
    if RULES.decide("bash", {"command": command}).decision != "allow":
        return
    ran = run(stubs, command)
    assert set(ran) <= {"ok"}, (command, ran)
    assert os.listdir(stubs / "work") == [], command  # an allowed command writes no file


def run(stubs: Path, command: str, *, folders: tuple[str, ...] = ()) -> list[str]:
    """Run ``command`` under bash with only the stubs on PATH; the programs it ran, in order.

    ``folders`` are made (empty) in the workspace first.
    """
    log = stubs / "log"
    log.unlink(missing_ok=True)
    work = stubs / "work"
    work.mkdir(exist_ok=True)
    for folder in (work, stubs):
        for entry in folder.iterdir():
            if entry.name not in ("bin", "work"):
                shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
    for name in folders:
        (work / name).mkdir()
    try:
        subprocess.run(
            [str(BASH), "--norc", "--noprofile", "-c", command],
            cwd=work, env={"PATH": str(stubs / "bin")}, capture_output=True, timeout=10, stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        pass  # whatever ran before the timeout is in the log
    return log.read_text().split() if log.exists() else []


@pytest.mark.skipif(BASH is None, reason="needs bash")
@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(st.just("bad "), st.sampled_from(TOKENS + MORE_TOKENS + PARAMETER_TOKENS)), min_size=1,
                max_size=12))
def test_a_command_that_runs_a_denied_program_is_never_allowed(stubs: Path, tokens: list[str]) -> None:
    command = "".join(tokens)
    if DENY_RULES.decide("bash", {"command": command}).decision != "allow":
        return
    assert "bad" not in run(stubs, command), command


def written(stubs: Path) -> set[str]:
    """The files a command left in the workspace (``sub/x`` for one in a folder), and (``../x``) beside it."""
    work = stubs / "work"
    inside = {os.path.relpath(os.path.join(folder, name), work) for folder, _, names in os.walk(work) for name in names}
    beside = {f"../{name}" for name in os.listdir(stubs) if name not in ("bin", "work", "log")}
    return inside | beside


@pytest.mark.skipif(BASH is None, reason="needs bash")
@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(st.just("ok "), st.sampled_from(WRITE_TOKENS)), min_size=1, max_size=10))
def test_an_allowed_command_writes_only_the_files_write_rules_allow(stubs: Path, tokens: list[str]) -> None:
    command = "".join(tokens)
    rules = RuleSet(RulesConfig(default="deny", allow=["bash(ok *)", "bash(echo *)", "write(out)"]),
                    str(stubs / "work"))
    if rules.decide("bash", {"command": command}).decision != "allow":
        return
    ran = run(stubs, command, folders=("sub",))
    assert set(ran) <= {"ok"}, (command, ran)
    assert written(stubs) <= {"out"}, (command, written(stubs))


@pytest.mark.skipif(BASH is None, reason="needs bash")
@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(WRITE_TOKENS + ["secret"]), min_size=1, max_size=10))
def test_an_allowed_command_never_writes_a_denied_file_or_runs_a_denied_program(stubs: Path, tokens: list[str]) -> None:
    command = "".join(tokens)
    rules = RuleSet(RulesConfig(default="allow", deny=["bash(bad *)", "write(**/secret)"]), str(stubs / "work"))
    if rules.decide("bash", {"command": command}).decision != "allow":
        return
    ran = run(stubs, command, folders=("sub",))
    assert "bad" not in ran, (command, ran)
    assert not any(os.path.basename(name) == "secret" for name in written(stubs)), (command, written(stubs))


#: Real programs and their options that write files, for the write invariant: program, option, target, rest.
TOOL_COMMANDS = st.builds(
    lambda program, option, separator, target, rest: f"{program} {option}{separator}{target}{''.join(rest)}",
    st.sampled_from(["sort", "find .", "tee", "git diff --no-index", "ok", "sort -r", "tee -a"]),
    st.sampled_from(["-o", "--output", "--out", "--outp", "-ro", "-fprint", "-fprintf", "-fls", "-fprint0", "-a",
                     "--", "", "-r", "-name x -fprint"]),
    st.sampled_from([" ", "=", ""]),
    st.sampled_from(["secret", "out", "'secret'", "sec\\\nret", "sub/secret", "./secret", "sub/../secret"]),
    st.lists(st.sampled_from([" /dev/null", " %p", " -name x", ";", "|", " x", "\n", " secret"]), max_size=4),
)


@pytest.mark.skipif(BASH is None, reason="needs bash")
@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(TOOL_COMMANDS)
def test_an_allowed_program_never_writes_a_denied_file_through_its_options(stubs: Path, command: str) -> None:
    rules = RuleSet(RulesConfig(default="allow", deny=["bash(bad *)", "write(**/secret)"]), str(stubs / "work"))
    if rules.decide("bash", {"command": command}).decision != "allow":
        return
    run(stubs, command, folders=("sub",))
    assert not any(os.path.basename(name) == "secret" for name in written(stubs)), (command, written(stubs))


#: Here-documents and continuations, with nothing computed: opener, body lines, what follows.
HEREDOCS = st.builds(
    lambda opener, lines, tail: f"{opener}\n" + "".join(f"{line}\n" for line in lines) + tail,
    st.sampled_from(["ok <<'EOF'", "ok <<EOF", "ok <<-EOF", 'ok <<"EOF"', "ok <<E\\\nOF", "ok <<\\EOF",
                     "ok <<-'EOF'", "ok <<EOF; ok <<'B'"]),
    st.lists(st.sampled_from(["foo\\", "EOF", "\tEOF", "E\\", "OF", "bad", "b\\", "ad", "ok", "x\\\\", "\\", "B",
                              "\tE\\", "bad &\\", "$(bad)", "`bad`"]), max_size=6),
    st.sampled_from(["", "EOF\n", "bad\n", "EOF\nbad\n", "B\nbad\n", "b\\\nad\n"]),
)


@pytest.mark.skipif(BASH is None, reason="needs bash")
@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(HEREDOCS)
def test_a_here_document_never_hides_a_denied_program(stubs: Path, command: str) -> None:
    if "bad" not in run(stubs, command):
        return
    verdict = DENY_RULES.decide("bash", {"command": command})
    assert verdict.decision == "deny" and verdict.by_deny_rule, (command, verdict)


@pytest.mark.parametrize(
    "command",
    ["$'\\x62ad'\\\n$\\\nok *nice 'bad'command \n\\", "b\\\nad x", "ok &\\\n& bad", "ok # x \\\nbad",
     "ok ${x:-'}'} ; bad #'", "ok ${x:=$'\\x24(bad)'} ${x@P}", "ok <<'EOF'\nfoo\\\nEOF\nbad\nEOF\n",
     "ok2>&1y=$'a[\\x24(bad)]' "],
)
def test_found_by_the_differential_check(command):
    assert DENY_RULES.decide("bash", {"command": command}).decision != "allow"


#: ANSI-C escapes and brace groups the reader must decode exactly or refuse to judge.
ESCAPE_TOKENS = [
    "$'\\c'", "$'\\c\\'", "$'\\c''", "'", "#'", "$'\\542ad'", "$'\\142'ad", "$'\\0'", "$'b\\0x'ad", "$'\\x62'ad",
    "$'\\x6'", "$'\\u0062'ad", "$'\\U00000062'ad", "$'\\455'", "$'\\456'", "{\"ok\",bad}", "{'ok',bad}", "{\\ok,bad}",
    "{ok,bad}", "{" + "o" * 70 + ",bad}", "{\"x\",--output=secret}", "$'\\0'bad", " ", " ", ";", "\n", "ok ", "bad",
    " > secret", " > sec$'\\0'ret", " > $'\\563'ecret", " > $'\\x73'ecret", ",", "}", "{", "..",
]


@pytest.mark.skipif(BASH is None, reason="needs bash")
@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(st.just("ok "), st.sampled_from(ESCAPE_TOKENS)), min_size=1, max_size=8))
def test_escapes_and_brace_groups_never_hide_a_program_or_a_file(stubs: Path, tokens: list[str]) -> None:
    command = "".join(tokens)
    if RULES.decide("bash", {"command": command}).decision == "allow":
        ran = run(stubs, command)
        assert set(ran) <= {"ok"}, (command, ran)
        assert os.listdir(stubs / "work") == [], command
    rules = RuleSet(RulesConfig(default="allow", deny=["bash(bad *)", "write(**/secret)"]), str(stubs / "work"))
    if rules.decide("bash", {"command": command}).decision == "allow":
        ran = run(stubs, command, folders=("sub",))
        assert "bad" not in ran, (command, ran)
        assert not any(os.path.basename(name) == "secret" for name in written(stubs)), (command, written(stubs))


#: "bad" spelled with escapes bash decodes to plain ASCII (octal keeps its low byte, NUL cuts the string).
SPELLED_BAD = st.builds(
    lambda first, rest: f"{first}{rest}",
    st.sampled_from(["$'\\142'", "$'\\542'", "$'\\x62'", "$'b\\0zz'", "$'\\142\\0\\141'", "b", "$'\\x62\\x61'"]),
    st.sampled_from(["ad x", "ad", "$'\\141'd", "$'\\541\\544'", "a$'\\x64'", "$'a\\0q'd x"]),
)


@pytest.mark.skipif(BASH is None, reason="needs bash")
@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(SPELLED_BAD)
def test_a_program_spelled_with_escapes_is_denied_by_its_rule(stubs: Path, command: str) -> None:
    if "bad" not in run(stubs, command):
        return
    verdict = DENY_RULES.decide("bash", {"command": command})
    assert verdict.decision == "deny" and verdict.by_deny_rule, (command, verdict)
