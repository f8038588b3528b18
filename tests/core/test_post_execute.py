"""reference/core-pipeline.md §3.2 stage K and §10.13: post-execute decisions, contexts, concludes_turn."""

from __future__ import annotations

import pytest

from harness_core import (
    Accept,
    Block,
    ContextMessage,
    Deny,
    ImageBlock,
    ReasoningBlock,
    TextBlock,
    ToolOutput,
    hookimpl,
)

from .support import call, make_echo, text_of


def note(text: str, source: str = "test") -> ContextMessage:
    return ContextMessage(content=[TextBlock(text=text)], source=source)


class Decide:
    def __init__(self, decision: object) -> None:
        self.decision = decision

    @hookimpl
    async def tools_post_execute(self, execution, result, call_next):
        await call_next()
        return self.decision


def with_meta(body):
    return make_echo(
        body,
        output=ToolOutput(
            schema={"type": "string"},
            render=lambda args, value: [TextBlock(text=value)],
            presentation_meta=lambda args, value: {"length": len(value)},
        ),
    )


@pytest.mark.anyio
async def test_accept_with_content_replaces_only_the_content(make_harness, body):
    result = await make_harness(Decide(Accept(content=[TextBlock(text="redacted")])), tool=with_meta(body)).execute(
        call(text="secret")
    )
    assert text_of(result) == "redacted" and result.value == "secret" and result.meta == {"length": 6}


@pytest.mark.anyio
async def test_accept_with_content_also_works_on_a_failure(make_harness):
    result = await make_harness(Decide(Accept(content=[TextBlock(text="friendlier")])), DenyAll()).execute(call(text="x"))
    assert result.is_error and text_of(result) == "friendlier" and result.error.message == "nope"


class DenyAll:
    @hookimpl
    async def tools_pre_execute(self, execution, call_next):
        return Deny(reason="nope")


@pytest.mark.anyio
async def test_accept_with_value_re_validates_and_re_renders(make_harness, body):
    result = await make_harness(Decide(Accept(value="replaced")), tool=with_meta(body)).execute(call(text="hi"))
    assert result.value == "replaced" and text_of(result) == "replaced" and result.meta == {"length": 8}


@pytest.mark.anyio
async def test_accept_with_an_invalid_value_fails_the_call(make_harness):
    result = await make_harness(Decide(Accept(value=7))).execute(call(text="hi"))
    assert result.error.info.code == "INVALID_TOOL_OUTPUT"


@pytest.mark.anyio
async def test_accept_with_value_none_replaces_the_value_with_null(make_harness):
    result = await make_harness(Decide(Accept(value=None))).execute(call(text="hi"))
    assert result.error.message == 'tool "echo" returned invalid output: "value" must be a string'


@pytest.mark.anyio
async def test_accept_with_both_content_and_value_is_an_error(make_harness):
    result = await make_harness(Decide(Accept(value="v", content=[TextBlock(text="c")]))).execute(call(text="hi"))
    assert result.error.message == "tools/post-execute accept decision cannot replace both value and content"
    assert result.error.info is None


@pytest.mark.anyio
async def test_replacing_the_value_of_a_failure_is_an_error(make_harness):
    result = await make_harness(Decide(Accept(value="v")), DenyAll()).execute(call(text="hi"))
    assert result.error.message == "tools/post-execute cannot replace the value of a failed result"


@pytest.mark.anyio
async def test_content_none_means_no_replacement(make_harness):
    result = await make_harness(Decide(Accept(content=None))).execute(call(text="hi"))
    assert text_of(result) == "hi"


@pytest.mark.anyio
async def test_block_uses_the_feedback_verbatim_and_derives_the_message(make_harness, body):
    feedback = [TextBlock(text="line one"), ImageBlock(attachment_id="a1", media_type="image/png", size_bytes=3, width=1, height=1), TextBlock(text="line two")]
    result = await make_harness(Decide(Block(feedback=feedback))).execute(call(text="hi"))
    assert result.is_error and list(result.content) == feedback and result.value is None
    assert result.error.message == "line one\n[image content]\nline two" and result.error.info is None


@pytest.mark.anyio
async def test_block_with_empty_feedback_has_the_default_message(make_harness):
    result = await make_harness(Decide(Block(feedback=[]))).execute(call(text="hi"))
    assert result.error.message == "tool result blocked by post-execute policy" and result.content == ()


@pytest.mark.anyio
async def test_block_keeps_only_its_own_contexts(make_harness):
    async def deferring(args, ctx):
        ctx.defer_context(note("from the body"))
        return "hi"

    result = await make_harness(
        Decide(Block(feedback=[ReasoningBlock(text="r")], additional_contexts=[note("from the block")])),
        tool=make_echo(deferring),
    ).execute(call(text="hi"))
    assert [m.content[0].text for m in result.additional_contexts] == ["from the block"]
    assert result.error.message == "[reasoning content]"


@pytest.mark.anyio
async def test_contexts_are_ordered_deferred_then_wrapper_then_decision(make_harness):
    from harness_core import ToolResult

    async def deferring(args, ctx):
        ctx.defer_context(note("deferred 1"))
        ctx.defer_context(note("deferred 2"))
        return "hi"

    class Wrapper:
        @hookimpl
        async def tools_execute(self, execution, call_next):
            result = await call_next()
            return ToolResult(is_error=False, value=result.value, additional_contexts=[note("wrapper")])

    harness = make_harness(Wrapper(), Decide(Accept(additional_contexts=[note("decision")])), tool=make_echo(deferring))
    result = await harness.execute(call(text="hi"))
    assert [m.content[0].text for m in result.additional_contexts] == ["deferred 1", "deferred 2", "wrapper", "decision"]


@pytest.mark.anyio
async def test_a_context_deferred_after_the_body_settled_is_dropped(make_harness):
    kept: list[object] = []

    async def leaking(args, ctx):
        kept.append(ctx)
        return "hi"

    class Late:
        @hookimpl
        async def tools_post_execute(self, execution, result, call_next):
            kept[0].defer_context(note("too late"))
            return await call_next()

    result = await make_harness(Late(), tool=make_echo(leaking)).execute(call(text="hi"))
    assert result.additional_contexts == ()


@pytest.mark.anyio
async def test_conclude_turn_marks_only_successes(make_harness):
    async def concluding(args, ctx):
        ctx.conclude_turn()
        return args["text"]

    harness = make_harness(tool=make_echo(concluding))
    assert (await harness.execute(call(text="hi"))).concludes_turn is True

    blocked = make_harness(Decide(Block(feedback=[TextBlock(text="no")])), tool=make_echo(concluding))
    assert (await blocked.execute(call(text="hi"))).concludes_turn is False


@pytest.mark.anyio
async def test_content_replacement_keeps_concludes_turn_and_value_replacement_rechecks_it(make_harness):
    async def concluding(args, ctx):
        ctx.conclude_turn()
        return "hi"

    content = make_harness(Decide(Accept(content=[TextBlock(text="x")])), tool=make_echo(concluding))
    assert (await content.execute(call(text="hi"))).concludes_turn is True
    value = make_harness(Decide(Accept(value="y")), tool=make_echo(concluding))
    assert (await value.execute(call(text="hi"))).concludes_turn is True


@pytest.mark.anyio
async def test_a_failed_body_never_concludes_the_turn(make_harness):
    async def failing(args, ctx):
        ctx.conclude_turn()
        raise RuntimeError("broke")

    result = await make_harness(tool=make_echo(failing)).execute(call(text="hi"))
    assert result.is_error and result.concludes_turn is False


@pytest.mark.anyio
async def test_meta_is_computed_for_top_level_calls_only(make_harness, body):
    from harness_core import Signal, ToolCall

    harness = make_harness(tool=with_meta(body))
    top = await harness.execute(call(text="abc"))
    assert top.meta == {"length": 3}
    parent_seen: list[object] = []

    class Grab:
        @hookimpl
        def tools_result(self, execution, result):
            parent_seen.append(execution.token)

    harness.register(Grab())
    await harness.execute(call(text="x", call_id="outer"))
    nested = await harness.execute(
        ToolCall(call_id="outer:code:1", name="echo", arguments={"text": "abc"}, parent=parent_seen[-1], signal=Signal())
    )
    assert nested.meta is None and not nested.is_error
