"""reference/plugins.md §6: the timeout policy — a deadline per call, TOOL_TIMEOUT only for its own expiry."""

from __future__ import annotations

from importlib.metadata import entry_points

import anyio
import pytest

from harness_core import ConfigError, Harness, Signal, TextBlock, ToolCall, ToolDefinition, ToolOutput, hookimpl
from harness_timeout_policy import TimeoutPolicy


def test_the_entry_point_loads_the_plugin():
    (entry,) = [ep for ep in entry_points(group="harness") if ep.name == "timeout-policy"]
    assert entry.load() is TimeoutPolicy


def slow_tool(name: str = "slow", timeout_ms: int | None = 50, *, cooperative: bool = True, sleep: float = 5.0, log=None):
    async def execute(args, ctx):
        if log is not None:
            log.append(ctx.signal)
        if cooperative:
            with anyio.move_on_after(sleep):
                await ctx.signal.wait()
            return "stopped" if ctx.signal.aborted else "done"
        await anyio.sleep(sleep)  # ignores the signal entirely
        return "finished anyway"

    return ToolDefinition(
        name=name,
        description="sleeps",
        parameters={"type": "object"},
        output=ToolOutput(schema={"type": "string"}, render=lambda a, v: [TextBlock(text=v)]),
        execute=execute,
        timeout_ms=timeout_ms,
    )


def harness_with(*tools, config=None, plugins=()):
    harness = Harness(plugins=[TimeoutPolicy(), *plugins], config=config or {})
    for definition in tools:
        harness.tools.register(definition)
    return harness


def call(name="slow", signal=None):
    return ToolCall(call_id="c1", name=name, arguments={}, agent="main", signal=signal or Signal())


@pytest.mark.anyio
async def test_a_declared_timeout_fires_and_the_result_is_tool_timeout():
    with anyio.fail_after(5):
        result = await harness_with(slow_tool(timeout_ms=50)).execute(call())
    assert result.is_error and result.content[0].text == "Error: tool call timed out after 50ms"
    assert result.error.message == "tool call timed out after 50ms"
    assert (result.error.info.name, result.error.info.code) == ("ToolTimeoutError", "TOOL_TIMEOUT")


@pytest.mark.anyio
async def test_a_body_that_ignores_the_signal_is_still_awaited_then_reported_as_timed_out():
    start = anyio.current_time()
    result = await harness_with(slow_tool(timeout_ms=20, cooperative=False, sleep=0.2)).execute(call())
    assert anyio.current_time() - start >= 0.2  # never abandoned
    assert result.error.info.code == "TOOL_TIMEOUT"


@pytest.mark.anyio
async def test_a_caller_abort_that_comes_first_stays_aborted():
    signal = Signal()

    async def abort_soon():
        await anyio.sleep(0.02)
        signal.abort("user pressed stop")

    harness = harness_with(slow_tool(timeout_ms=300, cooperative=False, sleep=0.5))
    async with anyio.create_task_group() as group:
        group.start_soon(abort_soon)
        result = await harness.execute(call(signal=signal))
    assert result.error.info.code == "ABORTED"


@pytest.mark.anyio
async def test_a_timeout_that_fires_first_stands_when_the_caller_aborts_later():
    signal = Signal()

    async def abort_late():
        await anyio.sleep(0.15)
        signal.abort("too late")

    harness = harness_with(slow_tool(timeout_ms=30, cooperative=False, sleep=0.3))
    async with anyio.create_task_group() as group:
        group.start_soon(abort_late)
        result = await harness.execute(call(signal=signal))
    assert result.error.info.code == "TOOL_TIMEOUT"


@pytest.mark.anyio
async def test_overrides_and_a_default_come_from_the_timeout_section():
    declared = slow_tool("declared", timeout_ms=5000)
    undeclared = slow_tool("undeclared", timeout_ms=None)
    harness = harness_with(declared, undeclared, config={"timeout": {"tools": {"declared": 30}, "default_ms": 40}})
    with anyio.fail_after(5):
        assert (await harness.execute(call("declared"))).error.message == "tool call timed out after 30ms"
        assert (await harness.execute(call("undeclared"))).error.message == "tool call timed out after 40ms"


@pytest.mark.anyio
async def test_an_undeclared_tool_without_a_default_keeps_the_callers_signal():
    seen: list[Signal] = []
    caller = Signal()
    harness = harness_with(slow_tool("plain", timeout_ms=None, sleep=0.01, log=seen))
    result = await harness.execute(call("plain", signal=caller))
    assert result.value == "done" and seen == [caller]


@pytest.mark.anyio
async def test_the_upstream_signal_is_restored_for_post_execute():
    seen: list[object] = []

    class Post:
        @hookimpl
        async def tools_post_execute(self, execution, result, call_next):
            seen.append(execution.signal)
            return await call_next()

    caller = Signal()
    await harness_with(slow_tool(timeout_ms=20), plugins=[Post()]).execute(call(signal=caller))
    assert seen == [caller]


class Outer:
    """An outer timeout-like wrapper with a shorter deadline than the tool's own."""

    def __init__(self) -> None:
        self.claimed = False

    @hookimpl(tryfirst=True)
    async def tools_execute(self, execution, call_next):
        upstream = execution.signal
        mine = Signal()
        execution.signal = mine

        async def fire():
            await anyio.sleep(0.03)
            mine.abort("outer deadline")

        try:
            async with anyio.create_task_group() as group:
                group.start_soon(fire)
                result = await call_next()
                group.cancel_scope.cancel()
        finally:
            execution.signal = upstream
        return result


@pytest.mark.anyio
async def test_nested_wrappers_keep_the_outer_deadline():
    with anyio.fail_after(5):
        result = await harness_with(slow_tool(timeout_ms=5000), plugins=[Outer()]).execute(call())
    # The outer deadline (30 ms) reached the body through the inner one; the inner did not claim it.
    assert result.error.info.code == "ABORTED"


@pytest.mark.anyio
async def test_a_retry_outside_the_timeout_gets_a_fresh_deadline_per_attempt():
    attempts: list[int] = []

    async def execute(args, ctx):
        attempts.append(1)
        if len(attempts) == 1:
            await ctx.signal.wait()  # the first attempt runs into its deadline
            return "late"
        return "second try"

    tool = ToolDefinition(
        name="flaky",
        description="",
        parameters={"type": "object"},
        output=ToolOutput(schema={"type": "string"}, render=lambda a, v: [TextBlock(text=v)]),
        execute=execute,
        timeout_ms=30,
    )

    class Retry:
        @hookimpl(tryfirst=True)
        async def tools_execute(self, execution, call_next):
            result = await call_next()
            return await call_next() if result.is_error else result

    with anyio.fail_after(5):
        result = await harness_with(tool, plugins=[Retry()]).execute(call("flaky"))
    assert result.value == "second try" and len(attempts) == 2


def test_the_plugin_silences_the_unenforced_timeout_warning():
    assert harness_with(slow_tool(timeout_ms=50)).warnings() == []
    bare = Harness()
    bare.tools.register(slow_tool(timeout_ms=50))
    assert bare.warnings() == ['tool "slow" declares timeout_ms=50 but no plugin enforces it (install the timeout policy plugin)']


@pytest.mark.parametrize("section", [{"default_ms": 0}, {"default_ms": -5}, {"tools": {"bash": 0}}, {"budget": 1}])
def test_bad_timeout_settings_are_config_errors(section):
    with pytest.raises(ConfigError, match="timeout"):
        Harness(plugins=[TimeoutPolicy()], config={"timeout": section})


@pytest.mark.anyio
async def test_a_wrapper_outside_the_timeout_sees_the_timeout_result():
    seen = []

    class Outside:
        @hookimpl(tryfirst=True)
        async def tools_execute(self, execution, call_next):
            result = await call_next()
            seen.append(result)
            return result

    with anyio.fail_after(5):
        result = await harness_with(slow_tool(timeout_ms=30), plugins=[Outside()]).execute(call())
    assert [r.error.info.code for r in seen] == ["TOOL_TIMEOUT"] and result is not None


@pytest.mark.anyio
async def test_a_body_that_finishes_just_before_the_deadline_succeeds():
    result = await harness_with(slow_tool(timeout_ms=400, cooperative=False, sleep=0.05)).execute(call())
    assert not result.is_error and result.value == "finished anyway"


@pytest.mark.anyio
async def test_the_bash_tools_process_group_is_gone_after_a_timeout(tmp_path):
    import uuid

    from harness_core.config import ConfigSource
    from harness_tools import ToolsPlugin
    from tests.tools.support import processes_with

    marker = f"harness-timeout-test-{uuid.uuid4().hex}"
    source = ConfigSource.from_mapping({"timeout": {"tools": {"bash": 300}}})
    harness = Harness(plugins=[ToolsPlugin(), TimeoutPolicy()], config=source)
    # A child that ignores SIGTERM, in the background of the shell: the whole group must go.
    command = f"bash -c 'trap \"\" TERM; exec -a {marker} sleep 30' & sleep 30 # {marker}"
    with anyio.fail_after(20):
        result = await harness.execute(ToolCall(call_id="c1", name="bash", arguments={"command": command}, agent="main"))
    assert result.error.info.code == "TOOL_TIMEOUT"
    with anyio.fail_after(5):
        while processes_with(marker):
            await anyio.sleep(0.05)
    await harness.aclose()
