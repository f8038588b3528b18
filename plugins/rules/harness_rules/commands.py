"""Command analysis: each simple command of a bash line as the texts rules match, wrappers looked through.

:func:`analyse` turns a command line into :class:`Part` objects, one per command that would run
(nested ones included). A part carries the texts deny and ask rules are matched against (every
wrapper level: ``sudo rm -rf /`` and ``rm -rf /``, and the bare name of a command given by path),
the stricter set of texts allow rules may match, the files it redirects into or out of (judged
as ``write`` and ``read`` calls), and the problems that keep it from being allowed (a command name
computed at run time, ``eval``, ``xargs``, a here-document, an option that runs a program or
writes an unseen file, a builtin that evaluates its arguments, ...). Files written through plain
options (``git diff --output=F``, ``sort -o F``, ``tee F``) are writes like redirections. A command
substitution in an argument is an opaque piece of the word, like ``$VAR``; its commands are parts
of their own. ``sh -c '...'`` scripts are analysed recursively.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace

from .shell import Expansion, SimpleCommand, Word, parse

__all__ = ["MAX_COMMAND_LENGTH", "SENTINEL", "Part", "analyse"]

#: Stands for an expanded piece of a word in the texts allow rules see: no literal character of a
#: pattern matches it, so only a ``*`` can absorb a ``$VAR`` or a glob.
SENTINEL = "\x00"

#: Output redirection targets that write nothing anyone reads back.
HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
_WRITE_OPERATORS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
_FD = re.compile(r"[0-9]+-?|-")
#: Variables whose value cannot change which program runs or what it executes.
_HARMLESS_VARIABLES = re.compile(r"(?:LANG|LANGUAGE|LC_[A-Z]+|TZ|NO_COLOR|FORCE_COLOR|CLICOLOR|COLUMNS|LINES|TERM|CI)")
_ASSIGNMENT_NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)")

_RUNTIME_COMMANDS = {
    "eval": "`eval` runs a command built at run time",
    "exec": "`exec` replaces the shell with a command the rules do not judge",
    "source": "`source` runs a script the rules cannot see",
    ".": "`.` runs a script the rules cannot see",
    "xargs": "`xargs` runs commands built from its input",
    "parallel": "`parallel` runs commands built from its input",
    "watch": "`watch` runs its arguments through a shell",
    "su": "`su` runs commands as another user",
    "runuser": "`runuser` runs commands as another user",
    "trap": "`trap` sets a command to run later",
    "alias": "`alias` changes what later command names mean",
}
#: Programs that run another command given in their arguments, with option syntax of their own:
#: never allowed through, and deny rules are matched against every tail of their arguments.
_RUNNERS = frozenset(
    {"taskset", "chrt", "flock", "unshare", "chroot", "strace", "ltrace", "nsenter", "firejail", "systemd-run",
     "caffeinate", "script", "valgrind", "sg", "catchsegv", "dbus-launch", "xvfb-run", "proxychains", "proxychains4",
     "torsocks", "faketime", "numactl", "cgexec", "prlimit", "setarch", "linux32", "linux64", "busybox", "fakeroot",
     "unbuffer", "expect", "tmux", "screen", "ssh-agent", "entr", "nodemon", "inotifywait", "with-contenv",
     "setpriv", "capsh", "systemd-nspawn", "bwrap", "aa-exec", "runcon", "sem", "chpst", "daemonize",
     "start-stop-daemon"}
)
#: Options through which an otherwise ordinary command runs another program (Codex's known-safe
#: classifier refuses the same ones): a rule allowing the command does not allow these.
_RISKY_OPTIONS: dict[str, frozenset[str]] = {
    "rg": frozenset({"--pre", "--hostname-bin"}),
    # git: program-running and config-changing options, and those that write files or pages
    # (``--output`` is judged as a write instead, below). ``-C``, ``--git-dir`` and ``--work-tree``
    # only count before the subcommand (see _GIT_GLOBAL_OPTIONS): another repository brings its own
    # config (``core.fsmonitor``, ``core.pager``, hooks).
    "git": frozenset({"-c", "--config-env", "--exec-path", "--upload-pack", "--receive-pack", "--exec", "--ext-diff",
                      "--textconv", "--open-files-in-pager", "-O", "--output-directory"}),
    "sort": frozenset({"--compress-program"}),
    "tar": frozenset({"--to-command", "--use-compress-program", "-I", "--checkpoint-action", "--info-script",
                      "--new-volume-script", "-F", "--rmt-command", "--rsh-command"}),
    "rsync": frozenset({"-e", "--rsh", "--rsync-path"}),
    "zip": frozenset({"-TT", "--unzip-command"}),
    "less": frozenset({"--lesskey-file", "--lesskey-src", "--lesskey-content", "-k", "-o", "-O", "--log-file",
                       "--LOG-FILE"}),
    "more": frozenset({"--lesskey-file", "--lesskey-src", "-k", "-o", "-O", "--log-file", "--LOG-FILE"}),
    "man": frozenset({"-P", "--pager", "-H", "--html"}),
    **dict.fromkeys(
        ("vi", "vim", "nvim", "view", "ex", "vimdiff", "gvim", "rvim"),
        frozenset({"-c", "--cmd", "-S", "-s", "-w", "-W", "-u", "--remote", "--remote-send", "--remote-expr"}),
    ),
    **dict.fromkeys(
        ("awk", "gawk", "mawk", "nawk"),
        frozenset({"-f", "--file", "-E", "--exec", "-i", "--include", "-l", "--load", "-o", "--pretty-print",
                   "-p", "--profile", "-d", "--dump-variables", "-D", "--debug"}),
    ),
    "sed": frozenset({"-i", "--in-place", "-f", "--file"}),
    # Builtins: "mapfile -C CMD" runs CMD, "hash -p PATH NAME" makes NAME run PATH, "enable -f" loads code.
    "mapfile": frozenset({"-C"}),
    "readarray": frozenset({"-C"}),
    "hash": frozenset({"-p"}),
    "enable": frozenset({"-f"}),
}
#: git options that only count before the subcommand (``git -C dir log``, not ``git log -C``).
_GIT_GLOBAL_OPTIONS = frozenset({"-C", "--git-dir", "--work-tree"})
#: git global options that take the next word as their value.
_GIT_GLOBAL_WITH_VALUE = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path",
                                     "--config-env", "--super-prefix"})
#: git subcommands where ``-o``/``-u`` write files or run a program (``format-patch -o DIR``, ``clone -u``).
_GIT_SUBCOMMAND_OPTIONS = {"format-patch": frozenset({"-o"}), "archive": frozenset({"-o"}),
                           "clone": frozenset({"-u"}), "fetch-pack": frozenset({"--exec"})}
#: Options whose value is a file the command writes: judged as ``write(FILE)``, like a redirection.
_WRITE_OPTIONS: dict[str, frozenset[str]] = {
    "git": frozenset({"--output"}),
    "sort": frozenset({"-o", "--output"}),
}
#: Programs whose first operand (or ``-e`` value) is a script of their own that may write files or run
#: commands: the characters that betray it (sed ``w``/``W``/``e``; awk ``system()``, ``print >``, ``|``).
_SCRIPT_MARKERS: dict[str, re.Pattern[str]] = {
    "sed": re.compile(r"[wWe]"),
    **dict.fromkeys(("awk", "gawk", "mawk", "nawk"), re.compile(r"[|>@]|system")),
}
_AWKS = ("awk", "gawk", "mawk", "nawk")
#: Options of those programs that take a value: short letters, long names, and which of them give a script.
_SCRIPT_VALUE_SHORT = {"sed": "efl", **dict.fromkeys(_AWKS, "vFfeilE")}
_SCRIPT_VALUE_LONG = {
    "sed": frozenset({"--expression", "--file", "--line-length"}),
    **dict.fromkeys(_AWKS, frozenset({"--assign", "--field-separator", "--file", "--source", "--include", "--load",
                                      "--exec"})),
}
_SCRIPT_SHORT = {"sed": "e", **dict.fromkeys(_AWKS, "e")}
_SCRIPT_LONG = {"sed": frozenset({"--expression"}), **dict.fromkeys(_AWKS, frozenset({"--source"}))}
#: Builtins that evaluate their arguments (``a[$(cmd)]`` subscripts are arithmetic, ``let`` evaluates
#: names, ``compgen -W``/``-C`` expands or runs text): an argument with ``[``, ``$`` or a backtick in
#: its value, or computed at run time, cannot be judged.
_EVALUATING_BUILTINS = frozenset({"declare", "typeset", "local", "export", "readonly", "unset", "read", "mapfile",
                                  "readarray", "wait", "getopts", "let", "compgen"})
_EVALUATED = re.compile(r"[\[$`]")
_FIND_ACTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"})
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh"})
#: Builtins that change the folder relative redirection targets are resolved from.
_FOLDER_CHANGERS = frozenset({"cd", "pushd", "popd"})
#: Expansions that can turn into an option (or several words) of the command they are passed to.
_OPTION_LIKE = frozenset({"parameter", "command", "process", "brace"})
_MAX_DEPTH = 8
#: Longer commands are not analysed (asked about): the reader is linear, the rules are not free.
MAX_COMMAND_LENGTH = 32_768
#: Wrapper levels followed (``env env env ... cmd``) and argument tails matched for runners.
_MAX_LEVELS = 16


@dataclass(frozen=True, slots=True)
class _Wrapper:
    """How to find the command a wrapper runs: options taking a value, positional words, ``NAME=value``."""

    with_value: frozenset[str] = frozenset()
    positionals: int = 0
    assignments: bool = False
    privileged: bool = False
    #: Options after which nothing is run (``command -v``): the wrapper is the command.
    describes: frozenset[str] = frozenset()
    #: Options whose value is a file the wrapper writes (``time -o FILE``).
    writes: frozenset[str] = frozenset()
    #: Options that make the wrapped command unknowable (``env -S STRING`` splits a string).
    opaque: frozenset[str] = frozenset()
    #: Options that run the wrapped command in another folder (``env -C DIR``).
    chdir: frozenset[str] = frozenset()


_WRAPPERS: dict[str, _Wrapper] = {
    "env": _Wrapper(
        with_value=frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}),
        assignments=True,
        opaque=frozenset({"-S", "--split-string"}),
        chdir=frozenset({"-C", "--chdir"}),
    ),
    "sudo": _Wrapper(
        with_value=frozenset(
            {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "--user", "--group", "--close-from",
             "--chdir", "--host", "--prompt", "--role", "--type", "--other-user", "--command-timeout"}
        ),
        assignments=True,
        privileged=True,
        chdir=frozenset({"-D", "--chdir"}),
    ),
    "doas": _Wrapper(with_value=frozenset({"-u", "-C"}), privileged=True),
    "pkexec": _Wrapper(with_value=frozenset({"--user"}), privileged=True),
    "nice": _Wrapper(with_value=frozenset({"-n", "--adjustment"})),
    "nohup": _Wrapper(),
    "time": _Wrapper(with_value=frozenset({"-f", "--format", "-o", "--output"}), writes=frozenset({"-o", "--output"})),
    "timeout": _Wrapper(with_value=frozenset({"-s", "--signal", "-k", "--kill-after"}), positionals=1),
    "command": _Wrapper(describes=frozenset({"-v", "-V"})),
    "builtin": _Wrapper(),
    "stdbuf": _Wrapper(with_value=frozenset({"-i", "-o", "-e", "--input", "--output", "--error"})),
    "ionice": _Wrapper(
        with_value=frozenset({"-c", "-n", "-p", "-P", "-u", "--class", "--classdata", "--pid", "--pgid", "--uid"}),
        describes=frozenset({"-p", "-P", "-u", "--pid", "--pgid", "--uid"}),
    ),
    "setsid": _Wrapper(),
}


@dataclass(frozen=True, slots=True)
class Part:
    """One command of a command line, ready to be judged by rules."""

    #: The command as written (for explanations).
    text: str
    #: Where it was found: "" at the top level, "$(...)", "`...`", "bash -c", ...
    origin: str
    #: "command" (a command runs), "wrapper" (a shell whose script is judged in its own parts),
    #: "redirect" (only redirections) or "construct" (``for``/``case``: nothing to match).
    kind: str
    #: Texts deny and ask rules are matched against: every wrapper level, command names by path too.
    deny_views: tuple[str, ...] = ()
    #: Texts an allow rule may match; expanded pieces of words are :data:`SENTINEL`.
    allow_views: tuple[str, ...] = ()
    #: Why the part can never be allowed by a rule (the verdict is at least ask).
    problems: tuple[str, ...] = ()
    #: Why the part needs an allow rule naming it in full (``sudo``, ``PATH=...``); without one, ask.
    cautions: tuple[str, ...] = ()
    #: Files written by output redirections (as written; relative to the command's folder).
    writes: tuple[str, ...] = ()
    #: Files read by input redirections.
    reads: tuple[str, ...] = ()
    #: True when the command line changes folder (``cd``, ``env -C``): relative targets of
    #: redirections are then resolved from the call's folder, which may not be where they land.
    folder_unknown: bool = False
    #: Why no allow rule may vouch for the part, though the default may (a computed argument of
    #: ``git``, ``find``, ...); "" when an allow rule may.
    unmatchable: str = ""


@dataclass
class _Levels:
    deny: list[str] = field(default_factory=list)
    allow: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    cautions: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    allow_deeper: bool = True
    privileged: bool = False
    script: str | None = None
    shell: str = ""
    changes_folder: bool = False
    unmatchable: str = ""


def analyse(command: str, *, origin: str = "", depth: int = 0, inherited: tuple[str, ...] = ()) -> list[Part]:
    """The parts of ``command``: one per command that would run, nested and ``sh -c`` ones included.

    ``inherited`` are problems every part gets (a script run through ``sudo bash -c``).
    """
    if len(command) > MAX_COMMAND_LENGTH:
        return [Part(text=command[:200] + "...", origin=origin, kind="construct",
                     problems=(f"the command is longer than {MAX_COMMAND_LENGTH} characters",))]
    parsed = parse(command, origin=origin)
    parts: list[Part] = []
    if parsed.problems:
        parts.append(Part(text=command, origin=origin or "", kind="construct", problems=tuple(parsed.problems)))
    for simple in parsed.commands:
        parts.extend(_parts_of(simple, depth, inherited))
    if depth == 0 and any(part.folder_unknown for part in parts):
        # `cd` is not followed: after one, anywhere in the line, no relative target is known for sure.
        parts = [replace(part, folder_unknown=True) for part in parts]
    return parts


def _redirections(simple: SimpleCommand, problems: list[str]) -> tuple[list[str], list[str]]:
    writes: list[str] = []
    reads: list[str] = []
    for redirect in simple.redirects:
        target = redirect.target
        literal = target.literal() if target is not None else None
        operator = redirect.operator
        if operator in (">&", "<&"):
            if literal is not None and _FD.fullmatch(literal):
                continue  # a descriptor duplicated or closed: no file
            if literal is not None and ("$" in literal or "`" in literal):
                # Bash expands a ">&WORD" target that is no descriptor once more: a literal
                # "$(cmd)" (spelled $'\x24(cmd)') runs cmd.
                problems.append(f"the target of {operator}{target.source if target else ''} is expanded again by bash")
                continue
            if operator == "<&":
                problems.append("an input redirection from a computed descriptor is not analysed")
                continue
            operator = ">"  # ">&word" sends both streams to the file "word"
        if literal is not None and literal.startswith("~") and literal != "~" and not literal.startswith("~/"):
            # "~user/...": another user's home folder, which this reader does not look up.
            problems.append(f"a redirection to {literal} (another user's home folder) is not analysed")
            continue
        if operator in _WRITE_OPERATORS:
            if literal is None:
                problems.append("an output redirection to a path computed at run time")
            elif literal not in HARMLESS_TARGETS:
                writes.append(literal)
                if operator == "<>":
                    reads.append(literal)  # opened for reading and writing
        elif operator == "<":
            if literal is None:
                problems.append("an input redirection from a path computed at run time")
            else:
                reads.append(literal)
    return writes, reads


def _parts_of(simple: SimpleCommand, depth: int, inherited: tuple[str, ...]) -> list[Part]:
    problems = list(inherited) + list(simple.problems)
    writes, reads = _redirections(simple, problems)
    origin = simple.origin
    if not simple.runs:
        return [Part(text=simple.text, origin=origin, kind="construct", problems=tuple(problems or ["not analysed"]),
                     writes=tuple(writes), reads=tuple(reads))]
    if not simple.words:
        if simple.assignments:
            problems.append("a command that only sets variables changes what later commands run")
        if not (problems or writes or reads):
            return []
        return [Part(text=simple.text, origin=origin, kind="redirect", problems=tuple(problems),
                     writes=tuple(writes), reads=tuple(reads))]
    # A substitution in an argument is judged like $VAR: an opaque piece only a "*" of an allow
    # pattern covers (its commands are parts of their own). In command position it is a problem (_walk).
    levels = _Levels(problems=problems, writes=writes)
    assignments = list(simple.assignments)
    if any(_assignment_is_risky(word) for word in simple.assignments):
        levels.allow_deeper = False
        levels.cautions.append("it sets environment variables that can change what runs")
    _walk(list(simple.words), assignments, levels)
    extra: list[Part] = []
    kind = "command"
    if levels.script is not None:
        kind = "wrapper"
        if depth >= _MAX_DEPTH:
            levels.problems.append("shell scripts are nested too deeply to analyse")
        else:
            passed: list[str] = list(inherited)
            if levels.privileged:
                passed.append("it runs as another user (sudo)")
            if not levels.allow_deeper:
                passed.append("it runs with environment variables that can change what runs")
            where = "eval" if levels.shell == "eval" else f"{levels.shell} -c"
            extra = analyse(levels.script, origin=where, depth=depth + 1, inherited=tuple(passed))
    part = Part(
        text=simple.text,
        origin=origin,
        kind=kind,
        deny_views=tuple(dict.fromkeys(levels.deny)),
        allow_views=() if levels.unmatchable else tuple(dict.fromkeys(levels.allow)),
        problems=tuple(dict.fromkeys(levels.problems)),
        cautions=tuple(dict.fromkeys(levels.cautions)),
        writes=tuple(levels.writes),
        reads=tuple(reads),
        folder_unknown=levels.changes_folder,
        unmatchable=levels.unmatchable,
    )
    return [part, *extra]


def _assignment_is_risky(word: Word) -> bool:
    name = _ASSIGNMENT_NAME.match(word.source)
    if name is None or word.source[name.end() : name.end() + 1] == "[":
        return True  # an array element: its subscript is evaluated
    return _HARMLESS_VARIABLES.fullmatch(name.group(1)) is None


_BRACE_GROUP = re.compile(r"\{([^{}]*,[^{}]*)\}")


def _expand_braces(text: str) -> list[str]:
    """``text`` with its innermost comma groups expanded as bash would (for deny views only, bounded)."""
    words = [text]
    for _round in range(8):
        grown: list[str] = []
        changed = False
        for word in words:
            group = _BRACE_GROUP.search(word)
            if group is None:
                grown.append(word)
                continue
            changed = True
            grown += [word[: group.start()] + item + word[group.end() :] for item in group.group(1).split(",")]
        words = grown[:64]
        if not changed:
            break
    return words


def _add_level(words: list[Word], prefix: list[Word], levels: _Levels, allowed: bool) -> None:
    """The texts of one wrapper level: ``words`` from the level's command on, after ``prefix`` assignments."""
    levels.deny.append(" ".join(word.text() for word in (*prefix, *words)))
    if prefix:
        levels.deny.append(" ".join(word.text() for word in words))
    head = words[0].literal()
    if head is not None and "/" in head and os.path.basename(head):
        # "/bin/rm -rf /" is caught by a deny rule on "rm -rf *" (never allowed by one on "rm ...").
        levels.deny.append(" ".join([os.path.basename(head), *(word.text() for word in words[1:])]))
    if any("{" in word.text() for word in words):
        # "{rm,x}" or '{"rm",x}' runs "rm x": a deny view with the simple brace groups expanded.
        expanded = [piece for word in words for piece in _expand_braces(word.text())]
        levels.deny.append(" ".join(expanded))
    if allowed:
        allow_words = [word.text(SENTINEL) for word in words]
        if prefix:
            levels.allow.append(" ".join([*(word.text(SENTINEL) for word in prefix), *allow_words]))
        if not prefix or levels.allow_deeper:
            levels.allow.append(" ".join(allow_words))


def _walk(words: list[Word], assignments: list[Word], levels: _Levels) -> None:
    """Follow wrappers down to the command that runs, adding each level's texts."""
    prefix = assignments
    allowed = True
    for _level in range(_MAX_LEVELS):
        if not words:
            return
        _add_level(words, prefix, levels, allowed)
        prefix = []
        head = words[0].literal()
        if head is None:
            levels.problems.append(f"the command name {words[0].source} is computed at run time")
            return
        # A quoted, escaped or path-qualified name runs the same program: judged by its value.
        name = os.path.basename(head) if "/" in head else head
        if name in _FOLDER_CHANGERS:
            levels.changes_folder = True
        if name in _RUNTIME_COMMANDS or name in _RUNNERS:
            problem = _RUNTIME_COMMANDS.get(name) or f"`{name}` runs another command the rules do not follow"
            levels.problems.append(problem)
            _add_suffixes(words, levels)
            if name == "eval" and all(word.literal() is not None for word in words[1:]):
                # eval joins its arguments and runs them as a script: judge that script too.
                levels.script, levels.shell = " ".join(str(word.literal()) for word in words[1:]), "eval"
            return
        risky = _RISKY_OPTIONS.get(name)
        computed = next((w for w in words[1:] if _option_like(w)), None)
        _evaluating_builtin(name, words, levels)
        if name == "tee":
            _tee_writes(words, levels)
        if risky is not None or name in _WRITE_OPTIONS:
            option = _risky_option(name, words, risky or frozenset())
            if option is not None:
                levels.problems.append(
                    f"`{name} {option.split('=', 1)[0]}` may run another program or write files the rules cannot see"
                )
            else:
                _option_writes(name, words, levels)
                _script_problem(name, words, levels)
            if option is None and computed is not None:
                # "$(echo -c core.pager=...)" or "{-c,core.pager=...}" may become such an option at run
                # time: a rule allowing the command cannot vouch for it, only the default may.
                levels.unmatchable = (
                    f"{computed.source} is computed at run time and may become an option of `{name}` that runs "
                    "another program"
                )
        if name == "find":
            action = next((w.literal() for w in words[1:] if w.literal() in _FIND_ACTIONS), None)
            if action is not None:
                levels.problems.append(f"`find {action}` runs or deletes what the rules cannot see")
                _add_suffixes(words, levels)
            elif computed is not None:
                levels.unmatchable = (
                    f"{computed.source} is computed at run time and may become a `find` action that runs or deletes"
                )
            return
        if name in _SHELLS:
            if any(w.literal() is None for w in words[1:]):
                # "bash $(echo -c) 'rm -rf /'": the options, and so whether a script runs, are unknown.
                levels.problems.append(f"`{name}` gets an argument computed at run time, so what it runs is unknown")
                return
            _shell_script(name, words, levels)
            return
        wrapper = _WRAPPERS.get(name)
        if wrapper is None:
            return
        inner = _unwrap(name, wrapper, words, levels)
        if inner is None:
            return
        if wrapper.privileged:
            levels.privileged = True
            levels.cautions.append(f"it runs as another user ({name})")
            allowed = False  # only a rule naming the wrapper itself may allow it
        # Risky variables set by the wrapper or before it: allow rules must see them, so the
        # wrapped command alone is no longer something an allow rule may match.
        allowed = allowed and levels.allow_deeper
        words = inner
    levels.problems.append(f"more than {_MAX_LEVELS} wrappers deep")


def _option_like(word: Word) -> bool:
    """Whether a piece of ``word`` is computed at run time and may turn into options or several words."""
    return any(isinstance(segment, Expansion) and segment.kind in _OPTION_LIKE for segment in word.segments)


def _is_risky_option(word: str | None, risky: frozenset[str], *, clusters: bool = True) -> bool:
    """Whether ``word`` is one of the ``risky`` options, abbreviated, clustered or with a value glued on."""
    if word is None or not word.startswith("-") or word in ("-", "--"):
        return False
    key = word.split("=", 1)[0]
    if key in risky:
        return True
    if word.startswith("--"):
        # getopt_long and git accept any unambiguous abbreviation: "--out=x" is "--output=x".
        return len(key) >= 3 and any(option.startswith(key) for option in risky if option.startswith("--"))
    # A short option with its value glued on ("-Ixz", "-ccore.pager=x") or in a cluster ("-xIf", "-iO").
    letters = {option[1] for option in risky if len(option) == 2}
    if word[:2] in {f"-{letter}" for letter in letters}:
        return True
    return clusters and any(letter in letters for letter in word[1:])


def _risky_option(name: str, words: list[Word], risky: frozenset[str]) -> str | None:
    """The first option of ``words`` through which ``name`` runs a program or writes unseen files."""
    writes = _WRITE_OPTIONS.get(name, frozenset())
    # An option judged as a write ("--output=F") is not also an abbreviation of a risky one.
    arguments = [None if word.literal() is None else word.literal() for word in words[1:]]
    arguments = [value for value in arguments if value is None or value.split("=", 1)[0] not in writes]
    if name == "git":
        index, subcommand = 0, None
        while index < len(arguments):
            value = arguments[index]
            if value is None or not value.startswith("-"):
                subcommand = value
                break
            if _is_risky_option(value, risky | _GIT_GLOBAL_OPTIONS, clusters=False):
                return value
            index += 2 if value in _GIT_GLOBAL_WITH_VALUE else 1
        extra = _GIT_SUBCOMMAND_OPTIONS.get(subcommand or "", frozenset())
        for value in arguments[index + 1 :]:
            # "-Sstring" and "-Gregex" (pickaxe) carry a value, not a cluster of options.
            glued = value is not None and value[:2] in ("-S", "-G")
            if _is_risky_option(value, risky | extra, clusters=not glued):
                return value
        return None
    if name == "tar" and arguments and arguments[0] is not None and not arguments[0].startswith("-") \
            and any(letter in arguments[0] for letter in "IF"):
        return arguments[0]  # old-style keys: "tar xIf prog a.tar"
    for value in arguments:
        if _is_risky_option(value, risky) or (name in ("less", "more", *_VIM) and value is not None
                                              and value.startswith("+")):
            return value  # "less +!cmd" and "vim +cmd" run commands at start-up
    return None


_VIM = ("vi", "vim", "nvim", "view", "ex", "vimdiff", "gvim", "rvim")


def _option_writes(name: str, words: list[Word], levels: _Levels) -> None:
    """Files written through options (``git diff --output=F``, ``sort -o F``): judged as ``write(F)``."""
    options = _WRITE_OPTIONS.get(name)
    if not options:
        return
    index = 1
    while index < len(words):
        value = words[index].literal()
        index += 1
        if value is None or not _is_risky_option(value, options):
            continue
        target: str | None
        if value.startswith("--"):
            if "=" in value:
                target = value.split("=", 1)[1]
            else:
                target = words[index].literal() if index < len(words) else None
                index += 1
        elif value in options:
            target = words[index].literal() if index < len(words) else None
            index += 1
        elif value[:2] in options:
            target = value[2:]  # "-oFILE"
        else:
            levels.problems.append(f"`{name} {value}` writes to a file in a cluster of options the rules do not read")
            continue
        if target is None or not target:
            levels.problems.append(f"`{name} {value}` writes to a path computed at run time")
        elif target not in HARMLESS_TARGETS and target != "-":
            levels.writes.append(target)


def _tee_writes(words: list[Word], levels: _Levels) -> None:
    """``tee FILE...`` writes every operand: each is judged as ``write(FILE)``."""
    options_done = False
    for word in words[1:]:
        value = word.literal()
        if value is None:
            levels.problems.append(f"`tee` writes to a path computed at run time ({word.source})")
            continue
        if not options_done and value == "--":
            options_done = True
        elif not options_done and value.startswith("-") and value != "-":
            continue
        elif value not in HARMLESS_TARGETS:
            levels.writes.append(value)


def _script_problem(name: str, words: list[Word], levels: _Levels) -> None:
    """``sed``/``awk`` scripts that may write files or run commands (``w``, ``e``, ``system()``, ``>``)."""
    marker = _SCRIPT_MARKERS.get(name)
    if marker is None:
        return
    arguments = [word.literal() for word in words[1:]]
    if name == "sed" and "--sandbox" in arguments:
        return  # GNU sed refuses w, W, e and r in sandbox mode
    value_short, script_short = _SCRIPT_VALUE_SHORT[name], _SCRIPT_SHORT[name]
    value_long, script_long = _SCRIPT_VALUE_LONG[name], _SCRIPT_LONG[name]
    explicit: list[str | None] = []
    operands: list[str | None] = []
    index, options_done = 0, False
    while index < len(arguments):
        value = arguments[index]
        index += 1
        if value is None or options_done or not value.startswith("-") or value == "-":
            operands.append(value)
            continue
        if value == "--":
            options_done = True
            continue
        given: str | None = None
        if value.startswith("--"):
            if "=" in value:
                given = value.split("=", 1)[1]
            elif _is_risky_option(value, value_long):
                given = arguments[index] if index < len(arguments) else ""
                index += 1
            if _is_risky_option(value, script_long):
                explicit.append(given)
            continue
        # Options are permuted and clustered: "-ne SCRIPT", "-nes/a/b/", "file -e SCRIPT".
        for position, letter in enumerate(value[1:], start=1):
            if letter in value_short:
                given = value[position + 1 :]
                if not given:
                    given = arguments[index] if index < len(arguments) else ""
                    index += 1
                if letter in script_short:
                    explicit.append(given)
                break
    for script in explicit or operands[:1]:
        if script is None or marker.search(script):
            levels.problems.append(f"the `{name}` script may write files or run commands the rules cannot see")
            return


def _evaluating_builtin(name: str, words: list[Word], levels: _Levels) -> None:
    """Builtins that evaluate subscripts or expressions in their arguments (``declare "a[$(cmd)]"``)."""
    arguments = [word.literal() for word in words[1:]]
    if name in _EVALUATING_BUILTINS:
        pattern = _EVALUATED
        if name == "let" or any(value is not None and re.fullmatch(r"[-+][A-Za-z]*i[A-Za-z]*", value)
                                for value in arguments):
            pattern = re.compile(r"[A-Za-z_\[$`]")  # arithmetic: a name's value is evaluated in turn
            arguments = [value.split("=", 1)[-1] if value is not None and name != "let" else value
                         for value in arguments if value is None or not value.startswith(("-", "+"))]
        if name == "compgen" or any(value is None or pattern.search(value) for value in arguments):
            levels.problems.append(f"`{name}` evaluates its arguments, which the rules cannot follow")
        return
    if name == "printf" and any(value is None or value.startswith("-v") for value in arguments):
        # ``printf -v NAME`` assigns a shell variable, like ``NAME=value``: the next part may run
        # under a HOME, PATH or GIT_* the rules never saw (reported by an audit: HOME → a git
        # config that runs a command). A computed argument might spell -v too.
        levels.problems.append("`printf -v` assigns a variable that later parts of the command run under")
        return
    if name == "printf" or name in ("test", "["):
        flags = ("-v",) if name == "printf" else ("-v", "-R")
        for index, value in enumerate(arguments):
            if name == "printf" and value is not None and value.startswith("-v") and len(value) > 2:
                following: str | None = value[2:]  # "-vNAME": the name glued on
            elif value in flags:
                following = arguments[index + 1] if index + 1 < len(arguments) else ""
            else:
                continue
            if following is None or _EVALUATED.search(following):
                levels.problems.append(f"`{name} {value}` evaluates a subscript the rules cannot follow")
                return


def _add_suffixes(words: list[Word], levels: _Levels) -> None:
    """Deny views for every tail of the words: what a runner runs is somewhere among its arguments.

    ``xargs rm -rf`` and ``find . -exec rm -rf {} ;`` meet a deny rule on ``rm -rf *`` this way; an
    argument that merely spells a denied command may be denied too, which errs on the safe side.
    """
    for start in range(1, min(len(words), _MAX_LEVELS * 4)):
        tail = words[start:]
        levels.deny.append(" ".join(word.text() for word in tail))
        head = tail[0].literal()
        if head is not None and "/" in head and os.path.basename(head):
            levels.deny.append(" ".join([os.path.basename(head), *(word.text() for word in tail[1:])]))


def _split_string_denials(words: list[Word], levels: _Levels) -> None:
    """Deny views for ``env -S STRING ...`` (``words`` from the option on): the string split at blanks.

    ``env -S`` splits with its own quoting rules, so the call stays one the rules cannot judge;
    these views only let a deny rule on the command it names (``env -S 'rm x'``) deny it.
    """
    texts = [word.text() for word in words]
    option = texts[0]
    if option.startswith("--"):
        string, rest = (option.split("=", 1)[1], texts[1:]) if "=" in option else (" ".join(texts[1:2]), texts[2:])
    else:
        glued = option[option.index("S") + 1 :] if "S" in option else ""
        string, rest = (glued, texts[1:]) if glued else (" ".join(texts[1:2]), texts[2:])
    tokens = [*string.split(), *rest]
    for start in range(min(len(tokens), _MAX_LEVELS * 4)):
        levels.deny.append(" ".join(tokens[start:]))
    _add_suffixes(words, levels)


def _unwrap(name: str, wrapper: _Wrapper, words: list[Word], levels: _Levels) -> list[Word] | None:
    """The words of the command ``words[0]`` wraps, or ``None`` when it runs none (or it is unknowable)."""
    index = 1
    positionals = wrapper.positionals
    options_done = False
    while index < len(words):
        value = words[index].literal()
        if value is None:
            levels.problems.append(
                f"cannot tell which command `{name}` runs: {words[index].source} is computed at run time"
            )
            return None
        if not options_done and value == "--":
            options_done = True
            index += 1
            continue
        if not options_done and value.startswith("-") and len(value) > 1 and not value.lstrip("-").isdigit() \
                or (name == "nice" and re.fullmatch(r"-[0-9]+", value)):
            option = value.split("=", 1)[0]
            if option in wrapper.opaque or (value.startswith("-") and not value.startswith("--")
                                            and any(f"-{c}" in wrapper.opaque for c in value[1:])):
                levels.problems.append(f"`{name} {option}` runs a command the rules cannot see")
                _split_string_denials(words[index:], levels)
                return None
            if option in wrapper.describes:
                return None
            if option in wrapper.chdir or (not value.startswith("--") and value[:2] in wrapper.chdir):
                levels.changes_folder = True
            takes_value = _takes_value(value, wrapper.with_value)
            if takes_value:
                if index + 1 < len(words) and words[index + 1].literal() is None:
                    # "nice -n $(echo 5 rm -rf /) ls": the value may split into the command that runs.
                    levels.problems.append(
                        f"cannot tell which command `{name}` runs: {words[index + 1].source} is computed at run time"
                    )
                    return None
                target = words[index + 1].literal() if index + 1 < len(words) else None
                if option in wrapper.writes or value[:2] in wrapper.writes:
                    if target is None:
                        levels.problems.append(f"`{name} {option}` writes to a path computed at run time")
                    else:
                        levels.writes.append(target)
                index += 2
            else:
                if "=" in value and option in wrapper.writes:
                    levels.writes.append(value.split("=", 1)[1])
                elif not value.startswith("--") and value[:2] in wrapper.writes and len(value) > 2:
                    levels.writes.append(value[2:])  # "-oFILE"
                index += 1
            continue
        if wrapper.assignments and re.match(r"[A-Za-z_][A-Za-z0-9_]*=", value):
            if _HARMLESS_VARIABLES.fullmatch(value.split("=", 1)[0]) is None:
                levels.allow_deeper = False
                levels.cautions.append("it sets environment variables that can change what runs")
            # These wrappers stop reading options at their first operand (getopt "+"), as here.
            options_done = True
            index += 1
            continue
        if positionals:
            positionals -= 1
            options_done = True
            index += 1
            continue
        return words[index:]
    return None


def _takes_value(option: str, with_value: frozenset[str]) -> bool:
    """Whether ``option`` consumes the next word: ``-u root``, ``--user root`` (not ``--user=root``, ``-uroot``)."""
    if option.startswith("--"):
        return "=" not in option and option in with_value
    # A cluster "-abc": the value follows only when the last letter takes one and nothing is glued on.
    for position, letter in enumerate(option[1:], start=1):
        if f"-{letter}" in with_value:
            return position == len(option) - 1
    return False


def _shell_script(name: str, words: list[Word], levels: _Levels) -> None:
    """``bash -c 'script'``: record the script (analysed as its own parts), else it is a plain command."""
    index = 1
    has_c = False
    while index < len(words):
        value = words[index].literal()
        if value is None:
            if has_c:
                levels.problems.append(f"`{name} -c` runs a script computed at run time")
            return
        if value in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            index += 2
            continue
        if value == "--":
            index += 1
            break
        if re.fullmatch(r"[-+][A-Za-z]+", value):
            has_c = has_c or (value.startswith("-") and "c" in value)
            index += 1
            continue
        if value.startswith("--"):
            index += 1
            continue
        break
    if not has_c:
        return
    if index >= len(words):
        levels.problems.append(f"`{name} -c` has no script")
        return
    script = words[index].literal()
    if script is None:
        levels.problems.append(f"`{name} -c` runs a script computed at run time")
        return
    levels.script = script
    levels.shell = name
