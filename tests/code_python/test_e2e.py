"""reference/core-pipeline.md §6.3–§6.5 end to end: run_code through Harness with the Python runtime.

The program's calls are sub-calls through the whole pipeline (policy sees them with ``parent``),
denials reach the program as ToolCallError, and aborting the outer call kills the worker process.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from harness_code_python import CodePythonPlugin
from harness_core import (
    ConfigSource,
    Deny,
    Execution,
    Harness,
    Signal,
    TextBlock,
    ToolCall,
    ToolDefinition,
    ToolOutput,
    ToolResult,
    hookimpl,
)
from harness_core.config import Layer

from .conftest import alive


class Policy:
    """Denies ``secret`` and records every call it sees (sub-calls included)."""

    def __init__(self) -> None:
        self.seen: list[Execution] = []
        self.results: list[tuple[str, ToolResult]] = []

    @hookimpl
    async def tools_pre_execute(self, execution: Execution, call_next: Any) -> Any:
        self.seen.append(execution)
        if execution.name == "secret":
            return Deny(reason="secret is off limits")
        return await call_next()

    @hookimpl
    def tools_result(self, execution: Execution, result: ToolResult) -> None:
        self.results.append((execution.call_id, result))


def text_tool(name: str, body: Any) -> ToolDefinition:
    return ToolDefinition(
        name=name,
        description=f"the {name} tool",
        parameters={"type": "object", "properties": {"text": {"type": "string"}}},
        output=ToolOutput(schema={}, render=lambda args, value: [TextBlock(text=str(value))]),
        execute=body,
    )


async def upper(args: Any, ctx: Any) -> str:
    return str(args.get("text", "")).upper()


async def secret(args: Any, ctx: Any) -> str:
    raise AssertionError("a denied tool's body must not run")


def code_harness(project: Path, *plugins: object, mode: str = "code", extra: dict[str, Any] | None = None) -> Harness:
    sections = {"code_mode": {"mode": mode}, **(extra or {})}
    source = ConfigSource(layers=(Layer("config", sections),), project_dir=project)
    harness = Harness(plugins=[CodePythonPlugin(), *plugins], config=source, load_entrypoints=False)
    harness.tools.register(text_tool("upper", upper))
    harness.tools.register(text_tool("secret", secret))
    return harness


def run_code(code: str, *, call_id: str = "c1", signal: Signal | None = None) -> ToolCall:
    return ToolCall(
        call_id=call_id,
        name="run_code",
        arguments={"code": code, "description": "a program"},
        agent="main",
        signal=signal or Signal(),
    )


@pytest.mark.anyio
async def test_a_program_calls_an_allowed_tool_through_the_pipeline(project: Path):
    policy = Policy()
    harness = code_harness(project, policy)
    with anyio.fail_after(60):
        result = await harness.execute(
            run_code("value = await tools.upper({'text': 'hi'})\nprint('got', value)\nreturn value")
        )
    assert result.error is None, result.error
    assert result.value == {"logs": ["got HI"], "result": "HI"}
    assert result.content[0].text == "got HI\nHI"
    (outer,) = [execution for execution in policy.seen if execution.name == "run_code"]
    (sub,) = [execution for execution in policy.seen if execution.name == "upper"]
    assert sub.parent == outer.token and sub.call_id == "c1:code:1"


@pytest.mark.anyio
async def test_a_denied_tool_raises_tool_call_error_in_the_program_which_carries_on(project: Path):
    harness = code_harness(project, Policy())
    program = (
        "try:\n"
        "    await tools.secret({'text': 'x'})\n"
        "except ToolCallError as error:\n"
        "    print('denied:', error.tool_name, str(error))\n"
        "return await tools.upper({'text': 'after'})"
    )
    with anyio.fail_after(60):
        result = await harness.execute(run_code(program))
    assert result.error is None, result.error
    (line,) = result.value["logs"]
    assert line.startswith("denied: secret ") and "secret is off limits" in line
    assert result.value["result"] == "AFTER"


@pytest.mark.anyio
async def test_an_uncaught_denial_fails_run_code_with_the_logs(project: Path):
    harness = code_harness(project, Policy())
    with anyio.fail_after(60):
        result = await harness.execute(run_code("print('trying')\nawait tools.secret()"))
    assert result.is_error and result.error is not None
    assert result.error.info is not None and result.error.info.code == "CODE_RUN_FAILED"
    assert result.error.message.startswith("code run failed (exception): ToolCallError: ")
    assert "Captured output:\ntrying" in result.error.message


@pytest.mark.anyio
async def test_concurrent_sub_calls_from_asyncio_gather(project: Path):
    harness = code_harness(project, Policy())
    program = "import asyncio\nreturn await asyncio.gather(*(tools.upper({'text': t}) for t in 'abc'))"
    with anyio.fail_after(60):
        result = await harness.execute(run_code(program))
    assert result.value == {"logs": [], "result": ["A", "B", "C"]}


@pytest.mark.anyio
async def test_aborting_the_outer_call_kills_the_program_process(project: Path):
    signal = Signal()
    pids: list[int] = []

    async def report(args: Any, ctx: Any) -> str:
        pids.append(int(args["text"]))
        signal.abort("the user pressed stop")
        return "reported"

    harness = code_harness(project, Policy())
    harness.tools.register(text_tool("report", report))
    program = "import os, time\nawait tools.report({'text': str(os.getpid())})\ntime.sleep(600)"
    with anyio.fail_after(60):
        result = await harness.execute(run_code(program, signal=signal))
    assert result.is_error
    assert result.error is not None and result.error.info is not None
    # The runtime's own failure is kept (reference §3.4: cancellation replaces only a success).
    assert result.error.info.code == "ABORTED" or (
        result.error.message == "code run failed (aborted): the program was stopped: the user pressed stop"
    )
    (pid,) = pids
    assert pid != os.getpid()
    assert not alive(pid)


@pytest.mark.anyio
async def test_a_syntax_error_reaches_the_model_as_a_failed_run(project: Path):
    harness = code_harness(project)
    with anyio.fail_after(60):
        result = await harness.execute(run_code("return (1,"))
    assert result.error is not None
    assert result.error.message.startswith("code run failed (syntax): SyntaxError: ")


@pytest.mark.anyio
async def test_the_sdk_text_the_model_sees_lists_the_agents_tools(project: Path):
    harness = code_harness(project, mode="both")
    text = harness.code_sdk("main")
    assert "run_code programs are Python" in text
    assert "- await tools.upper({text?: string}): the upper tool" in text
    assert "tools.run_code" not in text


def usable_backend() -> str | None:
    """A Linux sandbox backend that works on this machine, or ``None``."""
    from harness_sandbox.selection import default_backends

    backends = default_backends()
    for name in ("bubblewrap", "landlock"):
        if name in backends and backends[name].probe(False, 10.0).usable:
            return name
    return None


@pytest.mark.anyio
async def test_under_a_read_only_sandbox_a_program_cannot_write_but_its_tool_calls_run(project: Path, tmp_path: Path):
    from harness_sandbox import SandboxPlugin

    backend = usable_backend()
    if backend is None:
        pytest.skip("no sandbox backend is usable on this machine")
    harness = code_harness(project, SandboxPlugin(), extra={"sandbox": {"mode": "read-only", "backend": backend}})
    target = project / "written.txt"
    program = f"print(await tools.upper({{'text': 'tools still work'}}))\nopen({str(target)!r}, 'w').write('x')"
    with anyio.fail_after(60):
        result = await harness.execute(run_code(program))
    assert result.error is not None
    assert result.error.message.startswith("code run failed (exception): ")
    assert "[sandbox: file access denied under read-only mode]" in result.error.message
    assert "Captured output:\nTOOLS STILL WORK" in result.error.message
    assert not target.exists()


@pytest.mark.anyio
async def test_the_timeout_policy_on_run_code_kills_a_program_that_runs_too_long(project: Path):
    from harness_timeout_policy import TimeoutPolicy

    pids: list[int] = []

    async def report(args: Any, ctx: Any) -> str:
        pids.append(int(args["text"]))
        return "reported"

    harness = code_harness(project, TimeoutPolicy(), extra={"timeout": {"tools": {"run_code": 500}}})
    harness.tools.register(text_tool("report", report))
    program = "import os, time\nawait tools.report({'text': str(os.getpid())})\ntime.sleep(600)"
    with anyio.fail_after(60):
        result = await harness.execute(run_code(program))
    assert result.error is not None and result.error.info is not None
    assert result.error.info.code == "TOOL_TIMEOUT"
    (pid,) = pids
    assert not alive(pid)
