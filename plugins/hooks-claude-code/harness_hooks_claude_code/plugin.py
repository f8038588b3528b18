"""The Claude Code bridge: PreToolUse hooks in tools_pre_execute, PostToolUse in tools_post_execute.

reference/hook-bridges.md A (protocol) and C.7/C.8/C.10/C.11 (mapping). Hooks are a compatibility
adapter: a hook's allow never skips later listeners or the guards, an ask fails closed without an
approval service, and errors are non-blocking unless ``[hooks.claude_code] strict = true``.
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
    Ask,
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
    from harness_hook_runner import HookHandler, HookOutcome

    from .config import ClaudeCodeConfig
    from .settings import HookSettings

# The hook runner is imported when hooks first run, not when the entry point loads: `harness
# plugins` and `harness --help` never need it.

__all__ = ["ClaudeCodeHooks", "DEFAULT_TOOL_NAMES", "PLUGIN_NAME"]

PLUGIN_NAME = "claude-code"
#: The config section this bridge owns (another bridge owns [hooks.codex]).
SECTION = "hooks.claude_code"
#: Harness tool name -> the Claude Code name hooks match on (C.13 tool-name aliasing).
DEFAULT_TOOL_NAMES: dict[str, str] = {"bash": "Bash", "read": "Read", "write": "Write", "edit": "Edit"}
#: C.7: the reason of a deny that gave none.
FALLBACK_DENY = "blocked by PreToolUse hook"
FALLBACK_BLOCK = "blocked by PostToolUse hook"




class ClaudeCodeHooks:
    """Runs the user's Claude Code command hooks for PreToolUse and PostToolUse."""

    def __init__(self) -> None:
        self.settings: ClaudeCodeConfig | None = None
        # Read at configure time; the module that reads them is imported then, not at discovery.
        self._hooks: HookSettings | None = None
        self.project_dir = Path.cwd()
        self.tool_names = dict(DEFAULT_TOOL_NAMES)
        self.session_id = os.urandom(8).hex()

    # --- host hooks --------------------------------------------------------------------------

    @hookimpl
    def harness_register_config(self, register: Callable[[str, type[Any]], None]) -> None:
        from .config import ClaudeCodeConfig

        register(SECTION, ClaudeCodeConfig)

    @property
    def hooks(self) -> HookSettings:
        """The hooks read at configure time (none before that, or while the bridge is disabled)."""
        if self._hooks is None:
            from .settings import HookSettings

            self._hooks = HookSettings()
        return self._hooks

    @hookimpl
    def harness_configure(self, config: HarnessConfig) -> None:
        from .settings import HookSettings, load_settings

        section = config.section(SECTION)
        self.settings = section
        self.project_dir = config.project_dir
        self.tool_names = {**DEFAULT_TOOL_NAMES, **section.tool_names}
        if not section.enabled:
            self._hooks = HookSettings()
            return
        self._hooks = load_settings(self.settings_paths(), self.project_dir)

    def settings_paths(self) -> list[Path]:
        """The settings files in the order they are read: the user file (if on), then ``settings``."""
        assert self.settings is not None
        paths: list[Path] = []
        if self.settings.user_settings:
            paths.append(Path(os.path.expanduser("~/.claude/settings.json")))  # honours HOME
        for entry in self.settings.settings:
            path = Path(os.path.expanduser(entry))
            paths.append(path if path.is_absolute() else self.project_dir / path)
        return paths

    @hookimpl
    def harness_diagnose(self) -> list[tuple[str, str]]:
        if self.settings is not None and not self.settings.enabled:
            return [("info", "disabled ([hooks.claude_code] enabled = false)")]
        counts = ", ".join(f"{event}: {len(entries)}" for event, entries in self.hooks.entries.items())
        files = ", ".join(self.hooks.files) or "none found"
        strict = self.settings is not None and self.settings.strict
        found: list[tuple[str, str]] = [("info", f"hooks from {files} ({counts}); strict = {str(strict).lower()}")]
        for event, entries in self.hooks.entries.items():
            for entry in entries:
                found.append(("info", f"{event} [{entry.matcher.text or '*'}]: {entry.handler.command}"))
        if not strict and any(self.hooks.entries.values()):
            found.append(
                (
                    "warning",
                    "not strict: a hook that fails, times out or prints malformed output does not deny "
                    "(set strict = true under [hooks.claude_code] to fail closed)",
                )
            )
        return [*found, *self.hooks.notes]

    @hookimpl
    def harness_register_commands(self, register: Callable[..., None]) -> None:
        register("hooks", help="Claude Code hooks: run the PreToolUse hooks for a call", setup=_setup_command, run=self._run_command)

    # --- the pipeline ------------------------------------------------------------------------

    @hookimpl
    async def tools_pre_execute(self, execution: Execution, call_next: Callable[[], Awaitable[Any]]) -> Any:
        tool = self.tool_names.get(execution.name, execution.name)
        handlers = self.hooks.handlers("PreToolUse", tool)
        if not handlers:
            return await call_next()
        payload = self.payload("PreToolUse", execution, tool)
        outcomes = await self.run(execution, "PreToolUse", handlers, payload)
        decision = self.pre_decision(outcomes)
        if decision is not None:
            return decision
        inner = await call_next()
        # A hook's allow is no pre-approval: the inner decision (a Deny or Ask) always stands.
        return inner

    def pre_decision(self, outcomes: list[HookOutcome]) -> Deny | Ask | None:
        """The decision the hooks force, or ``None`` to continue down the waterfall."""
        from harness_hook_runner import merge

        strict_denial = self.strict_failure(outcomes)
        if strict_denial is not None:
            return Deny(reason=strict_denial)
        merged = merge(outcomes)
        if merged.blocks:
            return Deny(reason=merged.reason or FALLBACK_DENY)
        if merged.updated_input is not None:
            # Arguments are frozen and already audited: never run a call with arguments no policy
            # saw. Deny and hand the rewrite back to the model to re-issue (C.13).
            rewritten = json.dumps(merged.updated_input, ensure_ascii=False, sort_keys=True)
            return Deny(
                reason="a PreToolUse hook rewrote the arguments (updatedInput), which the harness does not apply; "
                f"re-issue the call with these arguments if they are what you meant: {rewritten}"
            )
        if merged.decision == "ask":
            return Ask(reason=merged.reason)
        return None

    @hookimpl
    async def tools_post_execute(
        self, execution: Execution, result: ToolResult, call_next: Callable[[], Awaitable[Any]]
    ) -> Any:
        # Claude Code fires PostToolUse only after a success (failures go to PostToolUseFailure),
        # so denied, failed and unknown calls never reach these hooks (C.13).
        tool = self.tool_names.get(execution.name, execution.name)
        handlers = [] if result.is_error else self.hooks.handlers("PostToolUse", tool)
        if not handlers:
            return await call_next()
        payload = self.payload("PostToolUse", execution, tool, result)
        outcomes = await self.run(execution, "PostToolUse", handlers, payload)
        from harness_hook_runner import merge

        merged = merge(outcomes)
        contexts = (
            [ContextMessage(content=[TextBlock(text=merged.additional_context)], source=PLUGIN_NAME)]
            if merged.additional_context
            else []
        )
        strict_failure = self.strict_failure(outcomes)
        if strict_failure is not None:
            return Block(feedback=[TextBlock(text=strict_failure)], additional_contexts=contexts)
        if merged.blocks:
            return Block(feedback=[TextBlock(text=merged.reason or FALLBACK_BLOCK)], additional_contexts=contexts)
        downstream = await call_next()
        if contexts and isinstance(downstream, Accept | Block):
            # Context alone is never a veto: later listeners still judge the call; ours comes first.
            if isinstance(downstream, Accept):
                return Accept(
                    content=downstream.content,
                    value=downstream.value,
                    additional_contexts=[*contexts, *downstream.additional_contexts],
                )
            return Block(feedback=downstream.feedback, additional_contexts=[*contexts, *downstream.additional_contexts])
        return downstream

    def strict_failure(self, outcomes: list[HookOutcome]) -> str | None:
        """Under ``strict = true``: the denial reason naming the first hook that failed."""
        if self.settings is None or not self.settings.strict:
            return None
        for outcome in outcomes:
            if outcome.error is not None:
                return (
                    f"Claude Code hook {outcome.command!r} failed ({outcome.error}); "
                    "[hooks.claude_code] strict = true denies the call"
                )
        return None

    # --- running -----------------------------------------------------------------------------

    def payload(self, event: str, execution: Execution, tool: str, result: ToolResult | None = None) -> dict[str, Any]:
        """The stdin object of A.5/A.8/A.9 (``permission_mode``, ``prompt_id`` and ``effort`` omitted)."""
        tool_input = thaw(execution.arguments)
        if not isinstance(tool_input, dict):
            tool_input = {}
        path = tool_input.get("file_path")
        if isinstance(path, str) and path and not os.path.isabs(path):
            tool_input["file_path"] = str(self.project_dir / path)  # A.8: file tools carry absolute paths
        payload: dict[str, Any] = {
            "session_id": execution.agent or self.session_id,
            "transcript_path": "",
            "cwd": str(self.project_dir),
            "hook_event_name": event,
            "tool_name": tool,
            "tool_input": tool_input,
            "tool_use_id": execution.call_id,
        }
        if result is not None:
            payload["tool_response"] = _tool_response(result)
        return payload

    def environment(self) -> dict[str, str]:
        """The hook's environment: the harness's own plus ``CLAUDE_PROJECT_DIR``."""
        return {**os.environ, "CLAUDE_PROJECT_DIR": str(self.project_dir)}

    async def run(
        self, execution: Execution, event: str, handlers: list[HookHandler], payload: dict[str, Any]
    ) -> list[HookOutcome]:
        """Run the handlers in parallel, record ``hook/invoked``/``hook/result``, decode each run."""
        from harness_hook_runner import decode_claude_code, result_record, run_hooks, unique_handlers

        assert self.settings is not None
        unique = unique_handlers(handlers)  # A.4: an identical handler runs once
        for handler in unique:
            execution.record_event(
                "hook/invoked",
                {"dialect": PLUGIN_NAME, "event": event, "command": handler.command, "matcher": handler.matcher},
            )
        runs = await run_hooks(
            unique,
            payload,
            cwd=self.project_dir,
            env=self.environment(),
            default_timeout_s=self.settings.timeout_s,
            max_output_bytes=self.settings.max_output_bytes,
            signal=execution.signal,
        )
        outcomes = [decode_claude_code(run, event) for run in runs]
        for run, outcome in zip(runs, outcomes, strict=True):
            execution.record_event("hook/result", result_record(PLUGIN_NAME, event, run, outcome))
        return outcomes

    # --- harness hooks test ------------------------------------------------------------------

    def _run_command(self, args: argparse.Namespace, harness: Harness) -> int:
        try:
            arguments = json.loads(args.arguments)
        except ValueError as exc:
            print(f"harness hooks test: ARGS_JSON is not valid JSON: {exc}", file=sys.stderr)
            return 2
        if not isinstance(arguments, dict):
            print("harness hooks test: ARGS_JSON must be a JSON object", file=sys.stderr)
            return 2
        report = anyio.run(self.test_call, args.name, arguments)
        print(json.dumps(report, indent=2, ensure_ascii=False))
        return 1 if report["decision"] in ("deny", "ask") else 0

    async def test_call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Run the PreToolUse hooks for a call to ``name`` and report each hook and the verdict."""
        from harness_core import Signal
        from harness_hook_runner import decode_claude_code, result_record, run_hooks

        assert self.settings is not None
        tool = self.tool_names.get(name, name)
        handlers = self.hooks.handlers("PreToolUse", tool)
        payload = {
            "session_id": self.session_id,
            "transcript_path": "",
            "cwd": str(self.project_dir),
            "hook_event_name": "PreToolUse",
            "tool_name": tool,
            "tool_input": arguments,
            "tool_use_id": "hooks-test",
        }
        runs = await run_hooks(
            handlers,
            payload,
            cwd=self.project_dir,
            env=self.environment(),
            default_timeout_s=self.settings.timeout_s,
            max_output_bytes=self.settings.max_output_bytes,
            signal=Signal(),
        )
        outcomes = [decode_claude_code(run, "PreToolUse") for run in runs]
        decision = self.pre_decision(outcomes)
        verdict = {Deny: "deny", Ask: "ask"}.get(type(decision), "allow") if decision is not None else "continue"
        return {
            "tool_name": tool,
            "hooks": [result_record(PLUGIN_NAME, "PreToolUse", run, outcome) for run, outcome in zip(runs, outcomes, strict=True)],
            "decision": verdict,
            "reason": getattr(decision, "reason", None),
        }


def _setup_command(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="hooks_command", required=True)
    test = sub.add_parser("test", help="run the PreToolUse hooks that match a call and print their verdict")
    test.add_argument("name", help="the harness tool name, e.g. bash")
    test.add_argument("arguments", help='the arguments as a JSON object, e.g. \'{"command": "ls"}\'')


def _tool_response(result: ToolResult) -> dict[str, Any]:
    # A.9 / C.13: tool_response is an object (cchooks rejects anything else).
    value = thaw(result.value)
    if isinstance(value, dict):
        return value
    text = "".join(block.text for block in result.content if isinstance(block, TextBlock))
    return {"value": value, "text": text}
