"""The ``harness`` command: inspect the composition, run calls through the pipeline, read logs.

Exit statuses (DESIGN §7): 0 success or allowed; 1 a call failed or was denied (an unanswered
ask too); 2 a usage or configuration error. Heavy modules are imported inside the commands, so
``harness --help`` stays quick.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from .host import Harness
    from .types import ToolResult

__all__ = ["dispatch", "main"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """A bad argument or input file: reported on stderr with exit status 2."""


# --- Helpers ------------------------------------------------------------------------------------


def _out(text: str = "") -> None:
    print(text, flush=True)


def _err(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _open(args: argparse.Namespace, *, events: bool = False, configure: bool = True) -> Harness:
    """Build the Harness for the project: files, overrides, entry points, session log."""
    from .config import ConfigSource
    from .host import Harness

    source = ConfigSource.for_project(args.project, args.overrides, user_file=not args.no_user_config)
    harness = Harness(config=source, load_entrypoints=True, configure=configure)
    if events and harness.config.section("session").log:
        from .session_log import SessionLog

        directory = Path(args.project) / harness.config.section("session").dir
        harness.events = SessionLog(directory)
    return harness


@contextmanager
def _opened(args: argparse.Namespace, *, events: bool = False, configure: bool = True) -> Iterator[Harness]:
    """The project's Harness for one command, always closed afterwards."""
    harness = _open(args, events=events, configure=configure)
    try:
        yield harness
    finally:
        _close(harness)


def _close(harness: Harness) -> None:
    """Always close; start an event loop only when some plugin may hold something to close.

    A harness started with ``configure=False`` (``harness plugins``) never configured its plugins
    or registered their tools, so they hold nothing yet: unregistering them is the whole close.
    """
    if harness.configured and harness.plugin_manager.hook.harness_close.get_hookimpls():
        import anyio

        anyio.run(harness.aclose)
    else:
        for _name, plugin in reversed(harness.plugins()):
            harness.unregister(plugin)


def _text(result: ToolResult) -> str:
    parts = []
    for block in result.content:
        text = getattr(block, "text", None)
        parts.append(text if isinstance(text, str) else f"[{block.type} content]")
    return "\n".join(parts)


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in text.splitlines()) or prefix.rstrip()


def result_json(result: ToolResult) -> dict[str, Any]:
    """The ``--json`` shape of a result (DESIGN §7)."""
    error = result.error
    return {
        "is_error": result.is_error,
        "content": [block.to_json() for block in result.content],
        "error": None
        if error is None
        else {"message": error.message, "info": None if error.info is None else error.info.to_json()},
    }


def _parse_arguments(raw: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise UsageError(f"ARGS_JSON is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None


# --- Commands -----------------------------------------------------------------------------------


def cmd_plugins(args: argparse.Namespace) -> int:
    from . import hookspecs

    # Listing plugins needs no configuration: skipping it keeps this command quick.
    with _opened(args, configure=False) as harness:
        spec_names = [name for name in vars(hookspecs) if callable(getattr(hookspecs, name)) and hasattr(getattr(hookspecs, name), "harness_spec")]
        positions: dict[str, dict[str, str]] = {}
        for hook_name in spec_names:
            impls = list(reversed(getattr(harness.plugin_manager.hook, hook_name).get_hookimpls()))
            for index, impl in enumerate(impls, start=1):
                positions.setdefault(impl.plugin_name, {})[hook_name] = f"{index}/{len(impls)}"
        records = {record.name: record for record in harness.discovery}
        rows: list[dict[str, Any]] = []
        for name, _plugin in harness.plugins():
            record = records.get(name)
            rows.append(
                {
                    "name": name,
                    "status": "loaded",
                    "distribution": record.distribution if record else None,
                    "version": record.version if record else None,
                    "hooks": positions.get(name, {}),
                    "error": None,
                }
            )
        for record in harness.discovery:
            if record.status != "loaded":
                rows.append(
                    {
                        "name": record.name,
                        "status": record.status,
                        "distribution": record.distribution,
                        "version": record.version,
                        "hooks": {},
                        "error": record.error,
                    }
                )
        if args.json:
            _out(json.dumps(rows, indent=2))
            return EXIT_OK
        if not rows:
            _out("no plugins (install some: they register under the \"harness\" entry-point group)")
        for row in rows:
            if row["distribution"]:
                origin = f"{row['distribution']} {row['version']}"
            elif row["name"] in records:
                origin = "(from [plugins] modules)"
            else:
                origin = "(registered directly)"
            _out(f"{row['name']}  [{row['status']}]  {origin}")
            if row["error"]:
                _out(_indent(row["error"]))
            for hook, position in row["hooks"].items():
                _out(f"    {hook}  {position}")
        return EXIT_OK


def cmd_tools(args: argparse.Namespace) -> int:
    with _opened(args) as harness:
        # The agent's view: under Code Mode "code" only run_code, under "both" the tools and run_code.
        schemas = harness.schemas(args.agent)
        if args.json:
            _out(json.dumps(schemas, indent=2))
            return EXIT_OK
        if not schemas:
            _out("no tools are registered under this composition")
        for schema in schemas:
            _out(f"{schema['name']}: {schema['description'].splitlines()[0] if schema['description'] else ''}")
            _out(_indent(json.dumps(schema["parameters"], indent=2)))
        return EXIT_OK


def _pending_card(harness: Harness, name: str, arguments: Any, agent: str | None = None) -> str:
    definition = harness.visible_tool(name, agent)
    presented = None
    if definition is not None and definition.present_call is not None:
        try:
            presented = definition.present_call(arguments)
        except Exception:
            presented = None  # a presenter is UI only; a broken one must not stop the call
    if presented is None:
        return f"▶ {name} {json.dumps(arguments, ensure_ascii=False)}"
    return f"▶ {name}: {presented if isinstance(presented, str) else json.dumps(presented, ensure_ascii=False)}"


def _result_card(result: ToolResult) -> str:
    if result.is_error:
        code = result.error.info.code if result.error and result.error.info else None
        head = f"✖ failed{f' [{code}]' if code else ''}"
    else:
        head = "✔ ok"
    body = _text(result)
    return head + ("\n" + _indent(body) if body else "")


def cmd_call(args: argparse.Namespace) -> int:
    import anyio

    from .types import ToolCall

    arguments = _parse_arguments(args.arguments)
    with _opened(args, events=not args.dry_run) as harness:
        call = ToolCall(call_id="cli-1", name=args.name, arguments=arguments, agent=args.agent)
        if args.dry_run:
            verdict = anyio.run(harness.dry_run, call)
            if args.json:
                _out(json.dumps(verdict.to_json()))
            else:
                _out(_pending_card(harness, args.name, arguments, args.agent))
                reason = f": {verdict.reason}" if verdict.reason else ""
                _out(f"pre-execute said {verdict.pre_execute}; final decision: {verdict.decision}{reason}")
            if verdict.decision == "allow" and harness.visible_tool(args.name, args.agent) is None:
                # Policy allows it, but the call itself would fail at dispatch.
                _err(f'note: no tool "{args.name}" is registered; the call would fail with UNKNOWN_TOOL')
            return EXIT_OK if verdict.decision == "allow" else EXIT_FAILED
        if not args.json:
            _out(_pending_card(harness, args.name, arguments, args.agent))
        result = anyio.run(harness.execute, call)
        if args.json:
            _out(json.dumps(result_json(result), ensure_ascii=False))
        else:
            _out(_result_card(result))
            _log_location(harness)
        return EXIT_FAILED if result.is_error else EXIT_OK


def _log_location(harness: Harness) -> None:
    path = getattr(harness.events, "path", None)
    if path is not None:
        _out(f"session log: {path}")


def read_batch(path: Path) -> list[dict[str, Any]]:
    """Parse and check a JSONL batch file completely; any bad line is a UsageError naming it."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the file: {exc.strerror or exc}") from None
    calls: list[dict[str, Any]] = []
    ids: set[str] = set()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{where}: not valid JSON: {exc.msg} at column {exc.colno}") from None
        if not isinstance(entry, dict):
            raise UsageError(f'{where}: expected an object {{"name", "arguments", "id"?}}, got {type(entry).__name__}')
        unknown = sorted(set(entry) - {"name", "arguments", "id"})
        if unknown:
            raise UsageError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; allowed: name, arguments, id")
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise UsageError(f'{where}: "name" must be a non-empty string')
        call_id = entry.get("id", f"{path.stem}-{number}")
        if not isinstance(call_id, str) or not call_id:
            raise UsageError(f'{where}: "id" must be a non-empty string')
        if call_id in ids:
            raise UsageError(f'{where}: id "{call_id}" is used twice')
        ids.add(call_id)
        calls.append({"id": call_id, "name": name, "arguments": entry.get("arguments", {})})
    if not calls:
        raise UsageError(f"{path}: no calls in the file")
    return calls


def cmd_run(args: argparse.Namespace) -> int:
    import anyio

    from .hookspecs import hookimpl
    from .types import ToolCall

    # Like `git -C`, a relative FILE is read from the project folder.
    entries = read_batch(args.file if args.file.is_absolute() else Path(args.project) / args.file)
    if args.max_parallel < 1:
        raise UsageError("--max-parallel must be at least 1")
    harness = _open(args, events=True)
    total = len(entries)

    class Progress:
        """Prints one line per committed call (tools_result fires in model order in a batch)."""

        def __init__(self) -> None:
            self.done = 0

        @hookimpl(trylast=True)
        def tools_result(self, execution: Any, result: ToolResult) -> None:
            if execution.parent is not None:
                return  # a run_code program's sub-call, not a call of the batch
            self.done += 1
            if not args.json:
                mark = "✖" if result.is_error else "✔"
                _err(f"[{self.done}/{total}] {mark} {execution.call_id} {execution.name}")

    try:
        harness.register(Progress(), name="harness-cli-progress")
        calls = [ToolCall(call_id=e["id"], name=e["name"], arguments=e["arguments"], agent=args.agent) for e in entries]
        results = anyio.run(lambda: harness.execute_batch(calls, max_parallel=args.max_parallel))
        failed = sum(1 for result in results if result.is_error)
        if args.json:
            for entry, result in zip(entries, results, strict=True):
                _out(json.dumps({"id": entry["id"], "name": entry["name"], **result_json(result)}, ensure_ascii=False))
        else:
            _out(_summary_table(entries, results))
            _out(f"\n{total - failed} succeeded, {failed} failed")
            _log_location(harness)
        return EXIT_FAILED if failed else EXIT_OK
    finally:
        _close(harness)


def _summary_table(entries: list[dict[str, Any]], results: Sequence[ToolResult]) -> str:
    rows = [("id", "tool", "status", "result")]
    for entry, result in zip(entries, results, strict=True):
        if result.is_error:
            code = result.error.info.code if result.error and result.error.info else None
            status = f"failed {code}" if code else "failed"
        else:
            status = "ok"
        first = (_text(result).splitlines() or [""])[0]
        rows.append((entry["id"], entry["name"], status, first[:70] + ("…" if len(first) > 70 else "")))
    widths = [max(len(row[column]) for row in rows) for column in range(3)]
    lines = []
    for index, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(widths[column]) for column, cell in enumerate(row[:3])) + "  " + row[3])
        if index == 0:
            lines.append("  ".join("-" * width for width in widths) + "  " + "-" * 6)
    return "\n".join(lines)


def cmd_doctor(args: argparse.Namespace) -> int:
    import platform

    from . import hookspecs
    from .errors import HarnessError

    _out(f"python {platform.python_version()} ({sys.executable})")
    try:
        harness = _open(args)
    except Exception as exc:
        _err(f"the harness does not start: {exc}")
        return EXIT_USAGE
    problems = 0
    try:
        for record in harness.discovery:
            line = f"plugin {record.name} ({record.origin}): {record.status}"
            if record.error:
                line += f": {record.error}"
                problems += 1
            _out(line)
        direct = {record.name for record in harness.discovery}
        for name, _plugin in harness.plugins():
            if name not in direct:
                _out(f"plugin {name}: registered directly")
        spec_names = sorted(name for name, value in vars(hookspecs).items() if hasattr(value, "harness_spec"))
        missing = [name for name in spec_names if not getattr(harness.plugin_manager.hook, name).get_hookimpls()]
        if missing:
            _out("hooks no plugin implements (the core default applies): " + ", ".join(missing))
        for source, level, message in harness.diagnose():
            _out(f"{level}: {message}" if source == "core" else f"{level}: [{source}] {message}")
            if level == "error":
                problems += 1
        config = harness.config
        files = _config_files(harness)
        _out("configuration OK" + (f" ({', '.join(files)})" if files else " (defaults only: no harness.toml)"))
        if config.presets:
            _out("presets applied: " + ", ".join(config.presets))
        _out(f"{len(harness.tools)} tool(s): {', '.join(harness.tools.names()) or 'none'}")
        try:
            commands = plugin_commands(harness)
        except HarnessError as exc:
            _out(f"error: plugin commands: {exc}")
            problems += 1
        else:
            # `harness --help` never loads plugins (it must stay fast), so their commands are listed here.
            listed = ", ".join(f"{name} ({command['plugin']})" for name, command in sorted(commands.items()))
            _out(f"plugin commands: {listed or 'none'}")
        return EXIT_FAILED if problems else EXIT_OK
    finally:
        _close(harness)


def _config_files(harness: Harness) -> list[str]:
    source = harness.config.source
    if source is None:
        return []
    return [str(path) for path in (source.user_file, source.project_file) if path is not None]


def cmd_docs(args: argparse.Namespace) -> int:
    from .docsgen import generated_docs

    with _opened(args) as harness:
        out = args.out or Path(args.project) / "docs"
        stale = []
        for relative, text in generated_docs(harness).items():
            path = out / relative
            current = path.read_text(encoding="utf-8") if path.exists() else None
            if current == text:
                continue
            if args.check:
                stale.append(str(path))
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
                _out(f"wrote {path}")
        if stale:
            _err("stale generated docs (run `harness docs` and commit the result): " + ", ".join(stale))
            return EXIT_FAILED
        if args.check:
            _out("generated docs are up to date")
        return EXIT_OK


def _flatten(values: Any, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    if isinstance(values, dict) and values:
        rows: list[tuple[tuple[str, ...], Any]] = []
        for key, value in values.items():
            rows += _flatten(value, (*prefix, key))
        return rows
    return [(prefix, values)]


def cmd_config(args: argparse.Namespace) -> int:
    action = args.config_command
    if action is None:
        raise UsageError("harness config needs an action: show, check or init")
    if action == "init":
        return _config_init(args)
    with _opened(args) as harness:
        config = harness.config
        if action == "check":
            files = _config_files(harness)
            _out("configuration OK" + (f": {', '.join(files)}" if files else " (no files: defaults only)"))
            return EXIT_OK
        if args.json:
            document: dict[str, Any] = {"preset": list(config.presets), "values": config.values}
            if args.origin:
                document["origins"] = {".".join(path): config.origin(".".join(path)) for path, _ in _flatten(config.values)}
            _out(json.dumps(document, indent=2))
            return EXIT_OK
        if args.origin:
            for path, value in _flatten(config.values):
                key = ".".join(path)
                _out(f"{key} = {json.dumps(value)}    # {config.origin(key)}")
            return EXIT_OK
        import tomli_w

        header = {"preset": list(config.presets)} if config.presets else {}
        _out(tomli_w.dumps({**header, **config.values}).rstrip())
        return EXIT_OK


def _config_init(args: argparse.Namespace) -> int:
    from .starter import starter_config

    target = Path(args.project) / "harness.toml"
    if target.exists() and not args.force:
        raise UsageError(f"{target} already exists; use --force to overwrite it")
    with _opened(args) as harness:
        target.write_text(starter_config(harness), encoding="utf-8")
    _out(f"wrote {target}")
    return EXIT_OK


def cmd_presets(args: argparse.Namespace) -> int:
    from .config import ConfigError, effective_preset, preview_preset

    with _opened(args) as harness:
        config = harness.config
        rows: list[dict[str, Any]] = []
        for name, preset in sorted(config.available_presets.items()):
            settings = effective_preset(name, config)
            row: dict[str, Any] = {
                "name": name,
                "source": preset.source,
                "description": preset.description,
                "extends": list(preset.extends),
                "default": preset.default,
                "selected": name in config.presets,
                "settings": settings,
            }
            # What selecting it would give here: every key of the sections it touches, section
            # defaults and this project's files included (a file may override what a preset sets).
            try:
                preview = preview_preset(name, config)
            except ConfigError as exc:
                row["effective"], row["origins"], row["error"] = None, None, str(exc)
            else:
                touched = {key: preview.values[key] for key in settings if key in preview.values}
                row["effective"] = touched
                row["origins"] = {".".join(path): preview.origin(".".join(path)) for path, _ in _flatten(touched)}
                row["error"] = None
            rows.append(row)
        if args.json:
            _out(json.dumps(rows, indent=2))
            return EXIT_OK
        if not rows:
            _out("no presets: plugins contribute them, and harness.toml may define [presets.NAME]")
        for row in rows:
            marks = [mark for mark, on in (("selected", row["selected"]), ("default", row["default"])) if on]
            _out(f"{row['name']}{'  (' + ', '.join(marks) + ')' if marks else ''}  — from {row['source']}")
            if row["description"]:
                _out(_indent(row["description"]))
            if row["extends"]:
                _out(f"    extends: {', '.join(row['extends'])}")
            for path, value in _flatten(row["settings"]):
                _out(f"    {'.'.join(path)} = {json.dumps(value)}")
            if row["error"] is not None:
                _out("    cannot be selected here:")
                _out(_indent(row["error"], "      "))
            elif row["effective"]:
                _out("    in effect when selected (section defaults and this project's files included):")
                for path, value in _flatten(row["effective"]):
                    key = ".".join(path)
                    _out(f"      {key} = {json.dumps(value)}    # {row['origins'][key]}")
        return EXIT_OK


def cmd_log(args: argparse.Namespace) -> int:
    from .errors import HarnessError
    from .session_log import find_session, follow_session, read_session, render_card

    # The log folder may come from any layer, presets included, so compose the configuration.
    with _opened(args) as harness:
        directory = Path(args.project) / harness.config.section("session").dir
    try:
        path = find_session(directory, args.session)
    except HarnessError as exc:
        raise UsageError(str(exc)) from None

    def show(event: Any) -> None:
        if args.json:
            _out(json.dumps({"seq": event.seq, "time": event.time, "type": event.type, "data": event.data}, ensure_ascii=False))
        else:
            _out(render_card(event))

    if args.follow:
        try:
            for event in follow_session(path):
                show(event)
        except KeyboardInterrupt:
            return EXIT_OK
        return EXIT_OK
    read = read_session(path)
    for warning in read.warnings:
        _err(f"warning: {warning}")
    if not args.json:
        _out(f"session {path.stem} ({path})")
    for event in read.events:
        show(event)
    return EXIT_OK


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "plugins": cmd_plugins,
    "tools": cmd_tools,
    "call": cmd_call,
    "run": cmd_run,
    "doctor": cmd_doctor,
    "docs": cmd_docs,
    "config": cmd_config,
    "presets": cmd_presets,
    "log": cmd_log,
}


def plugin_command(core_parser: argparse.ArgumentParser, argv: list[str], word: str) -> int:
    """Run a command a plugin registered through ``harness_register_commands``."""
    from .errors import HarnessError

    globals_only, _rest = _global_options(core_parser).parse_known_args(argv)
    globals_only.command = word
    try:
        harness = _open(globals_only, events=True)
    except HarnessError as exc:
        _err(f"harness {word}: error: {exc}")
        return EXIT_USAGE
    try:
        try:
            commands = plugin_commands(harness)
        except HarnessError as exc:
            _err(f"harness {word}: error: {exc}")
            return EXIT_USAGE
        if word not in commands:
            known = sorted(set(commands) | _core_command_names())
            _err(f"harness: error: unknown command {word!r}; commands: {', '.join(known)}")
            return EXIT_USAGE
        parser = argparse.ArgumentParser(prog="harness", parents=[_global_options(core_parser)], add_help=True)
        subcommands = parser.add_subparsers(dest="command", metavar="COMMAND")
        for name, command in commands.items():
            sub = subcommands.add_parser(name, help=command["help"], description=command["help"])
            command["setup"](sub)
        args = parser.parse_args(argv)
        try:
            return int(commands[word]["run"](args, harness))
        except UsageError as exc:
            _err(f"harness {word}: error: {exc}")
            return EXIT_USAGE
        except HarnessError as exc:
            _err(f"harness {word}: error: {exc}")
            return EXIT_USAGE
    finally:
        _close(harness)


def _core_command_names() -> set[str]:
    from harness_cli import CORE_COMMANDS

    return set(CORE_COMMANDS)


def _global_options(core_parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """A parser with only the core's global options (-C, -c, --no-user-config)."""
    parser = argparse.ArgumentParser(add_help=False)
    for action in core_parser._actions:  # argparse offers no public way to copy options
        if action.option_strings and action.dest not in ("help",) and not isinstance(action, argparse._SubParsersAction):
            parser._add_action(action)
    return parser


def plugin_commands(harness: Harness) -> dict[str, dict[str, Any]]:
    """Commands registered by plugins: name → {help, setup, run}; core names are refused."""
    from .errors import PluginRefusedError

    commands: dict[str, dict[str, Any]] = {}
    for impl in harness.plugin_manager.hook.harness_register_commands.get_hookimpls():

        def register(
            name: str,
            *,
            help: str,
            setup: Callable[[argparse.ArgumentParser], None],
            run: Callable[[argparse.Namespace, Harness], int],
            _plugin: str = impl.plugin_name,
        ) -> None:
            if name in _core_command_names() or name in commands:
                raise PluginRefusedError(f'plugin "{_plugin}" registered the command "{name}", which is taken')
            commands[name] = {"help": help, "setup": setup, "run": run, "plugin": _plugin}

        impl.function(*[register for _ in impl.argnames])
    return commands


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``harness`` command; returns the exit status."""
    from harness_cli import main as cli_main

    return cli_main(argv)


def dispatch(args: argparse.Namespace) -> int:
    """Run a parsed command; map usage and configuration errors to exit status 2."""
    from .errors import HarnessError

    try:
        return COMMANDS[args.command](args)
    except UsageError as exc:
        _err(f"harness {args.command}: error: {exc}")
        return EXIT_USAGE
    except HarnessError as exc:
        # Configuration and plugin-loading errors: nothing ran.
        _err(f"harness {args.command}: error: {exc}")
        return EXIT_USAGE


def run() -> NoReturn:
    """Console-script wrapper: exit with :func:`main`'s status."""
    sys.exit(main())
