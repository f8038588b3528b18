"""reference/core-pipeline.md §1.1, §4 and DESIGN §2: listener order, call_next, guards, registration refusals."""

from __future__ import annotations

import pytest

from harness_core import (
    Allow,
    Deny,
    Harness,
    PluginRefusedError,
    Signal,
    ToolResult,
    hookimpl,
)

from .support import call, text_of


class Named:
    """A pre-execute listener that logs its name on the way in and out."""

    def __init__(self, name: str, log: list[str], decision: object = None) -> None:
        self.name, self.log, self.decision = name, log, decision

    @hookimpl
    async def tools_pre_execute(self, execution, call_next):
        self.log.append(f"{self.name}>")
        if self.decision is not None:
            return self.decision
        verdict = await call_next()
        self.log.append(f"<{self.name}")
        return verdict


@pytest.mark.anyio
async def test_the_last_plugin_in_the_list_is_the_outermost_listener(make_harness):
    log: list[str] = []
    await make_harness(Named("A", log), Named("B", log)).execute(call(text="hi"))
    assert log == ["B>", "A>", "<A", "<B"]


@pytest.mark.anyio
async def test_tryfirst_makes_a_listener_outermost_whatever_its_registration_order(make_harness):
    log: list[str] = []

    class First(Named):
        @hookimpl(tryfirst=True)
        async def tools_pre_execute(self, execution, call_next):
            return await Named.tools_pre_execute(self, execution, call_next)

    await make_harness(First("F", log), Named("A", log), Named("B", log)).execute(call(text="hi"))
    assert log[0] == "F>" and log[-1] == "<F"


@pytest.mark.anyio
async def test_a_short_circuiting_listener_hides_the_inner_ones(make_harness, body):
    log: list[str] = []
    result = await make_harness(Named("inner", log), Named("outer", log, Deny(reason="outer says no"))).execute(
        call(text="hi")
    )
    assert log == ["outer>"] and text_of(result) == "Error: outer says no" and body.runs == []


@pytest.mark.anyio
async def test_an_outer_listener_can_override_an_inner_deny(make_harness, body):
    class Override:
        @hookimpl
        async def tools_pre_execute(self, execution, call_next):
            await call_next()
            return Allow()

    result = await make_harness(Named("inner", [], Deny(reason="inner says no")), Override()).execute(call(text="hi"))
    assert not result.is_error and body.runs == [{"text": "hi"}]


@pytest.mark.anyio
async def test_a_tryfirst_allow_cannot_skip_the_guards(make_harness, body):
    class AllowAll:
        @hookimpl(tryfirst=True)
        async def tools_pre_execute(self, execution, call_next):
            return Allow()

    class Guard:
        @hookimpl(trylast=True)
        def tools_guard(self, execution):
            return "the guard still runs"

    result = await make_harness(Guard(), AllowAll()).execute(call(text="hi"))
    assert text_of(result) == "Error: the guard still runs" and body.runs == []


@pytest.mark.anyio
async def test_nothing_can_override_a_guard_denial(make_harness, body):
    class Override:
        @hookimpl(tryfirst=True)
        async def tools_pre_execute(self, execution, call_next):
            return Allow()

        @hookimpl(tryfirst=True)
        async def tools_execute(self, execution, call_next):
            return await call_next()

    class Guard:
        @hookimpl
        def tools_guard(self, execution):
            return "no"

    result = await make_harness(Guard(), Override()).execute(call(text="hi"))
    assert result.is_error and body.runs == []


@pytest.mark.anyio
async def test_guards_run_in_call_order_and_the_first_denial_wins(make_harness):
    log: list[str] = []

    def guard(name: str, verdict: object):
        class G:
            @hookimpl
            def tools_guard(self, execution):
                log.append(name)
                return verdict

        return G()

    result = await make_harness(guard("A", "from A"), guard("B", "from B"), guard("C", None)).execute(call(text="hi"))
    assert log == ["C", "B"] and text_of(result) == "Error: from B"


@pytest.mark.parametrize(("verdict", "text"), [("", "Error: "), (False, "Error: False"), (0, "Error: 0"), ([], "Error: []")])
@pytest.mark.anyio
async def test_any_guard_return_other_than_none_denies(make_harness, body, verdict, text):
    class G:
        @hookimpl
        def tools_guard(self, execution):
            return verdict

    result = await make_harness(G()).execute(call(text="hi"))
    assert result.is_error and text_of(result) == text and body.runs == []


@pytest.mark.anyio
async def test_guards_are_not_evaluated_after_a_deny(make_harness):
    called: list[bool] = []

    class G:
        @hookimpl
        def tools_guard(self, execution):
            called.append(True)

    await make_harness(G(), Named("deny", [], Deny(reason="no"))).execute(call(text="hi"))
    assert called == []


@pytest.mark.anyio
async def test_a_sync_listener_may_return_call_next_to_continue(make_harness, body):
    class Sync:
        @hookimpl
        def tools_pre_execute(self, execution, call_next):
            return call_next()

    result = await make_harness(Sync()).execute(call(text="hi"))
    assert not result.is_error and body.runs


@pytest.mark.anyio
async def test_a_listener_may_take_a_subset_of_the_arguments(make_harness):
    class OnlyExecution:
        @hookimpl
        def tools_pre_execute(self, execution):
            return Deny(reason=f"saw {execution.name}")

    result = await make_harness(OnlyExecution()).execute(call(text="hi"))
    assert text_of(result) == "Error: saw echo"


@pytest.mark.parametrize("returned", [None, "allow", True, {"kind": "allow"}, Allow])
@pytest.mark.anyio
async def test_a_pre_execute_answer_of_the_wrong_type_denies_and_names_the_plugin(make_harness, body, returned):
    class Confused:
        @hookimpl
        async def tools_pre_execute(self, execution, call_next):
            return returned

    harness = make_harness()
    harness.register(Confused(), name="confused")
    result = await harness.execute(call(text="hi"))
    assert result.is_error and body.runs == []
    assert result.error.message.startswith('plugin "confused" returned ')
    assert result.error.message.endswith("from tools_pre_execute; expected Allow, Deny or Ask")


@pytest.mark.anyio
async def test_a_deny_without_a_reason_still_denies(make_harness, body):
    result = await make_harness(Named("x", [], Deny())).execute(call(text="hi"))
    assert result.is_error and body.runs == []
    assert result.error.message == 'tool "echo" was denied by a policy that gave no reason'


@pytest.mark.anyio
async def test_a_post_execute_answer_of_the_wrong_type_fails_the_call(make_harness):
    class Confused:
        @hookimpl
        async def tools_post_execute(self, execution, result, call_next):
            return None

    harness = make_harness()
    harness.register(Confused(), name="confused")
    result = await harness.execute(call(text="hi"))
    assert result.error.message == 'plugin "confused" returned NoneType from tools_post_execute; expected Accept or Block'


class Deadline:
    """A timeout-like wrapper: gives the inner chain a fresh signal that is already expired
    on the first attempt, so the body sees an aborted signal and the result is replaced."""

    def __init__(self) -> None:
        self.attempts = 0

    @hookimpl
    async def tools_execute(self, execution, call_next):
        self.attempts += 1
        upstream = execution.signal
        deadline = Signal()
        execution.signal = deadline
        try:
            if self.attempts == 1:
                deadline.abort("deadline")
            return await call_next()
        finally:
            execution.signal = upstream


class Retry:
    """Retries once when the first attempt failed."""

    def __init__(self) -> None:
        self.results: list[ToolResult] = []

    @hookimpl
    async def tools_execute(self, execution, call_next):
        result = await call_next()
        self.results.append(result)
        if result.is_error:
            result = await call_next()
            self.results.append(result)
        return result


@pytest.mark.anyio
async def test_call_next_reruns_the_inner_wrappers_so_a_retry_gets_a_fresh_deadline(make_harness, body):
    deadline, retry = Deadline(), Retry()
    # Retry registered last: it is the outer wrapper, Deadline the inner one.
    result = await make_harness(deadline, retry).execute(call(text="hi"))
    assert deadline.attempts == 2
    assert retry.results[0].error.info.code == "ABORTED_BEFORE_DISPATCH"
    assert not result.is_error and result.value == "hi" and len(body.runs) == 1


@pytest.mark.anyio
async def test_the_wrapper_signal_is_restored_after_the_body(make_harness, body):
    seen: list[object] = []

    class Watch:
        @hookimpl
        async def tools_execute(self, execution, call_next):
            mine = Signal()
            execution.signal = mine
            result = await call_next()
            seen.append(execution.signal is mine)
            return result

    await make_harness(Watch()).execute(call(text="hi"))
    assert seen == [True]
    assert body.contexts[0].signal is not seen  # the body got a fused signal, not the wrapper's


@pytest.mark.anyio
async def test_a_wrapper_deadline_firing_during_the_body_gives_aborted(make_harness):
    deadlines: list[Signal] = []

    class Expiring:
        @hookimpl
        async def tools_execute(self, execution, call_next):
            deadlines.append(Signal())
            execution.signal = deadlines[-1]
            return await call_next()

    async def slow(args, ctx):
        deadlines[-1].abort("deadline")  # fires while the body runs; the body ignores it
        assert ctx.signal.aborted and ctx.signal.reason == "deadline"
        return "done"

    from .support import make_echo

    result = await make_harness(Expiring(), tool=make_echo(slow)).execute(call(text="hi"))
    assert result.error.info.code == "ABORTED" and result.error.message == "tool call aborted"


class AsyncGuard:
    @hookimpl
    async def tools_guard(self, execution):
        return None


class WrapperGuard:
    @hookimpl(wrapper=True)
    def tools_guard(self, execution):
        return (yield)


class HookwrapperPre:
    @hookimpl(hookwrapper=True)
    def tools_pre_execute(self, execution, call_next):
        yield


class AsyncObserver:
    @hookimpl
    async def tools_result(self, execution, result):
        return None


class AsyncChange:
    @hookimpl
    async def tools_change(self):
        return None


class UnknownHook:
    @hookimpl
    def tools_pre_exeucte(self, execution):
        return None


@pytest.mark.parametrize(
    ("plugin", "words"),
    [
        (AsyncGuard(), "implements tools_guard as async def"),
        (WrapperGuard(), "implements tools_guard as a wrapper"),
        (HookwrapperPre(), "implements tools_pre_execute as a wrapper"),
        (AsyncObserver(), "implements tools_result as async def"),
        (AsyncChange(), "implements tools_change as async def"),
        (UnknownHook(), "tools_pre_exeucte"),
    ],
)
def test_unsafe_hook_impls_are_refused_at_registration_naming_plugin_and_hook(plugin, words):
    harness = Harness()
    with pytest.raises(PluginRefusedError) as caught:
        harness.register(plugin, name="offender")
    assert words in str(caught.value) and "offender" in str(caught.value)
    assert harness.plugin_manager.get_plugin("offender") is None
    with pytest.raises(PluginRefusedError):
        Harness(plugins=[plugin])


@pytest.mark.anyio
async def test_unregistering_a_plugin_removes_its_listeners(make_harness, body):
    deny = Named("deny", [], Deny(reason="no"))
    harness = make_harness(deny)
    assert (await harness.execute(call(text="hi"))).is_error
    harness.unregister(deny)
    assert not (await harness.execute(call(text="hi"))).is_error


@pytest.mark.anyio
async def test_a_raising_observer_is_contained_and_the_others_still_run(make_harness, recorder, caplog):
    class Broken:
        @hookimpl(tryfirst=True)
        def tools_result(self, execution, result):
            raise RuntimeError("observer bug")

    result = await make_harness(Broken()).execute(call(text="hi"))
    assert not result.is_error and recorder.results == [result]
    assert "tools_result observer" in caplog.text and "observer bug" in caplog.text
