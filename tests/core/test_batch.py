"""reference/core-pipeline.md §3.1: batches — serial policy, overlapped dispatch, commits in model order."""

from __future__ import annotations

import anyio
import pytest

from harness_core import Signal, ToolCall, hookimpl

from .support import make_echo


class Timeline:
    """Records pre-execute, body start/end and post-execute events in the order they happen."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.running = 0
        self.peak = 0

    @hookimpl
    async def tools_pre_execute(self, execution, call_next):
        self.events.append(f"pre {execution.call_id}")
        await anyio.sleep(0)
        decision = await call_next()
        self.events.append(f"pre-done {execution.call_id}")
        return decision

    @hookimpl
    async def tools_post_execute(self, execution, result, call_next):
        self.events.append(f"post {execution.call_id}")
        return await call_next()

    def body(self, delays: dict[str, float]):
        async def run(args, ctx):
            self.running += 1
            self.peak = max(self.peak, self.running)
            self.events.append(f"start {ctx.call_id}")
            await anyio.sleep(delays.get(ctx.call_id, 0))
            self.events.append(f"end {ctx.call_id}")
            self.running -= 1
            return args["text"]

        return run


def batch(*ids: str, name: str = "echo") -> list[ToolCall]:
    return [ToolCall(call_id=i, name=name, arguments={"text": i}, agent="main") for i in ids]


def parallel_echo(timeline: Timeline, delays: dict[str, float] | None = None, safe=lambda args: True):
    return make_echo(timeline.body(delays or {}), is_concurrency_safe=safe)


@pytest.mark.anyio
async def test_results_come_back_in_model_order(make_harness):
    timeline = Timeline()
    harness = make_harness(timeline, tool=parallel_echo(timeline, {"a": 0.03, "b": 0.0, "c": 0.01}))
    results = await harness.execute_batch(batch("a", "b", "c"))
    assert [r.value for r in results] == ["a", "b", "c"]


@pytest.mark.anyio
async def test_concurrency_safe_calls_overlap_but_commit_in_model_order(make_harness, recorder):
    timeline = Timeline()
    harness = make_harness(timeline, tool=parallel_echo(timeline, {"a": 0.03, "b": 0.0}))
    await harness.execute_batch(batch("a", "b"))
    assert timeline.peak == 2
    # b's body ended first, but a's post-execute still ran first.
    assert timeline.events.index("end b") < timeline.events.index("end a")
    posts = [e for e in timeline.events if e.startswith("post")]
    assert posts == ["post a", "post b"]
    assert [execution.call_id for execution, _ in recorder.seen] == ["a", "b"]


@pytest.mark.anyio
async def test_pre_execute_is_never_concurrent_and_runs_in_model_order(make_harness):
    timeline = Timeline()
    harness = make_harness(timeline, tool=parallel_echo(timeline, {"a": 0.02}))
    await harness.execute_batch(batch("a", "b", "c"))
    pres = [e for e in timeline.events if e.startswith("pre")]
    assert pres == ["pre a", "pre-done a", "pre b", "pre-done b", "pre c", "pre-done c"]


@pytest.mark.anyio
async def test_calls_that_are_not_concurrency_safe_run_alone(make_harness):
    timeline = Timeline()
    harness = make_harness(timeline, tool=make_echo(timeline.body({"a": 0.01, "b": 0.01})))
    await harness.execute_batch(batch("a", "b", "c"))
    assert timeline.peak == 1
    # An exclusive call holds the barrier until its commit (post-execute included) is done.
    assert timeline.events.index("post a") < timeline.events.index("pre b")


@pytest.mark.parametrize("classifier", [lambda args: "yes", lambda args: 1, lambda args: 1 / 0])
@pytest.mark.anyio
async def test_a_classifier_that_is_not_exactly_true_makes_the_call_exclusive(make_harness, classifier):
    timeline = Timeline()
    harness = make_harness(timeline, tool=parallel_echo(timeline, {"a": 0.01, "b": 0.01}, safe=classifier))
    await harness.execute_batch(batch("a", "b"))
    assert timeline.peak == 1


@pytest.mark.anyio
async def test_max_parallel_caps_the_overlap(make_harness):
    timeline = Timeline()
    delays = {i: 0.01 for i in "abcde"}
    harness = make_harness(timeline, tool=parallel_echo(timeline, delays))
    results = await harness.execute_batch(batch(*"abcde"), max_parallel=2)
    assert timeline.peak == 2 and len(results) == 5


@pytest.mark.anyio
async def test_an_exclusive_call_waits_for_the_parallel_pool_to_drain(make_harness):
    timeline = Timeline()

    def safe(args):
        return args["text"] != "x"

    harness = make_harness(timeline, tool=parallel_echo(timeline, {"a": 0.02, "b": 0.02}, safe=safe))
    await harness.execute_batch(batch("a", "b", "x", "c"))
    events = timeline.events
    assert events.index("post b") < events.index("start x")
    assert events.index("post x") < events.index("start c")


@pytest.mark.anyio
async def test_an_abort_stops_new_calls_and_gives_the_unstarted_ones_aborted_before_dispatch(
    make_harness, recorder, sink
):
    signal = Signal()

    class StopAfterFirst:
        @hookimpl
        def tools_result(self, execution, result):
            if execution.call_id == "a":
                signal.abort("user pressed stop")

    timeline = Timeline()
    harness = make_harness(StopAfterFirst(), timeline, tool=make_echo(timeline.body({})))
    results = await harness.execute_batch(batch("a", "b", "c"), signal=signal)
    assert results[0].value == "a"
    assert [r.error.info.code for r in results[1:]] == ["ABORTED_BEFORE_DISPATCH"] * 2
    assert "start b" not in timeline.events and "pre b" not in timeline.events
    assert [execution.call_id for execution, _ in recorder.seen] == ["a", "b", "c"]
    assert [e["call_id"] for e in sink.of_kind("tool/call")] == ["a", "b", "c"]
    assert [e["call_id"] for e in sink.of_kind("tool/result")] == ["a", "b", "c"]


@pytest.mark.anyio
async def test_started_calls_are_drained_and_committed_after_an_abort(make_harness):
    signal = Signal()
    timeline = Timeline()

    async def slow_then_abort(args, ctx):
        if ctx.call_id == "b":
            signal.abort("stop")
        await anyio.sleep(0.01)
        return args["text"]

    harness = make_harness(timeline, tool=make_echo(slow_then_abort, is_concurrency_safe=lambda a: True))
    results = await harness.execute_batch(batch("a", "b", "c"), signal=signal)
    assert len(results) == 3
    assert results[0].error.info.code == "ABORTED"  # in flight when the batch aborted
    assert results[1].error.info.code == "ABORTED"
    assert results[2].error.info.code == "ABORTED_BEFORE_DISPATCH"


@pytest.mark.anyio
async def test_denied_and_unknown_calls_in_a_batch_get_their_own_results(make_harness):
    calls = [
        ToolCall(call_id="a", name="echo", arguments={"text": "a"}),
        ToolCall(call_id="b", name="nope", arguments={}),
        ToolCall(call_id="c", name="echo", arguments=[float("inf")]),
    ]
    results = await make_harness().execute_batch(calls)
    assert results[0].value == "a"
    assert results[1].error.info.code == "UNKNOWN_TOOL"
    assert results[2].error.message == "tool execution arguments must be losslessly JSON-serializable"


@pytest.mark.anyio
async def test_an_empty_batch_returns_no_results(make_harness):
    assert await make_harness().execute_batch([]) == []


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
@pytest.mark.anyio
async def test_a_bad_max_parallel_is_refused(make_harness, bad):
    with pytest.raises(ValueError, match="max_parallel must be a positive int"):
        await make_harness().execute_batch(batch("a"), max_parallel=bad)


@pytest.mark.anyio
async def test_a_batch_of_something_else_than_tool_calls_is_refused(make_harness):
    with pytest.raises(TypeError, match="call 0 is a dict"):
        await make_harness().execute_batch([{"call_id": "a"}])


@pytest.mark.anyio
async def test_a_cancelled_awaiting_task_still_records_every_calls_outcome_once(make_harness, recorder, sink):
    started = anyio.Event()

    async def slow(args, ctx):
        started.set()
        await anyio.sleep(10)
        return args["text"]

    harness = make_harness(tool=make_echo(slow, is_concurrency_safe=lambda a: True))
    calls = batch("a", "b", "c")
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as group:

            async def cancel_when_started():
                await started.wait()
                scope.cancel()

            group.start_soon(cancel_when_started)
            await harness.execute_batch(calls, max_parallel=2)
    assert scope.cancelled_caught
    codes = {execution.call_id: result.error.info.code for execution, result in recorder.seen}
    assert codes == {"a": "ABORTED", "b": "ABORTED_BEFORE_DISPATCH", "c": "ABORTED_BEFORE_DISPATCH"} or codes == {
        "a": "ABORTED",
        "b": "ABORTED",
        "c": "ABORTED_BEFORE_DISPATCH",
    }
    assert len(recorder.seen) == 3
    assert [e["call_id"] for e in sink.of_kind("tool/result")].count("c") == 1
    assert all(c.signal.aborted for c in calls)  # as with execute(): the cancellation becomes the signal


@pytest.mark.anyio
async def test_a_retried_body_keeps_only_the_last_attempts_contexts(make_harness):
    from harness_core import ContextMessage, TextBlock

    attempts: list[int] = []

    async def flaky(args, ctx):
        attempts.append(1)
        ctx.defer_context(ContextMessage(content=[TextBlock(text=f"attempt {len(attempts)}")], source="echo"))
        if len(attempts) == 1:
            ctx.conclude_turn()
            raise RuntimeError("transient")
        return "ok"

    class Retry:
        @hookimpl
        async def tools_execute(self, execution, call_next):
            result = await call_next()
            return await call_next() if result.is_error else result

    result = await make_harness(Retry(), tool=make_echo(flaky)).execute(batch("a")[0])
    assert [m.content[0].text for m in result.additional_contexts] == ["attempt 2"]
    assert result.concludes_turn is False
