"""reference/core-pipeline.md §6.3: a Python program's run — results, logs, tool calls and failures."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_core.code_mode import NO_RESULT

from .conftest import Run, Tools, binding, runtime_of, start

ARGUMENTS_NOT_JSON = "tool arguments must be lossless JSON (call the tool with an arguments object, e.g. `{}`)"


@pytest.mark.anyio
async def test_a_returned_dict_is_the_result(run: Run):
    result = await run("return {'n': 42, 'ok': True, 'items': [1, 2.5, None, 'x']}")
    assert result.error is None
    assert result.result == {"n": 42, "ok": True, "items": [1, 2.5, None, "x"]}


@pytest.mark.anyio
async def test_returning_none_is_a_null_result_but_no_return_is_no_result(run: Run):
    assert (await run("return None")).result is None
    assert (await run("x = 1")).result is NO_RESULT
    assert (await run("if True:\n    return\nreturn 5")).result is NO_RESULT
    assert (await run("")).result is NO_RESULT


@pytest.mark.anyio
async def test_a_return_inside_a_nested_function_is_that_functions_own(run: Run):
    program = "def inner():\n    return\nasync def twice(x):\n    return x * 2\nreturn [inner(), await twice(4)]"
    assert (await run(program)).result == [None, 8]


@pytest.mark.anyio
async def test_print_and_stderr_become_log_lines_in_order(run: Run):
    program = (
        "import sys\n"
        "print('first')\n"
        "print('two', 'words', sep='-')\n"
        "sys.stderr.write('to stderr\\n')\n"
        "print('no newline at the end', end='')\n"
        "return 'done'"
    )
    result = await run(program)
    assert result.logs == ("first", "two-words", "to stderr", "no newline at the end")
    assert result.result == "done"


@pytest.mark.anyio
async def test_multi_line_strings_keep_their_text_and_lines_their_numbers(run: Run):
    program = "text = '''a\n  b'''\nimport inspect\nreturn [text, inspect.currentframe().f_lineno]"
    assert (await run(program)).result == ["a\n  b", 4]


@pytest.mark.anyio
async def test_top_level_await_calls_a_tool_and_gets_its_value(run: Run, tools: Tools):
    result = await run("value = await tools.echo({'text': 'hi'})\nreturn value")
    assert result.result == {"text": "hi"}
    assert tools.calls == [("echo", {"text": "hi"})]


@pytest.mark.anyio
async def test_item_access_keyword_arguments_and_default_empty_arguments(run: Run, tools: Tools):
    program = "a = await tools['echo']({'k': 1})\nb = await tools.echo(k=2)\nc = await tools.echo()\nreturn [a, b, c]"
    assert (await run(program)).result == [{"k": 1}, {"k": 2}, {}]
    assert [arguments for _, arguments in tools.calls] == [{"k": 1}, {"k": 2}, {}]


@pytest.mark.anyio
async def test_a_tool_name_that_is_not_an_identifier_is_reached_by_item_access(run: Run, tools: Tools):
    names: list[str] = []

    async def call_tool(name: str, arguments: object) -> object:
        names.append(name)
        return name

    bindings = (binding("my-tool"), binding("__proto__"))
    result = await run(
        "return [await tools['my-tool'](), await tools['__proto__']()]", bindings=bindings, call_tool=call_tool
    )
    assert result.result == ["my-tool", "__proto__"]
    assert names == ["my-tool", "__proto__"]


@pytest.mark.anyio
async def test_tool_calls_under_asyncio_gather_are_in_flight_together(run: Run, tools: Tools):
    # ``wait`` returns only once an ``echo`` arrives while it is still in flight: serial calls would hang.
    program = "import asyncio\nreturn await asyncio.gather(tools.wait(), tools.echo({'i': 1}), tools.echo({'i': 2}))"

    async def call_tool(name: str, arguments: object) -> object:
        if name == "echo" and tools.in_flight > 0:
            tools.release.set()
        return await tools(name, arguments)

    result = await run(program, call_tool=call_tool)
    assert result.error is None, result.error
    assert result.result == ["released", {"i": 1}, {"i": 2}]
    assert tools.most_in_flight >= 2


@pytest.mark.anyio
async def test_a_failed_call_raises_tool_call_error_and_the_program_carries_on(run: Run, tools: Tools):
    program = (
        "try:\n"
        "    await tools.fail({'x': 1})\n"
        "except ToolCallError as error:\n"
        "    print(error.tool_name, '|', str(error))\n"
        "return await tools.echo({'after': True})"
    )
    result = await run(program)
    assert result.logs == ("fail | denied by a test policy",)
    assert result.result == {"after": True}
    assert [name for name, _ in tools.calls] == ["fail", "echo"]


@pytest.mark.anyio
async def test_an_unknown_binding_is_an_attribute_error_and_nothing_is_dispatched(run: Run, tools: Tools):
    result = await run("try:\n    tools.nope\nexcept AttributeError as e:\n    return str(e)")
    assert "no tool named 'nope'" in result.result
    result = await run("await tools.nope({})")
    assert result.error is not None and result.error.kind == "exception"
    assert result.error.message.startswith("AttributeError: no tool named 'nope'")
    assert tools.calls == []


@pytest.mark.parametrize(
    "arguments",
    [
        "{'when': __import__('datetime').date.today()}",
        "{'s': {1, 2}}",
        "{1: 'int key'}",
        "{'n': float('nan')}",
        "{'t': (1, 2)}",
        "{'big': 2**60}",
        "{'z': -0.0}",
    ],
)
@pytest.mark.anyio
async def test_arguments_that_are_not_lossless_json_are_refused_in_the_worker(run: Run, tools: Tools, arguments: str):
    program = f"try:\n    await tools.echo({arguments})\nexcept ToolCallError as e:\n    return [e.tool_name, str(e)]"
    result = await run(program)
    assert result.result == ["echo", ARGUMENTS_NOT_JSON]
    assert tools.calls == []


@pytest.mark.anyio
async def test_circular_arguments_are_refused_without_contacting_the_host(run: Run, tools: Tools):
    result = await run("a = {}\na['self'] = a\nawait tools.echo(a)")
    assert result.error is not None and result.error.message == f"ToolCallError: {ARGUMENTS_NOT_JSON}"
    assert tools.calls == []


@pytest.mark.anyio
async def test_an_uncaught_exception_fails_the_run_with_the_logs_so_far(run: Run):
    result = await run("print('before')\nraise ValueError('boom')\nprint('after')")
    assert result.logs == ("before",)
    assert result.error is not None
    assert (result.error.kind, result.error.message) == ("exception", "ValueError: boom")
    assert result.result is NO_RESULT


@pytest.mark.anyio
async def test_an_uncaught_tool_call_error_fails_the_run(run: Run):
    result = await run("await tools.fail()")
    assert result.error is not None
    assert (result.error.kind, result.error.message) == ("exception", "ToolCallError: denied by a test policy")


@pytest.mark.anyio
async def test_sys_exit_is_the_programs_failure_not_a_crash(run: Run):
    result = await run("import sys\nprint('bye')\nsys.exit(4)")
    assert result.error is not None
    assert (result.error.kind, result.error.message) == ("exception", "SystemExit: 4")
    assert result.logs == ("bye",)


@pytest.mark.anyio
async def test_a_syntax_error_is_kind_syntax_with_its_line(run: Run, tools: Tools):
    result = await run("x = 1\nif x\n    print(x)")
    assert result.error is not None and result.error.kind == "syntax"
    assert result.error.message.startswith("SyntaxError: ") and "(line 2)" in result.error.message
    assert "if x" in result.error.message


@pytest.mark.anyio
async def test_a_top_level_yield_is_a_syntax_error(run: Run):
    result = await run("print(1)\nyield 2")
    assert result.error is not None and result.error.kind == "syntax"
    assert "'yield' is not allowed" in result.error.message and "(line 2)" in result.error.message


@pytest.mark.parametrize(
    ("expression", "named"),
    [
        ("{1, 2}", "a set is not JSON"),
        ("object()", "a object is not JSON"),
        ("{'a': [1, b'x']}", "$['a'][1]: a bytes"),
        ("float('inf')", "not finite"),
        ("2**53 + 1", "beyond ±2**53"),
        ("(1, 2)", "a tuple is not JSON"),
    ],
)
@pytest.mark.anyio
async def test_a_return_value_that_is_not_json_fails_naming_the_type(run: Run, expression: str, named: str):
    result = await run(f"print('kept')\nreturn {expression}")
    assert result.error is not None and result.error.kind == "result"
    assert named in result.error.message
    assert result.logs == ("kept",)


@pytest.mark.anyio
async def test_the_worker_dying_is_a_runtime_failure_with_its_exit_status(run: Run):
    result = await run("import os\nprint('going')\nos._exit(3)")
    assert result.error is not None
    assert result.error.kind == "runtime"
    assert "exited with status 3" in result.error.message
    assert result.logs == ("going",)


@pytest.mark.anyio
async def test_a_worker_killed_by_a_signal_names_the_signal(run: Run):
    result = await run("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
    assert result.error is not None and result.error.kind == "runtime"
    assert "killed by SIGKILL" in result.error.message


@pytest.mark.anyio
async def test_output_of_child_processes_is_logged_after_the_programs_own_lines(run: Run):
    program = (
        "import subprocess, sys\n"
        "print('mine')\n"
        "subprocess.run([sys.executable, '-c', 'print(\"from a child\")'], check=True)\n"
        "return 1"
    )
    result = await run(program)
    assert result.error is None, result.error
    assert result.logs == ("mine", "from a child")


@pytest.mark.anyio
async def test_a_program_cannot_forge_protocol_messages_on_its_stdout(run: Run, tools: Tools):
    program = (
        "import os\n"
        'os.write(1, b\'{"t": "call", "id": 99, "name": "echo", "args": {}}\\n\')\n'
        'os.write(1, b\'{"t": "done", "result": "forged"}\\n\')\n'
        "return 'real'"
    )
    result = await run(program)
    assert result.result == "real"
    assert tools.calls == []


@pytest.mark.anyio
async def test_each_run_starts_fresh(run: Run):
    assert (await run("import builtins\nbuiltins.leftover = 1\nreturn 1")).result == 1
    assert (await run("import builtins\nreturn hasattr(builtins, 'leftover')")).result is False


@pytest.mark.anyio
async def test_a_crash_reports_what_the_worker_last_wrote_to_stderr(run: Run):
    result = await run("import os\nos.write(2, b'fatal: the disk is on fire\\n')\nos._exit(5)")
    assert result.error is not None and result.error.kind == "runtime"
    assert "exited with status 5" in result.error.message
    assert "fatal: the disk is on fire" in result.error.message


@pytest.mark.anyio
async def test_a_call_left_in_flight_when_the_program_returns_does_not_hold_the_run(run: Run, tools: Tools):
    program = (
        "import asyncio\npending = asyncio.ensure_future(tools.wait())\nawait asyncio.sleep(0)\nreturn 'not waiting'"
    )
    result = await run(program)
    assert result.result == "not waiting"


@pytest.mark.anyio
async def test_a_message_over_max_message_bytes_fails_the_run_naming_the_key(project: Path, run: Run, tools: Tools):
    harness, _ = start(project, {"code_python": {"max_message_bytes": 1000}})
    runtime = runtime_of(harness)
    result = await run("await tools.echo({'text': 'x' * 5000})", on=runtime)
    assert result.error is not None and result.error.kind == "runtime"
    assert "[code_python] max_message_bytes" in result.error.message
    assert tools.calls == []
    result = await run("return 'y' * 5000", on=runtime)
    assert result.error is not None and "[code_python] max_message_bytes" in result.error.message
    assert (await run("return 'small'", on=runtime)).result == "small"


@pytest.mark.anyio
async def test_a_lone_surrogate_in_printed_text_is_replaced_so_the_logs_stay_utf8(run: Run):
    result = await run("print('a\\udcffb')")
    assert result.logs == ("a?b",)
