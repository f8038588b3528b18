"""The code-python plugin: entry point, [code_python] section, code_runtime answer, SDK text, doctor line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from harness_code_python import CodePythonPlugin
from harness_code_python.runtime import PythonRuntime, base_interpreter
from harness_core import ConfigError, Harness
from harness_core.code_mode import CodeBinding

from .conftest import Run, binding, runtime_of, start


def test_the_entry_point_loads_the_plugin():
    (entry,) = [ep for ep in entry_points(group="harness") if ep.name == "code-python"]
    assert entry.load() is CodePythonPlugin


def test_the_plugin_answers_code_runtime_with_a_python_runtime(project: Path):
    harness, _ = start(project)
    runtime = runtime_of(harness)
    assert runtime.language == "python"
    assert runtime.interpreter == base_interpreter()  # the base installation behind a venv
    # The worker travels as source, so a sandbox need only show the interpreter (not this package).
    argv = runtime.worker_argv()
    assert argv[1:4] == ["-I", "-B", "-c"] and "def main()" in argv[4]


@pytest.mark.parametrize(
    "section",
    [
        {"timeout_ms": 0},
        {"max_log_lines": 0},
        {"max_log_bytes": -1},
        {"sandbox": "yes"},
        {"python": ""},
        {"interpreter": "x"},
    ],
)
def test_bad_code_python_settings_are_config_errors(project: Path, section: dict[str, object]):
    with pytest.raises(ConfigError, match="code_python"):
        start(project, {"code_python": section})


@pytest.mark.anyio
async def test_a_configured_interpreter_that_does_not_exist_fails_the_run_naming_the_key(project: Path, run: Run):
    harness, _ = start(project, {"code_python": {"python": str(project / "no-such-python")}})
    result = await run("return 1", on=runtime_of(harness))
    assert result.error is not None and result.error.kind == "runtime"
    assert "[code_python] python" in result.error.message and "no-such-python" in result.error.message


@pytest.mark.anyio
async def test_log_lines_and_bytes_are_bounded_with_a_marker(project: Path, run: Run):
    harness, _ = start(project, {"code_python": {"max_log_lines": 3, "max_log_bytes": 1000}})
    runtime = runtime_of(harness)
    result = await run("for i in range(10):\n    print('line', i)\nreturn 'ok'", on=runtime)
    assert result.logs[:3] == ("line 0", "line 1", "line 2")
    assert result.logs[3] == "[7 more log lines not shown: over the [code_python] max_log_lines / max_log_bytes limit]"
    assert result.result == "ok"
    result = await run("print('x' * 5000)\nprint('after')", on=runtime)
    assert result.logs[0] == "x" * 1000
    assert result.logs[1].startswith("[1 more log line not shown")


def test_render_sdk_explains_programs_and_lists_each_binding_with_its_parameters(runtime: PythonRuntime):
    bindings = (
        binding(
            "read",
            "Read a file.\nMore detail that is not shown.",
            {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "limit": {"type": "integer"},
                    "mode": {"enum": ["text", "bytes"]},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["path"],
            },
        ),
        CodeBinding(name="my-tool", description="", parameters={"type": "object"}),
    )
    text = runtime.render_sdk(bindings)
    for needle in (
        "async function",
        "await tools.NAME({...})",
        "ToolCallError",
        "e.tool_name",
        "print(",
        "return",
        "asyncio.gather",
    ):
        assert needle in text, needle
    assert (
        '- await tools.read({path: string, limit?: integer, mode?: "text"|"bytes", tags?: string[]}): Read a file.'
        in text
    )
    assert '- await tools["my-tool"]({})' in text
    assert "More detail" not in text


def test_render_sdk_says_when_no_tool_is_available(runtime: PythonRuntime):
    assert "No tools are available" in runtime.render_sdk(())


def test_diagnose_names_the_interpreter_and_whether_programs_are_sandboxed(project: Path):
    from harness_sandbox import SandboxPlugin

    def line_of(harness: Harness) -> tuple[str, str]:
        (found,) = [
            (level, message)
            for _source, level, message in harness.diagnose()
            if message.startswith("run_code programs run with")
        ]
        return found

    # Unconfined programs are a warning: their own code can do what an unconfined shell can.
    level, line = line_of(start(project)[0])
    assert level == "warning" and base_interpreter() in line
    assert "unsandboxed (no sandbox plugin answers sandbox_policy)" in line
    level, line = line_of(start(project, {"sandbox": {"mode": "read-only"}}, SandboxPlugin())[0])
    assert level == "info" and "sandboxed by " in line and "(read-only mode, network off)" in line
    level, line = line_of(start(project, {"code_python": {"sandbox": False}}, SandboxPlugin())[0])
    assert level == "warning" and "unsandboxed ([code_python] sandbox = false)" in line


def harness_cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HARNESS_LOAD_PLUGINS": "code-python"}
    return subprocess.run(
        [sys.executable, "-m", "harness_core", "-C", str(project), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def test_harness_doctor_shows_the_runtime_line(project: Path):
    completed = harness_cli(project, "doctor")
    assert "[code-python] run_code programs run with" in completed.stdout, completed.stdout + completed.stderr


def test_harness_config_check_rejects_an_unknown_code_python_key_naming_file_and_key(project: Path):
    (project / "harness.toml").write_text("[code_python]\ntimeout_ms = 1000\nretries = 2\n")
    completed = harness_cli(project, "config", "check")
    assert completed.returncode == 2
    assert "harness.toml" in completed.stderr and "code_python.retries" in completed.stderr


def test_a_harness_loads_the_plugin_from_its_entry_point(project: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("HARNESS_LOAD_PLUGINS", "code-python")
    harness = Harness(config={}, load_entrypoints=True)
    assert isinstance(harness.plugin_manager.hook.code_runtime(), PythonRuntime)


def test_harness_call_runs_a_program_that_calls_the_bash_tool(project: Path):
    (project / "harness.toml").write_text('[code_mode]\nmode = "code"\n')
    program = "result = await tools.bash({'command': 'echo from bash'})\nprint('ran')\nreturn result['stdout']['text']"
    env = {**os.environ, "HARNESS_LOAD_PLUGINS": "code-python,tools"}
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness_core",
            "-C",
            str(project),
            "call",
            "run_code",
            json.dumps({"code": program, "description": "echo through bash"}),
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    output = json.loads(completed.stdout)
    assert output["is_error"] is False
    assert output["content"][0]["text"] == "ran\nfrom bash\n"


def test_every_module_exports_a_sorted_all_of_names_it_defines():
    import importlib

    for name in (
        "harness_code_python",
        "harness_code_python.plugin",
        "harness_code_python.runtime",
        "harness_code_python.config",
        "harness_code_python.sdk",
    ):
        module = importlib.import_module(name)
        assert module.__all__ == sorted(module.__all__), name
        for exported in module.__all__:
            assert hasattr(module, exported), (name, exported)


@pytest.mark.anyio
async def test_an_interpreter_without_the_harness_installed_runs_programs(project: Path, run: Run):
    base = getattr(sys, "_base_executable", None)
    if not base or base == sys.executable or not os.path.exists(base):
        pytest.skip("no interpreter outside this environment to try")
    probe = subprocess.run([base, "-I", "-c", "import harness_core"], capture_output=True, timeout=60, cwd=project)
    if probe.returncode == 0:
        pytest.skip(f"{base} has the harness installed too")
    harness, _ = start(project, {"code_python": {"python": base}})
    result = await run("import sys\nreturn [sys.executable, await tools.echo({'n': 1})]", on=runtime_of(harness))
    assert result.error is None, result.error
    assert result.result == [base, {"n": 1}]


def test_the_default_interpreter_is_the_base_installation_not_the_virtual_environment(project: Path):
    # A venv may live under /tmp, which workspace-write hides behind a private tmpfs; the base
    # installation's interpreter runs the stdlib-only worker wherever the venv is.
    harness, _ = start(project)
    interpreter = runtime_of(harness).interpreter
    assert os.path.isfile(interpreter) and not os.path.islink(interpreter)
    if sys.prefix != sys.base_prefix:
        assert not interpreter.startswith(os.path.realpath(sys.prefix) + os.sep)
