"""The Codex bridge: PreToolUse hooks in tools_pre_execute, PostToolUse in tools_post_execute.

reference/hook-bridges.md B (protocol) and C.13 (design). Off until ``[hooks.codex] enabled = true``.
Codex's dialect is kept: only a deny (or a block) with a reason stops a call; ``ask``, a bare
``allow`` and malformed output are failed runs, which proceed unless ``strict = true``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from harness_core import (
    Accept,
    Block,
    ContextMessage,
    Deny,
    Execution,
    Harness,
    HarnessConfig,
    TextBlock,
    ToolResult,
    hookimpl,
)
from harness_core.lossless import thaw

if TYPE_CHECKING:
    from harness_core import Signal
    from harness_hook_runner import HookHandler, HookOutcome, HookRun

    from .config import CodexConfig
    from .hookfile import CodexHookFiles

__all__ = ["CodexHooks", "DEFAULT_TOOL_NAMES", "PLUGIN_NAME"]

PLUGIN_NAME = "codex"
#: The config section this bridge owns.
SECTION = "hooks.codex"
#: Harness tool name -> the Codex tool name hooks match on (B.3, B.5, B.7). Codex edits files with
#: ``apply_patch`` (matchers may also say ``Edit`` or ``Write``) and has no read tool.
DEFAULT_TOOL_NAMES: dict[str, str] = {"bash": "Bash", "write": "apply_patch", "edit": "apply_patch"}
FALLBACK_DENY = "blocked by PreToolUse hook"
FALLBACK_STOP = "PostToolUse hook stopped execution"




def _patch(name: str, arguments: dict[str, Any]) -> str:
    """An ``apply_patch`` envelope for a harness write or edit (B.5: ``tool_input`` is ``{command}``)."""
    path = str(arguments.get("file_path", arguments.get("path", "")))
    if name == "write" or "content" in arguments:
        body = "".join(f"+{line}\n" for line in str(arguments.get("content", "")).splitlines())
        return f"*** Begin Patch\n*** Add File: {path}\n{body}*** End Patch"
    old = "".join(f"-{line}\n" for line in str(arguments.get("old_string", "")).splitlines())
    new = "".join(f"+{line}\n" for line in str(arguments.get("new_string", "")).splitlines())
    return f"*** Begin Patch\n*** Update File: {path}\n@@\n{old}{new}*** End Patch"


class CodexHooks:
    """Runs the user's Codex command hooks for PreToolUse and PostToolUse (off by default)."""

    def __init__(self) -> None:
        self.settings: CodexConfig | None = None
        # Read at configure time; the module that reads them is imported then, not at discovery.
        self._hooks: CodexHookFiles | None = None
        self.project_dir = Path.cwd()
        self.tool_names = dict(DEFAULT_TOOL_NAMES)
        self.session_id = os.urandom(8).hex()

    # --- host hooks --------------------------------------------------------------------------

    @hookimpl
    def harness_register_config(self, register: Callable[[str, type[Any]], None]) -> None:
        from .config import CodexConfig

        register(SECTION, CodexConfig)

    @property
    def hooks(self) -> CodexHookFiles:
        """The hooks read at configure time (none before that, or while the bridge is disabled)."""
        if self._hooks is None:
            from .hookfile import CodexHookFiles

            self._hooks = CodexHookFiles()
        return self._hooks

    @hookimpl
    def harness_configure(self, config: HarnessConfig) -> None:
        from .hookfile import CodexHookFiles, load_files

        section = config.section(SECTION)
        self.settings = section
        self.project_dir = config.project_dir
        self.tool_names = {**DEFAULT_TOOL_NAMES, **section.tool_names}
        self._hooks = load_files(self.file_paths()) if section.enabled else CodexHookFiles()

    def file_paths(self) -> list[Path]:
        """The hook files in the order they are read: the user's (if on), then ``files``."""
        assert self.settings is not None
        paths: list[Path] = []
        if self.settings.user_files:
            home = Path(os.environ.get("CODEX_HOME") or os.path.expanduser("~/.codex"))
            paths += [home / "hooks.json", home / "config.toml"]
        for entry in self.settings.files:
            path = Path(os.path.expanduser(entry))
            paths.append(path if path.is_absolute() else self.project_dir / path)
        return paths

    @property
    def enabled(self) -> bool:
        return self.settings is not None and self.settings.enabled

    @hookimpl
    def harness_diagnose(self) -> list[tuple[str, str]]:
        if not self.enabled:
            return [("info", "disabled ([hooks.codex] enabled = false): no Codex hooks run")]
        assert self.settings is not None
        counts = ", ".join(f"{event}: {len(entries)}" for event, entries in self.hooks.entries.items())
        files = ", ".join(self.hooks.files) or "none found"
        strict = self.settings.strict
        found: list[tuple[str, str]] = [("info", f"hooks from {files} ({counts}); strict = {str(strict).lower()}")]
        for event, entries in self.hooks.entries.items():
            for entry in entries:
                found.append(("info", f"{event} [{entry.matcher.text or '*'}]: {entry.handler.command}"))
        if not strict and any(self.hooks.entries.values()):
            found.append(
                (
                    "warning",
                    "not strict: a Codex hook that fails, times out, answers ask or prints invalid output does not "
                    "deny (set strict = true under [hooks.codex] to fail closed)",
                )
            )
        return [*found, *self.hooks.notes]

    @hookimpl
    def harness_register_commands(self, register: Callable[..., None]) -> None:
        register(
            "codex-hooks",
            help="Codex hooks: run the PreToolUse hooks for a call",
            setup=_setup_command,
            run=self._run_command,
        )

    # --- the pipeline ------------------------------------------------------------------------

    @hookimpl
    async def tools_pre_execute(self, execution: Execution, call_next: Callable[[], Awaitable[Any]]) -> Any:
        if not self.enabled:
            return await call_next()
        tool = self.tool_names.get(execution.name, execution.name)
        handlers = self.hooks.handlers("PreToolUse", tool)
        if not handlers:
            return await call_next()
        payload = self.payload("PreToolUse", execution.name, tool, execution.arguments, execution.call_id, execution.agent)
        outcomes = await self.run(execution, "PreToolUse", handlers, payload)
        decision = self.pre_decision(outcomes)
        if decision is not None:
            return decision
        # A hook never pre-approves: the inner decision (a Deny or an Ask) always stands.
        return await call_next()

    def pre_decision(self, outcomes: list[HookOutcome]) -> Deny | None:
        """The denial the hooks force, or ``None`` to continue down the waterfall (B.6, deny wins)."""
        from harness_hook_runner import merge

        merged = merge(outcomes)
        if merged.blocks:
            return Deny(reason=merged.reason or FALLBACK_DENY)
        strict_denial = self.strict_failure(outcomes)
        if strict_denial is not None:
            return Deny(reason=strict_denial)
        rewrites = [outcome.updated_input for outcome in outcomes if outcome.updated_input is not None]
        if rewrites:
            # Arguments are frozen and already audited: never run a call no policy saw. Deny and
            # hand the rewrite (the last one, B.6) back to the model to re-issue.
            rewritten = json.dumps(rewrites[-1], ensure_ascii=False, sort_keys=True)
            return Deny(
                reason="a Codex PreToolUse hook rewrote the arguments (updatedInput), which the harness does not "
                f"apply; re-issue the call with these arguments if they are what you meant: {rewritten}"
            )
        return None

    @hookimpl
    async def tools_post_execute(
        self, execution: Execution, result: ToolResult, call_next: Callable[[], Awaitable[Any]]
    ) -> Any:
        # Denied, failed and unknown calls carry is_error; they never reach PostToolUse hooks (C.13).
        if not self.enabled or result.is_error:
            return await call_next()
        tool = self.tool_names.get(execution.name, execution.name)
        handlers = self.hooks.handlers("PostToolUse", tool)
        if not handlers:
            return await call_next()
        payload = self.payload(
            "PostToolUse", execution.name, tool, execution.arguments, execution.call_id, execution.agent, result
        )
        outcomes = await self.run(execution, "PostToolUse", handlers, payload)
        from harness_hook_runner import merge

        merged = merge(outcomes)
        contexts = (
            [ContextMessage(content=[TextBlock(text=merged.additional_context)], source=PLUGIN_NAME)]
            if merged.additional_context
            else []
        )
        if merged.stop:
            # B.6: continue:false replaces the result with its reason, stopReason, or a default.
            first = next(outcome for outcome in outcomes if outcome.stop)
            text = first.reason or first.stop_reason or FALLBACK_STOP
            return Block(feedback=[TextBlock(text=text)], additional_contexts=contexts)
        if merged.blocks:
            # B.6/B.7: Codex replaces the tool result with the feedback of every blocking hook.
            return Block(feedback=[TextBlock(text=merged.reason or "blocked by PostToolUse hook")], additional_contexts=contexts)
        strict_failure = self.strict_failure(outcomes)
        if strict_failure is not None:
            return Block(feedback=[TextBlock(text=strict_failure)], additional_contexts=contexts)
        downstream = await call_next()
        if contexts and isinstance(downstream, Accept):
            return Accept(
                content=downstream.content,
                value=downstream.value,
                additional_contexts=[*contexts, *downstream.additional_contexts],
            )
        if contexts and isinstance(downstream, Block):
            return Block(feedback=downstream.feedback, additional_contexts=[*contexts, *downstream.additional_contexts])
        return downstream

    def strict_failure(self, outcomes: list[HookOutcome]) -> str | None:
        """Under ``strict = true``: the denial reason naming the first hook whose run failed."""
        if self.settings is None or not self.settings.strict:
            return None
        for outcome in outcomes:
            if outcome.error is not None:
                return f"Codex hook {outcome.command!r} failed ({outcome.error}); [hooks.codex] strict = true denies the call"
        return None

    # --- running -----------------------------------------------------------------------------

    def payload(
        self,
        event: str,
        name: str,
        tool: str,
        arguments: Any,
        call_id: str,
        agent: str | None,
        result: ToolResult | None = None,
    ) -> dict[str, Any]:
        """The stdin object of B.5: Bash and apply_patch get ``{command}``, other tools their arguments."""
        args = thaw(arguments)
        if not isinstance(args, dict):
            args = {}
        if tool == "Bash":
            command = args.get("command")
            tool_input: dict[str, Any] = {"command": command if isinstance(command, str) else ""}
        elif tool == "apply_patch":
            tool_input = {"command": _patch(name, args)}
        else:
            tool_input = args
        payload: dict[str, Any] = {
            "session_id": agent or self.session_id,
            "transcript_path": None,
            "cwd": str(self.project_dir),
            "hook_event_name": event,
            "model": "",
            "permission_mode": "default",
            "turn_id": None,
            "tool_name": tool,
            "tool_use_id": call_id,
            "tool_input": tool_input,
        }
        if result is not None:
            payload["tool_response"] = _tool_response(result)
        return payload

    async def run_handlers(
        self, handlers: list[HookHandler], payload: dict[str, Any], signal: Signal | None
    ) -> list[HookRun]:
        """Run every handler concurrently (B.4: no deduplication), stdin without a trailing newline."""
        from harness_hook_runner import HookRun, run_hook

        assert self.settings is not None
        settings = self.settings
        runs: list[HookRun | None] = [None] * len(handlers)

        async def run_one(index: int, handler: HookHandler) -> None:
            runs[index] = await run_hook(
                handler.command,
                payload,
                cwd=self.project_dir,
                env=dict(os.environ),
                timeout_s=handler.timeout_s if handler.timeout_s is not None else settings.timeout_s,
                max_output_bytes=settings.max_output_bytes,
                signal=signal,
                shell=settings.shell,
                trailing_newline=False,
            )

        async with anyio.create_task_group() as group:
            for index, handler in enumerate(handlers):
                group.start_soon(run_one, index, handler)
        return [run for run in runs if isinstance(run, HookRun)]

    async def run(
        self, execution: Execution, event: str, handlers: list[HookHandler], payload: dict[str, Any]
    ) -> list[HookOutcome]:
        """Run the handlers, record ``hook/invoked``/``hook/result``, decode each run (B.6)."""
        from harness_hook_runner import result_record

        from .codec import decode_codex

        for handler in handlers:
            execution.record_event(
                "hook/invoked",
                {
                    "dialect": PLUGIN_NAME,
                    "event": event,
                    "command": handler.command,
                    "matcher": handler.matcher,
                    "source": handler.source,
                },
            )
        runs = await self.run_handlers(handlers, payload, execution.signal)
        outcomes = [decode_codex(run, event) for run in runs]
        for run, outcome in zip(runs, outcomes, strict=True):
            execution.record_event("hook/result", result_record(PLUGIN_NAME, event, run, outcome))
        return outcomes

    # --- harness codex-hooks test ------------------------------------------------------------

    def _run_command(self, args: argparse.Namespace, harness: Harness) -> int:
        try:
            arguments = json.loads(args.arguments)
        except ValueError as exc:
            print(f"harness codex-hooks test: ARGS_JSON is not valid JSON: {exc}", file=sys.stderr)
            return 2
        if not isinstance(arguments, dict):
            print("harness codex-hooks test: ARGS_JSON must be a JSON object", file=sys.stderr)
            return 2
        if not self.enabled:
            print("harness codex-hooks test: Codex hooks are disabled ([hooks.codex] enabled = false)", file=sys.stderr)
            return 2
        report = anyio.run(self.test_call, args.name, arguments)
        print(json.dumps(report, indent=2, ensure_ascii=False))
        return 1 if report["decision"] == "deny" else 0

    async def test_call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Run the PreToolUse hooks for a call to ``name`` and report each hook and the verdict."""
        from harness_core import Signal
        from harness_hook_runner import result_record

        from .codec import decode_codex

        tool = self.tool_names.get(name, name)
        handlers = self.hooks.handlers("PreToolUse", tool)
        payload = self.payload("PreToolUse", name, tool, arguments, "codex-hooks-test", None)
        runs = await self.run_handlers(handlers, payload, Signal())
        outcomes = [decode_codex(run, "PreToolUse") for run in runs]
        decision = self.pre_decision(outcomes)
        return {
            "tool_name": tool,
            "hooks": [result_record(PLUGIN_NAME, "PreToolUse", run, outcome) for run, outcome in zip(runs, outcomes, strict=True)],
            "decision": "deny" if decision is not None else "continue",
            "reason": decision.reason if decision is not None else None,
        }


def _setup_command(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="codex_hooks_command", required=True)
    test = sub.add_parser("test", help="run the Codex PreToolUse hooks that match a call and print their verdict")
    test.add_argument("name", help="the harness tool name, e.g. bash")
    test.add_argument("arguments", help='the arguments as a JSON object, e.g. \'{"command": "ls"}\'')


def _tool_response(result: ToolResult) -> Any:
    # B.5: Codex sends the tool's output; we send the value when it is an object, else the text.
    value = thaw(result.value)
    if isinstance(value, dict):
        return value
    return "".join(block.text for block in result.content if isinstance(block, TextBlock))
