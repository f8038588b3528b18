"""reference/plugins.md §11–§12: the bash tool through a real Harness and real processes.

A non-zero exit and a timeout are ordinary results with markers; a process group per call is
killed on timeout and cancellation (a member that ignores SIGTERM too); output beyond the cap is
shown as head and tail and kept whole in a spill file, without holding it in memory.
"""

from __future__ import annotations

import gc
import resource
import time
import tracemalloc
from pathlib import Path

import anyio
import pytest

from harness_core import Signal, hookimpl
from harness_tools.bash import BACKGROUND_NOT_INSTALLED, BACKGROUND_NOT_SUPPORTED

from .support import code, marker, processes_with, run, text, wait_for_file

pytestmark = pytest.mark.anyio


async def test_stdout_and_stderr_are_shown_with_the_exit_code_marker_last(make_harness) -> None:
    result = await run(make_harness(), "bash", command="echo out; echo err >&2; exit 3")
    assert result.is_error is False  # a failing command is an ordinary result
    assert text(result) == "out\n[stderr]\nerr\n[exit code: 3]"
    assert result.value["exit_code"] == 3 and result.value["signal"] is None


async def test_a_successful_command_has_no_marker_and_empty_output_says_so(make_harness) -> None:
    harness = make_harness()
    assert text(await run(harness, "bash", command="echo hello")) == "hello\n"
    assert text(await run(harness, "bash", command="true")) == "(no output)"
    assert text(await run(harness, "bash", command="exit 1")) == "(no output)\n[exit code: 1]"


async def test_a_command_killed_by_a_signal_says_which(make_harness) -> None:
    result = await run(make_harness(), "bash", command="kill -KILL $$")
    assert not result.is_error
    assert text(result) == "(no output)\n[killed by signal: SIGKILL]"
    assert result.value["exit_code"] is None and result.value["signal"] == "SIGKILL"


async def test_non_utf8_output_is_decoded_with_replacement(make_harness) -> None:
    result = await run(make_harness(), "bash", command=r"printf 'caf\xe9 \xff\xfe ok\n'")
    assert text(result) == "caf\ufffd \ufffd\ufffd ok\n"


async def test_the_command_runs_in_the_workspace_or_the_given_workdir(make_harness, workspace: Path) -> None:
    (workspace / "sub").mkdir()
    harness = make_harness()
    assert text(await run(harness, "bash", command="pwd")) == f"{workspace}\n"
    assert text(await run(harness, "bash", command="pwd", workdir="sub")) == f"{workspace / 'sub'}\n"
    missing = await run(harness, "bash", command="pwd", workdir="nope")
    assert missing.is_error and code(missing) == "INVALID_ARGS"
    assert text(missing) == f'Error: invalid workdir: "{workspace / "nope"}" is not an existing folder'


async def test_every_call_gets_a_fresh_shell_with_a_quiet_scrubbed_environment(make_harness, monkeypatch) -> None:
    monkeypatch.setenv("MY_API_TOKEN", "secret")
    monkeypatch.setenv("HARNESS_TOOLS_PLAIN", "kept")
    harness = make_harness()
    await run(harness, "bash", command="export LEFT_OVER=1; cd /")
    shown = text(await run(harness, "bash", command='echo "[$LEFT_OVER][$MY_API_TOKEN][$HARNESS_TOOLS_PLAIN][$PAGER][$NO_COLOR]"; pwd'))
    assert shown.splitlines()[0] == "[][][kept][cat][1]"
    assert shown.splitlines()[1] != "/"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"command": "  "}, "invalid command: expected a non-empty string"),
        ({"command": 5}, "invalid command: expected a non-empty string"),
        ({}, "invalid command: expected a non-empty string"),
        ({"command": "true", "description": ""}, "invalid description: expected a non-empty string"),
        ({"command": "true", "timeout_ms": 0}, "invalid timeout_ms: expected a positive number, got 0"),
        ({"command": "true", "timeout_ms": "5"}, 'invalid timeout_ms: expected a positive number, got "5"'),
        ({"command": "true", "run_in_background": "yes"}, 'invalid run_in_background: expected a boolean, got "yes"'),
    ],
)
async def test_malformed_arguments_are_refused_with_the_reference_texts(make_harness, arguments, message) -> None:
    result = await run(make_harness(), "bash", **arguments)
    assert result.is_error and code(result) == "INVALID_ARGS"
    assert text(result) == f"Error: {message}"


# --- timeout and cancellation: the whole process group goes -------------------------------------------


def stubborn_group(tag: str, ready: Path) -> str:
    """A command whose grandchild ignores SIGTERM (and so do its own children), tagged in its argv."""
    inner = f"trap '' TERM; echo ready > {ready}; while :; do sleep 0.05; done"
    return f"bash -c \"{inner}\" {tag} & wait"


async def test_a_timeout_kills_the_whole_group_including_a_grandchild_that_traps_sigterm(make_harness, tmp_path) -> None:
    tag, ready = marker(), tmp_path / "ready"
    started = time.monotonic()
    result = await run(make_harness(), "bash", command=stubborn_group(tag, ready), timeout_ms=600)
    elapsed = time.monotonic() - started
    assert ready.exists(), "the grandchild never started"
    assert not result.is_error
    assert text(result).endswith("[timed out after 600ms]\n[killed by signal: SIGTERM]")
    assert result.value["timed_out"] is True
    assert processes_with(tag) == []
    assert 0.6 + 0.3 <= elapsed < 5  # SIGTERM was ignored, so SIGKILL came after the grace period


async def test_timeout_ms_is_capped_by_the_configured_maximum(make_harness) -> None:
    result = await run(make_harness(bash_max_timeout_ms=200, bash_timeout_ms=100), "bash", command="sleep 5", timeout_ms=60_000)
    assert text(result).endswith("[timed out after 200ms]\n[killed by signal: SIGTERM]")


async def test_cancelling_the_call_kills_the_group_and_reports_aborted(make_harness, tmp_path) -> None:
    tag, ready = marker(), tmp_path / "ready"
    harness, signal = make_harness(), Signal()
    results = []

    async def call() -> None:
        results.append(await run(harness, "bash", signal=signal, command=stubborn_group(tag, ready)))

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        await wait_for_file(ready)
        assert processes_with(tag) != []
        signal.abort("the user pressed stop")
    [result] = results
    assert result.is_error and code(result) == "ABORTED"
    assert text(result) == "Error: tool call aborted"
    assert processes_with(tag) == []


async def test_cancelling_the_awaiting_task_still_kills_the_group(make_harness, tmp_path) -> None:
    tag, ready = marker(), tmp_path / "ready"
    harness = make_harness()
    async with anyio.create_task_group() as group:
        group.start_soon(lambda: run(harness, "bash", command=stubborn_group(tag, ready)))
        await wait_for_file(ready)
        group.cancel_scope.cancel()
    assert processes_with(tag) == []


async def test_members_left_running_when_the_command_ends_are_killed(make_harness) -> None:
    tag = marker()
    started = time.monotonic()
    result = await run(make_harness(), "bash", command=f"(exec -a {tag} sleep 30) & echo started")
    assert text(result) == "started\n"
    assert time.monotonic() - started < 5
    assert processes_with(tag) == []


async def test_closing_the_harness_kills_groups_still_running(make_harness, tmp_path) -> None:
    tag, ready = marker(), tmp_path / "ready"
    harness = make_harness()
    async with anyio.create_task_group() as group:
        group.start_soon(lambda: run(harness, "bash", command=stubborn_group(tag, ready)))
        await wait_for_file(ready)
        await harness.aclose()
    assert processes_with(tag) == []


# --- output caps and spill files ----------------------------------------------------------------------


async def test_long_output_shows_head_and_tail_around_the_marker_and_spills_everything(make_harness, workspace) -> None:
    result = await run(make_harness(bash_max_output_chars=100), "bash", command="seq 1 1000")
    stdout = result.value["stdout"]
    assert stdout["truncated"] is True and stdout["bytes"] == len("".join(f"{n}\n" for n in range(1, 1001)))
    spill = Path(stdout["spill_path"])
    assert spill.parent == workspace / ".harness" / "spill"
    assert spill.read_text() == "".join(f"{n}\n" for n in range(1, 1001))
    assert (spill.stat().st_mode & 0o777) == 0o600
    head, rest = text(result).split("\n[output truncated; full output: ", 1)
    path, tail = rest.split("]\n", 1)
    assert path == str(spill)
    assert head.startswith("1\n2\n") and len(head) <= 25
    assert tail.endswith("999\n1000\n") and len(tail) == 75


async def test_output_that_fits_keeps_no_spill_file(make_harness, workspace) -> None:
    result = await run(make_harness(bash_max_output_chars=100), "bash", command="printf 'é%.0s' $(seq 60)")
    assert result.value["stdout"] == {"text": "é" * 60, "truncated": False, "spill_path": None, "bytes": 120}
    assert list((workspace / ".harness" / "spill").glob("*")) == []


async def test_a_stream_over_the_spill_cap_keeps_no_file_and_says_unavailable(make_harness, workspace) -> None:
    harness = make_harness(bash_max_output_chars=100, bash_max_spill_bytes=10_000)
    result = await run(harness, "bash", command="seq 1 100000")
    assert result.value["stdout"]["spill_path"] is None
    assert "[output truncated; full output: (unavailable)]" in text(result)
    assert list((workspace / ".harness" / "spill").glob("*")) == []


async def test_stderr_has_its_own_cap_and_spill_file(make_harness) -> None:
    result = await run(make_harness(bash_max_output_chars=50), "bash", command="seq 1 500 >&2; echo fine")
    assert result.value["stdout"]["truncated"] is False
    assert result.value["stderr"]["truncated"] is True
    assert Path(result.value["stderr"]["spill_path"]).read_text().endswith("499\n500\n")
    assert text(result).startswith("fine\n[stderr]\n1\n")


async def test_a_100_mb_output_is_streamed_to_the_spill_file_in_bounded_memory(make_harness) -> None:
    size = 100_000_000
    harness = make_harness()
    gc.collect()
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    tracemalloc.start()
    try:
        result = await run(harness, "bash", command=f"head -c {size} /dev/zero | tr '\\0' a; echo; echo done >&2")
        _, traced_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    peak_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    stdout = result.value["stdout"]
    assert stdout["bytes"] == size + 1 and stdout["truncated"] is True
    spill = Path(stdout["spill_path"])
    assert spill.stat().st_size == size + 1
    with spill.open("rb") as handle:
        assert handle.read(10) == b"a" * 10
        handle.seek(-2, 2)
        assert handle.read() == b"a\n"
    assert len(text(result)) < 31_000 + 200
    assert traced_peak < 20 * 1024 * 1024, f"the reader held {traced_peak} bytes at its peak"
    assert (peak_after - peak_before) * 1024 < 40 * 1024 * 1024


# --- background, escalation arguments without a sandbox ----------------------------------------------


async def test_run_in_background_without_a_jobs_plugin_is_refused_before_anything_starts(make_harness, tmp_path) -> None:
    proof = tmp_path / "ran"
    result = await run(make_harness(), "bash", command=f"touch {proof}", run_in_background=True)
    assert result.is_error and code(result) == "BACKGROUND_UNAVAILABLE"
    assert text(result) == f"Error: {BACKGROUND_NOT_INSTALLED}"
    assert text(result) == "Error: run_in_background requires the jobs plugin (harness-jobs); it is not installed"
    assert not proof.exists()


async def test_run_in_background_is_refused_when_the_jobs_provider_does_not_start_jobs(make_harness, tmp_path) -> None:
    class Jobs:
        @hookimpl
        def harness_provides(self) -> list[str]:
            return ["jobs"]

    proof = tmp_path / "ran"
    result = await run(make_harness(Jobs()), "bash", command=f"touch {proof}", run_in_background=True)
    assert text(result) == f"Error: {BACKGROUND_NOT_SUPPORTED}"
    assert not proof.exists()


async def test_run_in_background_false_runs_in_the_foreground(make_harness) -> None:
    assert text(await run(make_harness(), "bash", command="echo fg", run_in_background=False)) == "fg\n"


@pytest.mark.parametrize(
    "extra",
    [
        {"sandbox_permissions": "workspace-write", "justification": "needs to write"},
        {"sandbox_permissions": "danger-full-access"},
        {"justification": "just because"},
    ],
)
async def test_escalation_arguments_sent_without_a_confining_sandbox_are_refused(make_harness, tmp_path, extra) -> None:
    proof = tmp_path / "ran"
    result = await run(make_harness(), "bash", command=f"touch {proof}", **extra)
    assert result.is_error
    assert text(result) == (
        "Error: sandbox_permissions is not available in this composition (no sandboxing executor to escalate)"
    )
    assert not proof.exists()
