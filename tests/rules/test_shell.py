"""The shell reader: which simple commands a command line runs, with its words, redirections and problems."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness_rules.shell import Expansion, join_continuations, parse


def words(source: str) -> list[list[str]]:
    """The words of every command, expansions as spelled."""
    return [[word.text() for word in command.words] for command in parse(source).commands]


def texts(source: str) -> list[str]:
    return [command.text for command in parse(source).commands]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("git status", [["git", "status"]]),
        ("git   status\t-s", [["git", "status", "-s"]]),
        ("a && b || c ; d | e |& f & g", [["a"], ["b"], ["c"], ["d"], ["e"], ["f"], ["g"]]),
        ("a\nb\n\nc", [["a"], ["b"], ["c"]]),
        ("'gi't status", [["git", "status"]]),
        ('"git" "sta"tus', [["git", "status"]]),
        ("g\\it st\\ atus", [["git", "st atus"]]),
        ("ec\\\nho hi", [["echo", "hi"]]),
        ("echo a \\\n  b", [["echo", "a", "b"]]),
        ("$'\\x72m' -rf /", [["rm", "-rf", "/"]]),
        ("$'\\162m' x", [["rm", "x"]]),
        ("$'a\\'b'", [["a'b"]]),
        ('echo "a\\"b" "\\$x"', [["echo", 'a"b', "$x"]]),
        ("echo hi # ; rm -rf /", [["echo", "hi"]]),
        ("echo a#b", [["echo", "a#b"]]),
    ],
)
def test_words_are_read_with_quotes_escapes_and_continuations_removed(source, expected):
    assert words(source) == expected


def test_a_single_quoted_word_keeps_dollar_signs_literal():
    (command,) = parse("echo '$(rm -rf /)'").commands
    assert command.words[1].literal() == "$(rm -rf /)"


def test_command_substitutions_are_parsed_and_listed_before_the_outer_command():
    commands = parse("echo $(rm -rf /) `git status`").commands
    assert [(c.origin, c.text) for c in commands] == [
        ("$(...)", "rm -rf /"),
        ("`...`", "git status"),
        ("", "echo $(rm -rf /) `git status`"),
    ]
    outer = commands[-1]
    assert outer.words[1].substitutes() and outer.words[2].substitutes()
    assert outer.words[1].literal() is None


def test_substitutions_inside_double_quotes_are_found():
    assert texts('echo "x $(rm -rf /) y"')[0] == "rm -rf /"


def test_nested_substitutions_are_found_at_every_depth():
    assert "rm -rf /" in texts("echo $(echo $(echo $(rm -rf /)))")


def test_process_substitutions_are_parsed():
    commands = parse("diff <(ls a) >(rm -rf /)").commands
    assert [(c.origin, c.text) for c in commands[:2]] == [("<(...)", "ls a"), (">(...)", "rm -rf /")]


def test_a_subshell_and_a_group_expose_their_commands():
    assert words("(cd a && rm -rf /)") == [["cd", "a"], ["rm", "-rf", "/"]]
    assert words("{ echo a; rm -rf /; }") == [["echo", "a"], ["rm", "-rf", "/"]]


def test_the_redirections_of_a_subshell_are_a_command_of_their_own():
    commands = parse("(echo a) > out").commands
    assert commands[-1].words == () and commands[-1].redirects[0].target.text() == "out"


def test_if_and_while_keywords_are_looked_through():
    assert words("if git status; then rm -rf /; else ls; fi") == [["git", "status"], ["rm", "-rf", "/"], ["ls"]]
    assert words("while true; do rm x; done") == [["true"], ["rm", "x"]]


def test_a_for_loop_is_reported_as_not_analysed_and_its_body_is_still_found():
    commands = parse("for f in *.py; do rm $f; done").commands
    assert commands[0].runs is False and "a `for` loop is not analysed" in commands[0].problems
    assert [w.text() for w in commands[1].words] == ["rm", "$f"]


@pytest.mark.parametrize(
    ("source", "operator", "fd", "target"),
    [
        ("echo x > out", ">", "", "out"),
        ("echo x >>out", ">>", "", "out"),
        ("echo x 2> err", ">", "2", "err"),
        ("echo x 2>&1", ">&", "2", "1"),
        ("echo x &> all", "&>", "", "all"),
        ("echo x &>> all", "&>>", "", "all"),
        ("echo x >| out", ">|", "", "out"),
        ("cat < in", "<", "", "in"),
        ("cat <<< word", "<<<", "", "word"),
    ],
)
def test_redirections_are_separated_from_the_words(source, operator, fd, target):
    (command,) = parse(source).commands
    (redirect,) = command.redirects
    assert (redirect.operator, redirect.fd, redirect.target.text()) == (operator, fd, target)
    assert command.words[0].text() in ("echo", "cat")
    assert all(word.text() != target for word in command.words[1:]) or target == "word"


def test_a_number_that_is_not_glued_to_the_operator_is_a_word():
    (command,) = parse("echo 2 > out").commands
    assert [w.text() for w in command.words] == ["echo", "2"] and command.redirects[0].fd == ""


def test_a_here_document_body_is_skipped_and_reported():
    commands = parse("cat <<EOF\nrm -rf /\nEOF\necho after").commands
    assert [c.text for c in commands] == ["cat <<EOF", "echo after"]
    assert "a here-document feeds text the rules do not analyse" in commands[0].problems


def test_a_here_document_without_its_delimiter_is_a_problem():
    parsed = parse("cat <<EOF\nnever closed")
    assert any("no closing delimiter" in problem for problem in parsed.problems)


def test_leading_assignments_are_kept_apart_from_the_words():
    (command,) = parse("A=1 B='x y' git status").commands
    assert [w.text() for w in command.assignments] == ["A=1", "B=x y"]
    assert [w.text() for w in command.words] == ["git", "status"]


def test_an_assignment_after_the_command_name_is_an_argument():
    (command,) = parse("make A=1").commands
    assert command.assignments == () and [w.text() for w in command.words] == ["make", "A=1"]


@pytest.mark.parametrize(
    ("source", "kind"),
    [("$HOME", "parameter"), ("${HOME}", "parameter"), ("$1", "parameter"), ("*.py", "glob"), ("[ab]c", "glob"),
     ("{a,b}", "brace"), ("{1..3}", "brace"), ("$((1+2))", "arithmetic"), ("$(ls)", "command"), ("`ls`", "command")],
)
def test_expansions_are_marked_so_a_rule_can_tell_them_from_literals(source, kind):
    command = parse(f"echo {source}").commands[-1]  # the outer command comes after nested ones
    word = command.words[1]
    assert word.literal() is None
    assert any(isinstance(s, Expansion) and s.kind == kind for s in word.segments)


@pytest.mark.parametrize("source", ["[", "[ -f x ]", "{", "a{b", "'*'", '"$"', "\\*"])
def test_characters_that_do_not_expand_stay_literal(source):
    command = parse(f"echo {source}").commands[0]
    assert all(word.literal() is not None for word in command.words)


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("echo 'open", "a single quote is never closed"),
        ('echo "open', "a double quote is never closed"),
        ("echo $(ls", 'a "$(...)" is never closed'),
        ("echo `ls", "a backtick command substitution is never closed"),
        ("(ls", 'a subshell "(" is never closed'),
        ("ls )", 'an unmatched ")"'),
        ("echo ${X:-$(rm -rf /)}",
         "the expansion ${X:-$(rm -rf /)} is not analysed (only $NAME, ${NAME}, ${#NAME} and ${NAME:-word} with a "
         "plain word are)"),
    ],
)
def test_what_cannot_be_read_is_a_problem_never_an_exception(source, problem):
    parsed = parse(source)
    assert problem in parsed.problems


def test_arbitrary_bytes_never_raise():
    for source in ["\\", "$", "$'", "$'\\", "$'\\x", "<<", "> ", "((", "$((", "${", "`", "a\\", "&", ";;", "|", "()"]:
        parse(source)


def test_deep_nesting_is_a_problem_not_a_recursion_error():
    parsed = parse("$(" * 200 + "ls" + ")" * 200)
    assert "commands are nested too deeply to analyse" in parsed.problems


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab $'\"\\`(){}[]<>|&;#*?~=!\n\t0123x-cu")), max_size=40))
def test_any_text_is_read_without_raising(source):
    parse(source)


@pytest.mark.parametrize(
    ("source", "joined"),
    [
        ("ec\\\nho", "echo"),
        ("$\\\nHOME", "$HOME"),
        ("a &\\\n& b", "a && b"),
        ('"a\\\nb"', '"ab"'),
        ("'a\\\nb'", "'a\\\nb'"),
        ("$'a\\\nb'", "$'a\\\nb'"),
        ("x # c\\\ny", "x # c\\\ny"),
        ("x\\\\\ny", "x\\\\\ny"),
        ("a\\ #b\\\nc", "a\\ #bc"),
    ],
)
def test_line_continuations_are_removed_where_bash_removes_them(source, joined):
    assert join_continuations(source) == joined


def test_a_continuation_between_dollar_and_name_is_a_parameter():
    (command,) = parse("echo $\\\nHOME").commands
    assert command.words[1].literal() is None
