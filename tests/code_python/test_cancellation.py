"""reference/core-pipeline.md §6.3 (run-scoped abort): a stopped run kills its worker; nothing outlives a run."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from harness_core import Signal

from .conftest import Run, Tools, alive, runtime_of, start

REPORT_PID = "import os\nawait tools.pid({'pid': os.getpid()})\n"


@pytest.mark.anyio
async def test_an_abort_mid_run_kills_the_worker_and_returns_aborted_with_the_reason(run: Run, tools: Tools):
    signal = Signal()
    tools.on_pid = lambda _pid: signal.abort("outer call aborted")
    # The program blocks the worker's event loop outright: only killing the process stops it.
    result = await run(REPORT_PID + "print('reported')\nimport time\ntime.sleep(600)", signal=signal)
    assert result.error is not None
    assert result.error.kind == "aborted"
    assert "outer call aborted" in result.error.message
    (pid,) = tools.pids
    assert not alive(pid)


@pytest.mark.anyio
async def test_an_abort_while_a_tool_call_is_in_flight_stops_the_run(run: Run, tools: Tools):
    signal = Signal()

    async def call_tool(name: str, arguments: object) -> object:
        if name == "wait":
            signal.abort("run_code settled")
        return await tools(name, arguments)

    result = await run(REPORT_PID + "await tools.wait()\nreturn 'never'", signal=signal, call_tool=call_tool)
    assert result.error is not None and result.error.kind == "aborted"
    assert "run_code settled" in result.error.message
    assert not alive(tools.pids[0])


@pytest.mark.anyio
async def test_a_program_that_ignores_sigterm_is_killed_after_the_grace(run: Run, tools: Tools):
    signal = Signal()
    tools.on_pid = lambda _pid: signal.abort("stop")
    program = (
        "import signal as s\ns.signal(s.SIGTERM, s.SIG_IGN)\n"
        + REPORT_PID
        + "import time\nwhile True:\n    time.sleep(1)"
    )
    result = await run(program, signal=signal)
    assert result.error is not None and result.error.kind == "aborted"
    assert not alive(tools.pids[0])


@pytest.mark.anyio
async def test_an_aborted_signal_starts_nothing(run: Run, tools: Tools, tmp_path: Path):
    signal = Signal()
    signal.abort("too late")
    marker = tmp_path / "ran"
    result = await run(f"open({str(marker)!r}, 'w').close()", signal=signal)
    assert result.error is not None and result.error.kind == "aborted" and "too late" in result.error.message
    assert not marker.exists()


@pytest.mark.anyio
async def test_no_process_of_the_program_outlives_a_successful_run(run: Run, tools: Tools):
    program = (
        "import subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        "await tools.pid({'pid': child.pid})\n" + REPORT_PID + "return 'left a child behind'"
    )
    result = await run(program)
    assert result.result == "left a child behind"
    child, worker = tools.pids
    assert not alive(worker)
    assert not alive(child)


@pytest.mark.anyio
async def test_the_hard_cap_stops_a_program_that_runs_too_long(project: Path, tools: Tools, run: Run):
    harness, _plugin = start(project, {"code_python": {"timeout_ms": 300}})
    result = await run(REPORT_PID + "import time\ntime.sleep(600)", on=runtime_of(harness))
    assert result.error is not None and result.error.kind == "timeout"
    assert "300 ms" in result.error.message and "[code_python] timeout_ms" in result.error.message
    assert not alive(tools.pids[0])


@pytest.mark.anyio
async def test_closing_the_harness_kills_programs_still_running(project: Path, tools: Tools, run: Run):
    harness, plugin = start(project)
    outcome: list[object] = []

    async def run_one() -> None:
        outcome.append(await run(REPORT_PID + "import time\ntime.sleep(600)", on=runtime_of(harness)))

    reported = anyio.Event()
    tools.on_pid = lambda _pid: reported.set()
    async with anyio.create_task_group() as group:
        group.start_soon(run_one)
        with anyio.fail_after(30):
            await reported.wait()
        assert len(plugin.live) == 1
        await harness.aclose()
    assert not alive(tools.pids[0])
    assert len(plugin.live) == 0
    (result,) = outcome
    assert result.error is not None and result.error.kind == "runtime"  # type: ignore[attr-defined]


@pytest.mark.anyio
async def test_a_child_in_a_session_of_its_own_does_not_outlive_a_successful_run(run: Run, tools: Tools):
    program = (
        "import subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'], start_new_session=True)\n"
        "await tools.pid({'pid': child.pid})\n"
        "return 'escaped the group'"
    )
    result = await run(program)
    assert result.result == "escaped the group"
    assert not alive(tools.pids[0])
