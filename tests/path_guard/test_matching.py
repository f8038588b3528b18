"""harness_path_guard.matching: the glob translation (pathlib's full_match semantics) and lexical normalisation."""

from __future__ import annotations

import re

import pytest

from harness_path_guard.matching import DenyMatcher, PatternError, collapse, compile_pattern, locate, translate


def matches(pattern: str, path: str) -> bool:
    return compile_pattern(pattern).fullmatch(path) is not None


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*", "a", True),
        ("*", ".hidden", True),  # no special case for dot files, as in pathlib
        ("*", "a/b", False),
        ("a/*", "a/b", True),
        ("a/*", "a/b/c", False),
        ("**", "a/b/c", True),
        ("**/c", "c", True),
        ("**/c", "a/b/c", True),
        ("**/c", "a/bc", False),
        ("a/**", "a", True),
        ("a/**", "a/b/c", True),
        ("a/**", "ab", False),
        ("a/**/c", "a/c", True),
        ("a/**/c", "a/x/y/c", True),
        ("a/**/c", "a/x/y/cd", False),
        ("a/**/**/c", "a/c", True),
        ("a**b", "axxb", True),  # ** inside a segment is a plain *
        ("a**b", "ax/xb", False),
        ("?", "a", True),
        ("?", "/", False),
        ("[ab].txt", "a.txt", True),
        ("[ab].txt", "c.txt", False),
        ("[!ab].txt", "c.txt", True),
        ("[!ab].txt", "a.txt", False),
        ("[]].txt", "].txt", True),
        ("[a-c]", "b", True),
        ("[^a]", "^", True),  # "^" is a member, not a negation (fnmatch's rule)
        ("a.b", "axb", False),  # regex syntax is literal
        ("(x)+", "(x)+", True),
        ("/etc/*", "/etc/passwd", True),
        ("/etc/*", "etc/passwd", False),
        ("/**", "/", True),
        ("**/.env", "a\n/.env", True),  # a newline in a file name does not hide the rest
    ],
)
def test_globs_match_whole_paths_segment_by_segment(pattern, path, expected) -> None:
    assert matches(pattern, path) is expected


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("", "empty pattern"),
        ("/", "file-system root"),
        ("a//b", "empty segment"),
        ("secrets/", "empty segment"),
        ("a/../b", '".." segment'),
        ("./a", '"." segment'),
        ("[ab", 'unclosed "["'),
        ("[z-a]", "not a valid glob"),
    ],
)
def test_patterns_that_could_never_match_are_refused_with_a_reason(pattern, message) -> None:
    with pytest.raises(PatternError, match=re.escape(message)):
        compile_pattern(pattern)


def test_the_translation_is_a_plain_regex() -> None:
    assert translate("**/.env") == r"(?:.*/)?\.env"
    assert translate("secrets/**") == "secrets(?:/.*)?"
    assert translate("/etc/*.conf") == r"/etc/[^/]*\.conf"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/", "/"),
        ("//a//b/", "/a/b"),
        ("/a/./b/.", "/a/b"),
        ("/a/b/../c", "/a/c"),
        ("/../../a", "/a"),
        ("/a/b/../../..", "/"),
    ],
)
def test_collapse_normalises_lexically(path, expected) -> None:
    assert collapse(path) == expected


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("a/b", ("/w/p/a/b", "a/b")),
        ("", ("/w/p", ".")),
        (".", ("/w/p", ".")),
        ("/w/p/a", ("/w/p/a", "a")),
        ("/w/pa", ("/w/pa", None)),  # a sibling sharing the prefix is outside
        ("../x", ("/w/x", None)),
        ("a/../../p/b", ("/w/p/b", "b")),
    ],
)
def test_locate_gives_the_absolute_and_workspace_relative_forms(path, expected) -> None:
    assert locate(path, "/w/p") == expected


def test_with_the_root_as_workspace_every_path_is_inside() -> None:
    assert locate("/etc/passwd", "/") == ("/etc/passwd", "etc/passwd")


def test_the_matcher_reports_the_first_rule_in_configuration_order() -> None:
    matcher = DenyMatcher(["**/*.pem", "secrets/**"], ["/w/p"])
    assert matcher.first_match("secrets/key.pem") == "**/*.pem"
    assert matcher.first_match("secrets/key") == "secrets/**"
    assert matcher.first_match("notes.md") is None
    assert matcher.patterns == ["**/*.pem", "secrets/**"]
