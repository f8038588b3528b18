"""reference/core-pipeline.md §6.1, §6.2, §6.7: presentation modes, run_code's contract and the code collapse."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest

from harness_core import (
    ConfigError,
    Harness,
    Signal,
    TextBlock,
    ToolCall,
    ToolResult,
    hookimpl,
)
from harness_core.code_mode import CodeRunRequest, CodeRunResult
from harness_core.code_transport import CODE_ONLY_RULE, render_run_code

from .code_mode_support import PolicyLog, PythonRuntime, code_harness, echo_tool, run_code


def text(result: ToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextBlock))


def names(schemas: list[dict[str, Any]]) -> list[str]:
    return [schema["name"] for schema in schemas]


# --- Presentation modes ---------------------------------------------------------------------------


def test_native_is_the_default_and_shows_no_run_code() -> None:
    harness = Harness()
    harness.tools.register(echo_tool())
    assert harness.presentation_mode("main") == "native"
    assert names(harness.schemas("main")) == ["echo"] == names(harness.tools.schemas())


def test_code_mode_shows_only_run_code_and_both_shows_the_tools_and_run_code() -> None:
    harness = code_harness(config={"agents": {"mixed": "both", "plain": "native"}})
    assert names(harness.schemas("main")) == ["run_code"]
    assert names(harness.schemas("mixed")) == ["echo", "run_code"]
    assert names(harness.schemas("plain")) == ["echo"]
    # The registry's own list never changes with the mode.
    assert names(harness.tools.schemas()) == ["echo"]
    schema = harness.schemas("main")[0]
    assert schema["parameters"]["required"] == ["code", "description"]
    assert set(schema) == {"name", "description", "parameters"}


def test_a_call_without_an_agent_gets_the_deployment_mode() -> None:
    harness = code_harness(mode="both", config={"agents": {"main": "code"}})
    assert harness.presentation_mode(None) == "both"
    assert harness.presentation_mode("main") == "code"


def test_present_as_overrides_the_configuration_once_per_agent_and_fires_tools_change() -> None:
    changes: list[str] = []

    class Watcher:
        @hookimpl
        def tools_change(self) -> None:
            changes.append("change")

    harness = code_harness(Watcher(), mode="native")
    changes.clear()
    dispose = harness.present_as("main", "code")
    assert harness.presentation_mode("main") == "code" and harness.presentation_mode("other") == "native"
    with pytest.raises(ValueError, match='agent "main" already declared presentation mode "code"'):
        harness.present_as("main", "both")
    dispose()
    assert harness.presentation_mode("main") == "native"
    assert changes == ["change", "change"]
    harness.present_as("main", "both")
    assert harness.presentation_mode("main") == "both"


def test_present_as_refuses_an_unknown_mode() -> None:
    with pytest.raises(ValueError, match='must be "native", "code" or "both", got \'codes\''):
        Harness().present_as("main", "codes")  # type: ignore[arg-type]


# --- [code_mode] validation -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ({"mode": "python"}, "code_mode.mode"),
        ({"agents": {"main": "sometimes"}}, "code_mode.agents.main"),
        ({"max_parallel_sub_calls": 0}, "code_mode.max_parallel_sub_calls"),
        ({"max_parallel_sub_calls": -3}, "code_mode.max_parallel_sub_calls"),
        ({"max_parallel_sub_calls": 2.5}, "code_mode.max_parallel_sub_calls"),
        ({"modes": "code"}, "code_mode.modes"),
    ],
)
def test_a_bad_code_mode_section_is_a_config_error_naming_the_key(section: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        Harness(config={"code_mode": section})
    assert f"config: {key}: " in str(caught.value)


def test_the_code_mode_section_is_read_from_harness_toml(tmp_path: Path) -> None:
    from harness_core import ConfigSource

    (tmp_path / "harness.toml").write_text('[code_mode]\nmode = "both"\nagents = { reviewer = "code" }\n')
    harness = Harness(config=ConfigSource.for_project(tmp_path, user_file=False))
    assert harness.presentation_mode("reviewer") == "code"
    assert harness.presentation_mode("anyone") == "both"
    assert harness.config.section("code_mode").max_parallel_sub_calls == 10


# --- Native: run_code does not exist --------------------------------------------------------------


@pytest.mark.anyio
async def test_under_native_run_code_fails_like_any_unknown_tool_after_policy() -> None:
    policy = PolicyLog()
    harness = code_harness(policy, mode="native")
    result = await harness.execute(run_code("return 1"))
    assert result.is_error and result.error is not None
    assert result.error.message == 'unknown tool "run_code"'
    assert result.error.info is not None and result.error.info.code == "UNKNOWN_TOOL"
    # The normal path for an invisible name: policy saw it (reference §10.4).
    assert [execution.name for execution in policy.pre] == ["run_code"]


# --- The code collapse (§6.7) ---------------------------------------------------------------------

ROUTE = (
    'unknown tool "echo": only `run_code` is callable directly — '
    "call `echo` from inside a `run_code` program instead"
)


class Asker:
    """Asks for every call and counts the approval requests."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    @hookimpl
    async def tools_pre_execute(self, execution: Any, call_next: Any) -> Any:
        from harness_core import Ask

        return Ask(reason="check")

    @hookimpl
    async def approval_request(self, request: Any) -> str:
        self.asked.append(request.call_id)
        return "allowed-once"


@pytest.mark.anyio
async def test_code_mode_collapses_a_direct_call_before_any_policy() -> None:
    policy, asker = PolicyLog(), Asker()
    finalized: list[str] = []
    tool = dataclasses.replace(
        echo_tool(), finalize_content=lambda execution, result: finalized.append(execution.call_id)
    )
    harness = code_harness(asker, policy, tools=(tool,))
    result = await harness.execute(ToolCall(call_id="d1", name="echo", arguments={"text": "hi"}, agent="main"))
    assert result.is_error and result.error is not None
    assert result.error.message == ROUTE
    assert text(result) == "Error: " + ROUTE
    assert result.error.info is not None
    assert result.error.info.to_json() == {"name": "ToolNotFoundError", "code": "UNKNOWN_TOOL"}
    assert policy.pre == [] and policy.guarded == [] and asker.asked == []
    # tools_result still fires exactly once; the collapsed call's finalizer is dropped.
    assert [r for _, r in policy.results] == [result]
    assert finalized == []


@pytest.mark.anyio
async def test_a_pre_aborted_collapsed_call_is_aborted_before_dispatch() -> None:
    signal = Signal()
    signal.abort("stop")
    harness = code_harness()
    result = await harness.execute(ToolCall(call_id="d1", name="echo", agent="main", signal=signal))
    assert result.error is not None and result.error.info is not None
    assert result.error.info.code == "ABORTED_BEFORE_DISPATCH"


@pytest.mark.anyio
async def test_a_name_visible_nowhere_takes_the_normal_path_under_code_mode() -> None:
    policy = PolicyLog()
    harness = code_harness(policy)
    result = await harness.execute(ToolCall(call_id="d1", name="nope", agent="main"))
    assert result.error is not None and result.error.message == 'unknown tool "nope"'
    assert [execution.name for execution in policy.pre] == ["nope"]


@pytest.mark.anyio
async def test_the_collapse_applies_only_to_agents_whose_mode_is_code() -> None:
    harness = code_harness(mode="native", config={"agents": {"coder": "code", "mixed": "both"}})
    collapsed = await harness.execute(ToolCall(call_id="d1", name="echo", arguments={"text": "a"}, agent="coder"))
    native = await harness.execute(ToolCall(call_id="d2", name="echo", arguments={"text": "b"}, agent="other"))
    both = await harness.execute(ToolCall(call_id="d3", name="echo", arguments={"text": "c"}, agent="mixed"))
    assert collapsed.error is not None and collapsed.error.message.startswith('unknown tool "echo": only')
    assert (native.is_error, native.value) == (False, "b")
    assert (both.is_error, both.value) == (False, "c")


@pytest.mark.anyio
async def test_dry_run_and_batches_agree_with_the_collapse() -> None:
    harness = code_harness(tools=(echo_tool(safe=True),))
    verdict = await harness.dry_run(ToolCall(call_id="d1", name="echo", agent="main"))
    assert (verdict.decision, verdict.reason) == ("deny", ROUTE)
    results = await harness.execute_batch(
        [ToolCall(call_id="b1", name="echo", arguments={"text": "x"}, agent="main"), run_code("return 5", call_id="b2")]
    )
    assert results[0].error is not None and results[0].error.message == ROUTE
    assert (results[1].is_error, results[1].value) == (False, {"logs": [], "result": 5})


@pytest.mark.anyio
async def test_both_mode_runs_native_calls_and_run_code() -> None:
    harness = code_harness(mode="both")
    native = await harness.execute(ToolCall(call_id="d1", name="echo", arguments={"text": "hi"}, agent="main"))
    program = await harness.execute(run_code('return await tools.echo({"text": "there"})', call_id="d2"))
    assert native.value == "hi"
    assert program.value == {"logs": [], "result": "there"}


# --- run_code's own arguments, runtime and failures (§6.2, §2.9) ----------------------------------


@pytest.mark.anyio
async def test_run_code_needs_code_and_description() -> None:
    harness = code_harness()
    call = ToolCall(call_id="c1", name="run_code", arguments={"code": "return 1"}, agent="main")
    result = await harness.execute(call)
    assert result.error is not None and result.error.info is not None
    assert result.error.info.code == "INVALID_ARGS"
    assert result.error.message == 'invalid arguments: missing required property "description"'
    call = ToolCall(call_id="c2", name="run_code", arguments={"code": 1, "description": "x"}, agent="main")
    result = await harness.execute(call)
    assert result.error is not None
    assert result.error.message == 'invalid arguments: "code": input should be a valid string'


@pytest.mark.anyio
async def test_a_blank_description_is_a_plain_error() -> None:
    result = await code_harness().execute(run_code("return 1", description="  \n "))
    assert result.error is not None
    assert result.error.message == "invalid description: expected a non-empty string"
    assert result.error.info is None


@pytest.mark.anyio
async def test_without_a_runtime_run_code_fails_naming_the_deployment_mode() -> None:
    harness = code_harness(mode="native", runtime=False, config={"agents": {"main": "code"}})
    result = await harness.execute(run_code("return 1"))
    assert result.error is not None and result.error.info is not None
    assert "requires a code runtime" in result.error.message
    assert '"native"' in result.error.message  # the deployment default, not the agent's mode (§10.25)
    assert result.error.info.code == "CODE_RUNTIME_MISSING"


@pytest.mark.anyio
async def test_a_failed_program_is_code_run_failed_with_its_captured_output() -> None:
    result = await code_harness().execute(
        run_code(
            """
            print("starting")
            print("half way")
            raise RuntimeError("boom")
            """
        )
    )
    assert result.error is not None and result.error.info is not None
    assert result.error.info.to_json() == {"name": "CodeRunFailedError", "code": "CODE_RUN_FAILED"}
    assert result.error.message == (
        "code run failed (exception): RuntimeError: boom\nCaptured output:\nstarting\nhalf way"
    )


@pytest.mark.anyio
async def test_a_failed_program_without_output_has_no_captured_output_part() -> None:
    result = await code_harness().execute(run_code("return (1"))
    assert result.error is not None and result.error.message.startswith("code run failed (syntax): ")
    assert "Captured output" not in result.error.message


class RaisingRuntime(PythonRuntime):
    async def run(self, request: CodeRunRequest) -> CodeRunResult:
        raise OSError("the interpreter could not start")


class WrongRuntime(PythonRuntime):
    async def run(self, request: CodeRunRequest) -> Any:
        return {"logs": []}


@pytest.mark.anyio
async def test_a_raising_runtime_becomes_a_normalized_error() -> None:
    result = await code_harness(runtime=RaisingRuntime()).execute(run_code("return 1"))
    assert result.error is not None and result.error.message == "the interpreter could not start"
    assert result.error.info is None


@pytest.mark.anyio
async def test_a_runtime_returning_the_wrong_type_fails_the_call() -> None:
    result = await code_harness(runtime=WrongRuntime()).execute(run_code("return 1"))
    assert result.error is not None and "expected CodeRunResult" in result.error.message


@pytest.mark.anyio
async def test_a_result_that_is_not_lossless_json_is_invalid_output() -> None:
    result = await code_harness().execute(run_code("return {1, 2}"))
    assert result.error is not None and result.error.info is not None
    assert result.error.info.code == "INVALID_TOOL_OUTPUT"


@pytest.mark.anyio
async def test_no_result_leaves_the_key_out_and_null_is_kept() -> None:
    harness = code_harness()
    nothing = await harness.execute(run_code('print("x")', call_id="a"))
    null = await harness.execute(run_code("return None", call_id="b"))
    assert nothing.value == {"logs": ["x"]} and text(nothing) == "x"
    assert null.value == {"logs": [], "result": None} and text(null) == "null"


def test_present_call_is_the_generic_card_with_the_description_and_the_code() -> None:
    definition = code_harness().visible_tool("run_code", "main")
    assert definition is not None and definition.present_call is not None
    card = definition.present_call({"code": "return 1", "description": "add things"})
    assert card == {"card": "generic", "title": "add things", "kind": "execute", "raw_input": "return 1"}
    assert definition.present_call({"code": 1}) is None
    assert definition.present_result is None


# --- Rendering (§6.2) -------------------------------------------------------------------------------


def rendered(value: Any) -> str:
    blocks = render_run_code({}, value)
    assert len(blocks) == 1 and isinstance(blocks[0], TextBlock)
    return blocks[0].text


def test_render_joins_the_log_lines_and_the_result() -> None:
    assert rendered({"logs": ["a", "b"], "result": "done"}) == "a\nb\ndone"
    assert rendered({"logs": ["a"]}) == "a"
    assert rendered({"logs": [], "result": "raw\ntext"}) == "raw\ntext"


def test_render_says_so_when_there_is_no_output() -> None:
    assert rendered({"logs": []}) == "(run_code completed with no output)"
    assert rendered({"logs": [], "result": ""}) == "(run_code completed with no output)"


def test_render_writes_values_as_two_space_json() -> None:
    assert rendered({"logs": [], "result": {"n": 42, "ok": True}}) == '{\n  "n": 42,\n  "ok": true\n}'
    assert rendered({"logs": [], "result": {}}) == "{}"
    assert rendered({"logs": [], "result": []}) == "[]"
    assert rendered({"logs": [], "result": None}) == "null"
    assert rendered({"logs": [], "result": [1, "é"]}) == '[\n  1,\n  "é"\n]'


def test_render_compacts_subtrees_once_the_indentation_would_pass_ten_columns() -> None:
    value = {"a": {"b": {"c": {"d": {"e": {"f": {"g": 1}, "h": [1, 2]}}}}}}
    expected = textwrap.dedent(
        """\
        {
          "a": {
            "b": {
              "c": {
                "d": {
                  "e": {"f":{"g":1},"h":[1,2]}
                }
              }
            }
          }
        }"""
    )
    assert rendered({"logs": [], "result": value}) == expected


def test_render_handles_values_nested_thousands_deep() -> None:
    value: Any = 0
    for _ in range(5000):
        value = [value]
    out = rendered({"logs": [], "result": value})
    assert out.endswith("]" * 4995 + "\n        ]\n      ]\n    ]\n  ]\n]")
    assert out.count("[") == 5000


# --- The SDK text -------------------------------------------------------------------------------------


def test_code_sdk_is_the_runtime_sdk_plus_the_code_only_rule() -> None:
    harness = code_harness(mode="native", config={"agents": {"coder": "code", "mixed": "both"}})
    assert harness.code_sdk("plain") == ""
    sdk = harness.code_sdk("mixed")
    assert "await tools.echo(arguments)" in sdk and CODE_ONLY_RULE not in sdk
    assert harness.code_sdk("coder").startswith(CODE_ONLY_RULE)


def test_code_sdk_without_a_runtime_raises() -> None:
    from harness_core.code_mode import CodeRuntimeMissingError

    with pytest.raises(CodeRuntimeMissingError, match="requires a code runtime"):
        code_harness(runtime=False).code_sdk("main")


def test_an_async_code_runtime_impl_is_refused_at_registration() -> None:
    from harness_core import PluginRefusedError

    class AsyncRuntime:
        @hookimpl
        async def code_runtime(self) -> None:
            return None

    with pytest.raises(PluginRefusedError, match="implements code_runtime as async def"):
        Harness(plugins=[AsyncRuntime()])


def test_a_code_runtime_answer_without_run_fails_the_call_clearly() -> None:
    harness = code_harness(runtime=object())
    result = anyio.run(harness.execute, run_code("return 1"))
    assert result.error is not None
    assert "expected a CodeRuntime with run(request) and render_sdk(bindings)" in result.error.message


# --- harness tools --agent ----------------------------------------------------------------------------

PLUGIN = '''
from harness_core import tool, hookimpl

@tool
async def greet(name: str) -> str:
    """Greet someone."""
    return "hello " + name

class Tools:
    @hookimpl
    def harness_register_tools(self, register):
        register(greet)
'''


def harness_cli(project: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HARNESS_LOAD_PLUGINS": "", "HARNESS_USER_CONFIG": ""}
    return subprocess.run(
        [sys.executable, "-m", "harness_core", "-C", str(project), *argv],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


def test_harness_tools_shows_the_agents_view(tmp_path: Path) -> None:
    (tmp_path / "cm_cli_tools.py").write_text(PLUGIN)
    (tmp_path / "harness.toml").write_text(
        '[plugins]\nmodules = ["cm_cli_tools:Tools"]\n[code_mode]\nagents = { coder = "code", mixed = "both" }\n'
    )
    coder = harness_cli(tmp_path, "tools", "--agent", "coder", "--json")
    assert coder.returncode == 0, coder.stderr
    assert [schema["name"] for schema in json.loads(coder.stdout)] == ["run_code"]
    mixed = harness_cli(tmp_path, "tools", "--agent", "mixed", "--json")
    assert [schema["name"] for schema in json.loads(mixed.stdout)] == ["greet", "run_code"]
    default = harness_cli(tmp_path, "tools", "--json")
    assert [schema["name"] for schema in json.loads(default.stdout)] == ["greet"]
    plain = harness_cli(tmp_path, "tools", "--agent", "coder")
    assert plain.stdout.startswith("run_code: Run a short program")


def test_harness_call_under_code_mode_refuses_a_direct_call_with_the_route_message(tmp_path: Path) -> None:
    (tmp_path / "cm_cli_call.py").write_text(PLUGIN)
    (tmp_path / "harness.toml").write_text('[plugins]\nmodules = ["cm_cli_call:Tools"]\n[code_mode]\nmode = "code"\n')
    done = harness_cli(tmp_path, "call", "greet", '{"name": "ann"}', "--json")
    assert done.returncode == 1
    outcome = json.loads(done.stdout)
    assert outcome["error"]["info"] == {"name": "ToolNotFoundError", "code": "UNKNOWN_TOOL"}
    assert "only `run_code` is callable directly" in outcome["error"]["message"]



@pytest.mark.anyio
@pytest.mark.parametrize(("middle_agent", "overlap"), [("other", True), ("coder", False)])
async def test_a_collapsed_call_is_an_exclusive_barrier_in_a_batch(middle_agent: str, overlap: bool) -> None:
    order: list[str] = []

    async def work(args: Any, ctx: Any) -> str:
        order.append(f"start {args['text']}")
        for _ in range(5):
            await anyio.sleep(0)
        order.append(f"end {args['text']}")
        return args["text"]

    tool = echo_tool(safe=True, body=work)
    harness = code_harness(mode="native", config={"agents": {"coder": "code"}}, tools=(tool,))
    calls = [
        ToolCall(call_id="b1", name="echo", arguments={"text": "p1"}, agent="other"),
        ToolCall(call_id="b2", name="echo", arguments={"text": "mid"}, agent=middle_agent),
        ToolCall(call_id="b3", name="echo", arguments={"text": "p2"}, agent="other"),
    ]
    results = await harness.execute_batch(calls)
    assert [result.is_error for result in results] == [False, middle_agent == "coder", False]
    # Concurrency-safe calls overlap; a collapsed one between them (though its tool is safe) does not.
    assert (order.index("start p2") < order.index("end p1")) is overlap


RUNTIME_PLUGIN = '''
from harness_core import hookimpl, tool
from harness_core.code_mode import CodeRunResult


@tool
async def greet(name: str) -> str:
    """Greet someone."""
    return "hello " + name


class EachLine:
    """A toy runtime: each program line "tool arg" is one call of that tool with {"name": arg}."""

    language = "lines"

    def render_sdk(self, bindings):
        return "one line per call: TOOL NAME"

    async def run(self, request):
        results = []
        for line in request.program.splitlines():
            tool_name, argument = line.split(" ", 1)
            results.append(await request.call_tool(tool_name, {"name": argument}))
        return CodeRunResult(logs=tuple(results))


class Plugin:
    @hookimpl
    def harness_register_tools(self, register):
        register(greet)

    @hookimpl
    def code_runtime(self):
        return EachLine()
'''


def test_harness_call_runs_a_program_and_logs_its_sub_calls_in_the_session(tmp_path: Path) -> None:
    (tmp_path / "cm_cli_runtime.py").write_text(RUNTIME_PLUGIN)
    config = '[plugins]\nmodules = ["cm_cli_runtime:Plugin"]\n[code_mode]\nmode = "code"\n'
    (tmp_path / "harness.toml").write_text(config)
    arguments = json.dumps({"code": "greet ann\ngreet bob", "description": "greet two people"})
    done = harness_cli(tmp_path, "call", "run_code", arguments, "--agent", "main")
    assert done.returncode == 0, done.stderr
    assert '▶ run_code: {"card": "generic", "title": "greet two people"' in done.stdout
    assert "hello ann\n    hello bob" in done.stdout
    (log,) = (tmp_path / ".harness" / "sessions").glob("*.jsonl")
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(event["type"], event["data"].get("sub_call_id")) for event in events] == [
        ("tool/call", None),
        ("tool/code-dispatch-start", "cli-1:code:1"),
        ("tool/code-dispatch", "cli-1:code:1"),
        ("tool/code-dispatch-start", "cli-1:code:2"),
        ("tool/code-dispatch", "cli-1:code:2"),
        ("tool/result", None),
    ]
    assert events[4]["data"]["content"] == [{"type": "text", "text": "hello bob"}]
    # The batch progress counts the batch's calls, not the programs' sub-calls.
    (tmp_path / "calls.jsonl").write_text(json.dumps({"name": "run_code", "arguments": json.loads(arguments)}) + "\n")
    batch = harness_cli(tmp_path, "run", "calls.jsonl")
    assert batch.returncode == 0, batch.stderr
    assert "[1/1] ✔" in batch.stderr and "[2/1]" not in batch.stderr
