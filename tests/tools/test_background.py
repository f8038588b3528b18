"""reference/plugins.md §12 step 6: bash's run_in_background hands the process over through jobs_start."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from harness_core import hookimpl
from harness_jobs import JobsPlugin
from harness_tools.bash import BACKGROUND_NOT_INSTALLED

from .support import code, marker, processes_with, run, text, wait_for_file

pytestmark = pytest.mark.anyio


async def gone(tag: str, timeout: float = 5.0) -> bool:
    """Whether every process tagged ``tag`` is gone (checked in /proc), waiting up to ``timeout``."""
    with anyio.move_on_after(timeout):
        while processes_with(tag):
            await anyio.sleep(0.02)
    return not processes_with(tag)


async def test_a_background_command_returns_its_job_id_at_once_and_its_output_later(make_harness) -> None:
    harness = make_harness(JobsPlugin())
    try:
        started = await run(harness, "bash", command="echo one; sleep 0.2; echo two >&2; exit 4", run_in_background=True)
        assert not started.is_error
        assert text(started) == "started background job bash-1"
        assert started.value == {"kind": "background", "job_id": "bash-1"}
        done = await run(harness, "job_output", job_id="bash-1", wait=True, timeout_ms=5000)
        assert text(done) == "one\n[stderr]\ntwo\n[status: completed, exit code: 4]"
    finally:
        await harness.aclose()


async def test_output_can_be_read_while_the_command_still_runs(make_harness, tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    harness = make_harness(JobsPlugin())
    try:
        await run(harness, "bash", command=f"echo early; touch {ready}; sleep 30", run_in_background=True)
        await wait_for_file(ready)
        with anyio.fail_after(5):
            while True:
                first = await run(harness, "job_output", job_id="bash-1")
                if "early" in text(first):
                    break
                await anyio.sleep(0.02)
        assert text(first) == "early\n[status: running]"
        assert text(await run(harness, "job_output", job_id="bash-1")) == "(no new output)\n[status: running]"
    finally:
        await harness.aclose()


async def test_job_kill_ends_the_whole_process_group(make_harness, tmp_path: Path) -> None:
    tag, ready = marker(), tmp_path / "ready"
    # A grandchild that ignores SIGTERM: the group still goes (SIGKILL after the grace).
    inner = f"trap '' TERM; touch {ready}; while :; do sleep 0.05; done"
    harness = make_harness(JobsPlugin())
    try:
        await run(harness, "bash", command=f'bash -c "{inner}" {tag} & wait', run_in_background=True)
        await wait_for_file(ready)
        assert processes_with(tag)
        killed = await run(harness, "job_kill", job_id="bash-1")
        assert text(killed) == "requested cancellation of job bash-1"
        settled = await run(harness, "job_wait", job_id="bash-1", timeout_ms=10000)
        assert text(settled).startswith("job bash-1 finished [status: killed")
        assert await gone(tag)
        again = await run(harness, "job_kill", job_id="bash-1")
        assert text(again).startswith("job bash-1 had already finished [status: killed")
    finally:
        await harness.aclose()


async def test_closing_the_harness_with_jobs_running_leaves_no_process_behind(make_harness, tmp_path: Path) -> None:
    tag = marker()
    harness = make_harness(JobsPlugin())
    for index in range(3):
        ready = tmp_path / f"ready-{index}"
        result = await run(harness, "bash", command=f"bash -c 'sleep 30' {tag} & touch {ready}; wait", run_in_background=True)
        assert text(result) == f"started background job bash-{index + 1}"
        await wait_for_file(ready)
    assert len(processes_with(tag)) == 3
    await harness.aclose()
    assert await gone(tag, timeout=2.0)


async def test_a_full_owner_is_refused_before_anything_starts_and_uses_no_id(make_harness, tmp_path: Path) -> None:
    harness = make_harness(JobsPlugin())
    try:
        harness_jobs = [p for _, p in harness.plugins() if isinstance(p, JobsPlugin)][0]
        assert harness_jobs.manager is not None
        harness_jobs.manager.max_per_owner = 1
        await run(harness, "bash", command="sleep 30", run_in_background=True)
        proof = tmp_path / "ran"
        refused = await run(harness, "bash", command=f"touch {proof}", run_in_background=True)
        assert refused.is_error and code(refused) == "JOB_LIMIT"
        assert text(refused) == (
            "Error: background job limit reached for this owner (limit: 1); use job_kill to stop an unneeded job, "
            "wait for it to finish, then retry"
        )
        await anyio.sleep(0.2)
        assert not proof.exists()
        other = await run(harness, "bash", agent="other", command="true", run_in_background=True)
        assert text(other) == "started background job bash-2"
    finally:
        await harness.aclose()


async def test_without_a_jobs_provider_background_is_refused_before_anything_starts(make_harness, tmp_path) -> None:
    proof = tmp_path / "ran"
    result = await run(make_harness(), "bash", command=f"touch {proof}", run_in_background=True)
    assert text(result) == f"Error: {BACKGROUND_NOT_INSTALLED}"
    assert not proof.exists()


async def test_the_schema_advertises_run_in_background_only_with_a_jobs_provider(make_harness) -> None:
    def bash_properties(harness) -> dict:
        [schema] = [s for s in harness.tools.schemas() if s["name"] == "bash"]
        return schema["parameters"]["properties"]

    assert "run_in_background" not in bash_properties(make_harness())
    with_jobs = make_harness(JobsPlugin())
    assert "run_in_background" in bash_properties(with_jobs)
    await with_jobs.aclose()


async def test_a_provider_that_refuses_keeps_the_command_from_running(make_harness, tmp_path) -> None:
    from harness_core.jobs import JobRefusedError

    class Refusing:
        @hookimpl
        def harness_provides(self) -> list[str]:
            return ["jobs"]

        @hookimpl
        def jobs_start(self, request):
            raise JobRefusedError(JobRefusedError.CLOSED, code="JOB_CLOSED")

    proof = tmp_path / "ran"
    result = await run(make_harness(Refusing()), "bash", command=f"touch {proof}", run_in_background=True)
    assert result.is_error and code(result) == "JOB_CLOSED"
    await anyio.sleep(0.1)
    assert not proof.exists()


async def test_a_background_command_is_confined_like_a_foreground_one(make_harness, tmp_path) -> None:
    from .support import FakeSandbox

    sandbox = FakeSandbox(tmp_path / "ws", mode="workspace-write")
    harness = make_harness(sandbox, JobsPlugin())
    try:
        started = await run(harness, "bash", command='echo "mode=$FAKEBOX_MODE term=$TERM"', run_in_background=True)
        assert text(started) == "started background job bash-1"
        assert sandbox.confined == [(["bash", "-c", 'echo "mode=$FAKEBOX_MODE term=$TERM"'], "workspace-write")]
        done = await run(harness, "job_output", job_id="bash-1", wait=True, timeout_ms=5000)
        assert text(done) == "mode=workspace-write term=dumb\n[status: completed, exit code: 0]"
    finally:
        await harness.aclose()


async def test_a_call_aborted_before_the_hand_over_starts_no_job(make_harness, tmp_path) -> None:
    from harness_core import Signal

    signal = Signal()
    signal.abort("user pressed stop")
    proof = tmp_path / "ran"
    harness = make_harness(JobsPlugin())
    try:
        result = await run(harness, "bash", signal=signal, command=f"touch {proof}", run_in_background=True)
        assert result.is_error
        assert text(await run(harness, "job_list")) == "(no background jobs)"
        assert not proof.exists()
    finally:
        await harness.aclose()


class RemoteQueue:
    """A stand-in for a task-queue backend: takes process jobs by their declarative command."""

    def __init__(self) -> None:
        self.taken: list[tuple[str, tuple[str, ...], str | None]] = []

    @hookimpl
    def jobs_backend(self, request):
        if request.command is None:
            return None
        return self

    async def run(self, job_id, request, io):
        self.taken.append((job_id, request.command.argv, request.command.cwd))
        io.write("stdout", b"ran remotely\n")
        return 0


async def test_a_jobs_backend_plugin_runs_the_job_instead_of_this_process(make_harness, tmp_path: Path) -> None:
    queue = RemoteQueue()
    harness = make_harness(JobsPlugin(), queue)
    ran_here = tmp_path / "ran-here"
    try:
        started = await run(harness, "bash", command=f"touch {ran_here}", run_in_background=True)
        assert text(started) == "started background job bash-1"
        done = await run(harness, "job_output", job_id="bash-1", wait=True, timeout_ms=5000)
        assert text(done) == "ran remotely\n[status: completed, exit code: 0]"
        [(job_id, argv, cwd)] = queue.taken
        assert job_id == "bash-1" and argv[-3:] == ("bash", "-c", f"touch {ran_here}") and cwd is not None
        assert not ran_here.exists()  # the local backend never started the process
    finally:
        await harness.aclose()


async def test_a_background_command_the_sandbox_blocked_shows_the_denial_marker(make_harness, workspace) -> None:
    from .support import FakeSandbox

    harness = make_harness(JobsPlugin(), FakeSandbox(workspace, behaviors={"read-only": "deny"}))
    try:
        await run(harness, "bash", command="touch x", run_in_background=True)
        done = await run(harness, "job_output", job_id="bash-1", wait=True, timeout_ms=5000)
        assert "[sandbox: file access denied under read-only mode]" in text(done)
        assert text(done).endswith("[status: completed, exit code: 1]")
    finally:
        await harness.aclose()


async def test_a_background_command_whose_runner_failed_says_so(make_harness, workspace) -> None:
    from .support import FakeSandbox

    harness = make_harness(JobsPlugin(), FakeSandbox(workspace, behaviors={"read-only": "runner-fail"}))
    try:
        await run(harness, "bash", command="touch x", run_in_background=True)
        done = await run(harness, "job_output", job_id="bash-1", wait=True, timeout_ms=5000)
        assert (
            "[sandbox: the sandbox runner itself failed under read-only mode — the command did not run; "
            "this is a sandbox problem, not a command failure]"
        ) in text(done)
        assert "file access denied" not in text(done)
    finally:
        await harness.aclose()
