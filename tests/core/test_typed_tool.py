"""reference/core-pipeline.md §2.7 (defineTool): the @tool decorator, and argument checks inside the body stage."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness_core import (
    Harness,
    RunContext,
    Signal,
    ToolCall,
    ToolDefinition,
    hookimpl,
    tool,
)

from .support import text_of


@tool
async def add(a: int, b: int = 1) -> int:
    """Add two integers.

    The second one defaults to one.
    """
    return a + b


class StageTrace:
    """Records which stages saw a call (pre-execute, guard, execute wrapper, post-execute)."""

    def __init__(self) -> None:
        self.stages: list[str] = []

    @hookimpl
    async def tools_pre_execute(self, execution, call_next):
        self.stages.append("pre")
        return await call_next()

    @hookimpl
    def tools_guard(self, execution):
        self.stages.append("guard")

    @hookimpl
    async def tools_execute(self, execution, call_next):
        self.stages.append("execute:before")
        result = await call_next()
        self.stages.append("execute:after:" + ("error" if result.is_error else "ok"))
        return result

    @hookimpl
    async def tools_post_execute(self, execution, result, call_next):
        self.stages.append("post:" + ("error" if result.is_error else "ok"))
        return await call_next()


def harness_with(*definitions: ToolDefinition, plugins: tuple[object, ...] = ()) -> tuple[Harness, list[Any]]:
    """A fresh Harness with the given typed tools and a tools_result recorder."""
    seen: list[Any] = []

    class Results:
        @hookimpl
        def tools_result(self, execution, result):
            seen.append(result)

    harness = Harness(plugins=[Results(), *plugins], load_entrypoints=False)
    for definition in definitions:
        harness.tools.register(definition)
    return harness, seen


def typed_call(name: str, arguments: Any, call_id: str = "c1") -> ToolCall:
    return ToolCall(call_id=call_id, name=name, arguments=arguments, agent="main", signal=Signal())


# --- the definition ---------------------------------------------------------------------------


def test_tool_builds_a_definition_named_after_the_function_with_its_docstring() -> None:
    assert isinstance(add, ToolDefinition)
    assert add.name == "add"
    assert add.description == "Add two integers.\n\nThe second one defaults to one."
    assert add.timeout_ms is None


def test_tool_parameters_are_a_json_schema_object_with_properties_and_required() -> None:
    parameters = add.parameters

    assert parameters["type"] == "object"
    assert set(parameters["properties"]) == {"a", "b"}
    assert parameters["properties"]["a"]["type"] == "integer"
    assert parameters["properties"]["b"]["type"] == "integer"
    assert parameters["properties"]["b"]["default"] == 1
    assert parameters["required"] == ["a"]


def test_the_model_sees_the_typed_tool_schema_through_the_registry() -> None:
    harness, _ = harness_with(add)

    (schema,) = harness.tools.schemas()

    assert schema["name"] == "add"
    assert schema["description"].startswith("Add two integers.")
    assert schema["parameters"]["required"] == ["a"]


def test_tool_options_override_the_name_and_declare_a_timeout() -> None:
    @tool(name="x", timeout_ms=5, description="An explicit description.")
    async def something(value: str) -> str:
        """Not this docstring."""
        return value

    assert something.name == "x"
    assert something.timeout_ms == 5
    assert something.description == "An explicit description."
    harness, _ = harness_with(something)
    assert harness.tools.names() == ["x"]


def test_a_plain_def_function_is_refused_with_a_type_error() -> None:
    with pytest.raises(TypeError, match="async def"):

        @tool
        def not_async(a: int) -> int:
            return a


def test_a_plain_def_function_is_refused_with_options_too() -> None:
    with pytest.raises(TypeError, match="async def"):

        @tool(name="sync")
        def not_async(a: int) -> int:
            return a


# --- calling it -------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_calling_a_typed_tool_through_the_harness_renders_its_value() -> None:
    harness, seen = harness_with(add)

    result = await harness.execute(typed_call("add", {"a": 2, "b": 40}))

    assert not result.is_error
    assert result.value == 42
    assert text_of(result) == "42"
    assert seen == [result]


@pytest.mark.anyio
async def test_a_default_argument_applies_when_it_is_left_out() -> None:
    harness, _ = harness_with(add)

    result = await harness.execute(typed_call("add", {"a": 2}))

    assert result.value == 3


@pytest.mark.anyio
async def test_a_missing_required_argument_is_invalid_args() -> None:
    harness, _ = harness_with(add)

    result = await harness.execute(typed_call("add", {"b": 2}))

    assert result.is_error
    assert result.error.message == 'invalid arguments: missing required property "a"'
    assert result.error.info.code == "INVALID_ARGS"
    assert result.error.info.name == "ToolArgsError"
    assert text_of(result) == 'Error: invalid arguments: missing required property "a"'
    assert result.value is None


@pytest.mark.anyio
@pytest.mark.parametrize("bad", ["x", [1], {"n": 1}, 1.5, None], ids=repr)
async def test_an_argument_of_the_wrong_type_is_invalid_args(bad) -> None:
    harness, _ = harness_with(add)

    result = await harness.execute(typed_call("add", {"a": bad}))

    assert result.is_error
    assert result.error.info.code == "INVALID_ARGS"
    assert result.error.message.startswith('invalid arguments: "a": ')


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("annotation", "coercible"),
    [(int, "5"), (int, True), (str, 5), (bool, 1), (bool, "true"), (float, "1.5")],
    ids=repr,
)
async def test_an_argument_the_schema_rejects_is_invalid_args_even_if_it_could_be_coerced(annotation, coercible) -> None:
    runs: list[Any] = []

    async def take(value):
        runs.append(value)
        return "ran"

    take.__annotations__ = {"value": annotation, "return": str}
    harness, _ = harness_with(tool(take))

    result = await harness.execute(typed_call("take", {"value": coercible}))

    assert result.is_error
    assert result.error.info.code == "INVALID_ARGS"
    assert result.error.message.startswith('invalid arguments: "value": ')
    assert runs == []


@pytest.mark.anyio
@pytest.mark.parametrize("arguments", ["{\"a\": 1", [1, 2], 7, None], ids=repr)
async def test_arguments_that_are_not_an_object_are_invalid_args(arguments) -> None:
    harness, _ = harness_with(add)

    result = await harness.execute(typed_call("add", arguments))

    assert result.is_error
    assert result.error.info.code == "INVALID_ARGS"
    assert result.error.message.startswith("invalid arguments: ")


@pytest.mark.anyio
async def test_argument_checks_happen_inside_the_body_stage_after_every_policy_stage() -> None:
    body_runs: list[int] = []

    @tool
    async def count(n: int) -> int:
        body_runs.append(n)
        return n

    trace = StageTrace()
    harness, seen = harness_with(count, plugins=(trace,))

    result = await harness.execute(typed_call("count", {"n": "not a number"}))

    assert result.error.info.code == "INVALID_ARGS"
    assert trace.stages == ["pre", "guard", "execute:before", "execute:after:error", "post:error"]
    assert body_runs == []
    assert seen == [result]


@pytest.mark.anyio
async def test_a_valid_call_passes_the_same_stages_and_runs_the_function() -> None:
    body_runs: list[int] = []

    @tool
    async def count(n: int) -> int:
        body_runs.append(n)
        return n

    trace = StageTrace()
    harness, _ = harness_with(count, plugins=(trace,))

    result = await harness.execute(typed_call("count", {"n": 3}))

    assert result.value == 3
    assert trace.stages == ["pre", "guard", "execute:before", "execute:after:ok", "post:ok"]
    assert body_runs == [3]


@pytest.mark.anyio
async def test_the_ctx_parameter_receives_the_run_context_and_is_not_a_model_argument() -> None:
    contexts: list[Any] = []

    @tool
    async def whoami(prefix: str, ctx: RunContext) -> str:
        contexts.append(ctx)
        return f"{prefix}{ctx.call_id}"

    assert set(whoami.parameters["properties"]) == {"prefix"}
    assert whoami.parameters["required"] == ["prefix"]
    harness, _ = harness_with(whoami)

    result = await harness.execute(typed_call("whoami", {"prefix": "id="}, call_id="c7"))

    assert text_of(result) == "id=c7"
    (ctx,) = contexts
    assert isinstance(ctx, RunContext)
    assert ctx.call_id == "c7"
    assert ctx.name == "whoami"
    assert ctx.agent == "main"


@pytest.mark.anyio
async def test_a_dict_value_renders_as_indented_json_text() -> None:
    @tool
    async def describe(name: str) -> dict:
        return {"name": name, "tags": ["a", "b"], "size": 2}

    harness, _ = harness_with(describe)

    result = await harness.execute(typed_call("describe", {"name": "thing"}))

    assert not result.is_error
    assert result.value == {"name": "thing", "tags": ["a", "b"], "size": 2}
    assert text_of(result) == json.dumps({"name": "thing", "tags": ["a", "b"], "size": 2}, indent=2)
    assert text_of(result).startswith('{\n  "name": "thing"')


@pytest.mark.anyio
async def test_a_str_value_renders_as_the_text_itself() -> None:
    @tool
    async def greet(name: str) -> str:
        return f"hello {name}"

    harness, _ = harness_with(greet)

    result = await harness.execute(typed_call("greet", {"name": "you"}))

    assert text_of(result) == "hello you"


@pytest.mark.anyio
async def test_var_keyword_parameters_receive_the_undeclared_keys() -> None:
    received: list[dict[str, Any]] = []

    @tool
    async def collect(label: str, **rest: Any) -> str:
        received.append(dict(rest))
        return label

    harness, _ = harness_with(collect)

    result = await harness.execute(typed_call("collect", {"label": "L", "x": 1, "y": [True]}))

    assert not result.is_error and text_of(result) == "L"
    assert received == [{"x": 1, "y": [True]}]


@pytest.mark.anyio
async def test_undeclared_keys_are_ignored_without_var_keyword_parameters() -> None:
    harness, _ = harness_with(add)

    result = await harness.execute(typed_call("add", {"a": 1, "b": 2, "c": 100}))

    assert result.value == 3


@pytest.mark.anyio
async def test_a_value_that_breaks_the_return_annotation_is_invalid_tool_output() -> None:
    @tool
    async def liar(n: int) -> int:
        return "not an int"  # type: ignore[return-value]

    harness, _ = harness_with(liar)

    result = await harness.execute(typed_call("liar", {"n": 1}))

    assert result.is_error
    assert result.error.info.code == "INVALID_TOOL_OUTPUT"
    assert result.error.message.startswith('tool "liar" returned invalid output: ')
