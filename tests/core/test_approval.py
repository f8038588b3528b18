"""reference/core-pipeline.md §3.2 stages D–E and §10.8: asks, the approval service and its denial strings."""

from __future__ import annotations

import anyio
import pytest

from harness_core import ApprovalRequest, Ask, hookimpl

from .support import call, text_of


class AskFor:
    def __init__(self, reason: str | None = None) -> None:
        self.reason = reason

    @hookimpl
    async def tools_pre_execute(self, execution, call_next):
        return Ask(reason=self.reason)


class Answer:
    """An approval service answering a fixed outcome and recording each request."""

    def __init__(self, outcome: object, abort_caller: bool = False) -> None:
        self.outcome = outcome
        self.abort_caller = abort_caller
        self.requests: list[ApprovalRequest] = []

    @hookimpl
    async def approval_request(self, request):
        self.requests.append(request)
        if self.abort_caller:
            request.signal.abort("user left")
        return self.outcome


@pytest.mark.anyio
async def test_an_ask_without_an_approval_service_is_denied(make_harness, body):
    result = await make_harness(AskFor()).execute(call(text="hi"))
    assert text_of(result) == 'Error: tool "echo" requires approval (not yet supported)'
    assert result.error.info is None and body.runs == []


@pytest.mark.anyio
async def test_an_ask_without_a_service_is_denied_with_the_asks_own_reason(make_harness):
    result = await make_harness(AskFor("writes outside the workspace")).execute(call(text="hi"))
    assert result.error.message == "writes outside the workspace"


@pytest.mark.anyio
async def test_an_ask_for_a_call_without_an_agent_is_denied_without_asking(make_harness):
    service = Answer("allowed-once")
    result = await make_harness(AskFor("ignored here"), service).execute(call(text="hi", agent=None))
    assert result.error.message == 'tool "echo" requires approval, but the call has no agent to route it through'
    assert service.requests == []


@pytest.mark.anyio
async def test_allowed_once_runs_the_call_and_the_guards_still_run(make_harness, body):
    class Guard:
        @hookimpl
        def tools_guard(self, execution):
            return None if execution.arguments["text"] == "ok" else "guard says no"

    service = Answer("allowed-once")
    harness = make_harness(Guard(), AskFor("please"), service)
    assert not (await harness.execute(call(text="ok"))).is_error
    denied = await harness.execute(call(text="rm", call_id="c2"))
    assert text_of(denied) == "Error: guard says no"
    assert len(service.requests) == 2 and len(body.runs) == 1


@pytest.mark.anyio
async def test_the_request_carries_agent_tool_call_id_reason_and_the_callers_signal(make_harness):
    service = Answer("allowed-once")
    request_call = call(text="hi", agent="planner", call_id="c9")
    await make_harness(AskFor("why not"), service).execute(request_call)
    request = service.requests[0]
    assert (request.agent, request.tool_name, request.call_id, request.reason) == ("planner", "echo", "c9", "why not")
    assert request.signal is request_call.signal
    assert not hasattr(request, "arguments")


@pytest.mark.parametrize(
    ("outcome", "message"),
    [
        ("rejected", 'the user rejected tool "echo"'),
        ("cancelled", 'approval for tool "echo" was cancelled'),
        ("unavailable", 'tool "echo" requires approval, but no approval channel is available'),
    ],
)
@pytest.mark.anyio
async def test_each_refusing_outcome_denies_with_its_own_string(make_harness, body, outcome, message):
    post_seen: list[bool] = []

    class Post:
        @hookimpl
        async def tools_post_execute(self, execution, result, call_next):
            post_seen.append(True)
            return await call_next()

    result = await make_harness(Post(), AskFor(), Answer(outcome)).execute(call(text="hi"))
    assert result.error.message == message and result.error.info is None
    assert text_of(result) == f"Error: {message}"
    assert body.runs == [] and post_seen == [True]


@pytest.mark.anyio
async def test_cancelled_with_the_caller_aborted_is_aborted_before_dispatch(make_harness, body):
    post_seen: list[bool] = []

    class Post:
        @hookimpl
        async def tools_post_execute(self, execution, result, call_next):
            post_seen.append(True)
            return await call_next()

    result = await make_harness(Post(), AskFor(), Answer("cancelled", abort_caller=True)).execute(call(text="hi"))
    assert result.error.info.code == "ABORTED_BEFORE_DISPATCH" and post_seen == [True] and body.runs == []


@pytest.mark.anyio
async def test_rejected_while_the_caller_aborted_stays_a_rejection(make_harness):
    result = await make_harness(AskFor(), Answer("rejected", abort_caller=True)).execute(call(text="hi"))
    assert result.error.message == 'the user rejected tool "echo"'


@pytest.mark.anyio
async def test_an_answer_outside_the_vocabulary_fails_the_call(make_harness, body):
    result = await make_harness(AskFor(), Answer("yes please")).execute(call(text="hi"))
    assert result.error.message == 'unreachable variant in ApprovalOutcome: "yes please"'
    assert body.runs == []


@pytest.mark.anyio
async def test_when_every_service_abstains_the_ask_is_denied_as_without_a_service(make_harness):
    result = await make_harness(AskFor(), Answer(None)).execute(call(text="hi"))
    assert result.error.message == 'tool "echo" requires approval (not yet supported)'


@pytest.mark.anyio
async def test_the_first_answering_service_in_call_order_decides(make_harness, body):
    inner, outer = Answer("rejected"), Answer("allowed-once")
    result = await make_harness(AskFor(), inner, outer).execute(call(text="hi"))
    assert not result.is_error and inner.requests == []


@pytest.mark.anyio
async def test_a_sync_service_may_answer(make_harness, body):
    class SyncAnswer:
        @hookimpl
        def approval_request(self, request):
            return "allowed-once"

    result = await make_harness(AskFor(), SyncAnswer()).execute(call(text="hi"))
    assert not result.is_error


@pytest.mark.anyio
async def test_every_ask_writes_one_asked_and_one_decided_event(make_harness, sink):
    await make_harness(AskFor("because"), Answer("rejected")).execute(call(text="hi"))
    asked, decided = sink.of_kind("approval/asked"), sink.of_kind("approval/decided")
    assert len(asked) == 1 and len(decided) == 1
    assert asked[0]["tool_name"] == "echo" and asked[0]["call_id"] == "c1" and asked[0]["reason"] == "because"
    assert decided[0] == {"id": asked[0]["id"], "outcome": "rejected"}
    assert sink.kinds() == ["tool/call", "approval/asked", "approval/decided", "tool/result"]


@pytest.mark.anyio
async def test_a_slow_answer_is_awaited(make_harness, body):
    class Slow:
        @hookimpl
        async def approval_request(self, request):
            await anyio.sleep(0.01)
            return "allowed-once"

    result = await make_harness(AskFor(), Slow()).execute(call(text="hi"))
    assert not result.is_error and body.runs
