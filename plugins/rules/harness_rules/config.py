"""The [rules] section: allow / ask / deny rule lists, the defaults, examples, and which tools are which."""

from __future__ import annotations

from typing import Any, Literal

import pydantic
from pydantic_core import PydanticCustomError

from harness_core import DenyList

from .syntax import RuleSyntaxError, parse_rule

__all__ = ["Decision", "RuleExample", "RulesConfig"]

Decision = Literal["allow", "ask", "deny"]
RULE_LISTS = ("deny", "ask", "allow")
#: The tool kinds every configuration has. A layer may add tools or argument names, never take these
#: away: a deny rule on ``bash`` is checked against ``command`` whatever a later layer maps ``bash`` to.
BUILTIN_COMMAND_TOOLS = {"bash": "command"}
BUILTIN_PATH_TOOLS = {"read": "file_path", "write": "file_path", "edit": "file_path"}
#: The values of ``rules.cannot_judge``: what a command the rules cannot judge gets (never allow).
CANNOT_JUDGE = ("ask", "deny")


class RuleExample(pydantic.BaseModel):
    """One ``[[rules.examples]]`` entry: calls the named rule must and must not match."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    rule: str = pydantic.Field(description="a rule from rules.allow, rules.ask or rules.deny, written the same way")
    match: list[str | dict[str, Any]] = pydantic.Field(
        default_factory=list,
        description="calls the rule must match: commands for bash, paths for file tools, argument tables otherwise",
    )
    not_match: list[str | dict[str, Any]] = pydantic.Field(
        default_factory=list, description="calls the rule must not match"
    )


class RulesConfig(pydantic.BaseModel):
    """The [rules] section: which calls are allowed, asked about or denied, by tool and argument pattern."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    default: Decision = pydantic.Field(
        default="ask", description="the decision for calls no rule matches: allow, ask or deny"
    )
    default_for: dict[str, Decision] = pydantic.Field(
        default_factory=dict, description='per-tool defaults overriding `default`, e.g. { bash = "ask" }'
    )
    cannot_judge: Literal["ask", "deny"] = pydantic.Field(
        default="ask",
        description='what a command part the rules cannot judge gets (a command name computed at run time, eval of '
        'computed text, unreadable syntax): "ask", or "deny" for unattended use; never allow',
    )
    # The tool kinds come before the rule lists: validating a rule needs them.
    command_tools: dict[str, str] = pydantic.Field(
        default_factory=lambda: dict(BUILTIN_COMMAND_TOOLS),
        description="tools whose calls run a shell command: tool name -> the argument holding the command "
        "(added to the built-in bash -> command, which always applies too)",
    )
    path_tools: dict[str, str] = pydantic.Field(
        default_factory=lambda: dict(BUILTIN_PATH_TOOLS),
        description="tools that take a file path: tool name -> the argument holding the path (added to the built-in "
        "read, write, edit -> file_path, which always apply too)",
    )
    workspace: str | None = pydantic.Field(
        default=None,
        description="the root relative path globs are matched under (default: the project folder); relative deny "
        "and ask rules are matched under the project folder too",
    )
    allow: list[str] = pydantic.Field(default_factory=list, description="rules whose calls run without asking")
    ask: list[str] = pydantic.Field(default_factory=list, description="rules whose calls need approval")
    deny: DenyList = pydantic.Field(
        default_factory=list,
        description="rules whose calls never run; united across layers and presets, so none can be removed",
    )
    examples: list[RuleExample] = pydantic.Field(
        default_factory=list, description="match / not_match examples checked by `harness rules check`"
    )

    @pydantic.field_validator("cannot_judge", mode="before")
    @classmethod
    def _cannot_judge_values(cls, value: object) -> object:
        if value not in CANNOT_JUDGE:
            # "Cannot parse" never means allow, so there is no value that lets the default decide.
            raise PydanticCustomError(
                "rules_cannot_judge",
                'allowed values are "ask" and "deny" (a command the rules cannot judge is never allowed)',
            )
        return value

    @pydantic.field_validator("path_tools")
    @classmethod
    def _one_kind_per_tool(cls, value: dict[str, str], info: pydantic.ValidationInfo) -> dict[str, str]:
        command_tools = set(info.data.get("command_tools", {})) | set(BUILTIN_COMMAND_TOOLS)
        overlap = (set(value) | set(BUILTIN_PATH_TOOLS)) & command_tools
        if overlap:
            raise PydanticCustomError(
                "rules_tools",
                "{names} is also in rules.command_tools; a tool takes a command or a path, not both",
                {"names": ", ".join(sorted(overlap))},
            )
        return value

    @pydantic.field_validator("allow", "ask", "deny")
    @classmethod
    def _rules_parse(cls, value: list[str], info: pydantic.ValidationInfo) -> list[str]:
        command_tools, path_tools = _tool_kinds(info)
        problems: list[str] = []
        for index, text in enumerate(value):
            try:
                parse_rule(text, command_tools=command_tools, path_tools=path_tools)
            except RuleSyntaxError as exc:
                problems.append(f"rules.{info.field_name}[{index}] {text!r}: {exc}")
        if problems:
            # One error listing every bad entry, each named by its key and index.
            raise PydanticCustomError("rules_syntax", "{problems}", {"problems": "; ".join(problems)})
        return value

    @pydantic.field_validator("examples")
    @classmethod
    def _examples_parse(cls, value: list[RuleExample], info: pydantic.ValidationInfo) -> list[RuleExample]:
        command_tools, path_tools = _tool_kinds(info)
        problems: list[str] = []
        for index, example in enumerate(value):
            try:
                rule = parse_rule(example.rule, command_tools=command_tools, path_tools=path_tools)
            except RuleSyntaxError as exc:
                problems.append(f"rules.examples[{index}].rule {example.rule!r}: {exc}")
                continue
            if rule.kind not in ("command", "path") and not (rule.tool in command_tools or rule.tool in path_tools):
                continue
            for key in ("match", "not_match"):
                for position, item in enumerate(getattr(example, key)):
                    if not isinstance(item, str):
                        what = "a command" if rule.tool in command_tools else "a path"
                        problems.append(
                            f"rules.examples[{index}].{key}[{position}]: a {rule.tool} example is {what} (a string), "
                            "not a table"
                        )
        if problems:
            raise PydanticCustomError("rules_syntax", "{problems}", {"problems": "; ".join(problems)})
        return value


def _tool_kinds(info: pydantic.ValidationInfo) -> tuple[frozenset[str], frozenset[str]]:
    # A field that failed its own validation is missing from info.data: fall back to the defaults.
    command_tools = info.data.get("command_tools", {})
    path_tools = info.data.get("path_tools", {})
    return frozenset({*command_tools, *BUILTIN_COMMAND_TOOLS}), frozenset({*path_tools, *BUILTIN_PATH_TOOLS})
