"""reference/core-pipeline.md §5.3: cancellation signals, reasons and fusion."""

from __future__ import annotations

import logging

import anyio
import pytest

from harness_core.signal import Signal, fuse

# --------------------------------------------------------------------------- Signal


def test_a_new_signal_is_not_aborted_and_has_no_reason() -> None:
    sig = Signal()
    assert sig.aborted is False
    assert sig.reason is None


def test_abort_sets_aborted_and_the_reason() -> None:
    sig = Signal()
    reason = RuntimeError("deadline")
    sig.abort(reason)
    assert sig.aborted is True
    assert sig.reason is reason


def test_abort_without_a_reason_uses_the_default_reason_aborted() -> None:
    sig = Signal()
    sig.abort()
    assert sig.aborted is True
    assert sig.reason == "aborted"


def test_a_second_abort_keeps_the_first_reason() -> None:
    sig = Signal()
    sig.abort("first")
    sig.abort("second")
    sig.abort()
    assert sig.aborted is True
    assert sig.reason == "first"


def test_an_on_abort_listener_is_called_once_with_the_reason() -> None:
    sig = Signal()
    calls: list[object] = []
    sig.on_abort(calls.append)
    assert calls == []
    sig.abort("stop")
    sig.abort("again")
    assert calls == ["stop"]


def test_listeners_are_called_in_registration_order() -> None:
    sig = Signal()
    calls: list[str] = []
    sig.on_abort(lambda reason: calls.append(f"one:{reason}"))
    sig.on_abort(lambda reason: calls.append(f"two:{reason}"))
    sig.on_abort(lambda reason: calls.append(f"three:{reason}"))
    sig.abort("r")
    assert calls == ["one:r", "two:r", "three:r"]


def test_on_abort_on_an_already_aborted_signal_calls_the_listener_immediately() -> None:
    sig = Signal()
    sig.abort("earlier")
    calls: list[object] = []
    dispose = sig.on_abort(calls.append)
    assert calls == ["earlier"]
    dispose()
    dispose()
    sig.abort("later")
    assert calls == ["earlier"]


def test_dispose_stops_a_listener_from_being_called() -> None:
    sig = Signal()
    kept: list[object] = []
    dropped: list[object] = []
    sig.on_abort(kept.append)
    dispose = sig.on_abort(dropped.append)
    dispose()
    sig.abort("stop")
    assert kept == ["stop"]
    assert dropped == []


def test_dispose_twice_and_dispose_after_abort_are_harmless() -> None:
    sig = Signal()
    calls: list[object] = []
    dispose = sig.on_abort(calls.append)
    sig.abort("stop")
    dispose()
    dispose()
    assert calls == ["stop"]

    other = Signal()
    dispose_other = other.on_abort(calls.append)
    dispose_other()
    dispose_other()
    other.abort("x")
    assert calls == ["stop"]


def test_the_same_callable_registered_twice_is_called_twice_and_each_dispose_removes_one() -> None:
    sig = Signal()
    calls: list[object] = []
    dispose_one = sig.on_abort(calls.append)
    sig.on_abort(calls.append)
    dispose_one()
    sig.abort("stop")
    assert calls == ["stop"]


def test_calling_one_dispose_twice_does_not_remove_another_registration_of_an_equal_callable() -> None:
    sig = Signal()
    calls: list[object] = []
    dispose_one = sig.on_abort(calls.append)  # a bound method; each access is a new, equal object
    sig.on_abort(calls.append)
    dispose_one()
    dispose_one()
    sig.abort("stop")
    assert calls == ["stop"]


def test_a_raising_listener_does_not_stop_the_others_and_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    sig = Signal()
    calls: list[object] = []

    def broken(reason: object) -> None:
        raise ValueError("listener broke")

    sig.on_abort(calls.append)
    sig.on_abort(broken)
    sig.on_abort(lambda reason: calls.append(("after", reason)))

    with caplog.at_level(logging.ERROR, logger="harness"):
        sig.abort("stop")

    assert calls == ["stop", ("after", "stop")]
    assert sig.aborted is True
    assert sig.reason == "stop"
    failures = [record for record in caplog.records if record.name == "harness" and record.levelno >= logging.ERROR]
    assert len(failures) == 1
    assert failures[0].exc_info is not None
    assert isinstance(failures[0].exc_info[1], ValueError)


# --------------------------------------------------------------------------- wait


@pytest.mark.anyio
async def test_wait_returns_the_reason_after_an_abort_from_another_task() -> None:
    sig = Signal()
    results: list[object] = []

    async def waiter() -> None:
        results.append(await sig.wait())

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(waiter)
            tg.start_soon(waiter)
            await anyio.wait_all_tasks_blocked()
            assert results == []

            async def aborter() -> None:
                sig.abort("stop")

            tg.start_soon(aborter)

    assert results == ["stop", "stop"]


@pytest.mark.anyio
async def test_wait_on_an_already_aborted_signal_returns_at_once() -> None:
    sig = Signal()
    sig.abort("done")
    with anyio.fail_after(5):
        assert await sig.wait() == "done"
        assert await sig.wait() == "done"


@pytest.mark.anyio
async def test_wait_does_not_return_while_the_signal_is_not_aborted() -> None:
    sig = Signal()
    with anyio.move_on_after(0.05) as scope:
        await sig.wait()
    assert scope.cancelled_caught
    assert sig.aborted is False


# --------------------------------------------------------------------------- cancel_scope


@pytest.mark.anyio
async def test_cancel_scope_cancels_the_block_when_the_signal_aborts_mid_await() -> None:
    sig = Signal()
    events: list[object] = []

    async def body() -> None:
        start = anyio.current_time()
        with sig.cancel_scope() as scope:
            await anyio.sleep(10)
            events.append("sleep finished")
        events.append(("after block", scope.cancelled_caught, anyio.current_time() - start < 5))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(body)
            await anyio.wait_all_tasks_blocked()
            sig.abort("stop")

    assert events == [("after block", True, True)]


@pytest.mark.anyio
async def test_cancel_scope_only_cancels_the_block_not_the_surrounding_task_or_group() -> None:
    sig = Signal()
    events: list[str] = []

    async def body() -> None:
        with sig.cancel_scope():
            await anyio.sleep(10)
        await anyio.sleep(0)
        events.append("body continued")

    async def bystander() -> None:
        await anyio.sleep(0.02)
        events.append("bystander finished")

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(body)
            tg.start_soon(bystander)
            await anyio.wait_all_tasks_blocked()
            sig.abort("stop")

    assert sorted(events) == ["body continued", "bystander finished"]


@pytest.mark.anyio
async def test_cancel_scope_on_an_already_aborted_signal_cancels_at_the_first_await() -> None:
    sig = Signal()
    sig.abort("early")
    reached: list[str] = []
    with anyio.fail_after(5):
        with sig.cancel_scope() as scope:
            reached.append("before await")
            await anyio.sleep(10)
            reached.append("after await")
    assert reached == ["before await"]
    assert scope.cancelled_caught is True


@pytest.mark.anyio
async def test_cancel_scope_without_an_abort_lets_the_block_finish() -> None:
    sig = Signal()
    with sig.cancel_scope() as scope:
        await anyio.sleep(0)
        finished = True
    assert finished
    assert scope.cancelled_caught is False
    assert sig.aborted is False


@pytest.mark.anyio
async def test_an_abort_after_the_cancel_scope_block_has_no_effect_on_later_code() -> None:
    sig = Signal()
    with sig.cancel_scope() as first:
        await anyio.sleep(0)
    sig.abort("late")
    await anyio.sleep(0)
    assert first.cancelled_caught is False
    assert first.cancel_called is False


@pytest.mark.anyio
async def test_an_exception_in_the_cancel_scope_block_propagates() -> None:
    sig = Signal()
    with pytest.raises(KeyError):
        with sig.cancel_scope():
            await anyio.sleep(0)
            raise KeyError("boom")
    sig.abort("after")


# --------------------------------------------------------------------------- fuse


def test_fusing_a_signal_with_itself_returns_it_and_a_no_op_dispose() -> None:
    sig = Signal()
    fused, dispose = fuse(sig, sig)
    assert fused is sig
    dispose()
    dispose()
    sig.abort("stop")
    assert fused.aborted is True
    assert fused.reason == "stop"


def test_the_fused_signal_is_a_new_object_and_not_aborted_while_neither_source_is() -> None:
    first, second = Signal(), Signal()
    fused, _dispose = fuse(first, second)
    assert fused is not first
    assert fused is not second
    assert fused.aborted is False
    assert fused.reason is None


def test_the_fused_signal_aborts_when_the_first_source_aborts_with_its_reason() -> None:
    first, second = Signal(), Signal()
    fused, _dispose = fuse(first, second)
    first.abort("deadline")
    assert fused.aborted is True
    assert fused.reason == "deadline"
    assert second.aborted is False


def test_the_fused_signal_aborts_when_the_second_source_aborts_with_its_reason() -> None:
    first, second = Signal(), Signal()
    fused, _dispose = fuse(first, second)
    second.abort("caller")
    assert fused.aborted is True
    assert fused.reason == "caller"
    assert first.aborted is False


def test_the_source_that_aborts_first_decides_the_fused_reason() -> None:
    first, second = Signal(), Signal()
    fused, _dispose = fuse(first, second)
    second.abort("caller")
    first.abort("deadline")
    assert fused.reason == "caller"


def test_fused_listeners_hear_the_source_reason() -> None:
    first, second = Signal(), Signal()
    fused, _dispose = fuse(first, second)
    calls: list[object] = []
    fused.on_abort(calls.append)
    first.abort("deadline")
    assert calls == ["deadline"]


def test_an_already_aborted_first_source_wins_over_an_aborted_second() -> None:
    first, second = Signal(), Signal()
    second.abort("caller")
    first.abort("deadline")
    fused, dispose = fuse(first, second)
    assert fused.aborted is True
    assert fused.reason == "deadline"
    dispose()
    assert fused.reason == "deadline"


def test_an_already_aborted_first_source_aborts_the_fused_signal_at_once() -> None:
    first, second = Signal(), Signal()
    first.abort("deadline")
    fused, dispose = fuse(first, second)
    assert fused.aborted is True
    assert fused.reason == "deadline"
    second.abort("caller")
    assert fused.reason == "deadline"
    dispose()


def test_an_already_aborted_second_source_aborts_the_fused_signal_at_once() -> None:
    first, second = Signal(), Signal()
    second.abort("caller")
    fused, dispose = fuse(first, second)
    assert fused.aborted is True
    assert fused.reason == "caller"
    first.abort("deadline")
    assert fused.reason == "caller"
    dispose()


def test_after_dispose_aborting_a_source_no_longer_aborts_the_fused_signal() -> None:
    first, second = Signal(), Signal()
    fused, dispose = fuse(first, second)
    dispose()
    first.abort("deadline")
    second.abort("caller")
    assert fused.aborted is False
    assert fused.reason is None
    dispose()


def test_dispose_leaves_other_listeners_on_the_sources_in_place() -> None:
    first, second = Signal(), Signal()
    heard: list[object] = []
    first.on_abort(lambda reason: heard.append(("first", reason)))
    second.on_abort(lambda reason: heard.append(("second", reason)))
    _fused, dispose = fuse(first, second)
    dispose()
    first.abort("a")
    second.abort("b")
    assert heard == [("first", "a"), ("second", "b")]


def test_aborting_the_fused_signal_does_not_abort_the_sources() -> None:
    first, second = Signal(), Signal()
    fused, dispose = fuse(first, second)
    fused.abort("body gave up")
    assert fused.aborted is True
    assert first.aborted is False
    assert second.aborted is False
    assert first.reason is None
    assert second.reason is None
    first.abort("deadline")
    assert fused.reason == "body gave up"
    dispose()


def test_a_caller_abort_aborts_the_body_signal_without_aborting_the_wrapper_signal() -> None:
    caller, wrapper = Signal(), Signal()
    body, dispose = fuse(wrapper, caller)
    caller.abort("caller cancelled")
    assert body.aborted is True
    assert body.reason == "caller cancelled"
    assert wrapper.aborted is False
    dispose()


def test_fusions_nest() -> None:
    a, b, c = Signal(), Signal(), Signal()
    inner, dispose_inner = fuse(a, b)
    outer, dispose_outer = fuse(inner, c)
    b.abort("from b")
    assert inner.reason == "from b"
    assert outer.reason == "from b"
    assert c.aborted is False
    dispose_outer()
    dispose_inner()


@pytest.mark.anyio
async def test_a_task_waiting_on_the_fused_signal_wakes_when_a_source_aborts() -> None:
    first, second = Signal(), Signal()
    fused, dispose = fuse(first, second)
    results: list[object] = []

    async def waiter() -> None:
        results.append(await fused.wait())

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(waiter)
            await anyio.wait_all_tasks_blocked()
            second.abort("caller")
    dispose()
    assert results == ["caller"]
