"""Rule syntax: ``tool`` / ``tool(pattern)`` strings parsed and compiled to regexes once, at start-up.

Three pattern kinds, chosen by the tool:

- a **command tool** (``bash``): the pattern is a command glob. ``*`` matches any run of
  characters (spaces and ``/`` included); a trailing `` *`` also matches the command with no
  arguments (``git diff *`` matches ``git diff`` and ``git diff HEAD``, not ``git diffs``);
  ``\\*`` is a literal ``*``. Runs of spaces count as one. Claude Code's ``git diff:*`` is read as
  ``git diff *``.
- a **file tool** (``read``, ``write``, ``edit``): the pattern is a path glob. ``**`` (a whole
  segment) crosses folders, ``*`` and ``?`` stay within one segment, ``[abc]`` is a class. A
  relative glob is matched against the path relative to the workspace root; ``/...`` against the
  absolute path; ``~/...`` against the home folder.
- **any other tool**: ``key=glob`` conditions separated by ``,`` (``\\,`` for a literal comma),
  each matched against that argument (strings as they are, other values as compact JSON);
  ``*`` matches any run of characters, ``?`` one.

``tool`` and ``tool(*)`` match every call of the tool. A tool name may hold ``*``
(``mcp__github__*``) only in those two forms.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "CommandPattern",
    "PathGlob",
    "Rule",
    "RuleSyntaxError",
    "Wildcard",
    "argument_text",
    "compile_command_pattern",
    "compile_path_glob",
    "conditions_match",
    "parse_rule",
]


class RuleSyntaxError(ValueError):
    """Raised when a rule string is not ``tool`` or ``tool(pattern)`` with a valid pattern."""


_TOOL = re.compile(r"[A-Za-z0-9_.:*-]+")
_KEY = re.compile(r"[A-Za-z0-9_.-]+")
#: Words that a single command's text never holds: a rule with them could never match.
_OPERATOR_WORDS = frozenset({";", "&&", "||", "|", "&", "|&", ">", ">>", "<", "<<", "2>", "2>&1", "&>"})


@dataclass(frozen=True, slots=True)
class PathGlob:
    """A compiled path glob: relative ones match workspace-relative paths, others absolute paths."""

    pattern: str
    relative: bool
    regexes: tuple[re.Pattern[str], ...]

    def matches(self, absolute_path: str, roots: tuple[str, ...]) -> bool:
        """Whether ``absolute_path`` (already normalised) matches; outside every root a relative glob never does."""
        if not self.relative:
            return any(regex.fullmatch(absolute_path) for regex in self.regexes)
        for root in roots:
            if absolute_path == root:
                relative = ""
            elif absolute_path.startswith(root.rstrip("/") + "/"):
                relative = absolute_path[len(root.rstrip("/")) + 1 :]
            else:
                continue
            if any(regex.fullmatch(relative) for regex in self.regexes):
                return True
        return False


class Wildcard:
    """A glob with ``*`` (any run of characters) and, optionally, ``?`` (one character).

    Matched in O(len(text) * len(pattern)): the literal pieces between the stars are found left to
    right and never backtracked into, so no text a model writes can make a match slow (a regex
    with several ``.*`` can be).
    """

    __slots__ = ("lengths", "pattern", "pieces")

    def __init__(self, pieces: list[str], *, question: bool, pattern: str) -> None:
        #: The pieces between the stars, each an exact-length regex (``?`` is ``.`` when enabled).
        self.pieces = tuple(
            re.compile("".join("." if question and c == "?" else re.escape(c) for c in piece), re.DOTALL)
            for piece in pieces
        )
        self.lengths = tuple(len(piece) for piece in pieces)
        self.pattern = pattern

    def __repr__(self) -> str:
        return f"Wildcard({self.pattern!r})"

    def fullmatch(self, text: str) -> bool:
        """Whether the whole of ``text`` matches."""
        pieces = self.pieces
        if len(pieces) == 1:
            return pieces[0].fullmatch(text) is not None
        start, end = self.lengths[0], len(text) - self.lengths[-1]
        if end < start or pieces[0].match(text) is None or pieces[-1].fullmatch(text, end) is None:
            return False
        for piece in pieces[1:-1]:
            found = piece.search(text, start, end)
            if found is None:
                return False
            start = found.end()
        return True


@dataclass(frozen=True, slots=True)
class Rule:
    """One parsed rule: its text, the tool it names, and how it matches a call of that tool."""

    text: str
    tool: str
    #: "any", "command", "path" or "arguments".
    kind: str
    command: CommandPattern | None = None
    path: PathGlob | None = None
    conditions: tuple[tuple[str, Wildcard], ...] = ()

    def names(self, tool: str) -> bool:
        """Whether this rule is about calls of ``tool``."""
        if "*" not in self.tool:
            return tool == self.tool
        return re.fullmatch(".*".join(re.escape(piece) for piece in self.tool.split("*")), tool) is not None


def parse_rule(text: str, *, command_tools: frozenset[str], path_tools: frozenset[str]) -> Rule:
    """Parse and compile one rule; raises :class:`RuleSyntaxError` saying what is wrong."""
    if not isinstance(text, str) or not text.strip():
        raise RuleSyntaxError('the rule is empty; write a tool name, optionally with a pattern: "bash(git status)"')
    stripped = text.strip()
    tool, paren, rest = stripped.partition("(")
    tool = tool.strip()
    if not _TOOL.fullmatch(tool):
        raise RuleSyntaxError(f'"{tool}" is not a tool name (letters, digits, _ . : - and * only)')
    if not paren:
        return Rule(text=stripped, tool=tool, kind="any")
    if not rest.endswith(")"):
        raise RuleSyntaxError('the pattern has no closing ")"; write tool(pattern)')
    pattern = rest[:-1]
    if pattern.strip() == "*":
        return Rule(text=stripped, tool=tool, kind="any")
    if "*" in tool:
        raise RuleSyntaxError(f'the tool name "{tool}" is a glob, which can only be used bare or as {tool}(*)')
    if not pattern.strip():
        raise RuleSyntaxError(f'the pattern is empty; write {tool} or {tool}(*) for every call')
    if tool in command_tools:
        return Rule(text=stripped, tool=tool, kind="command", command=compile_command_pattern(pattern))
    if tool in path_tools:
        return Rule(text=stripped, tool=tool, kind="path", path=compile_path_glob(pattern.strip()))
    if tool.lower() in command_tools | path_tools:
        raise RuleSyntaxError(
            f'tool names are case-sensitive: "{tool}" is not "{tool.lower()}"; write {tool.lower()}(...)'
        )
    return Rule(text=stripped, tool=tool, kind="arguments", conditions=_conditions(pattern))


class CommandPattern:
    """A compiled command glob: ``*`` any run of characters; a trailing `` *`` also matches the bare command."""

    __slots__ = ("glob", "bare")

    def __init__(self, glob: Wildcard, bare: Wildcard | None) -> None:
        self.glob = glob
        #: For "git diff *": the bare "git diff" the trailing " *" also matches.
        self.bare = bare

    def fullmatch(self, text: str) -> bool:
        """Whether the whole of ``text`` (a normalized command) matches."""
        return self.glob.fullmatch(text) or (self.bare is not None and self.bare.fullmatch(text))


def _star_pieces(text: str) -> list[str]:
    """``text`` split at its unescaped ``*`` (``\\*`` and ``\\\\`` are literal)."""
    pieces, current, index = [], [], 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text) and text[index + 1] in "*\\":
            current.append(text[index + 1])
            index += 2
            continue
        if char == "*":
            pieces.append("".join(current))
            current = []
        else:
            current.append(char)
        index += 1
    pieces.append("".join(current))
    return pieces


def compile_command_pattern(pattern: str) -> CommandPattern:
    """Compile a command glob (see the module docstring)."""
    normal = " ".join(pattern.split())
    for quote in ("'", '"', "`", "$("):
        if quote in normal:
            raise RuleSyntaxError(
                f"the command pattern holds {quote}: commands are matched after quote removal and "
                "substitutions are judged on their own; write the words without quotes"
            )
    for word in normal.split(" "):
        if word in _OPERATOR_WORDS or (word.endswith(";") and not word.endswith("\\;")):
            raise RuleSyntaxError(
                f'the command pattern holds "{word}", but a rule matches one simple command (compound commands '
                "are split, redirections judged apart); write one rule per command"
            )
    if normal.endswith(":*"):
        normal = normal[:-2].rstrip() + " *"  # Claude Code's legacy prefix form "git diff:*"
    glob = Wildcard(_star_pieces(normal), question=False, pattern=normal)
    bare = None
    if normal.endswith(" *") and not normal.endswith("\\ *") and len(normal) > 2:
        bare = Wildcard(_star_pieces(normal[:-2]), question=False, pattern=normal[:-2])
    return CommandPattern(glob, bare)


def _segment_regex(segment: str, pattern: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(segment):
        char = segment[index]
        if char == "*":
            while index < len(segment) and segment[index] == "*":
                index += 1
            out.append("[^/]*")
            continue
        if char == "?":
            out.append("[^/]")
        elif char == "[":
            end = segment.find("]", index + 2 if segment[index + 1 : index + 2] in ("!", "]") else index + 1)
            if end < 0:
                raise RuleSyntaxError(f'the path glob "{pattern}" has an unclosed "["')
            members = segment[index + 1 : end]
            negate = members.startswith("!")
            members = members[1:] if negate else members
            escaped = "".join(c if c == "-" else re.escape(c) for c in members)
            out.append(f"[^/{escaped}]" if negate else f"[{escaped}]")
            index = end
        else:
            out.append(re.escape(char))
        index += 1
    return "".join(out)


def _glob_regex(body: str, pattern: str) -> str:
    segments = body.split("/")
    for segment in segments:
        if segment == "":
            raise RuleSyntaxError(f'the path glob "{pattern}" has an empty segment ("//" or a trailing "/")')
        if segment in (".", ".."):
            raise RuleSyntaxError(
                f'the path glob "{pattern}" has a "{segment}" segment; paths are normalised before matching, '
                "so write it without"
            )
    collapsed: list[str] = []
    for segment in segments:
        if not (segment == "**" and collapsed and collapsed[-1] == "**"):
            collapsed.append(segment)
    regex = ""
    last = len(collapsed) - 1
    for index, segment in enumerate(collapsed):
        if segment == "**":
            if index == last:
                regex = regex[:-1] + "(?:/.*)?" if index > 0 else regex + ".*"
            else:
                regex += "(?:.*/)?"
        else:
            regex += _segment_regex(segment, pattern) + ("" if index == last else "/")
    return regex


def compile_path_glob(pattern: str) -> PathGlob:
    """Compile a path glob; an absolute one also matches through its symlinked leading folders."""
    if pattern.startswith("~"):
        if not (pattern == "~" or pattern.startswith("~/")):
            raise RuleSyntaxError(f'the path glob "{pattern}": only "~/" (your home folder) is expanded')
        pattern_abs = os.path.expanduser("~") + pattern[1:]
    else:
        pattern_abs = pattern
    if not pattern_abs.startswith("/"):
        regex = _glob_regex(pattern_abs, pattern)
        return PathGlob(pattern=pattern, relative=True, regexes=(re.compile(regex, re.DOTALL),))
    body = pattern_abs.rstrip("/") if pattern_abs != "/" else ""
    if not body:
        raise RuleSyntaxError('the path glob "/" names only the root folder; write "/**" for every absolute path')
    spellings = [body]
    # The literal leading folders may be a symlink (/tmp on macOS): match the resolved spelling too.
    segments = body.split("/")
    literal = 1
    while literal < len(segments) and not any(c in segments[literal] for c in "*?["):
        literal += 1
    prefix = "/".join(segments[:literal]) or "/"
    resolved = os.path.realpath(prefix)
    if resolved != prefix:
        spellings.append(resolved.rstrip("/") + body[len(prefix) :])
    regexes = tuple(re.compile("/" + _glob_regex(spelling[1:], pattern), re.DOTALL) for spelling in spellings)
    return PathGlob(pattern=pattern, relative=False, regexes=regexes)


def _conditions(pattern: str) -> tuple[tuple[str, Wildcard], ...]:
    pieces = [piece.replace("\x00", ",") for piece in pattern.replace("\\,", "\x00").split(",")]
    conditions: list[tuple[str, Wildcard]] = []
    for piece in pieces:
        key, equals, glob = piece.strip().partition("=")
        key = key.strip()
        if not equals or not _KEY.fullmatch(key):
            raise RuleSyntaxError(
                f'"{piece.strip()}" is not a key=glob condition; for tools other than commands and files, '
                "write tool(argument=glob, ...), e.g. fetch(url=https://example.com/*)"
            )
        glob = glob.strip()
        conditions.append((key, Wildcard(glob.split("*"), question=True, pattern=glob)))
    return tuple(conditions)


def argument_text(value: object) -> str:
    """How an argument value is matched: a string as it is, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    import json

    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def conditions_match(conditions: tuple[tuple[str, Wildcard], ...], arguments: Mapping[str, object]) -> bool:
    """Whether every ``key=glob`` condition holds for ``arguments`` (a missing key never matches)."""
    for key, regex in conditions:
        if key not in arguments or not regex.fullmatch(argument_text(arguments[key])):
            return False
    return True
