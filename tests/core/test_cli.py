"""DESIGN §4 and §7: the `harness` command — output for people and scripts, exit statuses, bad input."""

from __future__ import annotations

import json
import textwrap
import uuid
from pathlib import Path

import pytest

from harness_core.cli import main

PLUGIN_SOURCE = '''
from pathlib import Path
from harness_core import Deny, TextBlock, ToolDefinition, ToolOutput, hookimpl, tool

MARKER = Path(__file__).with_name("body-ran")

@tool(timeout_ms=5000)
async def echo(text: str) -> str:
    """Echo text back."""
    MARKER.write_text(text)
    return text

@tool
async def explode() -> str:
    """Always fails."""
    raise RuntimeError("the tool broke")

class Tools:
    @hookimpl
    def harness_register_tools(self, register):
        register(echo)
        register(explode)

class NoSecrets:
    @hookimpl
    async def tools_pre_execute(self, execution, call_next):
        if "secret" in str(execution.arguments):
            return Deny(reason="no secrets in arguments")
        return await call_next()
'''


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """A project with a local plugin module; entry points and the user file are switched off."""
    monkeypatch.setenv("HARNESS_USER_CONFIG", "")
    monkeypatch.setenv("HARNESS_LOAD_PLUGINS", "")
    module = f"cli_plugins_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(PLUGIN_SOURCE)
    (tmp_path / "harness.toml").write_text(
        textwrap.dedent(
            f"""
            [plugins]
            modules = ["{module}:Tools", "{module}:NoSecrets"]
            """
        )
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_cli(*argv: str) -> int:
    return main(list(argv))


def test_help_answers_what_the_exit_statuses_mean(capsys):
    with pytest.raises(SystemExit) as caught:
        main(["--help"])
    assert caught.value.code == 0
    out = capsys.readouterr().out
    assert "exit status: 0 success or allowed, 1 a call failed or was denied, 2 usage" in out
    assert "HARNESS_LOAD_PLUGINS" in out


def test_no_command_prints_help_and_exits_2(capsys):
    assert main([]) == 2
    assert "usage: harness" in capsys.readouterr().out


def test_tools_json_is_exactly_what_the_model_sees(workspace, capsys):
    assert run_cli("tools", "--json") == 0
    schemas = json.loads(capsys.readouterr().out)
    assert [s["name"] for s in schemas] == ["echo", "explode"]
    assert set(schemas[0]) == {"name", "description", "parameters"}
    assert schemas[0]["parameters"]["required"] == ["text"]


def test_a_call_prints_a_pending_card_a_result_card_and_the_session_log(workspace, capsys):
    assert run_cli("call", "echo", '{"text": "hi"}') == 0
    out = capsys.readouterr().out
    assert '▶ echo {"text": "hi"}' in out and "✔ ok\n    hi" in out
    log_line = next(line for line in out.splitlines() if line.startswith("session log: "))
    log = Path(log_line.removeprefix("session log: "))
    assert log.is_file() and log.resolve().parent == (workspace / ".harness" / "sessions").resolve()
    kinds = [json.loads(line)["type"] for line in log.read_text().splitlines()]
    assert kinds == ["tool/call", "tool/result"]


def test_call_json_has_the_pinned_shape(workspace, capsys):
    assert run_cli("call", "echo", '{"text": "hi"}', "--json") == 0
    assert json.loads(capsys.readouterr().out) == {
        "is_error": False,
        "content": [{"type": "text", "text": "hi"}],
        "error": None,
    }


def test_a_denied_call_exits_1_and_its_body_never_runs(workspace, capsys):
    assert run_cli("call", "echo", '{"text": "my secret"}', "--json") == 1
    assert json.loads(capsys.readouterr().out) == {
        "is_error": True,
        "content": [{"type": "text", "text": "Error: no secrets in arguments"}],
        "error": {"message": "no secrets in arguments", "info": None},
    }
    assert not (workspace / "body-ran").exists()


def test_a_failing_tool_exits_1_with_its_message(workspace, capsys):
    assert run_cli("call", "explode") == 1
    assert "✖ failed\n    Error: the tool broke" in capsys.readouterr().out


def test_an_unknown_tool_exits_1_with_its_code(workspace, capsys):
    assert run_cli("call", "nope", "--json") == 1
    assert json.loads(capsys.readouterr().out)["error"]["info"] == {"name": "ToolNotFoundError", "code": "UNKNOWN_TOOL"}


def test_invalid_args_json_is_a_usage_error_and_nothing_runs(workspace, capsys):
    assert run_cli("call", "echo", "{text: hi}") == 2
    assert "ARGS_JSON is not valid JSON" in capsys.readouterr().err
    assert not (workspace / "body-ran").exists()
    assert not (workspace / ".harness").exists()


def test_dry_run_reports_the_decision_without_running_the_body(workspace, capsys):
    assert run_cli("call", "echo", '{"text": "hi"}', "--dry-run", "--json") == 0
    assert json.loads(capsys.readouterr().out) == {"pre_execute": "allow", "decision": "allow", "reason": None}
    assert run_cli("call", "echo", '{"text": "secret"}', "--dry-run", "--json") == 1
    assert json.loads(capsys.readouterr().out) == {
        "pre_execute": "deny",
        "decision": "deny",
        "reason": "no secrets in arguments",
    }
    assert not (workspace / "body-ran").exists()
    assert not (workspace / ".harness").exists()  # a dry run records nothing


def test_run_executes_a_batch_and_prints_a_summary_table(workspace, capsys):
    (workspace / "calls.jsonl").write_text(
        '{"id": "a", "name": "echo", "arguments": {"text": "one"}}\n'
        "\n"
        '{"name": "echo", "arguments": {"text": "secret"}}\n'
        '{"id": "c", "name": "explode"}\n'
    )
    assert run_cli("run", "calls.jsonl") == 1
    captured = capsys.readouterr()
    assert "[1/3] ✔ a echo" in captured.err and "[3/3] ✖ c explode" in captured.err
    table = captured.out
    assert "a        echo     ok" in table or "a  " in table
    assert "calls-3" in table and "failed" in table
    assert "1 succeeded, 2 failed" in table and "session log:" in table


def test_run_json_prints_one_result_per_line(workspace, capsys):
    (workspace / "calls.jsonl").write_text('{"id": "a", "name": "echo", "arguments": {"text": "x"}}\n')
    assert run_cli("run", "calls.jsonl", "--json") == 0
    lines = capsys.readouterr().out.splitlines()
    assert json.loads(lines[0]) == {
        "id": "a",
        "name": "echo",
        "is_error": False,
        "content": [{"type": "text", "text": "x"}],
        "error": None,
    }


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"name": "echo"}\n{"name": \n', "calls.jsonl:2: not valid JSON"),
        ('["echo"]\n', "calls.jsonl:1: expected an object"),
        ('{"name": "echo", "args": {}}\n', "calls.jsonl:1: unknown key(s) 'args'"),
        ('{"name": ""}\n', 'calls.jsonl:1: "name" must be a non-empty string'),
        ('{"name": "echo", "id": "x"}\n{"name": "echo", "id": "x"}\n', 'calls.jsonl:2: id "x" is used twice'),
        ("\n\n", "calls.jsonl: no calls in the file"),
    ],
)
def test_a_malformed_batch_is_refused_whole_naming_file_and_line(workspace, capsys, content, message):
    (workspace / "calls.jsonl").write_text(content)
    assert run_cli("run", "calls.jsonl") == 2
    assert message in capsys.readouterr().err
    assert not (workspace / "body-ran").exists()


def test_a_missing_batch_file_is_a_usage_error(workspace, capsys):
    assert run_cli("run", "missing.jsonl") == 2
    assert "missing.jsonl: cannot read the file" in capsys.readouterr().err


def test_config_check_names_file_key_and_reason_and_exits_2(workspace, capsys):
    with (workspace / "harness.toml").open("a") as handle:
        handle.write('\n[session]\nlog = "sometimes"\n')
    assert run_cli("config", "check") == 2
    err = capsys.readouterr().err
    assert "harness.toml: session.log: " in err and "'sometimes'" in err


def test_config_check_passes_on_a_good_file(workspace, capsys):
    assert run_cli("config", "check") == 0
    assert "configuration OK" in capsys.readouterr().out


def test_config_show_origin_says_where_each_value_came_from(workspace, capsys):
    assert run_cli("-c", "session.dir=logs", "config", "show", "--origin") == 0
    out = capsys.readouterr().out
    assert 'session.dir = "logs"    # -c' in out
    assert "plugins.modules = [" in out and "# harness.toml" in out
    assert "session.log = true    # default" in out


def test_config_show_prints_valid_toml(workspace, capsys):
    import tomllib

    assert run_cli("config", "show") == 0
    assert tomllib.loads(capsys.readouterr().out)["session"]["dir"] == ".harness/sessions"


def test_config_init_writes_a_starter_file_and_refuses_to_overwrite(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HARNESS_USER_CONFIG", "")
    monkeypatch.setenv("HARNESS_LOAD_PLUGINS", "")
    assert run_cli("-C", str(tmp_path), "config", "init") == 0
    text = (tmp_path / "harness.toml").read_text()
    assert "[plugins]" in text and "# block = []" in text
    assert run_cli("-C", str(tmp_path), "config", "check") == 0
    assert run_cli("-C", str(tmp_path), "config", "init") == 2
    assert "already exists; use --force" in capsys.readouterr().err
    assert run_cli("-C", str(tmp_path), "config", "init", "--force") == 0


def test_config_without_an_action_is_a_usage_error(workspace, capsys):
    assert run_cli("config") == 2
    assert "needs an action" in capsys.readouterr().err


def test_plugins_json_lists_hooks_and_chain_positions(workspace, capsys):
    assert run_cli("plugins", "--json") == 0
    rows = json.loads(capsys.readouterr().out)
    local = {row["name"].split(":")[1]: row for row in rows if ":" in row["name"]}
    assert local["NoSecrets"]["hooks"] == {"tools_pre_execute": "1/1"}
    assert local["Tools"]["hooks"] == {"harness_register_tools": "1/1"}
    assert all(row["status"] == "loaded" for row in local.values())
    # Installed entry points left out by HARNESS_LOAD_PLUGINS="" are listed too, never imported.
    assert all(row["status"] == "not-allowed" for row in rows if ":" not in row["name"])


def test_a_missing_required_plugin_refuses_to_start(workspace, capsys):
    assert run_cli("-c", 'plugins.require=["no-such-plugin"]', "tools") == 2
    assert 'required plugin "no-such-plugin" is not installed' in capsys.readouterr().err


def test_a_plugin_module_that_fails_to_import_refuses_to_start(workspace, capsys):
    assert run_cli("-c", 'plugins.modules=["no_such_module_here"]', "tools") == 2
    assert 'plugin module "no_such_module_here" from [plugins] modules failed to load' in capsys.readouterr().err


def test_doctor_warns_when_a_declared_timeout_is_not_enforced(workspace, capsys):
    assert run_cli("doctor") == 0
    out = capsys.readouterr().out
    assert 'warning: tool "echo" declares timeout_ms=5000 but no plugin enforces it' in out
    assert "hooks no plugin implements" in out and "configuration OK" in out


def test_doctor_reports_a_broken_configuration_with_exit_2(workspace, capsys):
    (workspace / "harness.toml").write_text("[nonsense]\nx = 1\n")
    assert run_cli("doctor") == 2
    assert "the harness does not start" in capsys.readouterr().err


def test_docs_writes_the_generated_pages_and_check_detects_staleness(workspace, capsys):
    assert run_cli("docs") == 0
    graph = (workspace / "docs" / "pipeline-graph.md").read_text()
    catalog = (workspace / "docs" / "tool-catalog.md").read_text()
    assert "flowchart TD" in graph and "tools_guard" in graph
    assert "## `echo`" in catalog and "Declared timeout: 5000 ms." in catalog
    assert run_cli("docs", "--check") == 0
    (workspace / "docs" / "tool-catalog.md").write_text("edited by hand\n")
    assert run_cli("docs", "--check") == 1
    assert "stale generated docs" in capsys.readouterr().err


def test_log_shows_the_newest_session_as_cards_and_as_json(workspace, capsys):
    assert run_cli("call", "echo", '{"text": "hi"}') == 0
    capsys.readouterr()
    assert run_cli("log") == 0
    out = capsys.readouterr().out
    assert "▶ call cli-1 echo" in out and "✔ result cli-1 echo" in out
    assert run_cli("log", "--json") == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [event["type"] for event in events] == ["tool/call", "tool/result"]


def test_log_of_an_unknown_session_is_a_usage_error(workspace, capsys):
    assert run_cli("log", "nope") == 2
    assert "harness log: error:" in capsys.readouterr().err


def test_presets_json_lists_user_presets_with_their_settings(workspace, capsys):
    with (workspace / "harness.toml").open("a") as handle:
        handle.write('\n[presets.quiet]\ndescription = "no log"\nsession.log = false\n')
    assert run_cli("presets", "--json") == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows == [
        {
            "name": "quiet",
            "source": "harness.toml",
            "description": "no log",
            "extends": [],
            "default": False,
            "selected": False,
            "settings": {"session": {"log": False}},
            "effective": {"session": {"log": False, "dir": ".harness/sessions"}},
            "origins": {"session.log": "preset quiet", "session.dir": "default"},
            "error": None,
        }
    ]


def test_config_init_writes_keys_that_validate_once_uncommented(tmp_path, monkeypatch, capsys):
    import re

    monkeypatch.setenv("HARNESS_USER_CONFIG", "")
    monkeypatch.delenv("HARNESS_LOAD_PLUGINS", raising=False)  # every installed plugin's section
    assert run_cli("-C", str(tmp_path), "config", "init") == 0
    path = tmp_path / "harness.toml"
    text = re.sub(r"^# (?=[A-Za-z_][\w-]* = )", "", path.read_text(), flags=re.MULTILINE)
    path.write_text(text)
    assert run_cli("-C", str(tmp_path), "config", "check") == 0, capsys.readouterr().err


def test_doctor_shows_plugin_diagnoses_and_exits_1_on_an_error(workspace, capsys):
    module = f"diag_{uuid.uuid4().hex[:8]}"
    (workspace / f"{module}.py").write_text(
        "from harness_core import hookimpl\n"
        "class Diag:\n"
        "    @hookimpl\n"
        "    def harness_diagnose(self):\n"
        "        return [('info', 'all quiet'), ('error', 'the backend is missing')]\n"
    )
    with (workspace / "harness.toml").open("a") as handle:
        handle.write('\n# and one more\n')
    text = (workspace / "harness.toml").read_text().replace('modules = [', f'modules = ["{module}:Diag", ')
    (workspace / "harness.toml").write_text(text)
    assert run_cli("doctor") == 1
    out = capsys.readouterr().out
    assert f"info: [{module}:Diag] all quiet" in out and f"error: [{module}:Diag] the backend is missing" in out


def test_doctor_lists_the_commands_plugins_add(workspace, capsys):
    module = f"cmds_{uuid.uuid4().hex[:8]}"
    (workspace / f"{module}.py").write_text(
        "from harness_core import hookimpl\n"
        "class Cmds:\n"
        "    @hookimpl\n"
        "    def harness_register_commands(self, register):\n"
        "        register('greet', help='say hello', setup=lambda parser: None, run=lambda args, harness: 0)\n"
    )
    text = (workspace / "harness.toml").read_text().replace('modules = [', f'modules = ["{module}:Cmds", ')
    (workspace / "harness.toml").write_text(text)
    assert run_cli("doctor") == 0
    assert f"plugin commands: greet ({module}:Cmds)" in capsys.readouterr().out
