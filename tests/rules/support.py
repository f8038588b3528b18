"""Shared pieces of the rules tests: a recording bash tool, an always-allowing answerer, a Harness factory."""

from __future__ import annotations

from typing import Any

from harness_core import Harness, MemoryEventSink, TextBlock, ToolCall, ToolDefinition, ToolOutput, hookimpl
from harness_rules import RulesPlugin


class Recorder:
    """The bodies of the test tools: they only record what they were asked to run."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def tool(self, name: str) -> ToolDefinition:
        async def execute(args: Any, ctx: Any) -> str:
            self.calls.append((name, dict(args)))
            return "ran"

        return ToolDefinition(
            name=name,
            description=f"test {name}",
            parameters={"type": "object"},
            output=ToolOutput(schema={"type": "string"}, render=lambda args, value: [TextBlock(text=value)]),
            execute=execute,
        )


class Tools:
    """Registers recording ``bash``, ``read``, ``write`` and ``fetch`` tools."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    @hookimpl
    def harness_register_tools(self, register: Any) -> None:
        for name in ("bash", "read", "write", "fetch"):
            register(self.recorder.tool(name))


class AllowEveryAsk:
    """An approval service that allows every ask once (so only deny rules and guards can stop a call)."""

    def __init__(self) -> None:
        self.asked: list[str | None] = []

    @hookimpl
    def approval_request(self, request: Any) -> str:
        self.asked.append(request.reason)
        return "allowed-once"


def make_harness(rules: dict[str, Any], *plugins: object, recorder: Recorder | None = None,
                 events: MemoryEventSink | None = None) -> Harness:
    """A Harness with the rules plugin, the recording tools and ``plugins`` (registered after them)."""
    return Harness(
        plugins=[RulesPlugin(), Tools(recorder or Recorder()), *plugins], config={"rules": rules}, events=events
    )


def bash(command: str, call_id: str = "c1") -> ToolCall:
    return ToolCall(call_id=call_id, name="bash", arguments={"command": command}, agent="main")
