"""reference/plugins.md §7 and §8: the jobs plugin — preflight, ids, output, fence, tools, notices, close."""

from __future__ import annotations

import os
import threading
import uuid
from importlib.metadata import entry_points
from typing import Any

import anyio
import pytest

from harness_core import ConfigError, Harness, TextBlock, ToolCall, ToolResult, hookimpl
from harness_core.jobs import JobIO, JobRefusedError, JobRequest
from harness_jobs import JobsPlugin
from harness_jobs.manager import complete_utf8_prefix
from harness_jobs.tools import fit_job_output, fit_text, notice_text

pytestmark = pytest.mark.anyio


def test_the_entry_point_loads_the_plugin() -> None:
    (entry,) = [ep for ep in entry_points(group="harness") if ep.name == "jobs"]
    assert entry.load() is JobsPlugin


def make(config: dict[str, Any] | None = None) -> tuple[Harness, JobsPlugin]:
    plugin = JobsPlugin()
    return Harness(plugins=[plugin], config={"jobs": config or {}}), plugin


def start(harness: Harness, work: Any, *, owner: str | None = "main", kind: str = "work", label: str = "a job",
          output_limit_bytes: int | None = None) -> str:
    request = JobRequest(owner=owner, kind=kind, label=label, start=work, output_limit_bytes=output_limit_bytes)
    job_id = harness.plugin_manager.hook.jobs_start(request=request)
    assert isinstance(job_id, str)
    return job_id


async def call(harness: Harness, name: str, agent: str | None = "main", **arguments: Any) -> ToolResult:
    return await harness.execute(ToolCall(call_id=f"c-{uuid.uuid4().hex[:8]}", name=name, arguments=arguments, agent=agent))


def text(result: ToolResult) -> str:
    [block] = result.content
    assert isinstance(block, TextBlock)
    return block.text


def writes(*chunks: bytes, code: int | None = 0, stream: str = "stdout") -> Any:
    async def work(io: JobIO) -> int | None:
        for chunk in chunks:
            io.write(stream, chunk)  # type: ignore[arg-type]
        return code

    return work


async def until_stopped(io: JobIO) -> int | None:
    await io.signal.wait()
    return None


# --- config ----------------------------------------------------------------------------------------


def test_max_per_owner_defaults_to_ten_and_must_be_positive() -> None:
    _, plugin = make()
    assert plugin.manager is not None and plugin.manager.max_per_owner == 10
    _, plugin = make({"max_per_owner": 2})
    assert plugin.manager is not None and plugin.manager.max_per_owner == 2
    with pytest.raises(ConfigError):
        make({"max_per_owner": 0})
    with pytest.raises(ConfigError):
        make({"unknown": 1})


def test_the_plugin_provides_jobs_and_registers_the_job_tools() -> None:
    harness, _ = make()
    assert "jobs" in harness.provided()
    names = {schema["name"] for schema in harness.tools.schemas()}
    assert {"job_list", "job_output", "job_wait", "job_kill"} <= names


# --- preflight -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"kind": ""}, "invalid job kind: expected a non-empty string"),
        ({"label": " "}, "invalid job label: expected a non-empty string"),
        ({"output_limit_bytes": 0}, "invalid outputLimitBytes: expected a positive safe integer, got 0"),
        ({"output_limit_bytes": 2**53}, f"invalid outputLimitBytes: expected a positive safe integer, got {2**53}"),
    ],
)
async def test_an_invalid_request_is_refused_with_the_reference_text_and_nothing_starts(fields, message) -> None:
    harness, _ = make()
    ran: list[bool] = []

    async def work(io: JobIO) -> int:
        ran.append(True)
        return 0

    request = {"owner": "main", "kind": "work", "label": "x", "start": work, **fields}
    with pytest.raises(JobRefusedError) as refused:
        harness.plugin_manager.hook.jobs_start(request=JobRequest(**request))
    assert str(refused.value) == message and refused.value.code == "JOB_INVALID"
    assert start(harness, writes()) == "work-1"  # the refusal used no id
    await harness.aclose()
    assert ran == []


async def test_capacity_counts_live_jobs_per_owner_and_a_refusal_uses_no_id() -> None:
    harness, _ = make({"max_per_owner": 2})
    try:
        assert start(harness, until_stopped) == "work-1"
        assert start(harness, until_stopped) == "work-2"
        with pytest.raises(JobRefusedError) as refused:
            start(harness, until_stopped)
        assert refused.value.code == "JOB_LIMIT"
        assert "(limit: 2)" in str(refused.value)
        assert start(harness, until_stopped, owner="other") == "work-3"
        assert start(harness, until_stopped, owner=None) == "work-4"
        await call(harness, "job_kill", job_id="work-1")
        await call(harness, "job_wait", job_id="work-1", timeout_ms=5000)
        assert start(harness, until_stopped) == "work-5"
        assert start(harness, until_stopped, owner="third", kind="other") == "other-1"
    finally:
        await harness.aclose()


# --- operations and the owner fence ---------------------------------------------------------------


async def test_jobs_of_another_owner_are_fenced_and_unowned_jobs_are_open() -> None:
    harness, _ = make()
    try:
        start(harness, until_stopped, owner="main", label="mine")
        start(harness, until_stopped, owner=None, label="shared")
        assert text(await call(harness, "job_list")) == "work-1 [work] running — mine\nwork-2 [work] running — shared"
        assert text(await call(harness, "job_list", agent="other")) == "work-2 [work] running — shared"
        denied = await call(harness, "job_output", agent="other", job_id="work-1")
        assert text(denied) == "Error: job work-1 belongs to another session"
        assert text(await call(harness, "job_kill", agent="other", job_id="work-9")) == "Error: unknown job work-9"
        assert text(await call(harness, "job_output", job_id="")) == (
            'Error: invalid job_id: expected a non-empty string, got ""'
        )
        assert text(await call(harness, "job_list", agent="nobody-else")) == "work-2 [work] running — shared"
    finally:
        await harness.aclose()
    harness, _ = make()
    assert text(await call(harness, "job_list")) == "(no background jobs)"


async def test_a_wait_that_times_out_returns_the_live_state_and_the_job_keeps_running() -> None:
    harness, _ = make()
    try:
        start(harness, until_stopped)
        waited = await call(harness, "job_wait", job_id="work-1", timeout_ms=50)
        assert text(waited) == "job work-1 is still running after 50ms [status: running]"
        output = await call(harness, "job_output", job_id="work-1", wait=True, timeout_ms=50)
        assert text(output) == "(no new output)\n[status: running]"
        bad = await call(harness, "job_wait", job_id="work-1", timeout_ms=0)
        assert text(bad) == "Error: invalid wait timeout: expected a positive number of milliseconds, got 0"
    finally:
        await harness.aclose()


async def test_exit_codes_signals_and_failures_map_to_statuses() -> None:
    harness, _ = make()

    async def boom(io: JobIO) -> int:
        raise RuntimeError("broken")

    try:
        start(harness, writes(code=0))
        start(harness, writes(code=-9))
        start(harness, boom)
        start(harness, writes(code=None))
        expected = [
            "[status: completed, exit code: 0]",
            "[status: killed, signal: SIGKILL]",
            "[status: failed, RuntimeError: broken]",
            "[status: killed, killed before exit]",
        ]
        for index, status in enumerate(expected, 1):
            result = await call(harness, "job_wait", job_id=f"work-{index}", timeout_ms=5000)
            assert text(result) == f"job work-{index} finished {status}"
    finally:
        await harness.aclose()


# --- output: head window, spill file, byte-exact cuts --------------------------------------------


async def test_reads_consume_and_never_split_a_character_of_a_running_job() -> None:
    harness, _ = make()
    euro = "€".encode()
    written, gate = threading.Event(), threading.Event()

    async def work(io: JobIO) -> int:
        io.write("stdout", b"a" + euro[:2])
        written.set()
        await anyio.to_thread.run_sync(gate.wait)
        io.write("stdout", euro[2:] + b"b")
        return 0

    try:
        start(harness, work)
        await anyio.to_thread.run_sync(written.wait, 5)
        assert text(await call(harness, "job_output", job_id="work-1")) == "a\n[status: running]"
        gate.set()
        final = await call(harness, "job_output", job_id="work-1", wait=True, timeout_ms=5000)
        assert text(final) == "€b\n[status: completed, exit code: 0]"
        assert text(await call(harness, "job_output", job_id="work-1")) == (
            "(no new output)\n[status: completed, exit code: 0]"
        )
    finally:
        gate.set()
        await harness.aclose()


async def test_output_past_the_window_is_counted_and_kept_whole_in_a_spill_file() -> None:
    harness, _ = make({"max_output_bytes": 10})
    data = "ééééééé".encode() + b"0123456789" * 5  # the window (10 bytes) ends inside no character
    try:
        start(harness, writes(data))
        result = await call(harness, "job_output", job_id="work-1", wait=True, timeout_ms=5000)
        body, _, rest = text(result).partition("\n")
        assert body == "ééééé"
        assert rest.startswith("[some output was dropped from memory; full output: ")
        path = rest.split("full output: ", 1)[1].split("]", 1)[0]
        with open(path, "rb") as handle:
            assert handle.read() == data
        assert result.value["job"]["status"] == "completed"
    finally:
        await harness.aclose()
    assert not os.path.exists(path)  # spill files go with the harness


def test_complete_utf8_prefix_stops_before_an_unfinished_character() -> None:
    data = "a€".encode()
    assert [complete_utf8_prefix(data[:n]) for n in range(len(data) + 1)] == [0, 1, 1, 1, 4]
    assert complete_utf8_prefix("😀".encode()[:3]) == 0


def test_fit_text_cuts_multi_byte_text_at_a_character_boundary_within_the_limit() -> None:
    text_ = "€" * 20  # 60 bytes
    fitted = fit_text(text_, 30)
    assert fitted.endswith("\n[result truncated]")
    assert len(fitted.encode()) <= 30
    assert fitted == "€" * 3 + "\n[result truncated]"  # 9 + 19 = 28 bytes; a fourth € would need 31
    assert fit_text("short", 30) == "short"


def test_fit_job_output_keeps_the_tail_the_marker_once_and_the_status() -> None:
    status = "[status: completed, exit code: 0]"
    body = "ü" * 40 + "\n[output truncated]"
    fitted = fit_job_output(body, status, 80)
    assert fitted.endswith("\n[output truncated]\n" + status)
    assert fitted.count("[output truncated]") == 1
    assert len(fitted.encode()) <= 80
    head = fitted.split("\n[output truncated]")[0]
    assert set(head) == {"ü"} and len(head.encode()) == 80 - 19 - 1 - len(status) - 1  # an even byte count
    assert fit_job_output("ok", status, 80) == "ok\n" + status


async def test_a_job_output_limit_bounds_every_job_output_result_byte_exactly() -> None:
    harness, _ = make()
    try:
        start(harness, writes(("日本語" * 30).encode()), output_limit_bytes=60)
        result = await call(harness, "job_output", job_id="work-1", wait=True, timeout_ms=5000)
        shown = text(result)
        assert len(shown.encode()) <= 60
        assert shown.endswith("\n[output truncated]\n[status: completed, exit code: 0]")
        assert shown.startswith("日本語"[:1]) or shown[0] in "日本語"
        killed = await call(harness, "job_kill", job_id="work-1")
        assert len(text(killed).encode()) <= 60
    finally:
        await harness.aclose()


# --- completion notices ----------------------------------------------------------------------------


class Echo:
    @hookimpl
    def harness_register_tools(self, register: Any) -> None:
        from harness_core import ToolDefinition, ToolOutput

        async def execute(args: Any, ctx: Any) -> str:
            return "ok"

        register(ToolDefinition(name="echo", description="echo", parameters={"type": "object"},
                                output=ToolOutput(schema={"type": "string"}, render=lambda a, v: [TextBlock(text=v)]),
                                execute=execute))


async def test_a_finished_job_is_announced_on_the_owners_next_tool_result_once() -> None:
    plugin = JobsPlugin()
    harness = Harness(plugins=[plugin, Echo()])
    try:
        start(harness, writes(b"x", code=2), label="make test")
        assert plugin.manager is not None
        with anyio.fail_after(5):
            while plugin.manager.get("work-1", "main").live:
                await anyio.sleep(0.01)
        other = await call(harness, "echo", agent="other")
        assert other.additional_contexts == ()
        result = await call(harness, "echo")
        [notice] = result.additional_contexts
        assert notice.source == "jobs"
        assert notice.content[0].text == (  # type: ignore[attr-defined]
            "background job work-1 (work: make test) finished [status: completed, exit code: 2]. "
            "Read its output with job_output."
        )
        assert (await call(harness, "echo")).additional_contexts == ()
    finally:
        await harness.aclose()


async def test_a_job_already_reported_by_a_read_is_not_announced() -> None:
    harness = Harness(plugins=[JobsPlugin(), Echo()])
    try:
        start(harness, writes(b"x"))
        await call(harness, "job_output", job_id="work-1", wait=True, timeout_ms=5000)
        assert (await call(harness, "echo")).additional_contexts == ()
    finally:
        await harness.aclose()


def test_a_notice_is_bounded_by_the_jobs_output_limit() -> None:
    from harness_jobs.manager import JobSnapshot

    job = JobSnapshot(id="bash-1", kind="bash", label="x" * 200, owner="main", status="completed",
                      detail="exit code: 0", started_at=0, finished_at=1, output_limit_bytes=60, reported=False)
    notice = notice_text(job)
    assert len(notice.encode()) <= 60
    assert notice.startswith("background job bash-1") and notice.endswith("\n[notice truncated]\nDone; job_output.")


# --- close -----------------------------------------------------------------------------------------


async def test_closing_stops_every_job_even_one_that_ignores_its_signal() -> None:
    harness, plugin = make({"close_grace_ms": 200})
    cleaned: list[str] = []
    running = threading.Event()

    async def stubborn(io: JobIO) -> int:
        try:
            running.set()
            await anyio.sleep(60)
        finally:
            cleaned.append("stubborn")
        return 0

    async def polite(io: JobIO) -> int | None:
        await io.signal.wait()
        cleaned.append("polite")
        return None

    start(harness, stubborn)
    start(harness, polite)
    await anyio.to_thread.run_sync(running.wait, 5)
    with anyio.fail_after(5):
        await harness.aclose()
    assert sorted(cleaned) == ["polite", "stubborn"]
    assert plugin.manager is not None and plugin.manager.live_count() == 0
    with pytest.raises(JobRefusedError) as refused:
        plugin.manager.start(JobRequest(owner=None, kind="work", label="late", start=polite))
    assert refused.value.code == "JOB_CLOSED"
