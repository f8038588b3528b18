"""reference/core-pipeline.md §3.3: every row of the routing table (which stages run on each path)."""

from __future__ import annotations

from typing import Any

import pytest

from harness_core import (
    Accept,
    Allow,
    ContextMessage,
    Deny,
    HarnessError,
    Signal,
    TextBlock,
    ToolCall,
    ToolResult,
    hookimpl,
)

from .support import call, make_echo, text_of


class Trace:
    """Records which stages ran; a finalizer that counts its calls goes on the echo tool."""

    def __init__(self) -> None:
        self.stages: list[str] = []

    @hookimpl(trylast=True)
    async def tools_pre_execute(self, execution, call_next):
        self.stages.append("pre")
        return await call_next()

    @hookimpl(trylast=True)
    def tools_guard(self, execution):
        self.stages.append("guard")

    @hookimpl(trylast=True)
    async def tools_execute(self, execution, call_next):
        self.stages.append("execute")
        return await call_next()

    @hookimpl(trylast=True)
    async def tools_post_execute(self, execution, result, call_next):
        self.stages.append("post")
        return await call_next()

    def finalize(self, execution, result):
        self.stages.append("finalize")
        return None


class Raising(HarnessError):
    code = "PLUGIN_BROKE"


@pytest.fixture
def trace() -> Trace:
    return Trace()


@pytest.fixture
def traced(make_harness, body, trace):
    def make(*plugins: object, execute: Any = None):
        tool = make_echo(execute or body, finalize_content=trace.finalize)
        return make_harness(trace, *plugins, tool=tool)

    return make


@pytest.mark.anyio
async def test_a_successful_call_runs_every_stage_once(traced, trace, recorder):
    result = await traced().execute(call(text="hi"))
    assert not result.is_error and result.value == "hi" and text_of(result) == "hi"
    assert trace.stages == ["pre", "guard", "execute", "post", "finalize"]
    assert recorder.results == [result]


@pytest.mark.anyio
async def test_arguments_that_are_not_lossless_json_fail_before_any_policy(traced, trace, recorder, body):
    result = await traced().execute(ToolCall(call_id="c1", name="echo", arguments={"x": float("nan")}))
    assert result.is_error
    assert result.error.message == "tool execution arguments must be losslessly JSON-serializable"
    assert result.error.info is None
    assert trace.stages == ["finalize"]
    assert body.runs == [] and recorder.results == [result]
    assert recorder.seen[0][0].arguments is None


@pytest.mark.anyio
async def test_an_argument_failure_wins_over_a_pre_aborted_signal(traced):
    signal = Signal()
    signal.abort()
    result = await traced().execute(ToolCall(call_id="c1", name="echo", arguments=(1, 2), signal=signal))
    assert result.error.message == "tool execution arguments must be losslessly JSON-serializable"


@pytest.mark.anyio
async def test_a_call_aborted_before_entry_only_finalizes(traced, trace, recorder, body):
    signal = Signal()
    signal.abort("user pressed stop")
    result = await traced().execute(call(text="hi", signal=signal))
    assert result.error.message == "tool call aborted before dispatch"
    assert result.error.info.code == "ABORTED_BEFORE_DISPATCH" and result.error.info.name == "AbortError"
    assert text_of(result) == "Error: tool call aborted before dispatch"
    assert trace.stages == ["finalize"] and body.runs == [] and recorder.results == [result]


class ThrowingPre:
    @hookimpl
    async def tools_pre_execute(self, execution, call_next):
        raise Raising("policy store unreachable")


class ThrowingGuard:
    @hookimpl
    def tools_guard(self, execution):
        raise RuntimeError("guard crashed")


class ThrowingApproval:
    @hookimpl
    async def approval_request(self, request):
        raise RuntimeError("no open turn")


class AskAll:
    @hookimpl(tryfirst=True)
    async def tools_pre_execute(self, execution, call_next):
        from harness_core import Ask

        return Ask(reason="check with the user")


@pytest.mark.anyio
async def test_a_throwing_pre_execute_listener_skips_post_execute_but_finalizes(traced, trace, body, recorder):
    result = await traced(ThrowingPre()).execute(call(text="hi"))
    assert result.error.message == "policy store unreachable"
    assert result.error.info.code == "PLUGIN_BROKE" and result.error.info.name == "Raising"
    assert "post" not in trace.stages and "guard" not in trace.stages
    assert trace.stages[-1] == "finalize" and body.runs == [] and recorder.results == [result]


@pytest.mark.anyio
async def test_a_throwing_approval_service_skips_post_execute(traced, trace, body):
    result = await traced(ThrowingApproval(), AskAll()).execute(call(text="hi"))
    assert result.error.message == "no open turn" and result.error.info is None
    assert trace.stages == ["finalize"] and body.runs == []


@pytest.mark.anyio
async def test_a_throwing_guard_fails_the_call_and_skips_post_execute(traced, trace, body):
    result = await traced(ThrowingGuard()).execute(call(text="hi"))
    assert result.error.message == "guard crashed"
    assert "post" not in trace.stages and "execute" not in trace.stages
    assert trace.stages[-1] == "finalize" and body.runs == []


class DenyAll:
    @hookimpl
    async def tools_pre_execute(self, execution, call_next):
        return Deny(reason="not today")


class DenyingGuard:
    @hookimpl
    def tools_guard(self, execution):
        return "guarded"


@pytest.mark.anyio
async def test_a_pre_execute_denial_still_runs_post_execute_and_skips_the_guards(traced, trace, body):
    result = await traced(DenyAll()).execute(call(text="hi"))
    assert result.is_error and text_of(result) == "Error: not today"
    assert result.error.message == "not today" and result.error.info is None
    assert trace.stages == ["post", "finalize"] and body.runs == []


@pytest.mark.anyio
async def test_a_guard_denial_still_runs_post_execute(traced, trace, body):
    result = await traced(DenyingGuard()).execute(call(text="hi"))
    assert text_of(result) == "Error: guarded" and result.error.info is None
    assert "execute" not in trace.stages and trace.stages[-2:] == ["post", "finalize"]
    assert body.runs == []


class AbortDuringPre:
    @hookimpl
    async def tools_pre_execute(self, execution, call_next):
        execution.signal.abort("stop")
        return Allow()


@pytest.mark.anyio
async def test_a_cancel_during_policy_gives_aborted_before_dispatch_through_post_execute(traced, trace, body):
    result = await traced(AbortDuringPre()).execute(call(text="hi"))
    assert result.error.info.code == "ABORTED_BEFORE_DISPATCH"
    assert "execute" not in trace.stages and trace.stages[-2:] == ["post", "finalize"]
    assert body.runs == []


@pytest.mark.anyio
async def test_an_unknown_tool_goes_through_policy_and_fails_at_dispatch(make_harness, trace, recorder):
    harness = make_harness(trace)
    result = await harness.execute(call("missing", text="hi"))
    assert result.error.message == 'unknown tool "missing"'
    assert result.error.info.code == "UNKNOWN_TOOL" and result.error.info.name == "ToolNotFoundError"
    assert trace.stages == ["pre", "guard", "execute", "post"]  # no definition, so no finalizer
    assert recorder.results == [result]


class AbortedSignalWrapper:
    @hookimpl
    async def tools_execute(self, execution, call_next):
        deadline = Signal()
        deadline.abort("deadline")
        execution.signal = deadline
        return await call_next()


@pytest.mark.anyio
async def test_a_wrapper_that_supplies_an_aborted_signal_prevents_the_body(traced, trace, body):
    result = await traced(AbortedSignalWrapper()).execute(call(text="hi"))
    assert result.error.info.code == "ABORTED_BEFORE_DISPATCH"
    assert body.runs == [] and trace.stages[-2:] == ["post", "finalize"]


@pytest.mark.anyio
async def test_an_aborted_wrapper_signal_is_checked_before_the_unknown_tool(make_harness, recorder):
    harness = make_harness(AbortedSignalWrapper())
    result = await harness.execute(call("missing"))
    assert result.error.info.code == "ABORTED_BEFORE_DISPATCH"


@pytest.mark.anyio
async def test_a_body_failure_runs_post_execute_and_keeps_deferred_contexts(traced, trace):
    async def failing(args, ctx):
        ctx.defer_context(ContextMessage(content=[TextBlock(text="saw the disk")], source="echo"))
        raise Raising("disk full")

    result = await traced(execute=failing).execute(call(text="hi"))
    assert result.error.message == "disk full" and result.error.info.code == "PLUGIN_BROKE"
    assert trace.stages[-2:] == ["post", "finalize"]
    assert [m.content[0].text for m in result.additional_contexts] == ["saw the disk"]


@pytest.mark.anyio
async def test_a_plain_exception_from_the_body_has_no_error_info(traced):
    async def failing(args, ctx):
        raise ValueError("bad input file")

    result = await traced(execute=failing).execute(call(text="hi"))
    assert result.error.message == "bad input file" and result.error.info is None
    assert text_of(result) == "Error: bad input file"


@pytest.mark.anyio
async def test_an_exception_without_a_message_is_named_by_its_class(traced):
    async def failing(args, ctx):
        raise ValueError()

    result = await traced(execute=failing).execute(call(text="hi"))
    assert result.error.message == "ValueError"


@pytest.mark.anyio
async def test_an_invalid_body_value_is_invalid_tool_output_and_runs_post_execute(traced, trace):
    async def wrong_type(args, ctx):
        return 42

    result = await traced(execute=wrong_type).execute(call(text="hi"))
    assert result.error.info.code == "INVALID_TOOL_OUTPUT"
    assert result.error.message == 'tool "echo" returned invalid output: "value" must be a string'
    assert trace.stages[-2:] == ["post", "finalize"]


@pytest.mark.anyio
async def test_a_non_json_body_value_is_invalid_tool_output(traced):
    async def not_json(args, ctx):
        return {1, 2}

    result = await traced(execute=not_json).execute(call(text="hi"))
    assert result.error.message == 'tool "echo" returned invalid output: value is not lossless JSON'


@pytest.mark.anyio
async def test_a_render_failure_is_invalid_tool_output(make_harness, body):
    from harness_core import ToolOutput

    def broken_render(args, value):
        raise RuntimeError("template missing")

    tool = make_echo(body, output=ToolOutput(schema={"type": "string"}, render=broken_render))
    result = await make_harness(tool=tool).execute(call(text="hi"))
    assert result.error.message == 'tool "echo" returned invalid output: output.render failed: template missing'


@pytest.mark.anyio
async def test_a_render_returning_non_blocks_is_invalid_tool_output(make_harness, body):
    from harness_core import ToolOutput

    tool = make_echo(body, output=ToolOutput(schema={"type": "string"}, render=lambda a, v: [v]))
    result = await make_harness(tool=tool).execute(call(text="hi"))
    assert result.error.message == 'tool "echo" returned invalid output: output.render returned non-lossless JSON'


class ThrowingWrapper:
    @hookimpl
    async def tools_execute(self, execution, call_next):
        await call_next()
        raise Raising("metrics backend down")


@pytest.mark.anyio
async def test_a_throwing_wrapper_skips_post_execute_and_loses_deferred_contexts(traced, trace, body):
    async def deferring(args, ctx):
        ctx.defer_context(ContextMessage(content=[TextBlock(text="note")], source="echo"))
        return "hi"

    result = await traced(ThrowingWrapper(), execute=deferring).execute(call(text="hi"))
    assert result.error.message == "metrics backend down"
    assert result.additional_contexts == ()
    assert "post" not in trace.stages and trace.stages[-1] == "finalize"


class ForeignValueWrapper:
    def __init__(self, value: Any) -> None:
        self.value = value

    @hookimpl
    async def tools_execute(self, execution, call_next):
        return ToolResult(is_error=False, value=self.value, content=[TextBlock(text="ignored authored content")])


@pytest.mark.anyio
async def test_a_wrapper_authored_success_is_re_rendered_from_its_value(traced, trace, body):
    result = await traced(ForeignValueWrapper("cached")).execute(call(text="hi"))
    assert not result.is_error and result.value == "cached" and text_of(result) == "cached"
    assert body.runs == [] and trace.stages[-2:] == ["post", "finalize"]


@pytest.mark.anyio
async def test_an_invalid_wrapper_success_skips_post_execute(traced, trace):
    result = await traced(ForeignValueWrapper(123)).execute(call(text="hi"))
    assert result.error.info.code == "INVALID_TOOL_OUTPUT"
    assert "post" not in trace.stages and trace.stages[-1] == "finalize"


class WrongTypeWrapper:
    @hookimpl
    async def tools_execute(self, execution, call_next):
        return "done"


@pytest.mark.anyio
async def test_a_wrapper_returning_the_wrong_type_fails_naming_the_plugin(make_harness):
    harness = make_harness()
    harness.register(WrongTypeWrapper(), name="sloppy")
    result = await harness.execute(call(text="hi"))
    assert result.error.message == 'plugin "sloppy" returned str from tools_execute; expected ToolResult'


class ThrowingPost:
    @hookimpl
    async def tools_post_execute(self, execution, result, call_next):
        raise RuntimeError("audit log full")


@pytest.mark.anyio
async def test_a_throwing_post_execute_listener_finishes_with_its_error(traced, trace, recorder):
    result = await traced(ThrowingPost()).execute(call(text="hi"))
    assert result.error.message == "audit log full"
    assert trace.stages[-1] == "finalize" and recorder.results == [result]


@pytest.mark.anyio
async def test_a_throwing_finalizer_turns_the_result_into_its_error_once(make_harness, body, recorder):
    calls: list[int] = []

    def finalize(execution, result):
        calls.append(1)
        raise RuntimeError("finalizer broke")

    async def deferring(args, ctx):
        ctx.defer_context(ContextMessage(content=[TextBlock(text="note")], source="echo"))
        return "hi"

    result = await make_harness(tool=make_echo(deferring, finalize_content=finalize)).execute(call(text="hi"))
    assert result.error.message == "finalizer broke" and result.additional_contexts == ()
    assert calls == [1] and recorder.results == [result]


@pytest.mark.anyio
async def test_a_finalizer_returning_non_blocks_gives_the_materialization_error(make_harness, body):
    tool = make_echo(body, finalize_content=lambda execution, result: ["not a block"])
    result = await make_harness(tool=tool).execute(call(text="hi"))
    assert result.error.message == "tool result must be losslessly JSON-serializable"


@pytest.mark.anyio
async def test_a_finalizer_replaces_only_the_content(make_harness, body):
    tool = make_echo(body, finalize_content=lambda execution, result: [TextBlock(text="[final] " + result.content[0].text)])
    result = await make_harness(tool=tool).execute(call(text="hi"))
    assert text_of(result) == "[final] hi" and result.value == "hi" and not result.is_error


@pytest.mark.anyio
async def test_the_finalizer_captured_at_entry_runs_even_if_the_tool_is_unregistered_mid_call(make_harness, body):
    seen: list[str] = []
    disposers: list[Any] = []

    class Unregister:
        @hookimpl
        async def tools_pre_execute(self, execution, call_next):
            disposers[0]()
            return await call_next()

    tool = make_echo(body, finalize_content=lambda execution, result: seen.append(execution.call_id))
    harness = make_harness(Unregister(), echo=False)
    disposers.append(harness.tools.register(tool))
    result = await harness.execute(call(text="hi"))
    assert result.error.info.code == "UNKNOWN_TOOL" and seen == ["c1"]


@pytest.mark.anyio
async def test_accept_from_a_listener_never_skips_later_stages(traced, trace):
    class AllowFirst:
        @hookimpl(tryfirst=True)
        async def tools_pre_execute(self, execution, call_next):
            return Allow()

    result = await traced(AllowFirst()).execute(call(text="hi"))
    assert not result.is_error and trace.stages == ["guard", "execute", "post", "finalize"]


@pytest.mark.anyio
async def test_post_execute_plain_accept_keeps_the_result(traced):
    class Keep:
        @hookimpl
        async def tools_post_execute(self, execution, result, call_next):
            return Accept()

    result = await traced(Keep()).execute(call(text="hi"))
    assert result.value == "hi"
