"""Shell syntax: a bash command line split into the simple commands it would run, with what it redirects.

This is a reader for judging commands, not an interpreter. It understands what changes *which*
commands run: quoting (``'...'``, ``"..."``, ``$'...'``), backslash escapes and line continuations
(``\\<newline>`` disappears, even inside a word), the operators ``&& || ; | |& &`` and newlines,
comments, subshells ``( ... )``, groups ``{ ...; }``, command substitution ``$( ... )`` and
backticks, process substitution ``<( ... )`` / ``>( ... )``, redirections and here-documents.
Every nested command is parsed and returned beside the outer one (in ``${...}`` and unquoted
here-document bodies too). Parameter, arithmetic, glob and brace expansions are kept as
:class:`Expansion` segments, so a rule can tell a literal word from one the shell will compute at
run time. Only the simplest parameter expansions (``$NAME``, ``${NAME}``, ``${#NAME}``,
``${NAME:-plain}``) and arithmetic on numbers are taken as plain values: every other form may run
code the text does not show (``${x@P}``, ``${!x}``, ``$((x))``) and is a problem. Whatever it
cannot read is recorded in ``problems`` (the caller asks rather than allows); it never raises on
bad input.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["Expansion", "ParsedCommand", "Redirect", "SimpleCommand", "Word", "join_continuations", "parse"]

#: Characters that end an unquoted word.
_METACHARACTERS = frozenset(" \t\n|&;()<>")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")
_SPECIAL_PARAMETERS = frozenset("@*#?-$!0123456789")
#: The only ``${...}`` forms judged: ``${NAME}``, ``${#NAME}``, and ``${NAME:-word}`` (``-``, ``:+``,
#: ``+``) with a word of plain characters. Every other form may run code or is not worth reading.
_SIMPLE_PARAMETER = re.compile(
    r"\$\{(?:#?(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])"
    r"|(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*]):?[-+][A-Za-z0-9_./,:+=%-]*)\}"
)
#: Arithmetic with numbers and operators only: a name would be evaluated (and may hold "a[$(cmd)]").
_LITERAL_ARITHMETIC = re.compile(r"[0-9\s+\-*/%()<>=!&|^~?:,]*")
#: Reserved words that only introduce or close a construct; the command after them is judged as usual.
_TRANSPARENT_KEYWORDS = frozenset({"if", "then", "else", "elif", "fi", "while", "until", "do", "done", "!", "{", "}"})
#: Reserved words whose construct is not analysed (its commands are still found and judged).
_OPAQUE_KEYWORDS = {
    "for": "a `for` loop",
    "case": "a `case` statement",
    "select": "a `select` loop",
    "function": "a function definition",
    "[[": "a `[[ ... ]]` test",
    "coproc": "a coprocess",
    "esac": "a `case` statement",
}
_MAX_DEPTH = 12
#: Nested ``${...}`` (and parsers) read before giving up: deeper input is a problem, not a crash.
_MAX_EXPANSION_DEPTH = 40
#: How far a glob class or a brace expansion is looked for, in characters.
_SCAN_LIMIT = 64
#: What ends the search for the "]" of a glob class: the "]" itself or the end of the word.
_CLASS_END = re.compile(r"[\]\s|&;()<>'\"\\$`]")
_ANSI_SIMPLE = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}


@dataclass(frozen=True, slots=True)
class Expansion:
    """A piece of a word the shell computes at run time: ``$VAR``, ``$(cmd)``, ``*.py``, ``{a,b}``."""

    source: str
    kind: str  # "parameter", "command", "process", "arithmetic", "glob" or "brace"


@dataclass(frozen=True, slots=True)
class Word:
    """One shell word: literal text (quotes removed) and expansions, plus its spelling in the source."""

    segments: tuple[str | Expansion, ...]
    source: str

    def literal(self) -> str | None:
        """The word's value when nothing in it is expanded at run time, else ``None``."""
        if any(isinstance(segment, Expansion) for segment in self.segments):
            return None
        return "".join(segment for segment in self.segments if isinstance(segment, str))

    def text(self, expansion: str | None = None) -> str:
        """The value with each expansion written as ``expansion`` (or as spelled, when ``None``)."""
        parts: list[str] = []
        for segment in self.segments:
            if isinstance(segment, str):
                parts.append(segment)
            else:
                parts.append(segment.source if expansion is None else expansion)
        return "".join(parts)

    def substitutes(self) -> bool:
        """Whether the word holds the output of another command (``$(...)``, backticks, ``<(...)``)."""
        return any(isinstance(s, Expansion) and s.kind in ("command", "process") for s in self.segments)


@dataclass(frozen=True, slots=True)
class Redirect:
    """One redirection: operator (``>``, ``>>``, ``<``, ``>&``, ``&>``, ``<<``, ...), fd and target."""

    operator: str
    fd: str
    target: Word | None


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """One command the shell would run (or only a redirection), as written, with its parts."""

    text: str
    assignments: tuple[Word, ...]
    words: tuple[Word, ...]
    redirects: tuple[Redirect, ...]
    #: Why this command cannot be judged from its text (the caller asks, never allows).
    problems: tuple[str, ...]
    #: Where it was found: "" at the top level, else e.g. "$(...)", "`...`", "<(...)", "( ... )".
    origin: str
    #: False when the words belong to a construct (``for x in ...``), not to a command to run.
    runs: bool = True


@dataclass(frozen=True, slots=True)
class ParsedCommand:
    """Every simple command of a command line, nested ones included, and what could not be read."""

    commands: tuple[SimpleCommand, ...]
    problems: tuple[str, ...]


def _short(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "..."


def parse(source: str, *, origin: str = "", depth: int = 0) -> ParsedCommand:
    """Split ``source`` into the simple commands it would run; never raises on bad input."""
    return _parse(source, origin, depth, depth)


def _parse(source: str, origin: str, depth: int, nesting: int) -> ParsedCommand:
    joined, heredocs = _join(source)
    parser = _Parser(joined, origin, depth)
    parser.expansion_depth = nesting
    parser.parse_list(stop=None)
    if "#" in source and "\\\n" in source:
        # Whether a "#" starts a comment, and so whether a backslash-newline inside it joins the
        # next line, depends on quoting inside substitutions that the joining pass cannot follow
        # exactly (an audit hid commands this way: `echo "$(true # \<newline>touch x<newline>)"`).
        parser.problems.append("a comment together with a line continuation is not analysed")
    if heredocs is not None and heredocs != parser.heredocs_seen:
        # Continuations were joined around here-documents the parser read differently (a "<<"
        # in arithmetic, a delimiter spelled with an expansion): which lines are commands is unsure.
        parser.problems.append("here-documents and line continuations could not be read consistently")
    return ParsedCommand(commands=tuple(parser.commands), problems=tuple(parser.problems))


def join_continuations(source: str) -> str:
    """``source`` with every line continuation (``\\<newline>``) removed where bash removes it.

    Bash drops them while reading input, before it splits words or operators: ``$\\<newline>HOME``
    is ``$HOME``, ``&\\<newline>&`` is ``&&``. Not inside single quotes or ``$'...'``, not in a
    comment (a comment ends at the newline), and not in the body of a here-document whose
    delimiter is quoted (``<<'EOF'``); in an unquoted one's body they go, and the closing line is
    looked for after they have.
    """
    return _join(source)[0]


def _join(source: str) -> tuple[str, list[tuple[str, bool]] | None]:
    """The joined text and the here-documents (delimiter, strip tabs) seen on the way.

    ``None`` for the here-documents when nothing was joined (the parser then reads the source as is).
    """
    if "\\\n" not in source:
        return source, None
    out: list[str] = []
    heredocs: list[tuple[str, bool]] = []
    pending: list[tuple[str, bool, bool]] = []  # (delimiter, strip tabs, quoted)
    index, length = 0, len(source)
    state = "plain"  # or "single", "ansi", "double", "comment"
    while index < length:
        char = source[index]
        if state == "single":
            out.append(char)
            if char == "'":
                state = "plain"
            index += 1
            continue
        if state == "comment":
            out.append(char)
            index += 1
            if char == "\n":
                state = "plain"
                index = _heredoc_bodies(source, index, pending, out)
            continue
        if state == "ansi":
            if char == "\\" and index + 1 < length:
                out.append(source[index : index + 2])
                index += 2
                continue
            out.append(char)
            if char == "'":
                state = "plain"
            index += 1
            continue
        if char == "\\":
            if source.startswith("\\\n", index):
                index += 2  # a line continuation: gone
                continue
            out.append(source[index : index + 2])
            index += 2
            continue
        if state == "double":
            if char == '"':
                state = "plain"
        elif char == '"':
            state = "double"
        elif char == "'":
            # "$'" opens an ANSI-C string, unless that "$" ends a "$$" (the shell's PID).
            ansi = bool(out) and out[-1] == "$" and not (len(out) > 1 and out[-2] == "$")
            state = "ansi" if ansi else "single"
        elif char == "#" and (not out or (len(out[-1]) == 1 and out[-1] in _METACHARACTERS)):
            state = "comment"
        elif char == "<" and source.startswith("<<", index) and not source.startswith("<<<", index) \
                and not (out and out[-1].endswith("<")):
            operator = "<<-" if source.startswith("<<-", index) else "<<"
            out.append(operator)
            index, delimiter, quoted = _heredoc_delimiter(source, index + len(operator), out)
            pending.append((delimiter, operator == "<<-", quoted))
            heredocs.append((delimiter, operator == "<<-"))
            continue
        elif char == "\n":
            out.append(char)
            index = _heredoc_bodies(source, index + 1, pending, out)
            continue
        out.append(char)
        index += 1
    return "".join(out), heredocs


def _heredoc_delimiter(source: str, index: int, out: list[str]) -> tuple[int, str, bool]:
    """Read the delimiter word after ``<<`` (copied to ``out``): where it ends, its value, whether quoted."""
    length = len(source)
    while index < length and (source[index] in " \t" or source.startswith("\\\n", index)):
        if source[index] == "\\":
            index += 2
        else:
            out.append(source[index])
            index += 1
    value: list[str] = []
    quoted = False
    while index < length and source[index] not in _METACHARACTERS:
        char = source[index]
        if source.startswith("\\\n", index):
            index += 2
            continue
        if char == "\\":
            quoted = True
            out.append(source[index : index + 2])
            value.append(source[index + 1 : index + 2])
            index += 2
            continue
        if source.startswith(("$'", '$"'), index):
            out.append("$")
            index += 1
            continue
        if char in "'\"":
            quoted = True
            end = source.find(char, index + 1)
            end = length if end < 0 else end
            out.append(source[index : end + 1])
            value.append(source[index + 1 : end])
            index = end + 1
            continue
        out.append(char)
        value.append(char)
        index += 1
    return index, "".join(value), quoted


def _heredoc_bodies(source: str, index: int, pending: list[tuple[str, bool, bool]], out: list[str]) -> int:
    """Copy the bodies of the ``pending`` here-documents (starting at ``index``) to ``out``; where they end.

    A quoted delimiter keeps the body as it is; an unquoted one joins continued lines first, and
    the closing line is matched after joining (``E\\<newline>OF`` closes ``<<EOF``), as bash does.
    """
    length = len(source)
    while pending:
        delimiter, strip_tabs, quoted = pending.pop(0)
        while index < length:
            line: list[str] = []
            while index < length and source[index] != "\n":
                if not quoted and source[index] == "\\":
                    if source.startswith("\\\n", index):
                        index += 2
                        continue
                    line.append(source[index : index + 2])
                    index += 2
                    continue
                line.append(source[index])
                index += 1
            text = "".join(line)
            out.append(text)
            if index < length:
                out.append("\n")
                index += 1
            if (text.lstrip("\t") if strip_tabs else text) == delimiter:
                break
    return index


@dataclass
class _Builder:
    start: int
    assignments: list[Word] = field(default_factory=list)
    words: list[Word] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    end: int = -1
    runs: bool = True


class _Parser:
    """Recursive descent over the source text; nested parsers share nothing but their results."""

    def __init__(self, source: str, origin: str, depth: int) -> None:
        self.src = source
        self.pos = 0
        self.origin = origin
        self.depth = depth
        self.commands: list[SimpleCommand] = []
        self.problems: list[str] = []
        #: Here-documents whose bodies start after the next newline.
        self.pending_heredocs: list[tuple[str, bool, bool]] = []  # (delimiter, strip tabs, quoted)
        #: How many ``${...}`` are open around ``pos`` (they are read recursively).
        self.expansion_depth = depth
        #: Every here-document opened, in order (shared with nested parsers of the same text).
        self.heredocs_seen: list[tuple[str, bool]] = []

    # --- characters -----------------------------------------------------------------------------

    def peek(self, offset: int = 0) -> str:
        index = self.pos + offset
        return self.src[index] if index < len(self.src) else ""

    def startswith(self, text: str) -> bool:
        return self.src.startswith(text, self.pos)

    def skip_blanks(self) -> None:
        """Spaces, tabs and line continuations between words."""
        while self.pos < len(self.src):
            if self.peek() in " \t":
                self.pos += 1
            elif self.startswith("\\\n"):
                self.pos += 2
            else:
                return

    def skip_comment(self) -> None:
        while self.pos < len(self.src) and self.peek() != "\n":
            self.pos += 1

    # --- lists and commands ---------------------------------------------------------------------

    def parse_list(self, stop: str | None) -> bool:
        """Parse commands until ``stop`` (``)``) or the end; True when ``stop`` was found (and consumed)."""
        # Bash refuses an operator with no command before it, or "&&", "||", "|" with none after:
        # what it would do with such input is not worth guessing, so both are problems.
        pending: str | None = None  # the operator still waiting for its command
        expect_command = True
        while True:
            self.skip_blanks()
            char = self.peek()
            if not char or (char == ")" and stop == ")"):
                if pending is not None:
                    self.problems.append(f'"{pending}" has no command after it')
                if not char:
                    if self.pending_heredocs:
                        self.problems.append("a here-document has no closing delimiter")
                        self.pending_heredocs.clear()
                    return False
                self.pos += 1
                return True
            if char == "#":
                self.skip_comment()
                continue
            if char == "\n":
                self.pos += 1
                self.read_heredoc_bodies()
                if pending is None:
                    expect_command = True
                continue
            operator = self.read_operator()
            if operator is not None:
                if operator in (";;", ";&", ";;&"):
                    self.problems.append(f"`{operator}` (a `case` branch) is not analysed")
                elif expect_command:
                    self.problems.append(f'"{operator}" has no command before it')
                pending = operator if operator in ("&&", "||", "|", "|&") else None
                expect_command = True
                continue
            if char == ")":
                self.problems.append('an unmatched ")"')
                self.pos += 1
                continue
            self.parse_command()
            pending, expect_command = None, False

    def read_operator(self) -> str | None:
        for operator in (";;&", ";;", ";&", "&&", "||", "|&", ";", "|", "&"):
            if self.startswith(operator):
                if operator == "&" and self.peek(1) == ">":
                    return None  # "&>" is a redirection
                self.pos += len(operator)
                return operator
        return None

    def parse_command(self) -> None:
        """One command: a subshell, an arithmetic command, or a simple command with its redirections."""
        start = self.pos
        if self.startswith("(("):
            end = self.find_arithmetic_end(self.pos + 2)
            self.pos = end
            builder = _Builder(start=start, problems=["an arithmetic command `(( ... ))` is not analysed"])
            self.parse_words(builder)
            self.finish(builder)
            return
        if self.peek() == "(":
            self.pos += 1
            if self.depth >= _MAX_DEPTH:
                self.problems.append("commands are nested too deeply to analyse")
                self.pos = len(self.src)
                return
            inner = _Parser(self.src, "( ... )", self.depth + 1)
            inner.heredocs_seen = self.heredocs_seen
            inner.expansion_depth = self.expansion_depth + 1
            inner.pos = self.pos
            closed = inner.parse_list(stop=")")
            self.adopt(inner)
            self.pos = inner.pos
            if not closed:
                self.problems.append('a subshell "(" is never closed')
            builder = _Builder(start=start)
            self.parse_words(builder)  # redirections of the subshell (words here are a syntax error)
            if builder.words:
                builder.problems.append("words after a subshell are not valid shell")
            if builder.redirects or builder.words or builder.problems:
                self.finish(builder)
            return
        builder = _Builder(start=start)
        self.parse_words(builder)
        self.finish(builder)

    def parse_words(self, builder: _Builder) -> None:
        """Words, assignments and redirections up to the next operator, newline or ``)``."""
        while True:
            self.skip_blanks()
            char = self.peek()
            if not char or char in "\n;|" or (char == "&" and self.peek(1) != ">"):
                return
            if char == ")":
                return
            if char == "#" and self.at_word_start():
                self.skip_comment()
                return
            if char == "(":
                # "name() { ...; }" or a stray "(": not something a rule can judge. The body that
                # follows is read as commands of its own, so a deny rule still sees them.
                builder.problems.append('a function definition or an unexpected "("')
                builder.runs = False
                self.pos += 1
                if self.peek() == ")":
                    self.pos += 1
                builder.end = self.pos
                return
            if self.read_redirect(builder, fd=""):
                continue
            word = self.read_word()
            if word is None:
                continue
            # "2>file": digits glued to a redirection operator are its file descriptor.
            if re.fullmatch(r"[0-9]+", word.source) and self.peek() in ("<", ">") and not self.startswith("<(") \
                    and not self.startswith(">("):
                if self.read_redirect(builder, fd=word.source):
                    continue
            if re.fullmatch(r"\{[A-Za-z_][A-Za-z0-9_]*\}", word.source) and self.peek() in ("<", ">"):
                builder.problems.append(f"a redirection to a named descriptor {word.source} is not analysed")
                continue
            builder.end = self.pos
            if not builder.words:
                literal = word.literal()
                if _ASSIGNMENT.match(word.source) and word.source[0] not in "'\"":
                    builder.assignments.append(word)
                    continue
                if literal is not None and word.source == literal:
                    if literal in _TRANSPARENT_KEYWORDS:
                        continue
                    if literal == "time" and not builder.assignments:
                        self.skip_blanks()
                        if self.startswith("-p") and (self.peek(2) in _METACHARACTERS or not self.peek(2)):
                            self.pos += 2
                            self.skip_blanks()
                        # Bash's parser also drops one "--" after "time" or "time -p".
                        if self.startswith("--") and (self.peek(2) in _METACHARACTERS or not self.peek(2)):
                            self.pos += 2
                        continue
                    if literal in _OPAQUE_KEYWORDS:
                        builder.problems.append(f"{_OPAQUE_KEYWORDS[literal]} is not analysed")
                        builder.runs = False
                        continue
            builder.words.append(word)

    def at_word_start(self) -> bool:
        return self.pos == 0 or self.src[self.pos - 1] in _METACHARACTERS

    def finish(self, builder: _Builder) -> None:
        end = builder.end if builder.end >= 0 else self.pos
        text = self.src[builder.start : end].strip()
        if not (builder.words or builder.assignments or builder.redirects or builder.problems):
            return
        self.commands.append(
            SimpleCommand(
                text=text,
                assignments=tuple(builder.assignments),
                words=tuple(builder.words),
                redirects=tuple(builder.redirects),
                problems=tuple(builder.problems),
                origin=self.origin,
                runs=builder.runs,
            )
        )

    def adopt(self, inner: _Parser) -> None:
        self.commands.extend(inner.commands)
        self.problems.extend(inner.problems)
        self.pending_heredocs.extend(inner.pending_heredocs)

    # --- redirections and here-documents ----------------------------------------------------------

    def read_redirect(self, builder: _Builder, fd: str) -> bool:
        if self.startswith("<(") or self.startswith(">("):
            return False  # process substitution: a word
        for operator in ("&>>", "&>", "<<<", "<<-", "<<", ">>", ">|", ">&", "<&", "<>", ">", "<"):
            if self.startswith(operator):
                break
        else:
            return False
        self.pos += len(operator)
        self.skip_blanks()
        if self.startswith("<(") or self.startswith(">("):
            target = self.read_word()
        elif not self.peek() or self.peek() in _METACHARACTERS:
            builder.problems.append(f'the redirection "{operator}" has no target')
            builder.redirects.append(Redirect(operator=operator, fd=fd, target=None))
            return True
        else:
            target = self.read_word()
        builder.end = self.pos
        builder.redirects.append(Redirect(operator=operator, fd=fd, target=target))
        if operator in ("<<", "<<-"):
            builder.problems.append("a here-document feeds text the rules do not analyse")
            delimiter = target.text() if target is not None else ""
            quoted = target is not None and any(char in target.source for char in "'\"\\")
            self.pending_heredocs.append((delimiter, operator == "<<-", quoted))
            self.heredocs_seen.append((delimiter, operator == "<<-"))
        return True

    def read_heredoc_bodies(self) -> None:
        """After a newline: read the bodies of the here-documents opened on the line before.

        An unquoted delimiter's body is expanded like a double-quoted string: its substitutions
        run, so their commands are parsed as parts (a deny rule sees them).
        """
        while self.pending_heredocs:
            delimiter, strip_tabs, quoted = self.pending_heredocs.pop(0)
            while True:
                if self.pos >= len(self.src):
                    self.problems.append(f'the here-document "{delimiter}" has no closing delimiter')
                    return
                end = self.src.find("\n", self.pos)
                end = end if end >= 0 else len(self.src)
                line = self.src[self.pos : end]
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                    self.pos = min(end + 1, len(self.src))
                    break
                if not quoted:
                    self.read_heredoc_line(end)
                self.pos = max(self.pos, min(end + 1, len(self.src)))

    def read_heredoc_line(self, end: int) -> None:
        """The substitutions in one line of an unquoted here-document body (``pos`` at its start)."""
        while self.pos < end:
            char = self.peek()
            if char == "\\":
                self.pos += 2
            elif char == "$":
                self.read_dollar()
            elif char == "`":
                self.read_backticks()
            else:
                self.pos += 1
        if self.pos > end:
            # A substitution spanning lines: where the body ends is no longer sure.
            self.problems.append("a substitution in a here-document spans lines")

    # --- words ------------------------------------------------------------------------------------

    def read_word(self) -> Word | None:
        """One word starting at ``pos`` (which is not a blank or an operator)."""
        start = self.pos
        segments: list[str | Expansion] = []
        literal: list[str] = []

        def flush() -> None:
            if literal:
                segments.append("".join(literal))
                literal.clear()

        def expansion(item: Expansion) -> None:
            flush()
            segments.append(item)

        #: Where an unquoted "{" opens a group the reader does not expand (quotes, escapes, "$" or
        #: long text inside): bash may still expand it, so the word is a problem if it may.
        unsure_brace = -1

        while self.pos < len(self.src):
            char = self.peek()
            if char in _METACHARACTERS:
                if char in "<>" and self.peek(1) == "(" and self.pos == start:
                    expansion(self.read_nested(self.pos + 2, "process", f"{char}(...)"))
                    continue
                break
            if char == "\\":
                nxt = self.peek(1)
                if nxt == "\n":
                    self.pos += 2
                elif nxt:
                    literal.append(nxt)
                    self.pos += 2
                else:
                    literal.append("\\")
                    self.pos += 1
                continue
            if char == "'":
                end = self.src.find("'", self.pos + 1)
                if end < 0:
                    self.problems.append("a single quote is never closed")
                    literal.append(self.src[self.pos + 1 :])
                    self.pos = len(self.src)
                    break
                literal.append(self.src[self.pos + 1 : end])
                self.pos = end + 1
                continue
            if char == '"':
                self.pos += 1
                self.read_double_quoted(literal, expansion)
                continue
            if char == "$":
                nxt = self.peek(1)
                if nxt == "'":
                    self.pos += 2
                    decoded = self.read_ansi_c()
                    if decoded is None:
                        expansion(Expansion(source=self.src[start : self.pos], kind="parameter"))
                    else:
                        literal.append(decoded)
                    continue
                if nxt == '"':
                    self.pos += 2
                    self.read_double_quoted(literal, expansion)
                    continue
                item = self.read_dollar()
                if item is None:
                    literal.append("$")
                else:
                    expansion(item)
                continue
            if char == "`":
                expansion(self.read_backticks())
                continue
            if char in "*?":
                expansion(Expansion(source=char, kind="glob"))
                self.pos += 1
                continue
            if char == "[" and self.bracket_closes():
                end = self.src.index("]", self.pos + 2)
                expansion(Expansion(source=self.src[self.pos : end + 1], kind="glob"))
                self.pos = end + 1
                continue
            if char == "{":
                brace = self.brace_expansion()
                if brace is not None:
                    expansion(Expansion(source=brace, kind="brace"))
                    self.pos += len(brace)
                    continue
                if unsure_brace < 0 and self.brace_unsure():
                    unsure_brace = self.pos
            literal.append(char)
            self.pos += 1
        flush()
        if self.pos == start:
            self.pos += 1  # never loop on a character nothing consumes
            return None
        if unsure_brace >= 0:
            rest = self.src[unsure_brace : self.pos]
            if "}" in rest[1:] and ("," in rest or ".." in rest):
                # Bash may expand it into several words (options, paths) the rules did not read.
                self.problems.append(f"the brace expansion in {_short(self.src[start : self.pos])} is not analysed")
        return Word(segments=tuple(segments), source=self.src[start : self.pos])

    def bracket_closes(self) -> bool:
        """Whether an unquoted ``[`` here opens a glob class (a ``]`` follows within the word)."""
        # A bounded look-ahead keeps a line of a thousand "[" fast; a longer class is rare enough
        # that reading it as literal text (it then matches fewer allow rules) costs nothing.
        found = _CLASS_END.search(self.src, self.pos + 2, self.pos + _SCAN_LIMIT)
        return found is not None and found.group() == "]"

    def brace_expansion(self) -> str | None:
        """``{a,b}`` or ``{1..3}`` at ``pos`` (unquoted, within the word), else ``None``."""
        index, nesting = self.pos, 0
        limit = min(len(self.src), self.pos + _SCAN_LIMIT)
        while index < limit:
            char = self.src[index]
            if char in _METACHARACTERS or char in "'\"\\$`":
                return None
            if char == "{":
                nesting += 1
            elif char == "}":
                nesting -= 1
                if nesting == 0:
                    body = self.src[self.pos + 1 : index]
                    return self.src[self.pos : index + 1] if ("," in body or ".." in body) else None
            index += 1
        return None

    def brace_unsure(self) -> bool:
        """Whether the ``{`` at ``pos`` (not read as a brace expansion) may still be one in bash.

        The reader expands only plain groups within :data:`_SCAN_LIMIT` characters; a group with a
        quote, backslash, ``$`` or backtick inside, or a longer one, is expanded by bash all the same.
        """
        index, nesting = self.pos, 0
        while index < len(self.src):
            char = self.src[index]
            if char in _METACHARACTERS:
                return False
            if char in "'\"\\$`" or index - self.pos >= _SCAN_LIMIT:
                return True
            if char == "{":
                nesting += 1
            elif char == "}":
                nesting -= 1
                if nesting == 0:
                    return False
            index += 1
        return False

    def read_double_quoted(self, literal: list[str], expansion: Callable[[Expansion], None]) -> None:
        while self.pos < len(self.src):
            char = self.peek()
            if char == '"':
                self.pos += 1
                return
            if char == "\\":
                nxt = self.peek(1)
                if nxt == "\n":
                    self.pos += 2
                elif nxt in ('"', "\\", "$", "`"):
                    literal.append(nxt)
                    self.pos += 2
                else:
                    literal.append("\\")
                    self.pos += 1
                continue
            if char == "$":
                item = self.read_dollar()
                if item is None:
                    literal.append("$")
                else:
                    expansion(item)
                continue
            if char == "`":
                expansion(self.read_backticks())
                continue
            literal.append(char)
            self.pos += 1
        self.problems.append("a double quote is never closed")

    def read_ansi_c(self) -> str | None:
        """The body of ``$'...'`` after the opening quote, decoded; ``None`` if it cannot be.

        The end is found as bash's parser finds it: a backslash pairs with exactly one character
        (``$'\\c'`` ends at its second quote). Escapes are decoded as bash decodes them only where
        that is plain ASCII: ``\\c``, ``\\u``, ``\\U``, an escape yielding NUL (bash cuts the string
        there) or a byte of 0x80 and above (bash keeps the low byte of ``\\455``) make the command
        one the rules cannot judge (a problem), so such a word never matches a literal rule.
        """
        out: list[str] = []
        while self.pos < len(self.src):
            char = self.peek()
            if char == "'":
                self.pos += 1
                decoded = "".join(out)
                return decoded.split("\0")[0]  # bash cuts the string at a NUL: $'r\\0abc'm is "rm"
            if char != "\\":
                out.append(char)
                self.pos += 1
                continue
            nxt = self.peek(1)
            if not nxt:
                self.pos += 1
                break
            self.pos += 2
            if nxt in _ANSI_SIMPLE:
                out.append(_ANSI_SIMPLE[nxt])
            elif nxt == "x":
                digits = re.match(r"[0-9A-Fa-f]{1,2}", self.src[self.pos : self.pos + 2])
                if digits is None:
                    out.append("\\x")
                    continue
                self.pos += len(digits.group())
                self.ansi_byte(int(digits.group(), 16), "\\x" + digits.group(), out)
            elif nxt in "uU":
                self.problems.append(f"a $'...' string uses the escape \\{nxt} (not decoded by the rules)")
                out.append("\\" + nxt)
            elif nxt in "01234567":
                digits = re.match(r"[0-7]{0,2}", self.src[self.pos : self.pos + 2])
                value = nxt + (digits.group() if digits else "")
                self.pos += len(value) - 1
                self.ansi_byte(int(value, 8), "\\" + value, out)
            elif nxt == "c":
                # "\c" takes the next character as a control character at expansion time (and a
                # backslash after it pairs oddly): never decoded, the string's end is found as usual.
                self.problems.append("a $'...' string uses the escape \\c (not decoded by the rules)")
                out.append("\\c")
            else:
                out.append("\\" + nxt)
        self.problems.append("a $'...' string is never closed")
        return None

    def ansi_byte(self, value: int, spelling: str, out: list[str]) -> None:
        """Append the byte an octal or hex escape of ``$'...'`` yields, or record why it cannot be judged."""
        value &= 0xFF  # bash keeps the low byte: "\\455" is "-"
        if value == 0:
            self.problems.append(f"a $'...' string is cut short by the escape {spelling} (a NUL)")
        elif value >= 0x80:
            self.problems.append(f"a $'...' string has the escape {spelling} (a byte that is not ASCII)")
        out.append(chr(value))

    def read_dollar(self) -> Expansion | None:
        """What follows a ``$`` (``pos`` at the ``$``): a parameter, ``${...}``, ``$(...)`` or ``$((...))``."""
        start = self.pos
        nxt = self.peek(1)
        if self.src.startswith("$((", start):
            end = self.find_arithmetic_end(start + 3)
            body = self.src[start:end]
            self.pos = end
            if not _LITERAL_ARITHMETIC.fullmatch(body[3:-2] if body.endswith("))") else body[3:]):
                # A name in arithmetic is evaluated as an expression in turn: a variable holding
                # "a[$(cmd)]" runs cmd. Only numbers and operators can be judged.
                self.problems.append(f"the arithmetic expansion {_short(body)} uses variables or substitutions")
            return Expansion(source=body, kind="arithmetic")
        if nxt == "[":
            # "$[ ... ]": the old spelling of "$(( ... ))", with the same evaluation of names.
            end = self.find_bracket_end(start + 2)
            self.pos = end
            body = self.src[start:end]
            self.problems.append(f"the arithmetic expansion {_short(body)} is not analysed")
            return Expansion(source=body, kind="arithmetic")
        if nxt == "(":
            return self.read_nested(start + 2, "command", "$(...)", source_start=start)
        if nxt == "{":
            self.pos = start + 2
            if self.expansion_depth >= _MAX_EXPANSION_DEPTH:
                self.problems.append("expansions are nested too deeply to analyse")
                self.pos = len(self.src)
                return Expansion(source=self.src[start:], kind="parameter")
            self.expansion_depth += 1
            try:
                self.skip_parameter_body()
            finally:
                self.expansion_depth -= 1
            body = self.src[start : self.pos]
            if not _SIMPLE_PARAMETER.fullmatch(body):
                # Operators, indirection, subscripts, quotes or nested expansions: "${x@P}",
                # "${!x}", "${a[$(cmd)]}", "${x:y}" can all run code the text does not show.
                self.problems.append(
                    f"the expansion {_short(body)} is not analysed (only $NAME, ${{NAME}}, ${{#NAME}} and "
                    "${NAME:-word} with a plain word are)"
                )
            return Expansion(source=body, kind="parameter")
        if nxt and nxt in _SPECIAL_PARAMETERS:
            self.pos += 2
            return Expansion(source=self.src[start : self.pos], kind="parameter")
        name = _NAME.match(self.src, start + 1)
        if name is not None:
            self.pos = name.end()
            return Expansion(source=self.src[start : self.pos], kind="parameter")
        self.pos += 1
        return None

    def skip_parameter_body(self) -> None:
        """Move ``pos`` (just after ``${``) past the closing ``}``, as bash finds it.

        Quotes, escapes and nested expansions hide a ``}`` (``${x:-'}'}`` ends at the last one),
        in double quotes too; commands in nested substitutions are parsed as parts of their own.
        """
        nesting = 0
        while self.pos < len(self.src):
            char = self.peek()
            if char == "\\":
                self.pos += 2
            elif char == "'":
                end = self.src.find("'", self.pos + 1)
                if end < 0:
                    break
                self.pos = end + 1
            elif char == '"':
                self.pos += 1
                self.read_double_quoted([], lambda item: None)
            elif char == "$" and self.peek(1) == "'":
                self.pos += 2
                self.read_ansi_c()
            elif char == "$":
                self.read_dollar()
            elif char == "`":
                self.read_backticks()
            elif char == "{":
                nesting += 1
                self.pos += 1
            elif char == "}":
                self.pos += 1
                if nesting == 0:
                    return
                nesting -= 1
            else:
                self.pos += 1
        self.pos = len(self.src)
        self.problems.append("a ${...} expansion is never closed")

    def find_bracket_end(self, index: int) -> int:
        """The index just past the ``]`` closing ``$[`` (nested brackets counted)."""
        nesting = 0
        while index < len(self.src):
            char = self.src[index]
            if char == "[":
                nesting += 1
            elif char == "]":
                if nesting == 0:
                    return index + 1
                nesting -= 1
            index += 1
        self.problems.append("a $[...] expansion is never closed")
        return len(self.src)

    def read_nested(self, body_start: int, kind: str, origin: str, source_start: int | None = None) -> Expansion:
        """``$(...)``, ``<(...)`` or ``>(...)``: parse the inner commands up to the closing ``)``."""
        start = self.pos if source_start is None else source_start
        if self.depth >= _MAX_DEPTH:
            self.problems.append("commands are nested too deeply to analyse")
            self.pos = len(self.src)
            return Expansion(source=self.src[start:], kind=kind)
        inner = _Parser(self.src, origin, self.depth + 1)
        inner.heredocs_seen = self.heredocs_seen
        inner.expansion_depth = self.expansion_depth + 1
        inner.pos = body_start
        closed = inner.parse_list(stop=")")
        self.adopt(inner)
        self.pos = inner.pos
        if not closed:
            self.problems.append(f'a "{origin}" is never closed')
        return Expansion(source=self.src[start : self.pos], kind=kind)

    def read_backticks(self) -> Expansion:
        start = self.pos
        self.pos += 1
        body: list[str] = []
        while self.pos < len(self.src):
            char = self.peek()
            if char == "`":
                self.pos += 1
                break
            if char == "\\" and self.peek(1) == '"':
                # Inside double quotes bash turns \" into " within backticks, outside it keeps the
                # backslash: which one applies is context this reader does not carry (an audit
                # hid a command this way), so the substitution is not judged.
                self.problems.append('a backtick command substitution with \\" is not analysed')
            if char == "\\" and self.peek(1) in ("`", "\\", "$"):
                body.append(self.peek(1))
                self.pos += 2
                continue
            body.append(char)
            self.pos += 1
        else:
            self.problems.append("a backtick command substitution is never closed")
        if self.depth >= _MAX_DEPTH:
            self.problems.append("commands are nested too deeply to analyse")
        else:
            inner = _parse("".join(body), "`...`", self.depth + 1, self.expansion_depth + 1)
            self.commands.extend(inner.commands)
            self.problems.extend(inner.problems)
        return Expansion(source=self.src[start : self.pos], kind="command")

    def find_arithmetic_end(self, index: int) -> int:
        """The index just past the ``))`` closing an arithmetic expression whose body starts at ``index``."""
        nesting = 0
        while index < len(self.src):
            char = self.src[index]
            if char == "(":
                nesting += 1
            elif char == ")":
                if nesting == 0:
                    if self.src.startswith("))", index):
                        return index + 2
                    self.problems.append("an arithmetic expression is not closed by `))`")
                    return index + 1
                nesting -= 1
            index += 1
        self.problems.append("an arithmetic expression is never closed")
        return len(self.src)
