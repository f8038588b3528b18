"""Rule syntax: patterns compile once, and the wildcard matcher agrees with the regex it replaces."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness_rules.syntax import RuleSyntaxError, Wildcard, compile_command_pattern, compile_path_glob, parse_rule

KINDS = {"command_tools": frozenset({"bash"}), "path_tools": frozenset({"read", "write", "edit"})}


def reference(pattern: str, question: bool) -> re.Pattern[str]:
    return re.compile("".join(".*" if c == "*" else "." if question and c == "?" else re.escape(c) for c in pattern),
                      re.DOTALL)


@settings(max_examples=400, deadline=None)
@given(st.text("ab*? ", max_size=8), st.text("ab? ", max_size=12), st.booleans())
def test_the_wildcard_matcher_agrees_with_the_equivalent_regex(pattern, text, question):
    wildcard = Wildcard(pattern.split("*"), question=question, pattern=pattern)
    assert wildcard.fullmatch(text) == (reference(pattern, question).fullmatch(text) is not None)


def test_a_pathological_text_is_matched_without_backtracking():
    # With a regex of four ".*", this text would take a very long time; pieces are found once each.
    wildcard = compile_command_pattern("git * x * x * x * y")
    assert not wildcard.fullmatch("git " + "x " * 20000)


@pytest.mark.parametrize(
    ("rule", "kind"),
    [("bash", "any"), ("bash(*)", "any"), ("bash(git *)", "command"), ("read(src/**)", "path"),
     ("fetch(url=https://x/*)", "arguments"), ("mcp__github__*", "any"), ("  bash( * )  ", "any")],
)
def test_each_rule_form_parses_to_its_kind(rule, kind):
    assert parse_rule(rule, **KINDS).kind == kind


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ("bash(git", 'no closing ")"'),
        ("bash(echo 'x')", "without quotes"),
        ("bash(ls && rm)", "one rule per command"),
        ("bash(echo x > y)", "one rule per command"),
        ("bash(ls;)", "one rule per command"),
        ("read(a//b)", "empty segment"),
        ("read(a/[bc)", 'unclosed "["'),
        ("read(/)", 'names only the root folder'),
        ("read(~user/x)", 'only "~/"'),
        ("fetch(url)", "key=glob"),
        ("read()", "the pattern is empty"),
        ("Read(x)", "case-sensitive"),
    ],
)
def test_bad_rules_are_refused_with_what_is_wrong(rule, message):
    with pytest.raises(RuleSyntaxError, match=re.escape(message)):
        parse_rule(rule, **KINDS)


def test_a_path_glob_with_a_symlinked_prefix_matches_both_spellings(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    glob = compile_path_glob(f"{tmp_path}/link/**")
    assert glob.matches(f"{real}/a/b", ()) and glob.matches(f"{tmp_path}/link/a", ())
    assert not glob.matches(f"{tmp_path}/other/a", ())
