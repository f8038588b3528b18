"""Fixtures for the Python code runtime: a runtime per project folder, a scripted call_tool, pid checks."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from harness_code_python import CodePythonPlugin
from harness_code_python.runtime import PythonRuntime
from harness_core import ConfigSource, Harness, Signal
from harness_core.code_mode import CodeBinding, CodeRunRequest, CodeRunResult, ToolCallError
from harness_core.config import Layer


def start(project: Path, sections: dict[str, Any] | None = None, *plugins: object) -> tuple[Harness, CodePythonPlugin]:
    """A Harness with a fresh CodePythonPlugin (plus ``plugins``) for the project folder ``project``."""
    plugin = CodePythonPlugin()
    source = ConfigSource(layers=(Layer("config", sections or {}),), project_dir=project)
    return Harness(plugins=[plugin, *plugins], config=source, load_entrypoints=False), plugin


def runtime_of(harness: Harness) -> PythonRuntime:
    """The runtime the harness's code_runtime hook hands out."""
    runtime = harness.plugin_manager.hook.code_runtime()
    assert isinstance(runtime, PythonRuntime)
    return runtime


def binding(name: str, description: str = "", parameters: dict[str, Any] | None = None) -> CodeBinding:
    """A binding with an object schema (no properties unless given)."""
    return CodeBinding(name=name, description=description, parameters=parameters or {"type": "object"})


class Tools:
    """A scripted ``call_tool``: records every call, runs a handler per tool name.

    ``echo`` returns its arguments, ``fail`` raises ToolCallError, ``pid`` records the ``pid`` it is
    given, ``wait`` sleeps until released; anything else raises ToolCallError("unknown tool").
    """

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.pids: list[int] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.release = anyio.Event()
        self.started = anyio.Event()
        self.on_pid: Callable[[int], None] | None = None

    async def __call__(self, name: str, arguments: Any) -> Any:
        self.calls.append((name, arguments))
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            return await self._answer(name, arguments)
        finally:
            self.in_flight -= 1

    async def _answer(self, name: str, arguments: Any) -> Any:
        if name == "echo":
            return arguments
        if name == "fail":
            raise ToolCallError("fail", "denied by a test policy")
        if name == "pid":
            self.pids.append(arguments["pid"])
            if self.on_pid is not None:
                self.on_pid(arguments["pid"])
            return None
        if name == "wait":
            self.started.set()
            await self.release.wait()
            return "released"
        raise ToolCallError(name, f'unknown tool "{name}"')

    def bindings(self) -> tuple[CodeBinding, ...]:
        return tuple(binding(name) for name in ("echo", "fail", "pid", "wait"))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The project folder the worker starts in."""
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


@pytest.fixture
def harness(project: Path) -> Harness:
    """A Harness with only the code-python plugin (no sandbox plugin: programs run unconfined)."""
    return start(project)[0]


@pytest.fixture
def runtime(harness: Harness) -> PythonRuntime:
    return runtime_of(harness)


@pytest.fixture
def tools() -> Tools:
    return Tools()


Run = Callable[..., Awaitable[CodeRunResult]]


@pytest.fixture
def run(runtime: PythonRuntime, tools: Tools) -> Run:
    """Run a program with the scripted tools (or other bindings / call_tool / signal), bounded in time."""

    async def go(
        program: str,
        *,
        signal: Signal | None = None,
        bindings: tuple[CodeBinding, ...] | None = None,
        call_tool: Callable[[str, Any], Awaitable[Any]] | None = None,
        on: PythonRuntime | None = None,
    ) -> CodeRunResult:
        request = CodeRunRequest(
            program=program,
            bindings=tools.bindings() if bindings is None else bindings,
            call_tool=call_tool or tools,
            signal=signal or Signal(),
            execution=None,  # type: ignore[arg-type]  # no pipeline: sandbox_policy gets None
        )
        with anyio.fail_after(60):  # a hang fails the test instead of the suite
            return await (on or runtime).run(request)

    return go


def alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie does not count)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in (b"Z", b"X")
