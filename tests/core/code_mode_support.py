"""Helpers for the Code Mode tests: a small in-process Python runtime and the plugins around it.

The runtime compiles the program text as the body of an ``async def`` whose ``tools`` object turns
``tools.<name>(args)`` into ``request.call_tool``; ``print`` is captured as the run's logs. It is
a test double for the seam only: no confinement, no process. Falling off the end of a program is
"no result"; ``return None`` is a real ``null``.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from typing import Any

import anyio

from harness_core import (
    Execution,
    Harness,
    MemoryEventSink,
    TextBlock,
    ToolDefinition,
    ToolOutput,
    ToolResult,
    hookimpl,
)
from harness_core.code_mode import (
    NO_RESULT,
    CodeBinding,
    CodeRunFailure,
    CodeRunRequest,
    CodeRunResult,
    ToolCallError,
)


class Tools:
    """What a program calls: ``await tools.echo({"text": "hi"})``."""

    def __init__(self, request: CodeRunRequest) -> None:
        self._request = request

    def __getattr__(self, name: str) -> Callable[..., Any]:
        async def call(arguments: Any = None) -> Any:
            return await self._request.call_tool(name, {} if arguments is None else arguments)

        return call


class PythonRuntime:
    """Runs ``request.program`` in-process; remembers every request it was given."""

    language = "python"

    def __init__(self) -> None:
        self.requests: list[CodeRunRequest] = []
        self.namespace: dict[str, Any] = {}

    def render_sdk(self, bindings: tuple[CodeBinding, ...]) -> str:
        return "\n".join(f"await tools.{binding.name}(arguments)  # {binding.description}" for binding in bindings)

    async def run(self, request: CodeRunRequest) -> CodeRunResult:
        self.requests.append(request)
        logs: list[str] = []

        def log(*parts: object) -> None:
            logs.append(" ".join(str(part) for part in parts))

        source = "async def __program__():\n" + textwrap.indent(request.program, "    ") + "\n    return NO_RESULT\n"
        namespace: dict[str, Any] = {
            "tools": Tools(request),
            "print": log,
            "signal": request.signal,
            "ToolCallError": ToolCallError,
            "NO_RESULT": NO_RESULT,
            "anyio": anyio,
            **self.namespace,
        }
        try:
            exec(compile(source, "<program>", "exec"), namespace)
        except SyntaxError as exc:
            return CodeRunResult(logs=tuple(logs), error=CodeRunFailure(kind="syntax", message=str(exc)))
        try:
            result = await namespace["__program__"]()
        except Exception as exc:
            return CodeRunResult(
                logs=tuple(logs), error=CodeRunFailure(kind="exception", message=f"{type(exc).__name__}: {exc}")
            )
        return CodeRunResult(logs=tuple(logs), result=result)


class RuntimePlugin:
    """Answers ``code_runtime`` with the given runtime."""

    def __init__(self, runtime: object) -> None:
        self.runtime = runtime

    @hookimpl
    def code_runtime(self) -> object:
        return self.runtime


class PolicyLog:
    """Records every pre-execute, guard and tools_result it sees, by call id."""

    def __init__(self) -> None:
        self.pre: list[Execution] = []
        self.guarded: list[str] = []
        self.results: list[tuple[Execution, ToolResult]] = []

    @hookimpl
    async def tools_pre_execute(self, execution: Execution, call_next: Any) -> Any:
        self.pre.append(execution)
        return await call_next()

    @hookimpl
    def tools_guard(self, execution: Execution) -> None:
        self.guarded.append(execution.call_id)

    @hookimpl
    def tools_result(self, execution: Execution, result: ToolResult) -> None:
        self.results.append((execution, result))

    def result_of(self, call_id: str) -> ToolResult:
        return next(result for execution, result in self.results if execution.call_id == call_id)

    def execution_of(self, call_id: str) -> Execution:
        return next(execution for execution, _ in self.results if execution.call_id == call_id)


def echo_tool(name: str = "echo", *, safe: bool = False, body: Callable[..., Any] | None = None) -> ToolDefinition:
    """A string-echoing tool; ``body(args, ctx)`` may replace its behaviour."""

    async def execute(args: Any, ctx: Any) -> Any:
        if body is not None:
            return await body(args, ctx)
        return args.get("text", "")

    return ToolDefinition(
        name=name,
        description=f"{name} text",
        parameters={"type": "object", "properties": {"text": {"type": "string"}}},
        output=ToolOutput(schema={"type": "string"}, render=lambda args, value: [TextBlock(text=value)]),
        execute=execute,
        is_concurrency_safe=(lambda args: True) if safe else None,
    )


def code_harness(
    *plugins: object,
    mode: str = "code",
    runtime: object | None = None,
    tools: tuple[ToolDefinition, ...] | None = None,
    sink: MemoryEventSink | None = None,
    config: dict[str, Any] | None = None,
) -> Harness:
    """A Harness whose deployment mode is ``mode``, with a runtime (unless ``runtime=False``)."""
    registered: list[object] = list(plugins)
    if runtime is not False:
        registered.append(RuntimePlugin(runtime if runtime is not None else PythonRuntime()))
    section = {"mode": mode, **(config or {})}
    harness = Harness(plugins=registered, config={"code_mode": section}, events=sink)
    for definition in tools if tools is not None else (echo_tool(),):
        harness.tools.register(definition)
    return harness


def run_code(
    code: str, *, call_id: str = "c1", agent: str | None = "main", description: str = "a program", **extra: Any
) -> Any:
    """A ``run_code`` ToolCall."""
    from harness_core import ToolCall

    return ToolCall(
        call_id=call_id,
        name="run_code",
        arguments={"code": textwrap.dedent(code).strip("\n"), "description": description},
        agent=agent,
        **extra,
    )
