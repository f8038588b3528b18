"""reference/plugins.md §0.2 and §1, reference/core-pipeline.md §3.2 stages D–E: the approval plugin.

An ask becomes exactly one decision: the policy first (``never`` rejects before any answerer), an
aborted signal cancels, then the answerers listed in ``[approval] answerers`` (outermost first);
no answer, a raising answerer or an answer outside the vocabulary fails closed as ``unavailable``.
The core writes the ``approval/asked`` / ``approval/decided`` pair around every request and maps
the outcome to the model-visible strings. Grants (DESIGN §5) are opt-in and never skip guards.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anyio
import pytest

from harness_approval import ApprovalPlugin, policy_context_text
from harness_core import (
    Ask,
    Harness,
    MemoryEventSink,
    Signal,
    TextBlock,
    ToolCall,
    ToolDefinition,
    ToolOutput,
    ToolResult,
    hookimpl,
)
from harness_core.session_log import SessionLog, read_session

TOOL = "deploy"
UNAVAILABLE = f'tool "{TOOL}" requires approval, but no approval channel is available'
REJECTED = f'the user rejected tool "{TOOL}"'
CANCELLED = f'approval for tool "{TOOL}" was cancelled'
NO_AGENT = f'tool "{TOOL}" requires approval, but the call has no agent to route it through'
ASK_REASON = "deploys need a human"


# --- the pieces every test composes -----------------------------------------------------------


class AskAll:
    """A pre-execute listener that asks for every call (and can abort the call's signal first)."""

    def __init__(self, reason: str | None = ASK_REASON, *, abort_first: bool = False) -> None:
        self.reason = reason
        self.abort_first = abort_first

    @hookimpl
    async def tools_pre_execute(self, execution, call_next):
        if self.abort_first:
            execution.signal.abort("the user left")
        return Ask(reason=self.reason)


class Body:
    """The body of the ``deploy`` tool: it only records the arguments it ran with."""

    def __init__(self) -> None:
        self.runs: list[Any] = []

    async def __call__(self, args: Any, ctx: Any) -> str:
        self.runs.append(args)
        return "deployed"


def deploy_tool(body: Body) -> ToolDefinition:
    async def execute(args: Any, ctx: Any) -> str:
        return await body(args, ctx)

    return ToolDefinition(
        name=TOOL,
        description="Deploy somewhere",
        parameters={"type": "object"},
        output=ToolOutput(schema={"type": "string"}, render=lambda args, value: [TextBlock(text=value)]),
        execute=execute,
    )


class Says:
    """An answerer that records what it was asked and answers a fixed value without delegating."""

    def __init__(self, outcome: object) -> None:
        self.outcome = outcome
        self.asked: list[tuple[Any, Any]] = []

    @hookimpl
    async def approval_answer(self, request, call, call_next):
        self.asked.append((request, call))
        return self.outcome


class Outer(Says):
    """A second answerer class, so that two answerers have two plugin names."""


class Inner(Says):
    """A third answerer class."""


class Delegates:
    """An answerer that always lets the next one decide, and records what came back."""

    def __init__(self) -> None:
        self.passed_on: list[str] = []

    @hookimpl
    async def approval_answer(self, request, call, call_next):
        outcome = await call_next()
        self.passed_on.append(outcome)
        return outcome


class RaisesAtOnce:
    """A synchronous answerer that raises before returning anything."""

    def __init__(self) -> None:
        self.calls = 0

    @hookimpl
    def approval_answer(self, request, call, call_next):
        self.calls += 1
        raise RuntimeError("the answering channel is broken")


class RaisesLater:
    """An async answerer that raises after it has awaited something."""

    @hookimpl
    async def approval_answer(self, request, call, call_next):
        await anyio.sleep(0)
        raise RuntimeError("the answering channel went away")


class WaitsLong:
    """An answerer that takes ten seconds to answer and records whether it finished or was cancelled."""

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.finished = False
        self.cancelled = False

    @hookimpl
    async def approval_answer(self, request, call, call_next):
        self.started.set()
        try:
            await anyio.sleep(10)
        except anyio.get_cancelled_exc_class():
            self.cancelled = True
            raise
        self.finished = True
        return "allowed-once"


class Guard:
    """A guard that denies while ``denying`` is set."""

    def __init__(self, denying: bool = True) -> None:
        self.denying = denying

    @hookimpl
    def tools_guard(self, execution):
        return "the guard says no" if self.denying else None


def name_of(plugin: object) -> str:
    """The plugin name a plugin passed to ``Harness(plugins=[...])`` is registered under."""
    return type(plugin).__qualname__


@dataclass
class Setup:
    harness: Harness
    approval: ApprovalPlugin
    sink: MemoryEventSink
    body: Body

    async def call(self, call_id: str = "c1", *, agent: str | None = "main", signal: Signal | None = None, **arguments: Any) -> ToolResult:
        arguments = arguments or {"target": "prod"}
        return await self.harness.execute(
            ToolCall(call_id=call_id, name=TOOL, arguments=arguments, agent=agent, signal=signal or Signal())
        )

    def audit(self) -> tuple[list[Any], list[Any]]:
        return self.sink.of_kind("approval/asked"), self.sink.of_kind("approval/decided")


def build(*answerers: object, ask: AskAll | None = None, plugins: tuple[object, ...] = (), order: list[str] | None = None, **section: Any) -> Setup:
    """A fresh Harness: the approval plugin, an ask-everything listener, ``answerers`` (listed in
    ``[approval] answerers`` in the given order unless ``order`` says otherwise) and a deploy tool."""
    approval, sink, body = ApprovalPlugin(), MemoryEventSink(), Body()
    section.setdefault("answerers", order if order is not None else [name_of(answerer) for answerer in answerers])
    harness = Harness(
        plugins=[approval, ask or AskAll(), *answerers, *plugins], config={"approval": section}, events=sink
    )
    harness.tools.register(deploy_tool(body))
    return Setup(harness, approval, sink, body)


def denial(result: ToolResult) -> str:
    assert result.is_error and result.error is not None and result.error.info is None, result
    assert result.content == (TextBlock(text="Error: " + result.error.message),)
    return result.error.message


def code_of(result: ToolResult) -> str | None:
    return result.error.info.code if result.error and result.error.info else None


# --- 1. the fail-closed matrix ---------------------------------------------------------------


@pytest.mark.anyio
async def test_with_no_answerer_listed_every_ask_is_unavailable():
    setup = build(answerers=[])
    assert denial(await setup.call()) == UNAVAILABLE
    assert setup.body.runs == []


@pytest.mark.anyio
async def test_an_answerer_that_is_installed_but_not_listed_is_never_consulted():
    says = Says("allowed-once")
    setup = build(says, answerers=[])
    assert denial(await setup.call()) == UNAVAILABLE
    assert says.asked == []


@pytest.mark.anyio
async def test_scripted_rules_that_do_not_match_leave_the_ask_unavailable():
    setup = build(answerers=["scripted"], scripted=[{"tool": "bash", "outcome": "allowed-once"}])
    assert denial(await setup.call()) == UNAVAILABLE


@pytest.mark.anyio
async def test_a_matching_scripted_rule_answers():
    setup = build(answerers=["scripted"], scripted=[{"tool": "dep*", "outcome": "allowed-once"}])
    result = await setup.call()
    assert not result.is_error and setup.body.runs == [{"target": "prod"}]


@pytest.mark.anyio
async def test_an_answerer_that_raises_synchronously_fails_closed_as_unavailable():
    raises = RaisesAtOnce()
    setup = build(raises)
    assert denial(await setup.call()) == UNAVAILABLE
    assert raises.calls == 1 and setup.body.runs == []


@pytest.mark.anyio
async def test_an_answerer_that_raises_after_awaiting_fails_closed_as_unavailable():
    setup = build(RaisesLater())
    assert denial(await setup.call()) == UNAVAILABLE
    assert setup.body.runs == []


@pytest.mark.parametrize("answer", ["yes", "allow", "Allowed-Once", "", None, 1, True, ["allowed-once"]])
@pytest.mark.anyio
async def test_an_answer_outside_the_vocabulary_fails_closed_as_unavailable(answer):
    setup = build(Says(answer))
    assert denial(await setup.call()) == UNAVAILABLE
    assert setup.body.runs == []


@pytest.mark.anyio
async def test_rejected_denies_with_the_users_rejection():
    setup = build(Says("rejected"))
    assert denial(await setup.call()) == REJECTED
    assert setup.body.runs == []


@pytest.mark.anyio
async def test_an_answerer_may_answer_unavailable_itself():
    setup = build(Says("unavailable"))
    assert denial(await setup.call()) == UNAVAILABLE


@pytest.mark.anyio
async def test_cancelled_from_an_answerer_while_the_caller_is_live_denies_as_cancelled():
    setup = build(Says("cancelled"))
    assert denial(await setup.call()) == CANCELLED
    assert setup.body.runs == []


@pytest.mark.anyio
async def test_allowed_once_runs_the_body():
    setup = build(Says("allowed-once"))
    result = await setup.call(target="prod")
    assert not result.is_error and result.content == (TextBlock(text="deployed"),)
    assert setup.body.runs == [{"target": "prod"}]


@pytest.mark.anyio
async def test_allowed_once_grants_only_the_asked_call_the_next_one_asks_again():
    says = Says("allowed-once")
    setup = build(says)
    await setup.call("c1")
    await setup.call("c2")
    assert len(says.asked) == 2 and len(setup.body.runs) == 2


@pytest.mark.anyio
async def test_policy_never_rejects_without_consulting_any_answerer_even_one_listed_first():
    first, second = Outer("allowed-once"), Inner("allowed-once")
    setup = build(first, second, policy="never")
    assert denial(await setup.call()) == REJECTED
    assert first.asked == [] and second.asked == [] and setup.body.runs == []


@pytest.mark.anyio
async def test_an_already_aborted_signal_cancels_without_an_answerer_and_ends_aborted_before_dispatch():
    says = Says("allowed-once")
    setup = build(says, ask=AskAll(abort_first=True))
    result = await setup.call()
    assert code_of(result) == "ABORTED_BEFORE_DISPATCH"
    assert result.error.message == "tool call aborted before dispatch"
    assert says.asked == [] and setup.body.runs == []


@pytest.mark.anyio
async def test_an_abort_while_an_answerer_waits_ends_the_call_at_once_and_discards_the_late_answer():
    waits = WaitsLong()
    setup = build(waits)
    signal = Signal()
    results: list[ToolResult] = []

    async def run() -> None:
        results.append(await setup.call(signal=signal))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(run)
            await waits.started.wait()
            signal.abort("the user pressed stop")
    assert code_of(results[0]) == "ABORTED_BEFORE_DISPATCH"
    assert waits.cancelled and not waits.finished
    assert setup.body.runs == []
    asked, decided = setup.audit()
    assert [event["outcome"] for event in decided] == ["cancelled"]
    assert len(asked) == 1


# --- 2. the audit pair on every path -----------------------------------------------------------


AUDIT_PATHS = {
    "allowed-once": (lambda: (Says("allowed-once"),), {}, False, "allowed-once"),
    "rejected": (lambda: (Says("rejected"),), {}, False, "rejected"),
    "no answerer": (lambda: (), {"answerers": []}, False, "unavailable"),
    "policy never": (lambda: (Says("allowed-once"),), {"policy": "never"}, False, "rejected"),
    "already aborted": (lambda: (Says("allowed-once"),), {}, True, "cancelled"),
    "raises at once": (lambda: (RaisesAtOnce(),), {}, False, "unavailable"),
    "raises later": (lambda: (RaisesLater(),), {}, False, "unavailable"),
    "odd answer": (lambda: (Says("yes"),), {}, False, "unavailable"),
    "delegated to the end": (lambda: (Delegates(),), {}, False, "unavailable"),
}


@pytest.mark.parametrize("path", list(AUDIT_PATHS))
@pytest.mark.anyio
async def test_every_ask_is_audited_by_exactly_one_asked_and_one_decided_with_the_same_id(path):
    make_answerers, section, abort_first, outcome = AUDIT_PATHS[path]
    setup = build(*make_answerers(), ask=AskAll(abort_first=abort_first), **section)
    await setup.call("c7")
    asked, decided = setup.audit()
    assert len(asked) == 1 and len(decided) == 1
    assert asked[0]["id"] == decided[0]["id"]
    assert decided[0]["outcome"] == outcome
    assert asked[0]["tool_name"] == TOOL and asked[0]["call_id"] == "c7" and asked[0]["reason"] == ASK_REASON
    kinds = setup.sink.kinds()
    assert kinds.index("approval/asked") < kinds.index("approval/decided") < kinds.index("tool/result")


@pytest.mark.anyio
async def test_an_ask_without_a_reason_is_audited_without_a_reason_key():
    setup = build(Says("rejected"), ask=AskAll(reason=None))
    await setup.call()
    asked, _decided = setup.audit()
    assert "reason" not in asked[0]


@pytest.mark.anyio
async def test_each_ask_gets_its_own_audit_id():
    setup = build(Says("rejected"))
    await setup.call("c1")
    await setup.call("c2")
    asked, decided = setup.audit()
    assert len({event["id"] for event in asked}) == 2
    assert [event["id"] for event in asked] == [event["id"] for event in decided]


@pytest.mark.anyio
async def test_cancelling_the_task_awaiting_the_call_mid_ask_records_the_decision_as_cancelled():
    waits = WaitsLong()
    setup = build(waits)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(setup.call)
            await waits.started.wait()
            group.cancel_scope.cancel()
    assert waits.cancelled and not waits.finished
    asked, decided = setup.audit()
    assert len(asked) == len(decided) == 1 and asked[0]["id"] == decided[0]["id"]
    assert decided[0]["outcome"] == "cancelled"


# --- 3. the answerer chain ---------------------------------------------------------------------


@pytest.mark.anyio
async def test_an_outer_answerer_that_answers_without_delegating_keeps_the_inner_one_out():
    outer, inner = Outer("rejected"), Inner("allowed-once")
    setup = build(outer, inner)
    assert denial(await setup.call()) == REJECTED
    assert len(outer.asked) == 1 and inner.asked == []


@pytest.mark.anyio
async def test_an_outer_answerer_that_delegates_lets_the_inner_one_decide():
    outer, inner = Delegates(), Inner("rejected")
    setup = build(outer, inner)
    assert denial(await setup.call()) == REJECTED
    assert outer.passed_on == ["rejected"] and len(inner.asked) == 1


@pytest.mark.anyio
async def test_a_delegating_answerer_passes_allowed_once_through_and_the_body_runs():
    setup = build(Delegates(), Inner("allowed-once"))
    assert not (await setup.call()).is_error and len(setup.body.runs) == 1


@pytest.mark.anyio
async def test_past_the_last_answerer_the_ask_is_unavailable():
    delegates = Delegates()
    setup = build(delegates)
    assert denial(await setup.call()) == UNAVAILABLE
    assert delegates.passed_on == ["unavailable"]


@pytest.mark.parametrize("first", ["Outer", "Inner"])
@pytest.mark.anyio
async def test_the_order_of_the_answerers_list_decides_not_the_registration_order(first):
    outer, inner = Outer("rejected"), Inner("rejected")
    second = "Inner" if first == "Outer" else "Outer"
    setup = build(outer, inner, order=[first, second])
    await setup.call()
    asked = {"Outer": outer.asked, "Inner": inner.asked}
    assert len(asked[first]) == 1 and asked[second] == []


@pytest.mark.anyio
async def test_a_built_in_answerer_and_a_plugin_answerer_compose_in_the_listed_order():
    inner = Inner("rejected")
    setup = build(inner, order=["scripted", "Inner"], scripted=[{"tool": TOOL, "arguments": {"target": "staging"}, "outcome": "allowed-once"}])
    assert not (await setup.call("c1", target="staging")).is_error
    assert denial(await setup.call("c2", target="prod")) == REJECTED
    assert len(inner.asked) == 1


@pytest.mark.anyio
async def test_an_unregistered_answerer_is_no_longer_consulted():
    says = Says("allowed-once")
    setup = build(says)
    setup.harness.unregister(says)
    assert denial(await setup.call()) == UNAVAILABLE
    assert says.asked == [] and setup.body.runs == []


class TakesRequestOnly:
    """An answerer taking a subset of the spec's arguments, as pluggy allows."""

    @hookimpl
    async def approval_answer(self, request):
        return "allowed-once" if request.tool_name == TOOL else "rejected"


class TakesCallNextFirst:
    """An answerer naming the spec's arguments in another order (pluggy passes them by name)."""

    @hookimpl
    async def approval_answer(self, call_next, request):
        return await call_next()


@pytest.mark.anyio
async def test_an_answerer_may_take_only_the_arguments_it_needs():
    setup = build(TakesRequestOnly())
    assert not (await setup.call()).is_error


@pytest.mark.anyio
async def test_an_answerer_gets_its_arguments_by_name():
    setup = build(TakesCallNextFirst(), Inner("rejected"))
    assert denial(await setup.call()) == REJECTED


# --- 4. what the answerer sees -----------------------------------------------------------------


@pytest.mark.anyio
async def test_the_answerer_sees_the_call_with_the_arguments_as_sent_frozen_and_the_request_carries_none():
    says = Says("allowed-once")
    setup = build(says)
    await setup.call("c3", target="prod", replicas=2, tags=["a", "b"])
    (request, call), = says.asked
    assert (request.agent, request.tool_name, request.call_id, request.reason) == ("main", TOOL, "c3", ASK_REASON)
    assert not hasattr(request, "arguments")
    assert call.name == TOOL and call.call_id == "c3"
    assert call.arguments == {"target": "prod", "replicas": 2, "tags": ["a", "b"]}
    with pytest.raises(TypeError):
        call.arguments["target"] = "staging"
    with pytest.raises((TypeError, AttributeError)):
        call.arguments["tags"].append("c")


@pytest.mark.anyio
async def test_the_request_carries_the_callers_signal():
    says = Says("allowed-once")
    setup = build(says)
    signal = Signal()
    await setup.call(signal=signal)
    (request, _call), = says.asked
    assert request.signal is signal


# --- 5. allowed-once never skips the guards --------------------------------------------------


@pytest.mark.anyio
async def test_a_guard_that_denies_after_allowed_once_denies():
    says = Says("allowed-once")
    setup = build(says, plugins=(Guard(),))
    assert denial(await setup.call()) == "the guard says no"
    assert len(says.asked) == 1 and setup.body.runs == []


# --- 6. session grants (DESIGN §5: opt-in, narrow, revocable, never past the guards) -----------


class GrantsSession(Says):
    """An answerer that grants the session."""

    def __init__(self) -> None:
        super().__init__("allowed-session")


@pytest.mark.anyio
async def test_allowed_session_runs_the_call_and_records_a_grant():
    setup = build(GrantsSession(), grants=True)
    result = await setup.call("c1", target="prod", replicas=2)
    assert not result.is_error and len(setup.body.runs) == 1
    (grant,) = setup.sink.of_kind("approval/grant")
    assert grant["tool_name"] == TOOL and grant["call_id"] == "c1" and grant["id"]
    _asked, decided = setup.audit()
    assert decided[0]["outcome"] == "allowed-once"


@pytest.mark.anyio
async def test_a_granted_call_runs_again_without_any_answerer_whatever_the_key_order():
    answerer = GrantsSession()
    setup = build(answerer, grants=True)
    await setup.call("c1", target="prod", replicas=2)
    result = await setup.call("c2", **{"replicas": 2, "target": "prod"})
    assert not result.is_error and len(setup.body.runs) == 2
    assert len(answerer.asked) == 1
    (grant,) = setup.sink.of_kind("approval/grant")
    assert setup.sink.of_kind("approval/grant-used") == [{"id": grant["id"], "call_id": "c2"}]
    asked, decided = setup.audit()
    assert len(asked) == len(decided) == 2


@pytest.mark.anyio
async def test_a_grant_covers_only_the_exact_arguments_different_ones_ask_again():
    answerer = Says("allowed-session")
    setup = build(answerer, grants=True)
    await setup.call("c1", target="prod")
    await setup.call("c2", target="staging")
    await setup.call("c3", target="prod", extra=None)
    assert len(answerer.asked) == 3
    assert setup.sink.of_kind("approval/grant-used") == []


@pytest.mark.anyio
async def test_a_grant_never_skips_a_guard_that_denies():
    guard = Guard(denying=False)
    answerer = GrantsSession()
    setup = build(answerer, plugins=(guard,), grants=True)
    assert not (await setup.call("c1")).is_error
    guard.denying = True
    assert denial(await setup.call("c2")) == "the guard says no"
    assert len(setup.body.runs) == 1 and len(answerer.asked) == 1


@pytest.mark.anyio
async def test_policy_never_rejects_even_a_granted_call():
    answerer = GrantsSession()
    setup = build(answerer, grants=True)
    await setup.call("c1")
    setup.approval.set_policy("never")
    assert denial(await setup.call("c2")) == REJECTED
    assert setup.sink.of_kind("approval/grant-used") == []


@pytest.mark.anyio
async def test_a_revoked_grant_makes_the_next_identical_call_ask_again():
    answerer = Says("rejected")
    setup = build(answerer, grants=True)
    answerer.outcome = "allowed-session"
    await setup.call("c1")
    (grant,) = setup.sink.of_kind("approval/grant")
    assert setup.approval.revoke(grant["id"]) is True
    assert setup.sink.of_kind("approval/revoke") == [{"id": grant["id"], "source": "user"}]
    answerer.outcome = "rejected"
    assert denial(await setup.call("c2")) == REJECTED
    assert len(answerer.asked) == 2


@pytest.mark.anyio
async def test_a_revocation_appended_to_the_session_log_by_another_process_is_honoured(tmp_path):
    answerer = Says("allowed-session")
    setup = build(answerer, grants=True)
    log = SessionLog(tmp_path / "sessions")
    setup.harness.events = log
    try:
        await setup.call("c1")
        (grant,) = [event.data for event in read_session(log.path).events if event.type == "approval/grant"]
        with SessionLog(log.path.parent, log.session_id) as other:  # what `harness approvals revoke` does
            other.append("approval/revoke", {"id": grant["id"], "source": "cli"})
        answerer.outcome = "rejected"
        assert denial(await setup.call("c2")) == REJECTED
        assert len(answerer.asked) == 2
    finally:
        log.close()


@pytest.mark.anyio
async def test_revoking_an_unknown_grant_returns_false_and_records_nothing():
    setup = build(GrantsSession(), grants=True)
    assert setup.approval.revoke("no-such-grant") is False
    assert setup.sink.of_kind("approval/revoke") == []


@pytest.mark.anyio
async def test_allowed_session_without_grants_fails_closed_as_unavailable():
    setup = build(GrantsSession())
    assert denial(await setup.call()) == UNAVAILABLE
    assert setup.body.runs == [] and setup.sink.of_kind("approval/grant") == []
    _asked, decided = setup.audit()
    assert decided[0]["outcome"] == "unavailable"


# --- 7. policy ----------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_switching_the_policy_to_never_returns_the_notice_and_records_it():
    says = Says("allowed-once")
    setup = build(says)
    notice = setup.approval.set_policy("never")
    assert notice is not None
    assert notice.content == (TextBlock(text='The approval policy changed from "ask" to "never" (changed by the user).'),)
    assert notice.to_json()["source"] == {"kind": "plugin", "plugin": "user-approval"}
    (event,) = setup.sink.of_kind("approval/policy")
    assert event["policy"] == "never"
    assert denial(await setup.call()) == REJECTED and says.asked == []


@pytest.mark.anyio
async def test_switching_back_to_ask_consults_the_answerers_again():
    says = Says("allowed-once")
    setup = build(says, policy="never")
    notice = setup.approval.set_policy("ask")
    assert notice is not None
    assert notice.content[0].text == 'The approval policy changed from "never" to "ask" (changed by the user).'
    assert not (await setup.call()).is_error and len(says.asked) == 1


@pytest.mark.parametrize("policy", ["ask", "never"])
def test_re_selecting_the_current_policy_returns_none_and_records_nothing(policy):
    setup = build(policy=policy)
    assert setup.approval.set_policy(policy) is None
    assert setup.sink.of_kind("approval/policy") == []


@pytest.mark.parametrize("policy", ["always", "Ask", "", None])
def test_an_invalid_policy_raises_type_error_before_recording(policy):
    setup = build()
    with pytest.raises(TypeError) as caught:
        setup.approval.set_policy(policy)
    assert str(caught.value) == 'approval policy must be one of "ask" or "never"'
    assert setup.sink.of_kind("approval/policy") == []
    assert setup.approval.policy_context() == policy_context_text("ask")


def test_the_policy_context_describes_ask_and_never_exactly():
    setup = build()
    assert setup.approval.policy_context() == (
        "Approval policy: ask. Operations that require approval may ask through the configured answerers; "
        "without an available answerer, the request fails closed."
    )
    setup.approval.set_policy("never")
    assert setup.approval.policy_context() == (
        "Approval prompts are disabled in this session: actions that require approval are rejected "
        "automatically — do not request sandbox escalation (do not set `sandbox_permissions`)."
    )


def test_the_configured_policy_is_the_sessions_starting_policy():
    assert build(policy="never").approval.policy_context() == policy_context_text("never")


# --- 8. a call without an agent ---------------------------------------------------------------


@pytest.mark.anyio
async def test_a_call_without_an_agent_is_denied_by_the_core_and_never_reaches_the_plugin():
    says = Says("allowed-once")
    setup = build(says)
    assert denial(await setup.call(agent=None)) == NO_AGENT
    assert says.asked == [] and setup.audit() == ([], [])


# --- bookkeeping ----------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_plugin_forgets_each_call_once_its_result_is_out():
    setup = build(Says("rejected"), plugins=(Guard(denying=False),))
    await setup.call("c1")
    await setup.call("c2", agent=None)
    assert setup.approval.pending == {}


@pytest.mark.anyio
async def test_dry_runs_leave_at_most_a_bounded_number_of_pending_calls_behind():
    # A dry run produces no result, so its pending entry is only dropped by the bound.
    from harness_approval.plugin import PENDING_LIMIT

    setup = build(Says("rejected"))
    for index in range(PENDING_LIMIT + 20):
        await setup.harness.dry_run(ToolCall(call_id=f"dry-{index}", name=TOOL, arguments={"target": "prod"}, agent="main"))
    assert len(setup.approval.pending) == PENDING_LIMIT


class AsksEarlyForProd:
    """A pre-execute listener that runs before the approval plugin's and asks at once for prod."""

    @hookimpl(tryfirst=True)
    async def tools_pre_execute(self, execution, call_next):
        if execution.arguments.get("target") == "prod":
            return Ask(reason="prod needs a human")
        return await call_next()


@pytest.mark.anyio
async def test_a_grant_never_covers_a_call_with_other_arguments_that_reuses_a_call_id():
    answerer = Says("allowed-session")
    setup = build(answerer, plugins=(AsksEarlyForProd(),), grants=True)
    await setup.harness.dry_run(ToolCall(call_id="x", name=TOOL, arguments={"target": "staging"}, agent="main"))
    answerer.outcome = "rejected"
    result = await setup.call("x", target="prod")
    assert setup.body.runs == []
    assert denial(result) == REJECTED
