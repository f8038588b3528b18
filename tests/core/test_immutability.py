"""reference/core-pipeline.md §5 (freezing and who may mutate what) and §10.17 (mutation raises, for real).

Every probe catches its own exception and records it: an exception escaping a hook would turn
into an error result and hide what the stage actually saw.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest

from harness_core import (
    ExecutionToken,
    FrozenDict,
    FrozenList,
    Signal,
    TextBlock,
    ToolCall,
    ToolError,
    ToolOutput,
    ToolResult,
    hookimpl,
)

from .support import call, make_echo, text_of

ARGUMENTS = {"text": "hi", "items": [1, 2], "nested": {"deep": ["x"]}}


def outcome(attempt: Callable[[], object]) -> type[BaseException] | None:
    """Run one mutation attempt and return the type of what it raised (``None``: it succeeded)."""
    try:
        attempt()
    except BaseException as exc:  # noqa: BLE001 - the probe reports whatever happened
        return type(exc)
    return None


def execution_attempts(execution: Any) -> dict[str, Callable[[], object]]:
    """Mutations no stage may make to an execution (or a view of one)."""
    return {
        'arguments["x"] = 1': lambda: execution.arguments.__setitem__("x", 1),
        'arguments["items"].append(1)': lambda: execution.arguments["items"].append(1),
        'arguments["nested"]["deep"][0] = "y"': lambda: execution.arguments["nested"]["deep"].__setitem__(0, "y"),
        'del arguments["text"]': lambda: execution.arguments.__delitem__("text"),
        "arguments.update(x=1)": lambda: execution.arguments.update(x=1),
        "arguments.clear()": lambda: execution.arguments.clear(),
        "name = x": lambda: setattr(execution, "name", "x"),
        "call_id = other": lambda: setattr(execution, "call_id", "other"),
        "arguments = {}": lambda: setattr(execution, "arguments", {}),
        "agent = root": lambda: setattr(execution, "agent", "root"),
        "root_call_id = r": lambda: setattr(execution, "root_call_id", "r"),
        "token = object()": lambda: setattr(execution, "token", object()),
        "parent = None": lambda: setattr(execution, "parent", None),
        "del name": lambda: delattr(execution, "name"),
        "del arguments": lambda: delattr(execution, "arguments"),
        "new attribute": lambda: setattr(execution, "extra", 1),
    }


EXPECTED: dict[str, type[BaseException]] = {
    'arguments["x"] = 1': TypeError,
    'arguments["items"].append(1)': TypeError,
    'arguments["nested"]["deep"][0] = "y"': TypeError,
    'del arguments["text"]': TypeError,
    "arguments.update(x=1)": TypeError,
    "arguments.clear()": TypeError,
    "name = x": AttributeError,
    "call_id = other": AttributeError,
    "arguments = {}": AttributeError,
    "agent = root": AttributeError,
    "root_call_id = r": AttributeError,
    "token = object()": AttributeError,
    "parent = None": AttributeError,
    "del name": AttributeError,
    "del arguments": AttributeError,
    "new attribute": AttributeError,
}


def probe(execution: Any, *, signal_is_writable: bool = False) -> dict[str, type[BaseException] | None]:
    results = {label: outcome(attempt) for label, attempt in execution_attempts(execution).items()}
    if not signal_is_writable:
        results["signal = Signal()"] = outcome(lambda: setattr(execution, "signal", Signal()))
        results["del signal"] = outcome(lambda: delattr(execution, "signal"))
    return results


def result_attempts(result: ToolResult) -> dict[str, Callable[[], object]]:
    return {
        "is_error = True": lambda: setattr(result, "is_error", True),
        "content = ()": lambda: setattr(result, "content", ()),
        "value = None": lambda: setattr(result, "value", None),
        "del error": lambda: delattr(result, "error"),
        "content[0].text = x": lambda: setattr(result.content[0], "text", "x"),
    }


class Probe:
    """Tries every forbidden mutation in every stage and records what happened."""

    def __init__(self) -> None:
        self.seen: dict[str, dict[str, type[BaseException] | None]] = {}
        self.results: dict[str, ToolResult] = {}

    @hookimpl
    async def tools_pre_execute(self, execution, call_next):
        self.seen["pre"] = probe(execution)
        return await call_next()

    @hookimpl
    def tools_guard(self, execution):
        self.seen["guard"] = probe(execution)

    @hookimpl
    async def tools_execute(self, execution, call_next):
        self.seen["execute"] = probe(execution, signal_is_writable=True)
        return await call_next()

    @hookimpl
    async def tools_post_execute(self, execution, result, call_next):
        self.seen["post"] = probe(execution)
        self.seen["post result"] = {label: outcome(attempt) for label, attempt in result_attempts(result).items()}
        self.results["post"] = result
        return await call_next()

    @hookimpl
    def tools_result(self, execution, result):
        self.seen["result"] = probe(execution)
        self.seen["result result"] = {label: outcome(attempt) for label, attempt in result_attempts(result).items()}
        self.results["result"] = result


class ProbingBody:
    """A body that tries to mutate its arguments and its context."""

    def __init__(self) -> None:
        self.seen: dict[str, type[BaseException] | None] = {}

    async def __call__(self, args: Any, ctx: Any) -> Any:
        self.seen = {
            'args["x"] = 1': outcome(lambda: args.__setitem__("x", 1)),
            'args["items"].append(1)': outcome(lambda: args["items"].append(1)),
            "args is ctx.arguments": None if args is ctx.arguments else AssertionError,
            **{f"ctx.{label}": result for label, result in probe(ctx).items()},
            "ctx.execution.name = x": outcome(lambda: setattr(ctx.execution, "name", "x")),
        }
        return args["text"]


@pytest.fixture
def probing_body() -> ProbingBody:
    return ProbingBody()


# --- executions -----------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("stage", ["pre", "guard", "execute", "post", "result"])
async def test_every_mutation_of_the_execution_raises_in_each_stage(make_harness, stage) -> None:
    probe_plugin = Probe()
    harness = make_harness(probe_plugin)

    result = await harness.execute(call(**ARGUMENTS))

    assert not result.is_error, result
    seen = probe_plugin.seen[stage]
    expected = dict(EXPECTED)
    if stage != "execute":
        expected["signal = Signal()"] = AttributeError
        expected["del signal"] = AttributeError
    assert seen == expected


@pytest.mark.anyio
async def test_every_mutation_of_the_arguments_and_the_context_raises_in_the_body(make_harness, probing_body) -> None:
    harness = make_harness(tool=make_echo(probing_body))

    result = await harness.execute(call(**ARGUMENTS))

    assert not result.is_error and text_of(result) == "hi"
    expected = {
        'args["x"] = 1': TypeError,
        'args["items"].append(1)': TypeError,
        "args is ctx.arguments": None,
        **{f"ctx.{label}": error for label, error in EXPECTED.items()},
        "ctx.signal = Signal()": AttributeError,
        "ctx.del signal": AttributeError,
        "ctx.execution.name = x": AttributeError,
    }
    assert probing_body.seen == expected


@pytest.mark.anyio
async def test_the_arguments_every_stage_sees_are_deeply_frozen_snapshots(make_harness) -> None:
    kinds: list[tuple[type, type, type]] = []

    class Kinds:
        @hookimpl
        def tools_guard(self, execution):
            arguments = execution.arguments
            kinds.append((type(arguments), type(arguments["items"]), type(arguments["nested"]["deep"])))

    harness = make_harness(Kinds())

    await harness.execute(call(**ARGUMENTS))

    assert kinds == [(FrozenDict, FrozenList, FrozenList)]


# --- the dispatch view ------------------------------------------------------------------------


@pytest.mark.anyio
async def test_only_the_signal_of_the_dispatch_view_may_be_assigned_and_only_a_signal(make_harness, body) -> None:
    seen: dict[str, Any] = {}

    class Wrapper:
        @hookimpl
        async def tools_execute(self, execution, call_next):
            upstream = execution.signal
            replacement = Signal()
            seen["assign a Signal"] = outcome(lambda: setattr(execution, "signal", replacement))
            seen["signal is replacement"] = execution.signal is replacement
            seen['signal = "nope"'] = outcome(lambda: setattr(execution, "signal", "nope"))
            seen["signal = None"] = outcome(lambda: setattr(execution, "signal", None))
            seen["del signal"] = outcome(lambda: delattr(execution, "signal"))
            seen["name = x"] = outcome(lambda: setattr(execution, "name", "x"))
            seen["_signal = Signal()"] = outcome(lambda: setattr(execution, "_signal", Signal()))
            seen["_execution = None"] = outcome(lambda: setattr(execution, "_execution", None))
            seen["signal still the replacement"] = execution.signal is replacement
            try:
                return await call_next()
            finally:
                execution.signal = upstream

    harness = make_harness(Wrapper())

    result = await harness.execute(call(text="hi"))

    assert not result.is_error and text_of(result) == "hi"
    assert seen == {
        "assign a Signal": None,
        "signal is replacement": True,
        'signal = "nope"': TypeError,
        "signal = None": TypeError,
        "del signal": AttributeError,
        "name = x": AttributeError,
        "_signal = Signal()": AttributeError,
        "_execution = None": AttributeError,
        "signal still the replacement": True,
    }
    assert len(body.runs) == 1


# --- results --------------------------------------------------------------------------------


def dict_tool(returned: dict[str, Any]) -> Any:
    async def execute(args, ctx):
        return returned

    return make_echo(
        execute,
        output=ToolOutput(schema={"type": "object"}, render=lambda args, value: [TextBlock(text=json.dumps(value))]),
    )


@pytest.mark.anyio
async def test_the_result_post_execute_and_observers_see_is_frozen(make_harness) -> None:
    probe_plugin = Probe()
    returned = {"k": [1, 2], "inner": {"n": 1}}
    harness = make_harness(probe_plugin, tool=dict_tool(returned))

    result = await harness.execute(call(text="hi"))

    assert not result.is_error
    frozen = dataclasses.FrozenInstanceError
    for stage in ("post result", "result result"):
        assert probe_plugin.seen[stage] == {
            "is_error = True": frozen,
            "content = ()": frozen,
            "value = None": frozen,
            "del error": frozen,
            "content[0].text = x": frozen,
        }, stage
    for stage in ("post", "result"):
        seen_result = probe_plugin.results[stage]
        assert type(seen_result.content) is tuple
        assert type(seen_result.additional_contexts) is tuple
        assert type(seen_result.value) is FrozenDict
        assert outcome(lambda: seen_result.value.__setitem__("k", 0)) is TypeError
        assert outcome(lambda: seen_result.value["k"].append(3)) is TypeError
        assert outcome(lambda: seen_result.value["inner"].pop("n")) is TypeError
    assert issubclass(frozen, AttributeError)


@pytest.mark.anyio
async def test_the_value_the_body_returned_is_not_retained(make_harness) -> None:
    returned = {"k": [1, 2]}
    harness = make_harness(tool=dict_tool(returned))

    result = await harness.execute(call(text="hi"))
    returned["k"].append(3)
    returned["new"] = True

    assert result.value == {"k": [1, 2]}


@pytest.mark.anyio
async def test_a_denial_seen_by_post_execute_and_observers_is_frozen(make_harness) -> None:
    probe_plugin = Probe()

    class Denier:
        @hookimpl(tryfirst=True)
        def tools_guard(self, execution):
            return "no"

    harness = make_harness(probe_plugin, Denier())

    result = await harness.execute(call(text="hi"))

    assert result.is_error and result.error.message == "no"
    for stage in ("post result", "result result"):
        assert set(probe_plugin.seen[stage].values()) == {dataclasses.FrozenInstanceError}, stage
    assert outcome(lambda: setattr(result.error, "message", "yes")) is dataclasses.FrozenInstanceError


@pytest.mark.anyio
async def test_a_failure_authored_by_a_wrapper_is_frozen_deeply_before_observers_see_it(make_harness) -> None:
    class Authoring:
        @hookimpl
        async def tools_execute(self, execution, call_next):
            return ToolResult(
                is_error=True,
                error=ToolError(message="wrapper says no"),
                content=[TextBlock(text="Error: wrapper says no")],
                meta={"retries": [1, 2]},
            )

    seen: list[Any] = []

    class Observer:
        @hookimpl
        def tools_result(self, execution, result):
            seen.append(outcome(lambda: result.meta["retries"].append(3)))

    harness = make_harness(Authoring(), Observer())

    result = await harness.execute(call(text="hi"))

    assert result.is_error and result.error.message == "wrapper says no"
    assert seen == [TypeError]


@pytest.mark.anyio
async def test_execute_returns_the_very_object_the_observers_saw(make_harness, recorder) -> None:
    probe_plugin = Probe()
    harness = make_harness(probe_plugin)

    result = await harness.execute(call(text="hi"))

    assert recorder.results[0] is result
    assert probe_plugin.results["result"] is result
    assert len(recorder.results) == 1


# --- the caller's arguments -------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_callers_arguments_are_neither_frozen_nor_retained(make_harness, body, recorder) -> None:
    arguments = {"text": "hi", "items": [1]}
    during: list[Any] = []

    class MutatesTheCallersDict:
        @hookimpl
        async def tools_pre_execute(self, execution, call_next):
            during.append(outcome(lambda: arguments.__setitem__("text", "changed")))
            during.append(outcome(lambda: arguments["items"].append(2)))
            return await call_next()

    harness = make_harness(MutatesTheCallersDict())

    result = await harness.execute(ToolCall(call_id="c1", name="echo", arguments=arguments, agent="main"))

    assert during == [None, None]
    assert text_of(result) == "hi"
    assert body.runs == [{"text": "hi", "items": [1]}]
    assert type(arguments) is dict and type(arguments["items"]) is list
    arguments["after"] = True
    arguments["items"].append(3)
    (execution, _), = recorder.seen
    assert execution.arguments == {"text": "hi", "items": [1]}
    assert execution.arguments is not arguments


# --- identity -------------------------------------------------------------------------------


class TokenTrace:
    """Records the token every stage sees."""

    def __init__(self) -> None:
        self.tokens: list[tuple[str, object]] = []

    @hookimpl
    async def tools_pre_execute(self, execution, call_next):
        self.tokens.append(("pre", execution.token))
        return await call_next()

    @hookimpl
    def tools_guard(self, execution):
        self.tokens.append(("guard", execution.token))

    @hookimpl
    async def tools_execute(self, execution, call_next):
        self.tokens.append(("execute", execution.token))
        return await call_next()

    @hookimpl
    async def tools_post_execute(self, execution, result, call_next):
        self.tokens.append(("post", execution.token))
        return await call_next()

    @hookimpl
    def tools_result(self, execution, result):
        self.tokens.append(("result", execution.token))


@pytest.mark.anyio
async def test_every_stage_of_one_call_sees_the_same_token_and_two_calls_get_different_ones(make_harness, body) -> None:
    trace = TokenTrace()
    harness = make_harness(trace)

    await harness.execute(call(call_id="c1", text="one"))
    await harness.execute(call(call_id="c2", text="two"))

    body_tokens = [ctx.token for ctx in body.contexts]
    stages = [stage for stage, _ in trace.tokens]
    assert stages == ["pre", "guard", "execute", "post", "result"] * 2
    first = [token for _, token in trace.tokens[:5]] + [body_tokens[0]]
    second = [token for _, token in trace.tokens[5:]] + [body_tokens[1]]
    assert all(token is first[0] for token in first)
    assert all(token is second[0] for token in second)
    assert first[0] is not second[0]
    assert isinstance(first[0], ExecutionToken)
    assert outcome(lambda: setattr(first[0], "call_id", "c9")) is AttributeError


@pytest.mark.anyio
async def test_two_calls_with_the_same_call_id_still_get_different_tokens(make_harness, body) -> None:
    harness = make_harness()

    await harness.execute(call(call_id="same", text="one"))
    await harness.execute(call(call_id="same", text="two"))

    assert body.contexts[0].token is not body.contexts[1].token


@pytest.mark.anyio
async def test_root_call_id_defaults_to_the_call_id(make_harness, recorder) -> None:
    harness = make_harness()

    await harness.execute(call(call_id="c42", text="hi"))

    (execution, _), = recorder.seen
    assert execution.root_call_id == "c42"
    assert execution.parent is None


@pytest.mark.anyio
async def test_an_explicit_root_call_id_is_kept(make_harness, recorder, body) -> None:
    harness = make_harness()

    await harness.execute(ToolCall(call_id="c1", name="echo", arguments={"text": "x"}, root_call_id="root", agent="main"))

    (execution, _), = recorder.seen
    assert execution.root_call_id == "root"
    assert body.contexts[0].root_call_id == "root"
