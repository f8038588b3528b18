"""reference/core-pipeline.md §2.7 (ToolDefinition and its registration rules) and §1.7 (tools_change)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from harness_core import (
    HarnessError,
    TextBlock,
    ToolDefinition,
    ToolDefinitionError,
    ToolOutput,
    hookimpl,
)

from .support import call, make_echo, text_of


class ChangeCounter:
    """Counts tools_change notifications and can be told to raise from them."""

    def __init__(self) -> None:
        self.changes = 0
        self.raising = False

    @hookimpl
    def tools_change(self) -> None:
        self.changes += 1
        if self.raising:
            raise RuntimeError("listener broke")


class Toolbox:
    """A plugin that contributes tools through harness_register_tools and keeps the disposers."""

    def __init__(self, *definitions: ToolDefinition) -> None:
        self.definitions = definitions
        self.disposers: list[Any] = []

    @hookimpl
    def harness_register_tools(self, register) -> None:
        for definition in self.definitions:
            self.disposers.append(register(definition))


def named(body, name: str, **overrides: Any) -> ToolDefinition:
    return make_echo(body, name=name, description=f"the {name} tool", **overrides)


# --- dispose --------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_dispose_unregisters_the_tool_so_a_later_call_is_an_unknown_tool(make_harness, body) -> None:
    harness = make_harness(echo=False)
    dispose = harness.tools.register(make_echo(body))
    assert "echo" in harness.tools

    dispose()

    assert "echo" not in harness.tools
    result = await harness.execute(call("echo", text="hi"))
    assert result.is_error
    assert result.error.message == 'unknown tool "echo"'
    assert result.error.info.code == "UNKNOWN_TOOL"
    assert text_of(result) == 'Error: unknown tool "echo"'
    assert body.runs == []


def test_disposing_twice_is_harmless(make_harness, body) -> None:
    harness = make_harness(echo=False)
    dispose = harness.tools.register(make_echo(body))

    dispose()
    dispose()

    assert harness.tools.names() == []


@pytest.mark.anyio
async def test_a_stale_dispose_leaves_a_later_registration_of_the_same_name_in_place(make_harness, body) -> None:
    harness = make_harness(echo=False)
    first = harness.tools.register(make_echo(body))
    first()
    second_definition = make_echo(body, description="someone else's echo")
    harness.tools.register(second_definition)

    first()

    assert harness.tools.names() == ["echo"]
    assert harness.tools.get("echo").description == "someone else's echo"
    result = await harness.execute(call("echo", text="still here"))
    assert not result.is_error and text_of(result) == "still here"


def test_a_stale_dispose_leaves_a_re_registration_of_the_same_definition_in_place(make_harness, body) -> None:
    harness = make_harness(echo=False)
    first = harness.tools.register(make_echo(body))
    registered = harness.tools.get("echo")
    first()
    harness.tools.register(registered)

    first()

    assert harness.tools.names() == ["echo"]


def test_a_registration_dispose_only_removes_its_own_tool(make_harness, body) -> None:
    harness = make_harness(echo=False)
    dispose_a = harness.tools.register(named(body, "a"))
    harness.tools.register(named(body, "b"))

    dispose_a()

    assert harness.tools.names() == ["b"]


# --- schemas --------------------------------------------------------------------------------


def test_schemas_show_only_name_description_and_parameters_in_registration_order(make_harness, body) -> None:
    harness = make_harness(echo=False)
    harness.tools.register(
        named(
            body,
            "first",
            parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
            timeout_ms=5_000,
            is_concurrency_safe=lambda args: True,
            finalize_content=lambda execution, result: None,
        )
    )
    harness.tools.register(named(body, "second"))

    schemas = harness.tools.schemas()

    assert [set(schema) for schema in schemas] == [{"name", "description", "parameters"}] * 2
    assert schemas[0] == {
        "name": "first",
        "description": "the first tool",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    }
    assert schemas[1]["name"] == "second"


def test_schemas_are_fresh_mutable_copies_that_do_not_leak_into_the_next_call(make_harness) -> None:
    harness = make_harness()
    schemas = harness.tools.schemas()
    schemas[0]["name"] = "hacked"
    schemas[0]["parameters"]["properties"]["text"]["type"] = "integer"
    schemas[0]["parameters"]["properties"]["extra"] = {"type": "string"}
    schemas[0]["parameters"]["additionalProperties"] = False
    schemas.append({"name": "ghost"})

    again = harness.tools.schemas()

    assert again == [
        {
            "name": "echo",
            "description": "Echo text",
            "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
        }
    ]
    assert type(again[0]["parameters"]) is dict
    assert type(again[0]["parameters"]["properties"]) is dict


def test_the_callers_parameters_dict_is_not_retained_by_registration(make_harness, body) -> None:
    harness = make_harness(echo=False)
    parameters = {"type": "object", "properties": {"text": {"type": "string"}}}
    harness.tools.register(make_echo(body, parameters=parameters))

    parameters["properties"]["text"]["type"] = "integer"
    parameters["injected"] = True

    assert harness.tools.schemas()[0]["parameters"] == {"type": "object", "properties": {"text": {"type": "string"}}}


# --- registration errors ----------------------------------------------------------------------


def test_definition_errors_are_coded_harness_errors_and_type_errors() -> None:
    assert issubclass(ToolDefinitionError, TypeError)
    assert issubclass(ToolDefinitionError, HarnessError)


def test_run_code_is_reserved_for_the_code_mode_transport(make_harness, body) -> None:
    harness = make_harness(echo=False)

    with pytest.raises(ToolDefinitionError, match="reserved for the Code Mode presentation transport"):
        harness.tools.register(make_echo(body, name="run_code"))

    assert "run_code" not in harness.tools


def test_a_duplicate_name_is_refused_and_the_first_registration_stays(make_harness, body) -> None:
    harness = make_harness()
    original = harness.tools.get("echo")

    with pytest.raises(ToolDefinitionError, match='tool "echo" is already registered'):
        harness.tools.register(make_echo(body, description="impostor"))

    assert harness.tools.get("echo") is original
    assert harness.tools.names() == ["echo"]


@pytest.mark.parametrize(
    "timeout_ms",
    [0, -1, 0.0, -0.5, math.inf, -math.inf, math.nan, True, False, "5", [5]],
    ids=repr,
)
def test_a_timeout_that_is_not_a_positive_finite_number_is_refused(make_harness, body, timeout_ms) -> None:
    harness = make_harness(echo=False)

    with pytest.raises(ToolDefinitionError) as caught:
        harness.tools.register(make_echo(body, timeout_ms=timeout_ms))

    assert str(caught.value) == 'tool "echo" timeout_ms must be a positive finite number'
    assert "echo" not in harness.tools


@pytest.mark.parametrize("timeout_ms", [1, 0.5, 120_000, 1e12], ids=repr)
def test_a_positive_finite_timeout_is_accepted_and_kept(make_harness, body, timeout_ms) -> None:
    harness = make_harness(echo=False)

    harness.tools.register(make_echo(body, timeout_ms=timeout_ms))

    assert harness.tools.get("echo").timeout_ms == timeout_ms
    assert "timeout" not in str(harness.tools.schemas())


@pytest.mark.parametrize(
    "output",
    [
        None,
        {"schema": {"type": "string"}, "render": lambda args, value: [TextBlock(text=value)]},
        ToolOutput(schema={"type": "string"}, render="not callable"),
        ToolOutput(schema={"type": "string"}, render=lambda args, value: [], presentation_meta="nope"),
    ],
    ids=["none", "a-dict", "render-not-callable", "presentation-meta-not-callable"],
)
def test_a_missing_or_malformed_output_declaration_is_refused(make_harness, body, output) -> None:
    harness = make_harness(echo=False)

    with pytest.raises(ToolDefinitionError, match='tool "echo" must declare output'):
        harness.tools.register(make_echo(body, output=output))

    assert "echo" not in harness.tools


@pytest.mark.parametrize(
    "schema",
    [{"$ref": "#/x"}, {"type": "string", "pattern": "^a"}, {"type": "nonsense"}],
    ids=["ref", "pattern", "unknown-type"],
)
def test_an_output_schema_outside_the_supported_subset_is_refused(make_harness, body, schema) -> None:
    harness = make_harness(echo=False)
    output = ToolOutput(schema=schema, render=lambda args, value: [TextBlock(text=str(value))])

    with pytest.raises(ToolDefinitionError, match='tool "echo" output schema is not supported'):
        harness.tools.register(make_echo(body, output=output))

    assert "echo" not in harness.tools


def test_a_plain_def_execute_is_refused(make_harness) -> None:
    harness = make_harness(echo=False)

    def execute(args, ctx):
        return "sync"

    with pytest.raises(ToolDefinitionError, match='tool "echo" execute must be an async function'):
        harness.tools.register(make_echo(execute, execute=execute))

    assert "echo" not in harness.tools


@pytest.mark.parametrize(
    "parameters",
    [["type", "object"], "object", None, 42, {"type": "object", "default": math.nan}],
    ids=["list", "str", "none", "int", "non-json"],
)
def test_parameters_that_are_not_a_json_schema_object_are_refused(make_harness, body, parameters) -> None:
    harness = make_harness(echo=False)

    with pytest.raises(ToolDefinitionError, match='tool "echo" parameters must be'):
        harness.tools.register(make_echo(body, parameters=parameters))

    assert "echo" not in harness.tools


@pytest.mark.parametrize(
    "candidate",
    [
        {"name": "echo", "description": "Echo text", "parameters": {}},
        "echo",
        None,
    ],
    ids=["a-dict", "a-str", "none"],
)
def test_anything_but_a_tool_definition_is_refused(make_harness, candidate) -> None:
    harness = make_harness(echo=False)

    with pytest.raises(ToolDefinitionError, match="register\\(\\) needs a ToolDefinition"):
        harness.tools.register(candidate)

    assert harness.tools.names() == []


def test_a_plain_async_function_is_not_a_tool_definition(make_harness) -> None:
    harness = make_harness(echo=False)

    async def echo(args, ctx):
        return "hi"

    with pytest.raises(ToolDefinitionError, match="got function"):
        harness.tools.register(echo)


@pytest.mark.parametrize("name", ["", 7, None], ids=repr)
def test_a_tool_name_must_be_a_non_empty_str(make_harness, body, name) -> None:
    harness = make_harness(echo=False)

    with pytest.raises(ToolDefinitionError, match="a tool name must be a non-empty str"):
        harness.tools.register(make_echo(body, name=name))


# --- tools_change -----------------------------------------------------------------------------


def test_tools_change_fires_once_on_register_and_once_on_dispose(make_harness, body) -> None:
    counter = ChangeCounter()
    harness = make_harness(counter, echo=False)

    dispose = harness.tools.register(make_echo(body))
    assert counter.changes == 1

    dispose()
    assert counter.changes == 2

    dispose()
    assert counter.changes == 2


def test_tools_change_does_not_fire_for_a_refused_registration(make_harness, body) -> None:
    counter = ChangeCounter()
    harness = make_harness(counter)
    before = counter.changes

    with pytest.raises(ToolDefinitionError):
        harness.tools.register(make_echo(body))
    with pytest.raises(ToolDefinitionError):
        harness.tools.register(make_echo(body, name="run_code"))

    assert counter.changes == before


@pytest.mark.anyio
async def test_a_raising_tools_change_listener_rolls_the_registration_back(make_harness, body) -> None:
    counter = ChangeCounter()
    harness = make_harness(counter, echo=False)
    counter.raising = True

    with pytest.raises(RuntimeError, match="listener broke"):
        harness.tools.register(make_echo(body))

    assert "echo" not in harness.tools
    assert harness.tools.schemas() == []
    result = await harness.execute(call("echo", text="hi"))
    assert result.error.info.code == "UNKNOWN_TOOL"

    counter.raising = False
    dispose = harness.tools.register(make_echo(body))

    assert harness.tools.names() == ["echo"]
    result = await harness.execute(call("echo", text="hi"))
    assert not result.is_error and text_of(result) == "hi"
    dispose()
    assert harness.tools.names() == []


def test_a_raising_tools_change_listener_keeps_a_disposed_tool_registered(make_harness, body) -> None:
    counter = ChangeCounter()
    harness = make_harness(counter, echo=False)
    dispose = harness.tools.register(make_echo(body))
    counter.raising = True

    with pytest.raises(RuntimeError, match="listener broke"):
        dispose()

    assert harness.tools.names() == ["echo"]
    counter.raising = False
    dispose()
    assert harness.tools.names() == []


# --- harness_register_tools -------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_plugin_contributes_tools_when_given_to_the_harness(make_harness, body) -> None:
    toolbox = Toolbox(named(body, "alpha"), named(body, "beta"))

    harness = make_harness(toolbox, echo=False)

    assert harness.tools.names() == ["alpha", "beta"]
    result = await harness.execute(call("beta", text="from a plugin"))
    assert not result.is_error and text_of(result) == "from a plugin"


@pytest.mark.anyio
async def test_unregistering_a_plugin_removes_the_tools_it_contributed(make_harness, body) -> None:
    counter = ChangeCounter()
    toolbox = Toolbox(named(body, "alpha"), named(body, "beta"))
    harness = make_harness(counter)
    harness.register(toolbox)
    assert harness.tools.names() == ["echo", "alpha", "beta"]
    changes = counter.changes

    harness.unregister(toolbox)

    assert harness.tools.names() == ["echo"]
    assert counter.changes == changes + 2
    result = await harness.execute(call("alpha", text="hi"))
    assert result.error.message == 'unknown tool "alpha"'


def test_the_dispose_a_plugin_gets_from_register_removes_its_tool(make_harness, body) -> None:
    toolbox = Toolbox(named(body, "alpha"), named(body, "beta"))
    harness = make_harness(toolbox, echo=False)

    toolbox.disposers[0]()

    assert harness.tools.names() == ["beta"]
    harness.unregister(toolbox)
    assert harness.tools.names() == []


def test_a_plugin_whose_tool_name_is_taken_is_not_registered_and_leaves_nothing_behind(make_harness, body) -> None:
    toolbox = Toolbox(named(body, "alpha"), make_echo(body, description="second echo"))
    harness = make_harness()

    with pytest.raises(ToolDefinitionError, match='tool "echo" is already registered'):
        harness.register(toolbox)

    assert harness.tools.names() == ["echo"]
    assert harness.tools.get("echo").description == "Echo text"
    assert all(plugin is not toolbox for _, plugin in harness.plugins())
