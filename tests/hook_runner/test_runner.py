"""reference/hook-bridges.md A.4, C.3: hook processes run in their own group, in parallel, capped and killable."""

from __future__ import annotations

import os
import sys
import time

import anyio
import pytest

from harness_core import Signal
from harness_hook_runner import HookHandler, run_hook, run_hooks

PY = sys.executable


def py(code: str) -> str:
    return f"{PY} -c '{code}'"


@pytest.mark.anyio
async def test_the_payload_arrives_as_json_on_stdin_and_stdout_stderr_and_exit_code_are_captured(tmp_path):
    script = tmp_path / "hook.py"
    script.write_text(
        "import json, sys, os\n"
        "data = json.load(sys.stdin)\n"
        "print(json.dumps({'got': data, 'cwd': os.getcwd(), 'env': os.environ.get('X')}))\n"
        "print('oops', file=sys.stderr)\n"
        "sys.exit(3)\n"
    )
    run = await run_hook(f"{PY} {script}", {"a": 1}, cwd=tmp_path, env={**os.environ, "X": "y"}, timeout_s=10)
    assert run.exit_code == 3 and not run.timed_out
    assert '"got": {"a": 1}' in run.stdout and f'"cwd": "{tmp_path}"' in run.stdout and '"env": "y"' in run.stdout
    assert run.stderr.strip() == "oops"
    assert run.duration_ms > 0


@pytest.mark.anyio
async def test_a_shell_script_hook_runs_through_sh(tmp_path):
    script = tmp_path / "hook.sh"
    script.write_text("#!/bin/sh\nread line\necho \"seen: $line\"\n")
    script.chmod(0o755)
    run = await run_hook(str(script), {"k": "v"}, timeout_s=10)
    assert run.exit_code == 0 and run.stdout.strip() == 'seen: {"k": "v"}'


@pytest.mark.anyio
async def test_a_timeout_kills_the_whole_group_and_leaves_no_orphan(tmp_path):
    pidfile = tmp_path / "child.pid"
    # The hook starts a grandchild in the background (same group) and both sleep far past the timeout.
    command = f"sleep 30 & echo $! > {pidfile}; sleep 30"
    start = time.monotonic()
    run = await run_hook(command, {}, timeout_s=0.3)
    assert time.monotonic() - start < 3
    assert run.timed_out and run.exit_code is None
    child = int(pidfile.read_text())
    await anyio.sleep(0.05)
    assert not _alive(child), f"grandchild {child} survived the timeout"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.anyio
async def test_an_abort_signal_kills_the_hook():
    signal = Signal()

    async def abort_soon():
        await anyio.sleep(0.1)
        signal.abort("stop")

    async with anyio.create_task_group() as group:
        group.start_soon(abort_soon)
        run = await run_hook("sleep 30", {}, timeout_s=30, signal=signal)
    assert run.aborted and not run.timed_out and run.exit_code is None and run.duration_ms < 3000


@pytest.mark.anyio
async def test_huge_stdout_is_capped_and_the_hook_is_not_blocked():
    run = await run_hook(py("import sys; sys.stdout.write(\"x\" * 5_000_000)"), {}, timeout_s=20, max_output_bytes=1000)
    assert run.exit_code == 0 and len(run.stdout) == 1000 and run.stdout_truncated


@pytest.mark.anyio
async def test_non_utf8_output_is_decoded_with_replacement():
    run = await run_hook(py("import sys; sys.stdout.buffer.write(bytes([0xff, 0xfe, 0x41]))"), {}, timeout_s=10)
    assert run.stdout == "\ufffd\ufffdA"


@pytest.mark.anyio
async def test_a_missing_working_directory_is_a_spawn_error_not_an_exception(tmp_path):
    run = await run_hook("true", {}, cwd=tmp_path / "missing", timeout_s=5)
    assert run.exit_code is None and run.spawn_error


@pytest.mark.anyio
async def test_matching_hooks_run_in_parallel():
    handlers = [HookHandler(command=f"sleep 0.2; echo {i}") for i in range(4)]
    start = time.monotonic()
    runs = await run_hooks(handlers, {}, default_timeout_s=10)
    elapsed = time.monotonic() - start
    assert [run.stdout.strip() for run in runs] == ["0", "1", "2", "3"]
    assert elapsed < 0.6, f"4 hooks of 0.2 s took {elapsed:.2f} s"


@pytest.mark.anyio
async def test_identical_commands_run_once(tmp_path):
    log = tmp_path / "log"
    handlers = [HookHandler(command=f"echo x >> {log}"), HookHandler(command=f"echo x >> {log}", source="other")]
    runs = await run_hooks(handlers, {}, default_timeout_s=10)
    assert len(runs) == 1 and log.read_text() == "x\n"


@pytest.mark.anyio
async def test_a_handler_timeout_overrides_the_default():
    runs = await run_hooks([HookHandler(command="sleep 5", timeout_s=0.2)], {}, default_timeout_s=60)
    assert runs[0].timed_out


@pytest.mark.anyio
async def test_a_hook_that_ignores_sigterm_is_killed_after_the_grace(tmp_path):
    pidfile = tmp_path / "child.pid"
    run = await run_hook(f"trap '' TERM; sleep 30 & echo $! > {pidfile}; wait", {}, timeout_s=0.2)
    assert run.timed_out and run.duration_ms < 3000
    await anyio.sleep(0.05)
    assert not _alive(int(pidfile.read_text()))


@pytest.mark.anyio
async def test_an_outer_cancellation_still_kills_the_group(tmp_path):
    pidfile = tmp_path / "child.pid"
    with anyio.move_on_after(0.3):
        await run_hook(f"sleep 30 & echo $! > {pidfile}; wait", {}, timeout_s=30)
    await anyio.sleep(0.05)
    assert not _alive(int(pidfile.read_text()))
