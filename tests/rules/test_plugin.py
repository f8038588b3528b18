"""harness-rules through a real Harness: the entry point, pre-execute decisions, the deny guard, events, layers.

DESIGN §2: a guard can only deny or abstain, and nothing registered around it can undo a denial;
§4: deny lists are grow-only, so no preset or later layer can remove a deny rule.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Any

import pytest

from harness_core import Allow, ConfigError, Deny, Harness, MemoryEventSink, ToolCall, hookimpl
from harness_core.config import ConfigSource
from harness_rules import DECISION_EVENT, RulesPlugin

from .support import AllowEveryAsk, Recorder, Tools, bash, make_harness


def test_the_rules_entry_point_is_registered_in_group_harness_and_loads():
    found = [ep for ep in entry_points(group="harness") if ep.name == "rules"]
    assert len(found) == 1, "pip install -e plugins/rules (dev.py does it for the workspace)"
    assert found[0].value == "harness_rules.plugin:RulesPlugin"
    assert found[0].dist is not None and found[0].dist.name == "harness-rules"
    assert found[0].load() is RulesPlugin


def test_entry_point_discovery_gives_each_harness_its_own_rules_plugin(monkeypatch):
    monkeypatch.setenv("HARNESS_LOAD_PLUGINS", "rules")
    first, second = Harness(load_entrypoints=True), Harness(load_entrypoints=True)
    plugin = first.plugin_manager.get_plugin("rules")
    assert isinstance(plugin, RulesPlugin) and second.plugin_manager.get_plugin("rules") is not plugin


def test_the_package_re_exports_a_sorted_all():
    import harness_rules

    assert harness_rules.__all__ == sorted(harness_rules.__all__)
    assert all(hasattr(harness_rules, name) for name in harness_rules.__all__)


# --- decisions --------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_an_allowed_command_runs():
    recorder = Recorder()
    harness = make_harness({"allow": ["bash(git status)"]}, recorder=recorder)
    result = await harness.execute(bash("git status"))
    assert not result.is_error and recorder.calls == [("bash", {"command": "git status"})]


@pytest.mark.anyio
async def test_a_denied_command_is_refused_with_the_rule_named():
    recorder = Recorder()
    harness = make_harness({"deny": ["bash(rm -rf *)"], "default": "allow"}, recorder=recorder)
    result = await harness.execute(bash("ls && rm -rf /"))
    assert result.is_error and result.content[0].text == 'Error: denied by rule "bash(rm -rf *)": rm -rf /'
    assert recorder.calls == []


@pytest.mark.anyio
async def test_an_ask_goes_to_the_approval_service_with_the_reason():
    recorder, answers = Recorder(), AllowEveryAsk()
    harness = make_harness({"ask": ["bash(git push *)"]}, answers, recorder=recorder)
    result = await harness.execute(bash("git push origin main"))
    assert not result.is_error and len(recorder.calls) == 1
    assert answers.asked == ['rule "bash(git push *)" asks for approval: git push origin main']


@pytest.mark.anyio
async def test_an_unanswered_ask_is_denied_with_the_reason():
    recorder = Recorder()
    harness = make_harness({}, recorder=recorder)
    result = await harness.execute(bash("curl x"))
    assert result.is_error and result.error.message == "no rule allows curl x (rules.default is ask)"
    assert recorder.calls == []


@pytest.mark.anyio
async def test_a_file_tool_is_judged_by_its_path(tmp_path):
    recorder = Recorder()
    harness = Harness(
        plugins=[RulesPlugin(), Tools(recorder)],
        config={"rules": {"workspace": str(tmp_path), "allow": ["read(**)"], "deny": ["read(**/.env)"]}},
    )
    ok = await harness.execute(ToolCall(call_id="a", name="read", arguments={"file_path": "src/a.py"}, agent="main"))
    denied = await harness.execute(ToolCall(call_id="b", name="read", arguments={"file_path": "x/.env"}, agent="main"))
    assert not ok.is_error and denied.error.message == 'denied by rule "read(**/.env)": read x/.env'


class DenyDownstream:
    """A pre-execute listener (inside the rules plugin's) that denies every call."""

    @hookimpl
    def tools_pre_execute(self, execution: Any, call_next: Any) -> Deny:
        return Deny(reason="downstream says no")


@pytest.mark.anyio
async def test_on_ask_the_rest_of_the_chain_is_consulted_and_its_denial_wins():
    recorder, answers = Recorder(), AllowEveryAsk()
    harness = Harness(plugins=[DenyDownstream(), RulesPlugin(), Tools(recorder), answers], config={"rules": {}})
    result = await harness.execute(bash("curl x"))
    assert result.error.message == "downstream says no" and answers.asked == [] and recorder.calls == []


@pytest.mark.anyio
async def test_on_allow_the_rest_of_the_chain_is_consulted_too():
    plugins = [DenyDownstream(), RulesPlugin(), Tools(Recorder())]
    harness = Harness(plugins=plugins, config={"rules": {"default": "allow"}})
    assert (await harness.execute(bash("ls"))).error.message == "downstream says no"


# --- the guard ------------------------------------------------------------------------------------------


class AllowFirst:
    """A tryfirst listener that allows everything without consulting anyone."""

    @hookimpl(tryfirst=True)
    def tools_pre_execute(self, execution: Any, call_next: Any) -> Allow:
        return Allow()


@pytest.mark.anyio
async def test_a_deny_rule_holds_against_a_tryfirst_listener_that_allows():
    recorder = Recorder()
    harness = make_harness({"deny": ["bash(rm -rf *)"]}, AllowFirst(), recorder=recorder)
    denied = await harness.execute(bash("sudo rm -rf /"))
    assert denied.is_error and denied.error.message == 'denied by rule "bash(rm -rf *)": sudo rm -rf /'
    # Asks are the waterfall's business: an outer Allow may lift them, the guard leaves them be.
    assert not (await harness.execute(bash("curl x", call_id="c2"))).is_error
    assert recorder.calls == [("bash", {"command": "curl x"})]


@pytest.mark.anyio
async def test_the_guard_denies_whatever_order_the_plugins_were_registered_in():
    for order in ([AllowFirst(), RulesPlugin()], [RulesPlugin(), AllowFirst()]):
        recorder = Recorder()
        harness = Harness(plugins=[*order, Tools(recorder)], config={"rules": {"deny": ["write(**/.env)"]}})
        call = ToolCall(call_id="c", name="write", arguments={"file_path": "a/.env"}, agent="main")
        assert (await harness.execute(call)).is_error and recorder.calls == []


@pytest.mark.anyio
async def test_an_unconfigured_plugin_fails_closed():
    plugin = RulesPlugin()
    recorder = Recorder()
    harness = Harness(plugins=[plugin, Tools(recorder)], configure=False)
    result = await harness.execute(bash("ls"))
    assert result.is_error and "never configured" in result.error.message and recorder.calls == []
    assert plugin.tools_guard(object()) is not None  # type: ignore[arg-type]


# --- events ---------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_deny_and_ask_decisions_are_recorded_as_events_allows_are_not():
    sink = MemoryEventSink()
    harness = make_harness({"allow": ["bash(ls *)"], "deny": ["bash(rm *)"]}, events=sink)
    await harness.execute(bash("ls", call_id="c1"))
    await harness.execute(bash("rm x", call_id="c2"))
    await harness.execute(bash("curl x", call_id="c3"))
    events = sink.of_kind(DECISION_EVENT)
    decided = [(e["decision"], e["rule"], e["call_id"]) for e in events]
    assert decided == [("deny", "bash(rm *)", "c2"), ("ask", None, "c3")]


# --- configuration layers ---------------------------------------------------------------------------------


class TeamPreset:
    @hookimpl
    def harness_register_presets(self, register: Any) -> None:
        register("team", {"rules": {"deny": ["bash(curl *)"], "default": "allow"}})


@pytest.mark.anyio
async def test_a_later_layer_cannot_remove_a_deny_rule_of_a_preset():
    harness = Harness(
        plugins=[RulesPlugin(), Tools(Recorder()), TeamPreset()],
        config={"preset": "team", "rules": {"deny": ["bash(rm *)"], "default": "allow"}},
    )
    assert harness.config.section("rules").deny == ["bash(curl *)", "bash(rm *)"]
    assert (await harness.execute(bash("curl x"))).error.message == 'denied by rule "bash(curl *)": curl x'


def test_a_project_file_and_an_override_cannot_remove_deny_rules(tmp_path):
    (tmp_path / "harness.toml").write_text('[rules]\ndeny = ["write(**/.env)"]\n')
    source = ConfigSource.for_project(tmp_path, ["rules.deny=[]"], user_file=False)
    harness = Harness(plugins=[RulesPlugin()], config=source)
    assert harness.config.section("rules").deny == ["write(**/.env)"]


def test_presets_set_the_defaults_by_key():
    class Presets:
        @hookimpl
        def harness_register_presets(self, register: Any) -> None:
            register("workspace-write", {"rules": {"default": "allow", "default_for": {"bash": "ask", "write": "ask"}}})

    harness = Harness(plugins=[RulesPlugin(), Presets()],
                      config={"preset": "workspace-write", "rules": {"default_for": {"write": "allow"}}})
    settings = harness.config.section("rules")
    assert settings.default == "allow" and settings.default_for == {"bash": "ask", "write": "allow"}


def test_a_bad_rule_is_a_config_error_naming_the_key_and_index():
    with pytest.raises(ConfigError) as caught:
        Harness(plugins=[RulesPlugin()], config={"rules": {"allow": ["bash(git status)", "read(**)", "bash(git diff"]}})
    message = str(caught.value)
    assert "rules.allow" in message and "rules.allow[2] 'bash(git diff'" in message and 'no closing ")"' in message


@pytest.mark.parametrize(
    ("section", "expected"),
    [
        ({"deny": ["bash(git status; rm x)"]}, "rules.deny[0]"),
        ({"ask": ["bash('quoted')"]}, "write the words without quotes"),
        ({"allow": ["read(../x)"]}, '".." segment'),
        ({"allow": ["fetch(url)"]}, "is not a key=glob condition"),
        ({"allow": ["mcp__*(x=y)"]}, "can only be used bare"),
        ({"allow": ["bash()"]}, "the pattern is empty"),
        ({"allow": ["bad name(x)"]}, "is not a tool name"),
        ({"allow": ["Bash(ls *)"]}, 'tool names are case-sensitive: "Bash" is not "bash"'),
        ({"allow": [""]}, "the rule is empty"),
        ({"default": "maybe"}, "rules.default"),
        ({"default_for": {"bash": "sometimes"}}, "rules.default_for.bash"),
        ({"colour": "red"}, "unknown key"),
        ({"examples": [{"rule": "bash(ls", "match": ["ls"]}]}, "rules.examples[0].rule"),
        ({"examples": [{"rule": "bash(ls)", "match": [{"command": "ls"}]}]}, "rules.examples[0].match[0]"),
        ({"command_tools": {"sh": "cmd"}, "path_tools": {"sh": "path"}}, "a tool takes a command or a path"),
    ],
)
def test_config_errors_say_what_is_wrong(section, expected):
    with pytest.raises(ConfigError) as caught:
        Harness(plugins=[RulesPlugin()], config={"rules": section})
    assert expected in str(caught.value)


def test_doctor_reports_the_counts_the_default_unknown_tools_and_failing_examples():
    harness = make_harness(
        {
            "default": "allow",
            "default_for": {"bash": "ask"},
            "allow": ["bash(ls *)", "Bash"],
            "deny": ["bash(rm *)"],
            "examples": [{"rule": "bash(ls *)", "match": ["ls && rm x"]}],
        }
    )
    lines = [(level, message) for source, level, message in harness.diagnose() if source != "core"]
    assert ("info", "2 allow, 0 ask, 1 deny; default allow (bash ask)") in lines
    assert ("warning", 'rules.allow: rule "Bash" names no registered tool') in lines
    failing = "rules.examples[0] (bash(ls *)): should match"
    assert any(level == "error" and message.startswith(failing) for level, message in lines)
