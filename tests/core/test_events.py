"""reference/core-pipeline.md §7 and DESIGN §4: session events reported to the sink; values never logged."""

from __future__ import annotations

import json

import pytest

from harness_core import Harness, MemoryEventSink, TextBlock, ToolCall, hookimpl

from .support import call, make_echo


def _encode(data) -> str:
    return json.dumps(data, default=lambda block: block.to_json())


@pytest.mark.anyio
async def test_each_call_reports_tool_call_then_tool_result(make_harness, sink):
    await make_harness().execute(call(text="hi", call_id="c7"))
    assert sink.kinds() == ["tool/call", "tool/result"]
    logged_call, logged_result = sink.of_kind("tool/call")[0], sink.of_kind("tool/result")[0]
    assert logged_call == {"call_id": "c7", "name": "echo", "arguments": {"text": "hi"}}
    assert logged_result["call_id"] == "c7" and logged_result["is_error"] is False
    assert [block.to_json() for block in logged_result["content"]] == [{"type": "text", "text": "hi"}]
    assert logged_result["error"] is None


@pytest.mark.anyio
async def test_the_canonical_value_is_never_put_in_an_event(make_harness, sink):
    async def secret(args, ctx):
        return "the-canonical-value"

    def render(args, value):
        return [TextBlock(text="shown to the model")]

    from harness_core import ToolOutput

    tool = make_echo(secret, output=ToolOutput(schema={"type": "string"}, render=render))
    result = await make_harness(tool=tool).execute(call(text="hi"))
    assert result.value == "the-canonical-value"
    assert "the-canonical-value" not in "".join(_encode(event.data) for event in sink.events)


@pytest.mark.anyio
async def test_a_failed_result_logs_only_the_error_info(make_harness, sink):
    await make_harness().execute(call("missing"))
    logged = sink.of_kind("tool/result")[0]
    assert logged["error"] == {"name": "ToolNotFoundError", "code": "UNKNOWN_TOOL"}
    assert logged["is_error"] is True


@pytest.mark.anyio
async def test_arguments_that_are_not_json_are_logged_as_their_repr(make_harness, sink):
    await make_harness().execute(ToolCall(call_id="c1", name="echo", arguments={"x": {1, 2}}))
    assert sink.of_kind("tool/call")[0]["arguments"] == repr({"x": {1, 2}})


@pytest.mark.anyio
async def test_tools_and_plugins_record_their_own_events(make_harness, sink):
    async def observing(args, ctx):
        ctx.record_event("fs/observed", {"path": "notes.txt", "size": 3})
        return "ok"

    class Hook:
        @hookimpl
        async def tools_pre_execute(self, execution, call_next):
            execution.record_event("hook/invoked", {"hook": "PreToolUse"})
            return await call_next()

    await make_harness(Hook(), tool=make_echo(observing)).execute(call(text="hi"))
    assert sink.kinds() == ["tool/call", "hook/invoked", "fs/observed", "tool/result"]
    assert sink.of_kind("fs/observed") == [{"call_id": "c1", "path": "notes.txt", "size": 3}]


@pytest.mark.anyio
async def test_event_data_that_is_not_json_fails_the_stage_that_recorded_it(make_harness, sink):
    async def sloppy(args, ctx):
        ctx.record_event("fs/observed", {"when": object()})
        return "ok"

    result = await make_harness(tool=make_echo(sloppy)).execute(call(text="hi"))
    assert result.is_error and "event 'fs/observed' data must be lossless JSON" in result.error.message


@pytest.mark.anyio
async def test_without_a_sink_events_are_discarded():
    harness = Harness()

    async def noisy(args, ctx):
        ctx.record_event("x/y", {"a": 1})
        return "ok"

    harness.tools.register(make_echo(noisy))
    result = await harness.execute(call(text="hi"))
    assert not result.is_error


def test_memory_sink_numbers_events_in_order():
    sink = MemoryEventSink()
    sink.append("a/b", {"n": 1})
    sink.append("c/d", {"n": 2})
    assert [(e.seq, e.kind) for e in sink.events] == [(0, "a/b"), (1, "c/d")]
