"""reference/core-pipeline.md §4.3 (guards are monotonic) and §1.5 (tools_result fires exactly once): properties.

Hypothesis builds random policy stacks and random call sequences; each example gets a fresh
Harness and runs under ``anyio.run`` (hypothesis and async fixtures do not mix). The expected
outcome is computed here, independently of the core, from pluggy's documented call order.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import anyio
from hypothesis import example, given, settings
from hypothesis import strategies as st

from harness_core import (
    Allow,
    Deny,
    Harness,
    Signal,
    TextBlock,
    ToolCall,
    ToolResult,
    hookimpl,
)

from .support import Body, Recorder, make_echo, text_of

PROPERTY_SETTINGS = settings(max_examples=150, deadline=None)
#: A hang guard, not a timing assertion: a deadlocked example fails instead of stalling the suite.
HANG_GUARD_SECONDS = 10

PRE_KINDS = ("pass", "allow", "deny", "override")
GUARD_KINDS = ("abstain", "deny")
ORDERS = ("plain", "tryfirst", "trylast")


@dataclass(frozen=True)
class Spec:
    """One generated hook impl: what it does, its pluggy ordering flag, sync or async."""

    kind: str
    order: str
    sync: bool = False


def call_order(specs: list[Spec]) -> list[int]:
    """Indices of ``specs`` (given in registration order) in the order pluggy calls them.

    tryfirst impls first, last registered first; then plain impls, last registered first; then
    trylast impls, which pluggy inserts at the front of its list one by one, so among themselves
    they run first registered first. The first index is the outermost waterfall link.
    """
    indices = range(len(specs))
    tryfirst = [i for i in reversed(indices) if specs[i].order == "tryfirst"]
    plain = [i for i in reversed(indices) if specs[i].order == "plain"]
    trylast = [i for i in indices if specs[i].order == "trylast"]
    return tryfirst + plain + trylast


def expected_waterfall(specs: list[Spec], order: list[int]) -> tuple[str, list[int]]:
    """The pre-execute decision ("allow" or "deny") and which listeners ran, in order."""
    ran: list[int] = []
    decision = "allow"  # the core's default when every listener passes
    for position, index in enumerate(order):
        ran.append(index)
        kind = specs[index].kind
        if kind == "pass":
            continue
        if kind == "allow":
            return "allow", ran
        if kind == "deny":
            return "deny", ran
        # override: runs the rest of the chain, then answers Allow whatever it said
        _, inner = expected_waterfall(specs, order[position + 1 :])
        return "allow", ran + inner
    return decision, ran


def pre_plugin(spec: Spec, index: int, log: list[tuple[str, int]]) -> object:
    flags = {"tryfirst": spec.order == "tryfirst", "trylast": spec.order == "trylast"}
    kind = spec.kind

    if spec.sync and kind != "override":

        class SyncPre:
            @hookimpl(**flags)
            def tools_pre_execute(self, execution, call_next):
                log.append(("pre", index))
                if kind == "allow":
                    return Allow()
                if kind == "deny":
                    return Deny(reason="d")
                return call_next()

        return SyncPre()

    class AsyncPre:
        @hookimpl(**flags)
        async def tools_pre_execute(self, execution, call_next):
            log.append(("pre", index))
            if kind == "allow":
                return Allow()
            if kind == "deny":
                return Deny(reason="d")
            decision = await call_next()
            if kind == "override":
                return Allow()
            return decision

    return AsyncPre()


def guard_plugin(spec: Spec, index: int, log: list[tuple[str, int]]) -> object:
    flags = {"tryfirst": spec.order == "tryfirst", "trylast": spec.order == "trylast"}
    reason = f"g{index}" if spec.kind == "deny" else None

    class Guard:
        @hookimpl(**flags)
        def tools_guard(self, execution):
            log.append(("guard", index))
            return reason

    return Guard()


def wrapper_plugin(spec: Spec, index: int, log: list[tuple[str, int]]) -> object:
    flags = {"tryfirst": spec.order == "tryfirst", "trylast": spec.order == "trylast"}

    class Wrapper:
        @hookimpl(**flags)
        async def tools_execute(self, execution, call_next):
            log.append(("execute", index))
            return await call_next()

    return Wrapper()


def assert_frozen(result: ToolResult) -> None:
    assert type(result) is ToolResult
    assert type(result.content) is tuple
    assert type(result.additional_contexts) is tuple
    for attribute in ("is_error", "content", "value", "error"):
        try:
            setattr(result, attribute, None)
        except dataclasses.FrozenInstanceError:
            pass
        else:  # pragma: no cover - reached only if the result is mutable
            raise AssertionError(f"result.{attribute} was assignable")


pre_specs = st.lists(
    st.builds(Spec, kind=st.sampled_from(PRE_KINDS), order=st.sampled_from(ORDERS), sync=st.booleans()),
    max_size=6,
)
guard_specs = st.lists(st.builds(Spec, kind=st.sampled_from(GUARD_KINDS), order=st.sampled_from(ORDERS)), max_size=4)
wrapper_specs = st.lists(st.builds(Spec, kind=st.just("pass"), order=st.sampled_from(ORDERS)), max_size=3)


@PROPERTY_SETTINGS
@given(pres=pre_specs, guards=guard_specs, wrappers=wrapper_specs)
def test_no_pre_execute_stack_lets_a_call_past_a_denying_guard(
    pres: list[Spec], guards: list[Spec], wrappers: list[Spec]
) -> None:
    log: list[tuple[str, int]] = []
    body = Body()
    recorder = Recorder()
    plugins = [
        *(pre_plugin(spec, i, log) for i, spec in enumerate(pres)),
        *(guard_plugin(spec, i, log) for i, spec in enumerate(guards)),
        *(wrapper_plugin(spec, i, log) for i, spec in enumerate(wrappers)),
    ]
    harness = Harness(plugins=[recorder, *plugins], load_entrypoints=False)
    harness.tools.register(make_echo(body))

    async def scenario() -> ToolResult:
        with anyio.fail_after(HANG_GUARD_SECONDS):
            return await harness.execute(ToolCall(call_id="c1", name="echo", arguments={"text": "hi"}, agent="main"))

    result = anyio.run(scenario)

    decision, pre_ran = expected_waterfall(pres, call_order(pres))
    guard_order = call_order(guards)
    guard_ran: list[int] = []
    denial: str | None = "d" if decision == "deny" else None
    if decision == "allow":
        for index in guard_order:
            guard_ran.append(index)
            if guards[index].kind == "deny":
                denial = f"g{index}"
                break
    any_guard_denies = any(spec.kind == "deny" for spec in guards)

    # The stages ran exactly as pluggy's order and the waterfall rules predict.
    assert [i for stage, i in log if stage == "pre"] == pre_ran
    assert [i for stage, i in log if stage == "guard"] == guard_ran
    expected_wrappers = call_order(wrappers) if denial is None else []
    assert [i for stage, i in log if stage == "execute"] == expected_wrappers

    # Monotonicity: no pre-execute stack, however ordered, gets a call past a denying guard.
    if any_guard_denies:
        assert body.runs == []
        assert result.is_error
    if any_guard_denies and decision == "allow":
        assert result.error.message == denial and denial.startswith("g")

    # tools_result fired exactly once, with the very object execute returned.
    assert len(recorder.seen) == 1
    assert recorder.results[0] is result
    assert_frozen(result)

    # A denial is an uncoded failure with the reason as its message.
    if denial is not None:
        assert result.is_error
        assert result.error.message == denial
        assert result.error.info is None
        assert text_of(result) == f"Error: {denial}"
        assert result.value is None
    else:
        assert not result.is_error and text_of(result) == "hi"

    # The body ran exactly when the call succeeded.
    assert (len(body.runs) == 1) == (not result.is_error)
    assert len(body.runs) <= 1


ARGUMENT_KINDS = {
    "json": {"text": "hi"},
    "nan": {"text": math.nan},
    "inf": math.inf,
    "tuple": {"text": ("a", "b")},
    "huge int": {"n": 2**60},
    "set": {"text": {"a"}},
}
BAD_ARGUMENTS = {kind for kind in ARGUMENT_KINDS if kind != "json"}
ARGUMENTS_NOT_JSON = "tool execution arguments must be losslessly JSON-serializable"


@dataclass(frozen=True)
class CallSpec:
    known: bool
    arguments: str
    aborted: bool


def build_call(index: int, spec: CallSpec) -> ToolCall:
    signal = Signal()
    if spec.aborted:
        signal.abort("caller gave up")
    return ToolCall(
        call_id=f"c{index}",
        name="echo" if spec.known else "missing",
        arguments=ARGUMENT_KINDS[spec.arguments],
        agent="main",
        signal=signal,
    )


def check_outcome(spec: CallSpec, result: ToolResult) -> None:
    """Materialization failure wins over a pre-aborted signal, which wins over an unknown name."""
    assert_frozen(result)
    if spec.arguments in BAD_ARGUMENTS:
        assert result.is_error
        assert result.error.message == ARGUMENTS_NOT_JSON
        assert result.error.info is None
    elif spec.aborted:
        assert result.is_error
        assert result.error.info.code == "ABORTED_BEFORE_DISPATCH"
        assert result.content == (TextBlock(text="Error: tool call aborted before dispatch"),)
    elif not spec.known:
        assert result.is_error
        assert result.error.info.code == "UNKNOWN_TOOL"
        assert result.error.message == 'unknown tool "missing"'
    else:
        assert not result.is_error and text_of(result) == "hi"


call_specs = st.lists(
    st.builds(
        CallSpec,
        known=st.booleans(),
        arguments=st.sampled_from(sorted(ARGUMENT_KINDS)),
        aborted=st.booleans(),
    ),
    min_size=1,
    max_size=8,
)


@PROPERTY_SETTINGS
@given(specs=call_specs, batched=st.booleans())
# Pinned: a pre-aborted call started while the committer sat idle used to deadlock execute_batch.
@example(specs=[CallSpec(True, "json", False), CallSpec(True, "json", True), CallSpec(True, "json", False)], batched=True)
def test_tools_result_fires_exactly_once_per_call_on_every_path(specs: list[CallSpec], batched: bool) -> None:
    body = Body()
    recorder = Recorder()
    harness = Harness(plugins=[recorder], load_entrypoints=False)
    harness.tools.register(make_echo(body))
    calls = [build_call(index, spec) for index, spec in enumerate(specs)]

    async def scenario() -> list[ToolResult]:
        with anyio.fail_after(HANG_GUARD_SECONDS):
            if batched:
                return await harness.execute_batch(calls)
            return [await harness.execute(one) for one in calls]

    results = anyio.run(scenario)

    assert len(results) == len(calls)
    assert len(recorder.seen) == len(calls)
    assert [execution.call_id for execution, _ in recorder.seen] == [one.call_id for one in calls]
    for returned, observed in zip(results, recorder.results, strict=True):
        assert returned is observed
    for spec, result in zip(specs, results, strict=True):
        check_outcome(spec, result)
    successes = sum(not result.is_error for result in results)
    assert len(body.runs) == successes


def test_the_call_order_model_matches_pluggy_for_a_known_stack() -> None:
    """Pins the order model the properties rely on (tryfirst LIFO, plain LIFO, trylast FIFO)."""
    specs = [Spec("pass", order) for order in ("trylast", "plain", "tryfirst", "trylast", "plain", "tryfirst")]
    log: list[tuple[str, int]] = []
    harness = Harness(plugins=[pre_plugin(spec, i, log) for i, spec in enumerate(specs)], load_entrypoints=False)

    async def scenario() -> Any:
        return await harness.execute(ToolCall(call_id="c1", name="nothing"))

    anyio.run(scenario)

    assert [i for _, i in log] == call_order(specs) == [5, 2, 4, 1, 0, 3]
