"""DESIGN §7 ([approval] keys) and reference/plugins.md §1(b): the [approval] section is checked at start-up.

Unknown keys, a policy outside ``ask`` / ``never``, an unknown or repeated answerer and a scripted
``allowed-session`` without ``grants = true`` stop the harness with a ConfigError naming the key.
Scripted rules match the tool and each argument by glob; non-string argument values are matched
as JSON.
"""

from __future__ import annotations

from typing import Any

import pytest

from harness_approval import ApprovalPlugin
from harness_approval.answerers import rule_matches
from harness_approval.config import ApprovalConfig, ScriptedRule
from harness_core import Ask, ConfigError, Harness, ToolCall, ToolDefinition, ToolOutput, hookimpl
from harness_core.lossless import snapshot


class PluginAnswerer:
    """An answerer plugin, so that it shows up among the known answerers."""

    @hookimpl
    async def approval_answer(self, request, call, call_next):
        return await call_next()


def start(section: dict[str, Any], *plugins: object) -> Harness:
    return Harness(plugins=[ApprovalPlugin(), *plugins], config={"approval": section})


def problems_of(section: dict[str, Any], *plugins: object) -> list[Any]:
    with pytest.raises(ConfigError) as caught:
        start(section, *plugins)
    return caught.value.problems


def test_the_defaults_are_policy_ask_the_terminal_answerer_no_rules_and_no_grants():
    config = ApprovalConfig()
    assert (config.policy, config.answerers, config.scripted, config.grants) == ("ask", ["terminal"], [], False)
    start({})  # an empty section starts


def test_a_full_section_as_in_the_design_starts():
    start(
        {
            "policy": "never",
            "answerers": ["terminal", "scripted", "PluginAnswerer"],
            "grants": True,
            "scripted": [
                {"tool": "bash", "arguments": {"command": "git status*"}, "outcome": "allowed-once"},
                {"tool": "*", "outcome": "allowed-session"},
            ],
        },
        PluginAnswerer(),
    )


@pytest.mark.parametrize("key", ["polcy", "answerer", "rules", "grant"])
def test_an_unknown_key_in_the_section_is_an_error_naming_approval_dot_key(key):
    (problem,) = problems_of({key: "x"})
    assert problem.key == f"approval.{key}"
    assert problem.problem == "unknown key"
    assert "policy, answerers, scripted, grants" in problem.fix


def test_an_unknown_key_in_a_scripted_rule_is_an_error():
    (problem,) = problems_of({"scripted": [{"tool": "bash", "outcome": "rejected", "command": "ls"}]})
    assert problem.key == "approval.scripted.0.command"


@pytest.mark.parametrize("policy", ["always", "Ask", "", 1, True])
def test_a_policy_other_than_ask_or_never_is_an_error(policy):
    (problem,) = problems_of({"policy": policy})
    assert problem.key == "approval.policy"
    assert "'ask' or 'never'" in problem.problem


def test_an_unknown_answerer_is_an_error_listing_the_known_ones():
    (problem,) = problems_of({"answerers": ["scripted", "x"]}, PluginAnswerer())
    assert problem.key == "approval.answerers"
    assert problem.problem == 'unknown answerer "x"'
    assert "PluginAnswerer, scripted, terminal" in problem.fix
    assert 'unknown answerer "x"' in str(ConfigError([problem]))


def test_each_unknown_answerer_is_reported():
    problems = problems_of({"answerers": ["x", "terminal", "y"]})
    assert [problem.problem for problem in problems] == ['unknown answerer "x"', 'unknown answerer "y"']


def test_a_plugin_that_does_not_implement_approval_answer_is_not_an_answerer():
    class NotAnAnswerer:
        @hookimpl
        async def tools_pre_execute(self, execution, call_next):
            return await call_next()

    (problem,) = problems_of({"answerers": ["NotAnAnswerer"]}, NotAnAnswerer())
    assert problem.problem == 'unknown answerer "NotAnAnswerer"'


@pytest.mark.parametrize("answerers", [["scripted", "scripted"], ["terminal", "scripted", "terminal"]])
def test_an_answerer_listed_twice_is_an_error(answerers):
    with pytest.raises(ConfigError) as caught:
        start({"answerers": answerers})
    assert "answerers lists a name twice" in str(caught.value)
    assert caught.value.problems[0].key.startswith("approval")


def test_a_scripted_allowed_session_without_grants_is_an_error():
    with pytest.raises(ConfigError) as caught:
        start({"answerers": ["scripted"], "scripted": [{"tool": "a", "outcome": "allowed-once"}, {"tool": "b", "outcome": "allowed-session"}]})
    assert 'scripted[1] answers "allowed-session", which needs grants = true in [approval]' in str(caught.value)


def test_a_scripted_allowed_session_with_grants_starts():
    start({"answerers": ["scripted"], "grants": True, "scripted": [{"tool": "a", "outcome": "allowed-session"}]})


@pytest.mark.parametrize("outcome", ["cancelled", "unavailable", "allow", ""])
def test_a_scripted_rule_answers_only_allowed_once_rejected_or_allowed_session(outcome):
    (problem,) = problems_of({"scripted": [{"tool": "bash", "outcome": outcome}]})
    assert problem.key == "approval.scripted.0.outcome"


@pytest.mark.parametrize("tool", ["", "   "])
def test_a_scripted_rule_must_name_a_tool(tool):
    (problem,) = problems_of({"scripted": [{"tool": tool, "outcome": "rejected"}]})
    assert problem.key == "approval.scripted.0.tool"
    assert "must name a tool or a glob such as *" in problem.problem


def test_a_scripted_rule_needs_a_tool_and_an_outcome():
    keys = {problem.key for problem in problems_of({"scripted": [{}]})}
    assert keys == {"approval.scripted.0.tool", "approval.scripted.0.outcome"}


# --- scripted rule matching ------------------------------------------------------------------


def rule(tool: str, **arguments: str) -> ScriptedRule:
    return ScriptedRule(tool=tool, arguments=arguments, outcome="allowed-once")


@pytest.mark.parametrize(
    ("tool_glob", "name", "matches"),
    [("bash", "bash", True), ("bash", "bash2", False), ("ba*", "bash", True), ("*", "anything", True),
     ("fs_?", "fs_w", True), ("fs_[rw]", "fs_x", False), ("Bash", "bash", False)],
)
def test_the_tool_is_matched_by_a_case_sensitive_glob(tool_glob, name, matches):
    assert rule_matches(rule(tool_glob), name, {}) is matches


@pytest.mark.parametrize(
    ("pattern", "value", "matches"),
    [
        ("git status*", "git status --short", True),
        ("git status*", "git push", False),
        ("git status", "git status --short", False),
        ("3", 3, True),
        ("3*", 30, True),
        ("3", "3", True),
        ("true", True, True),
        ("True", True, False),
        ("null", None, True),
        ("1.5", 1.5, True),
        ('[[]"-f", "x"]', ["-f", "x"], True),  # "[" opens a character class in a glob: escape it as "[[]"
        ('["-f", "x"]', ["-f", "x"], False),
        ('*"-f"*', ["-v", "-f"], True),
        ('{"a": 1, "b": 2}', {"b": 2, "a": 1}, True),
        ("", "", True),
    ],
)
def test_argument_globs_match_strings_as_they_are_and_other_values_as_json(pattern, value, matches):
    assert rule_matches(rule("bash", command=pattern), "bash", {"command": value}) is matches


def test_argument_globs_match_the_frozen_arguments_a_call_carries():
    arguments = snapshot({"command": "git status", "flags": ["-s"], "depth": 2})
    assert rule_matches(rule("bash", command="git *", flags='[[]"-s"]', depth="2"), "bash", arguments)


def test_every_argument_glob_must_match_and_a_missing_argument_does_not_match():
    both = rule("bash", command="git *", cwd="/repo*")
    assert rule_matches(both, "bash", {"command": "git log", "cwd": "/repo/sub"})
    assert not rule_matches(both, "bash", {"command": "git log", "cwd": "/etc"})
    assert not rule_matches(both, "bash", {"command": "git log"})


def test_a_rule_without_argument_globs_matches_any_arguments_but_one_with_globs_needs_an_object():
    assert rule_matches(rule("bash"), "bash", None)
    assert rule_matches(rule("bash"), "bash", ["not", "an", "object"])
    assert not rule_matches(rule("bash", command="*"), "bash", None)
    assert not rule_matches(rule("bash", command="*"), "bash", ["command"])


def test_a_glob_given_as_a_non_string_in_the_config_is_an_error():
    (problem,) = problems_of({"scripted": [{"tool": "bash", "arguments": {"depth": 2}, "outcome": "rejected"}]})
    assert problem.key == "approval.scripted.0.arguments.depth"


# --- scripted rules through a real harness ----------------------------------------------------


class AskAll:
    @hookimpl
    async def tools_pre_execute(self, execution, call_next):
        return Ask(reason="asks for everything")


def echo_tool() -> ToolDefinition:
    async def execute(args: Any, ctx: Any) -> str:
        return "ran"

    return ToolDefinition(
        name="bash",
        description="Run a command",
        parameters={"type": "object"},
        output=ToolOutput(schema={"type": "string"}, render=lambda args, value: []),
        execute=execute,
    )


@pytest.mark.anyio
async def test_the_first_matching_scripted_rule_answers():
    harness = Harness(
        plugins=[ApprovalPlugin(), AskAll()],
        config={
            "approval": {
                "answerers": ["scripted"],
                "scripted": [
                    {"tool": "bash", "arguments": {"command": "git status*"}, "outcome": "allowed-once"},
                    {"tool": "bash", "arguments": {"depth": "2"}, "outcome": "rejected"},
                    {"tool": "*", "outcome": "allowed-once"},
                ],
            }
        },
    )
    harness.tools.register(echo_tool())

    async def outcome(**arguments: Any) -> str:
        result = await harness.execute(ToolCall(call_id="c1", name="bash", arguments=arguments, agent="main"))
        return "ok" if not result.is_error else result.error.message

    assert await outcome(command="git status --short", depth=2) == "ok"
    assert await outcome(command="rm -rf /", depth=2) == 'the user rejected tool "bash"'
    assert await outcome(command="rm -rf /", depth=3) == "ok"
