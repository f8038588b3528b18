"""The ``harness`` command's entry point: parses arguments without importing the core.

``harness --help`` and argument errors are answered from here alone, so they stay as quick as
starting Python; a command imports :mod:`harness_core.cli` only once it is known to run.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

__all__ = ["CORE_COMMANDS", "build_parser", "command_word", "main", "run"]

DESCRIPTION = """\
Run AI-agent tool calls through a policy pipeline of installed plugins.

The project's harness.toml (in --project, default: the current folder) and the user file
compose the configuration; plugins come from the "harness" entry points.
"""

EPILOG = """\
exit status: 0 success or allowed, 1 a call failed or was denied, 2 usage or configuration error.

examples:
  harness plugins                       what is loaded, from which distribution, in which order
  harness tools --json                  the tool schemas exactly as the model sees them
  harness call echo '{"text": "hi"}'    one call, with a pending card and a result card
  harness call bash '{"command": "rm -rf /"}' --dry-run
                                        what policy would decide, without running anything
  harness run calls.jsonl               a batch: one {"name", "arguments", "id"?} per line
  harness config show --origin          the effective configuration and where each value came from
  harness log --follow                  the newest session log as readable cards

environment:
  HARNESS_LOAD_PLUGINS   comma list of entry-point names to load (empty: none); unset: all
  HARNESS_USER_CONFIG    path of the user config file (empty: none)

plugins add commands of their own (for example `harness approvals`, `harness rules`); `harness doctor`
lists them, and `harness COMMAND --help` explains one.
"""


# --- Parsing ------------------------------------------------------------------------------------


#: The commands the core itself implements; any other word is looked up among plugin commands.
CORE_COMMANDS = frozenset({"plugins", "tools", "call", "run", "doctor", "docs", "config", "presets", "log"})


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="harness",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--project", "-C", metavar="DIR", default=".", help="project folder holding harness.toml; relative FILE arguments are read from it (default: .)")
    parser.add_argument(
        "-c",
        dest="overrides",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="override a config value, e.g. -c approval.policy=never (TOML value; repeatable)",
    )
    parser.add_argument("--no-user-config", action="store_true", help="ignore the user config file")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    plugins = commands.add_parser("plugins", help="list plugins: distribution, version, hooks and chain positions")
    plugins.add_argument("--json", action="store_true", help="machine-readable output")

    tools = commands.add_parser("tools", help="show the tool schemas as the model would see them")
    tools.add_argument("--json", action="store_true", help="machine-readable output")
    tools.add_argument(
        "--agent", default="cli", help="show what this agent sees under its Code Mode presentation mode (default: cli)"
    )

    call = commands.add_parser(
        "call",
        help="run one call through the pipeline",
        description="Run one call through the pipeline and print a pending card and a result card.",
    )
    call.add_argument("name", help="tool name")
    call.add_argument("arguments", nargs="?", default="{}", metavar="ARGS_JSON", help="arguments as JSON (default: {})")
    call.add_argument("--json", action="store_true", help="print the result as one JSON object")
    call.add_argument("--dry-run", action="store_true", help="run pre-execute, approval and guards only; never the body")
    call.add_argument("--agent", default="cli", help="agent the call runs for (approval routes by it; default: cli)")

    run = commands.add_parser(
        "run",
        help="run a JSONL batch of calls",
        description='Run a batch of calls, one JSON object {"name", "arguments", "id"?} per line, '
        "through execute_batch. The whole file is checked before anything runs.",
    )
    run.add_argument("file", type=Path, help="the .jsonl file (relative to the project folder)")
    run.add_argument("--json", action="store_true", help="print one JSON result per line instead of the table")
    run.add_argument("--agent", default="cli", help="agent the calls run for (default: cli)")
    run.add_argument("--max-parallel", type=int, default=10, help="concurrency-safe calls overlapping at most (default: 10)")

    commands.add_parser("doctor", help="what loads, what is blocked or failing, unimplemented hooks, warnings")

    docs = commands.add_parser("docs", help="regenerate the generated docs (pipeline graph, tool catalog)")
    docs.add_argument("--check", action="store_true", help="fail (exit 1) when the files on disk are stale")
    docs.add_argument("--out", type=Path, default=None, help="folder to write to (default: PROJECT/docs)")

    config = commands.add_parser("config", help="show, check or initialise the configuration")
    config_commands = config.add_subparsers(dest="config_command", metavar="ACTION")
    show = config_commands.add_parser("show", help="print the effective configuration")
    show.add_argument("--origin", action="store_true", help="say where each value came from")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    config_commands.add_parser("check", help="validate; exit 2 on any problem")
    init = config_commands.add_parser("init", help="write a commented starter harness.toml")
    init.add_argument("--force", action="store_true", help="overwrite an existing harness.toml")

    presets = commands.add_parser("presets", help="list the presets with their effective settings")
    presets.add_argument("--json", action="store_true", help="machine-readable output")

    log = commands.add_parser("log", help="show a session log as readable cards")
    log.add_argument("session", nargs="?", help="session id, a unique prefix of one, or a .jsonl path (default: newest)")
    log.add_argument("--json", action="store_true", help="print the raw JSON lines")
    log.add_argument("--follow", "-f", action="store_true", help="keep printing new events as they are appended")
    return parser


#: Global options that take a value, so the command word can be found without parsing.
_VALUED_OPTIONS = frozenset({"-C", "--project", "-c"})


def command_word(argv: Sequence[str]) -> str | None:
    """The first word that is not a global option: the command (``None`` if there is none)."""
    words = iter(argv)
    for word in words:
        if word in _VALUED_OPTIONS:
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run the command; returns the exit status (0, 1 or 2)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    word = command_word(argv)
    if word is not None and word not in CORE_COMMANDS:
        # Not a core command: plugins may add it (harness_register_commands), so load them.
        from harness_core.cli import plugin_command

        return plugin_command(parser, argv, word)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    from harness_core.cli import dispatch

    return dispatch(args)


def run() -> NoReturn:
    """Console-script wrapper: exit with :func:`main`'s status."""
    sys.exit(main())


if __name__ == "__main__":
    run()
