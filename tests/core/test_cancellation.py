"""reference/core-pipeline.md §3.4 and §5.3: cancellation at each checkpoint, never abandoning a started body."""

from __future__ import annotations

import anyio
import pytest

from harness_core import Block, ContextMessage, Deny, Signal, TextBlock, ToolResult, hookimpl

from .support import call, make_echo, text_of


@pytest.mark.anyio
async def test_a_caller_abort_during_the_body_replaces_the_success_with_aborted(make_harness, recorder):
    signal = Signal()
    finished: list[bool] = []

    async def slow(args, ctx):
        signal.abort("user pressed stop")
        assert ctx.signal.aborted and ctx.signal.reason == "user pressed stop"
        ctx.defer_context(ContextMessage(content=[TextBlock(text="partial work")], source="echo"))
        await anyio.sleep(0.01)  # the core keeps waiting: it never abandons a started body
        finished.append(True)
        return "done"

    result = await make_harness(tool=make_echo(slow)).execute(call(text="hi", signal=signal))
    assert finished == [True]
    assert result.error.info.code == "ABORTED" and text_of(result) == "Error: tool call aborted"
    assert [m.content[0].text for m in result.additional_contexts] == ["partial work"]
    assert recorder.results == [result]


@pytest.mark.anyio
async def test_an_uncooperative_body_is_awaited_to_its_end(make_harness):
    signal = Signal()
    steps: list[int] = []

    async def stubborn(args, ctx):
        signal.abort()
        for step in range(3):
            await anyio.sleep(0.005)
            steps.append(step)
        return "finished anyway"

    result = await make_harness(tool=make_echo(stubborn)).execute(call(text="hi", signal=signal))
    assert steps == [0, 1, 2] and result.error.info.code == "ABORTED"


@pytest.mark.anyio
async def test_a_body_failure_is_kept_even_when_the_caller_aborted(make_harness):
    signal = Signal()

    async def failing(args, ctx):
        signal.abort()
        raise RuntimeError("disk full")

    result = await make_harness(tool=make_echo(failing)).execute(call(text="hi", signal=signal))
    assert result.error.message == "disk full"


@pytest.mark.anyio
async def test_a_wrapper_short_circuit_after_a_caller_abort_is_aborted_before_dispatch(make_harness, body):
    class Cached:
        @hookimpl
        async def tools_execute(self, execution, call_next):
            execution.signal.abort("stop")  # the caller's signal, as seen by the wrapper
            return ToolResult(is_error=False, value="cached")

    result = await make_harness(Cached()).execute(call(text="hi"))
    assert result.error.info.code == "ABORTED_BEFORE_DISPATCH" and body.runs == []


@pytest.mark.anyio
async def test_a_caller_abort_during_post_execute_replaces_a_success(make_harness):
    class AbortInPost:
        @hookimpl
        async def tools_post_execute(self, execution, result, call_next):
            execution.signal.abort("stop")
            return await call_next()

    result = await make_harness(AbortInPost()).execute(call(text="hi"))
    assert result.error.info.code == "ABORTED"


@pytest.mark.anyio
async def test_a_post_execute_block_is_kept_when_the_caller_aborted(make_harness):
    class BlockAndAbort:
        @hookimpl
        async def tools_post_execute(self, execution, result, call_next):
            execution.signal.abort("stop")
            return Block(feedback=[TextBlock(text="blocked by policy")])

    result = await make_harness(BlockAndAbort()).execute(call(text="hi"))
    assert result.error.message == "blocked by policy"


@pytest.mark.anyio
async def test_a_denial_outranks_a_cancellation_that_happened_meanwhile(make_harness):
    class DenyAndAbort:
        @hookimpl
        async def tools_pre_execute(self, execution, call_next):
            execution.signal.abort("stop")
            return Deny(reason="denied first")

    result = await make_harness(DenyAndAbort()).execute(call(text="hi"))
    assert result.error.message == "denied first"


@pytest.mark.anyio
async def test_a_caller_abort_reaches_the_body_through_a_wrapper_signal(make_harness):
    signal = Signal()
    wrapper_signals: list[Signal] = []

    class Wrap:
        @hookimpl
        async def tools_execute(self, execution, call_next):
            wrapper_signals.append(Signal())
            execution.signal = wrapper_signals[-1]
            return await call_next()

    async def watching(args, ctx):
        assert ctx.signal is not signal and ctx.signal is not wrapper_signals[0]
        signal.abort("caller")
        assert ctx.signal.aborted and ctx.signal.reason == "caller"
        assert not wrapper_signals[0].aborted  # the fusion never aborts the wrapper's own signal
        return "x"

    result = await make_harness(Wrap(), tool=make_echo(watching)).execute(call(text="hi", signal=signal))
    assert result.error.info.code == "ABORTED"


@pytest.mark.anyio
async def test_a_cancelled_awaiting_task_aborts_the_signal_records_the_outcome_and_reraises(make_harness, recorder):
    started = anyio.Event()
    finalized: list[str] = []

    async def slow(args, ctx):
        started.set()
        await anyio.sleep(10)
        return "never"

    tool = make_echo(slow, finalize_content=lambda execution, result: finalized.append(result.error.info.code))
    harness = make_harness(tool=tool)
    the_call = call(text="hi")
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as group:

            async def cancel_when_started():
                await started.wait()
                scope.cancel()

            group.start_soon(cancel_when_started)
            await harness.execute(the_call)
    assert scope.cancelled_caught
    assert the_call.signal.aborted
    assert finalized == ["ABORTED"]
    assert len(recorder.results) == 1 and recorder.results[0].error.info.code == "ABORTED"


@pytest.mark.anyio
async def test_a_task_cancelled_before_dispatch_records_aborted_before_dispatch(make_harness, recorder, body):
    class SlowPolicy:
        @hookimpl
        async def tools_pre_execute(self, execution, call_next):
            await anyio.sleep(10)
            return await call_next()

    harness = make_harness(SlowPolicy())
    with anyio.move_on_after(0.01):
        await harness.execute(call(text="hi"))
    assert body.runs == []
    assert [r.error.info.code for r in recorder.results] == ["ABORTED_BEFORE_DISPATCH"]


@pytest.mark.anyio
async def test_a_body_may_use_the_signal_as_a_cancel_scope(make_harness):
    signal = Signal()

    async def cooperative(args, ctx):
        with ctx.signal.cancel_scope() as scope:
            signal.abort("stop")
            await anyio.sleep(10)
        return "stopped early" if scope.cancelled_caught else "ran to the end"

    with anyio.fail_after(5):
        result = await make_harness(tool=make_echo(cooperative)).execute(call(text="hi", signal=signal))
    assert result.error.info.code == "ABORTED"
