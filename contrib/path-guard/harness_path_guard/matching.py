"""Path matching: lexical normalisation against the workspace and ``**`` globs translated to regexes.

Python 3.11 has no ``PurePath.full_match`` (it arrived in 3.13), so the translation is written out
here, with the same meaning: ``*`` matches within one path segment, ``?`` one character of a
segment, ``[abc]`` / ``[!abc]`` a character class, and a whole ``**`` segment any number of
segments (zero included). One addition: a trailing ``/**`` also matches the folder itself, so
``secrets/**`` protects ``secrets`` too.

A path is judged by its spellings, and any spelling that matches denies (fail closed): the path as
given and, for ``~/...``, with the home folder expanded; each taken against the workspace as
written and as its symlinks resolve. Paths are normalised lexically (``a/../b`` is ``b``); the file
system is never read per call, so a symlink inside the workspace is not followed (README, Limits).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence

__all__ = ["DenyMatcher", "PatternError", "collapse", "compile_pattern", "locate", "workspace_roots"]


class PatternError(ValueError):
    """Raised when a deny pattern is empty, malformed, or could never match a normalised path."""


# --- Patterns -----------------------------------------------------------------------------------


def _segment_regex(segment: str, pattern: str) -> str:
    """One segment without ``/``: ``*``, ``?`` and ``[...]`` never cross a segment boundary."""
    out: list[str] = []
    i, n = 0, len(segment)
    while i < n:
        char = segment[i]
        if char == "*":
            while i < n and segment[i] == "*":  # "a**b" is "a*b", as in pathlib and fnmatch
                i += 1
            out.append("[^/]*")
            continue
        if char == "?":
            out.append("[^/]")
        elif char == "[":
            j = i + 1
            negate = j < n and segment[j] == "!"
            if negate:
                j += 1
            start = j
            if j < n and segment[j] == "]":  # "[]x]": a leading "]" is a member, as in fnmatch
                j += 1
            while j < n and segment[j] != "]":
                j += 1
            if j >= n:
                raise PatternError(f'pattern "{pattern}": unclosed "[" in "{segment}"; close the class or drop the "["')
            # Escape every member but "-", so ranges work and nothing in the class is regex syntax.
            members = "".join(c if c == "-" else re.escape(c) for c in segment[start:j])
            out.append(f"[^/{members}]" if negate else f"[{members}]")
            i = j
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def translate(pattern: str) -> str:
    """The regex (for ``fullmatch``) of a deny glob; raises :class:`PatternError` for a bad one."""
    if not pattern:
        raise PatternError('empty pattern; delete it, or write "**" to protect every path')
    absolute = pattern.startswith("/")
    body = pattern[1:] if absolute else pattern
    if not body:
        raise PatternError('pattern "/" names only the file-system root; write "/**" for every absolute path')
    segments = body.split("/")
    for segment in segments:
        if segment == "":
            raise PatternError(
                f'pattern "{pattern}" has an empty segment ("//" or a trailing "/"), which never matches; '
                'write "dir/**" for a folder and everything in it'
            )
        if segment in (".", ".."):
            raise PatternError(
                f'pattern "{pattern}" has a "{segment}" segment, which never matches: paths are normalised '
                'before matching ("a/../b" is "b"); write the path without it'
            )
    # "**/**" means the same as "**"; collapsing keeps the assembly below simple.
    collapsed: list[str] = []
    for segment in segments:
        if not (segment == "**" and collapsed and collapsed[-1] == "**"):
            collapsed.append(segment)
    regex = "/" if absolute else ""
    last = len(collapsed) - 1
    for index, segment in enumerate(collapsed):
        if segment == "**":
            if index == last:
                # Trailing: everything below, and the folder itself ("a/**" matches "a").
                regex = regex[:-1] + "(?:/.*)?" if index > 0 else regex + ".*"
            else:
                regex += "(?:.*/)?"  # zero or more whole segments
        else:
            regex += _segment_regex(segment, pattern) + ("" if index == last else "/")
    return regex


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """The compiled regex of a deny glob (DOTALL: a file name may hold a newline)."""
    regex = translate(pattern)
    try:
        return re.compile(regex, re.DOTALL)
    except re.error as exc:  # e.g. a reversed range "[z-a]"
        raise PatternError(f'pattern "{pattern}" is not a valid glob: {exc}') from None


# --- Paths --------------------------------------------------------------------------------------


def collapse(path: str) -> str:
    """Normalise an absolute POSIX path lexically: one leading "/", no empty or "." segments, ".." applied."""
    parts: list[str] = []
    for segment in path.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if parts:
                parts.pop()
            continue  # "/.." is "/", as the kernel has it
        parts.append(segment)
    return "/" + "/".join(parts)


def locate(path: str, workspace: str) -> tuple[str, str | None]:
    """``(absolute, relative)`` for ``path`` against a collapsed absolute ``workspace``.

    A relative ``path`` is taken relative to the workspace. ``relative`` is the workspace-relative
    form (``"."`` for the workspace itself), or ``None`` when the path lies outside it.
    """
    absolute = collapse(path if path.startswith("/") else f"{workspace}/{path}")
    if workspace == "/":
        return absolute, absolute[1:] or "."
    if absolute == workspace:
        return absolute, "."
    if absolute.startswith(workspace + "/"):
        return absolute, absolute[len(workspace) + 1 :]
    return absolute, None


def workspace_roots(project_dir: str | os.PathLike[str], workspace: str) -> tuple[str, ...]:
    """The workspace as written (made absolute) and as its symlinks resolve, without duplicates."""
    base = os.path.join(os.fspath(project_dir), workspace)
    return tuple(dict.fromkeys((collapse(os.path.abspath(base)), collapse(os.path.realpath(base)))))


def _spellings(path: str) -> list[str]:
    # A tool may expand "~" itself; judge both readings so neither slips past.
    spellings = [path]
    if path.startswith("~"):
        expanded = os.path.expanduser(path)
        if expanded != path:
            spellings.append(expanded)
    return spellings


class DenyMatcher:
    """Deny globs over paths: relative globs apply inside the workspace, ``/`` globs to absolute paths.

    - A pattern starting with ``/`` matches the normalised absolute path, inside the workspace or not.
    - Any other pattern is anchored at the workspace and matches the workspace-relative path.
    - A path outside the workspace (``../x``, ``/etc/passwd``) is matched by ``/`` patterns and by
      relative patterns whose first segment is ``**`` (``**`` means any folders, outside ones too);
      ``secrets/**`` means the workspace's ``secrets`` only.
    """

    def __init__(self, patterns: Iterable[str], roots: Sequence[str]) -> None:
        self._rules = [(pattern, compile_pattern(pattern)) for pattern in patterns]
        self._roots = tuple(dict.fromkeys(collapse(root) for root in roots))
        if not self._roots:
            raise ValueError("DenyMatcher needs at least one workspace root")

    @property
    def patterns(self) -> list[str]:
        return [pattern for pattern, _ in self._rules]

    def first_match(self, path: str) -> str | None:
        """The first deny pattern (in configuration order) that matches any spelling of ``path``."""
        located = [locate(spelling, root) for spelling in _spellings(path) for root in self._roots]
        for pattern, regex in self._rules:
            anywhere = pattern == "**" or pattern.startswith("**/")
            for absolute, relative in located:
                if pattern.startswith("/"):
                    subject = absolute
                elif relative is not None:
                    subject = relative
                elif anywhere:
                    subject = absolute[1:]
                else:
                    continue
                if regex.fullmatch(subject):
                    return pattern
        return None
