"""Helpers for the core tests: a result recorder, a counting echo body, call and text shortcuts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness_core import (
    Execution,
    RunContext,
    Signal,
    TextBlock,
    ToolCall,
    ToolDefinition,
    ToolOutput,
    ToolResult,
    hookimpl,
)


class Recorder:
    """Observes tools_result and remembers every (execution, result) pair, plus the body's runs."""

    def __init__(self) -> None:
        self.seen: list[tuple[Execution, ToolResult]] = []

    @hookimpl
    def tools_result(self, execution: Execution, result: ToolResult) -> None:
        self.seen.append((execution, result))

    @property
    def results(self) -> list[ToolResult]:
        return [result for _, result in self.seen]


class Body:
    """An echo body that counts its runs and can be told to misbehave."""

    def __init__(self) -> None:
        self.runs: list[Any] = []
        self.contexts: list[RunContext] = []

    async def __call__(self, args: Any, ctx: RunContext) -> Any:
        self.runs.append(args)
        self.contexts.append(ctx)
        return args.get("text", "") if isinstance(args, dict) else args


def make_echo(body: Callable[..., Any], **overrides: Any) -> ToolDefinition:
    async def execute(args: Any, ctx: RunContext) -> Any:
        return await body(args, ctx)

    fields: dict[str, Any] = dict(
        name="echo",
        description="Echo text",
        parameters={"type": "object", "properties": {"text": {"type": "string"}}},
        output=ToolOutput(schema={"type": "string"}, render=lambda args, value: [TextBlock(text=value)]),
        execute=execute,
    )
    fields.update(overrides)
    return ToolDefinition(**fields)


def call(name: str = "echo", *, call_id: str = "c1", agent: str | None = "main", signal: Signal | None = None, **arguments: Any) -> ToolCall:
    """A ToolCall with keyword arguments as its arguments object."""
    return ToolCall(call_id=call_id, name=name, arguments=arguments, agent=agent, signal=signal or Signal())


def text_of(result: ToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextBlock))
