"""Decisions: a call judged against the compiled rules (deny over ask over allow, then the default).

A bash command is judged part by part (:mod:`harness_rules.commands`); its verdict is the most
restrictive part's. A part's redirections are judged as the file calls they amount to (``> f`` as
``write(f)``, ``< f`` as ``read(f)``), and the part gets the stricter of its command's verdict and
theirs. A part the rules cannot judge (a command name computed at run time, ``eval``, a
here-document, unreadable syntax) gets ``rules.cannot_judge`` (ask or deny), and still ``deny``
when a deny rule matches it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .commands import Part, analyse
from .config import BUILTIN_COMMAND_TOOLS, BUILTIN_PATH_TOOLS, RULE_LISTS, RulesConfig
from .syntax import Rule, conditions_match, parse_rule

__all__ = ["Decision", "PartVerdict", "RuleSet", "Verdict"]

Decision = Literal["allow", "ask", "deny"]
_RANK: dict[str, int] = {"allow": 0, "ask": 1, "deny": 2}
#: The bash tool's optional working-folder argument (harness-tools): redirections are relative to it.
WORKDIR_ARGUMENT = "workdir"


def stricter(first: Decision, second: Decision) -> Decision:
    """The more restrictive of two decisions (deny over ask over allow)."""
    return first if _RANK[first] >= _RANK[second] else second


@dataclass(frozen=True, slots=True)
class PartVerdict:
    """The decision on one part of a call: what, which rule (or none: a default or a problem), why."""

    text: str
    decision: Decision
    rule: str | None
    reason: str
    origin: str = ""
    #: True when an explicit deny rule decided (what the guard enforces).
    by_deny_rule: bool = False


@dataclass(frozen=True, slots=True)
class Verdict:
    """The decision on a whole call, the part that decided it, and every part's own verdict."""

    tool: str
    decision: Decision
    rule: str | None
    reason: str
    by_deny_rule: bool = False
    parts: tuple[PartVerdict, ...] = field(default=())


def _describe(text: str) -> str:
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= 200 else one_line[:197] + "..."


class RuleSet:
    """The compiled rules of a ``[rules]`` section and the workspace they are relative to."""

    def __init__(self, settings: RulesConfig, workspace: str, project: str | None = None) -> None:
        self.settings = settings
        #: Tool -> every argument judged: the built-in one and the configured one. A later layer can
        #: add an argument name, never take the built-in one away (deny rules are checked on both).
        self.command_tools = _merged(BUILTIN_COMMAND_TOOLS, settings.command_tools)
        self.path_tools = _merged(BUILTIN_PATH_TOOLS, settings.path_tools)
        kinds = {"command_tools": frozenset(self.command_tools), "path_tools": frozenset(self.path_tools)}
        self.rules: dict[str, tuple[Rule, ...]] = {
            kind: tuple(parse_rule(text, **kinds) for text in getattr(settings, kind)) for kind in RULE_LISTS
        }
        self.workspace = workspace
        # The workspace as written and as its symlinks resolve: a relative glob matches under either.
        self.roots = tuple(dict.fromkeys([os.path.realpath(workspace), os.path.abspath(workspace)]))
        # Deny and ask rules hold under the project folder too: rules.workspace (which any layer may
        # set) moves what allow rules cover, never what deny rules protect.
        self.project = project if project is not None else workspace
        self.deny_roots = tuple(dict.fromkeys(
            [*self.roots, os.path.realpath(self.project), os.path.abspath(self.project)]))
        self.home = os.path.expanduser("~")

    # --- defaults ---------------------------------------------------------------------------------

    def default_for(self, tool: str) -> Decision:
        """The decision for a call of ``tool`` that no rule matches."""
        return self.settings.default_for.get(tool, self.settings.default)

    def _default(self, tool: str, what: str) -> tuple[Decision, str]:
        decision = self.default_for(tool)
        source = f"rules.default_for.{tool}" if tool in self.settings.default_for else "rules.default"
        if decision == "allow":
            return decision, f"no rule matches {what}; {source} is allow"
        return decision, f"no rule allows {what} ({source} is {decision})"

    # --- the whole call -----------------------------------------------------------------------------

    def decide(self, tool: str, arguments: Any) -> Verdict:
        """Judge one call of ``tool`` with ``arguments`` (a mapping; anything else cannot be judged)."""
        if tool in self.command_tools:
            return self._decide_command(tool, arguments)
        if tool in self.path_tools:
            return self._decide_path(tool, arguments)
        return self._decide_other(tool, arguments)

    def _first(self, kind: str, tool: str, matches: Any) -> Rule | None:
        for rule in self.rules[kind]:
            if rule.names(tool) and (rule.kind == "any" or matches(rule)):
                return rule
        return None

    def _decide_other(self, tool: str, arguments: Any) -> Verdict:
        if not isinstance(arguments, Mapping):
            arguments = {}

        def matches(rule: Rule) -> bool:
            return rule.kind == "arguments" and conditions_match(rule.conditions, arguments)

        return self._by_rules(tool, f'tool "{tool}"', matches, matches)

    def _by_rules(self, tool: str, what: str, deny_matches: Any, allow_matches: Any) -> Verdict:
        rule = self._first("deny", tool, deny_matches)
        if rule is not None:
            return Verdict(tool=tool, decision="deny", rule=rule.text, reason=f'denied by rule "{rule.text}": {what}',
                           by_deny_rule=True)
        rule = self._first("ask", tool, deny_matches)
        if rule is not None:
            return Verdict(tool=tool, decision="ask", rule=rule.text,
                           reason=f'rule "{rule.text}" asks for approval: {what}')
        rule = self._first("allow", tool, allow_matches)
        if rule is not None:
            return Verdict(tool=tool, decision="allow", rule=rule.text, reason=f'allowed by rule "{rule.text}": {what}')
        decision, reason = self._default(tool, what)
        return Verdict(tool=tool, decision=decision, rule=None, reason=reason)

    # --- file tools -------------------------------------------------------------------------------

    def path_candidates(self, value: str, base: str | None = None) -> tuple[str, ...]:
        """Every absolute spelling of a path argument: resolved (symlinks, ``..``), lexical, ``~`` expanded.

        A deny rule matching any spelling denies; an allow rule must match them all.
        """
        base = base if base is not None else self.workspace
        if "\0" in value or "\0" in base:
            # The OS cannot take a NUL (os.path.realpath raises); judge the path without it and the
            # path cut at it, so a deny rule matching either denies and an allow needs both.
            variants = {(v.replace("\0", ""), b.replace("\0", "")) for v, b in
                        ((value, base), (value.split("\0")[0], base.split("\0")[0]))}
            return tuple(dict.fromkeys(c for v, b in sorted(variants) for c in self.path_candidates(v, b)))
        joined = os.path.join(base, value)
        spellings = [os.path.realpath(joined), os.path.normpath(joined)]
        if value == "~" or value.startswith("~/"):
            expanded = os.path.expanduser(value)
            spellings += [os.path.realpath(expanded), os.path.normpath(expanded)]
        return tuple(dict.fromkeys(spellings))

    def _path_rule_matches(self, rule: Rule, candidates: Iterable[str], every: bool,
                           roots: tuple[str, ...] | None = None) -> bool:
        assert rule.path is not None
        roots = self.roots if roots is None else roots
        results = (rule.path.matches(candidate, roots) for candidate in candidates)
        return all(results) if every else any(results)

    def deny_candidates(self, value: str, bases: Iterable[str]) -> tuple[str, ...]:
        """Every spelling of ``value`` from each of ``bases``: what deny and ask rules are matched against."""
        return tuple(dict.fromkeys(c for base in bases for c in self.path_candidates(value, base)))

    def cannot_judge(self, tool: str) -> Decision:
        """What a call or part of ``tool`` the rules cannot judge gets: ``rules.cannot_judge`` or a stricter default."""
        return stricter(self.settings.cannot_judge, self.default_for(tool))

    def _decide_path(self, tool: str, arguments: Any) -> Verdict:
        names = self.path_tools[tool]
        mapping = arguments if isinstance(arguments, Mapping) else {}
        present = [name for name in names if name in mapping]
        values = [mapping[name] for name in present]
        if not values or any(not isinstance(value, str) or not value or "\x00" in value for value in values):
            # The tool will refuse it, but a rule cannot say which file it means: never allow.
            decision = self.cannot_judge(tool)
            argument = present[0] if present and len(values) == 1 else " / ".join(names)
            return Verdict(tool=tool, decision=decision, rule=None,
                           reason=f"cannot judge {tool}: its {argument} argument is not a path")
        candidates = tuple(dict.fromkeys(c for value in values for c in self.path_candidates(value)))
        restricted = tuple(dict.fromkeys(
            c for value in values for c in self.deny_candidates(value, (self.workspace, self.project))))
        what = f"{tool} {' / '.join(dict.fromkeys(values))}"
        return self._by_rules(
            tool,
            what,
            lambda rule: rule.kind == "path" and self._path_rule_matches(rule, restricted, False, self.deny_roots),
            lambda rule: rule.kind == "path" and self._path_rule_matches(rule, candidates, every=True),
        )

    def first_path_rule(self, kind: str, tools: Iterable[str], candidates: tuple[str, ...]) -> Rule | None:
        """The first ``kind`` (deny or ask) rule of one of ``tools`` matching any candidate path."""
        for tool in tools:
            for rule in self.rules[kind]:
                if rule.names(tool) and (rule.kind == "any" or (
                        rule.kind == "path" and self._path_rule_matches(rule, candidates, False, self.deny_roots))):
                    return rule
        return None

    # --- command tools ---------------------------------------------------------------------------

    def _decide_command(self, tool: str, arguments: Any) -> Verdict:
        names = self.command_tools[tool]
        for rule in self.rules["deny"]:
            if rule.kind == "any" and rule.names(tool):
                # A bare deny removes the tool: whatever the command (even an empty one), it never runs.
                return Verdict(tool=tool, decision="deny", rule=rule.text, reason=f'denied by rule "{rule.text}"',
                               by_deny_rule=True)
        mapping = arguments if isinstance(arguments, Mapping) else {}
        present = [name for name in names if name in mapping]
        commands = [mapping[name] for name in present]
        if not commands or any(not isinstance(command, str) for command in commands):
            decision = self.cannot_judge(tool)
            argument = present[0] if len(present) == 1 else " / ".join(names)
            return Verdict(tool=tool, decision=decision, rule=None,
                           reason=f"cannot judge {tool}: its {argument} argument is not a string")
        bases = [self.workspace, self.project]
        workdir = mapping.get(WORKDIR_ARGUMENT)
        if isinstance(workdir, str) and "\x00" in workdir:
            # No folder has a NUL in its name: which files the command's paths mean is unknown.
            return Verdict(tool=tool, decision=self.cannot_judge(tool), rule=None,
                           reason=f"cannot judge {tool}: its {WORKDIR_ARGUMENT} argument is not a path")
        if isinstance(workdir, str) and workdir:
            bases = [os.path.join(base, os.path.expanduser(workdir)) for base in bases]
        # Every mapped argument is judged (a layer that adds "cmd" cannot hide "command" from deny rules).
        parts = [self.judge_part(tool, part, bases[0], tuple(bases[1:]))
                 for command in dict.fromkeys(commands) for part in analyse(command)]
        if not parts:
            decision, reason = self._default(tool, f"an empty {tool} command")
            return Verdict(tool=tool, decision=decision, rule=None, reason=reason)
        # The most restrictive part decides; among denials, one by an explicit deny rule (the guard's).
        deciding = max(parts, key=lambda verdict: (_RANK[verdict.decision], verdict.by_deny_rule))
        if deciding.decision == "allow" and len(parts) > 1:
            reason = f"every part of the command is allowed ({len(parts)} parts)"
        else:
            reason = deciding.reason
        return Verdict(tool=tool, decision=deciding.decision, rule=deciding.rule, reason=reason,
                       by_deny_rule=deciding.by_deny_rule, parts=tuple(parts))

    def judge_part(self, tool: str, part: Part, base: str, other_bases: tuple[str, ...] = ()) -> PartVerdict:
        """The verdict on one part of a command: deny rules first, then the stricter of the command's
        own verdict and that of each file it redirects into (``write``) or out of (``read``)."""
        text = _describe(part.text)
        origin = part.origin

        def verdict(decision: Decision, rule: Rule | None, reason: str, by_deny: bool = False) -> PartVerdict:
            return PartVerdict(text=part.text, decision=decision, rule=rule.text if rule else None, reason=reason,
                               origin=origin, by_deny_rule=by_deny)

        rule = self._first_command_rule("deny", tool, part.deny_views)
        if rule is not None:
            return verdict("deny", rule, f'denied by rule "{rule.text}": {text}', True)
        files = [self._judge_file("write", path, base, text, part.folder_unknown, other_bases) for path in part.writes]
        files += [self._judge_file("read", path, base, text, part.folder_unknown, other_bases) for path in part.reads]
        for decision, found, reason, by_deny in files:
            if by_deny:
                return verdict(decision, found, reason, True)
        deciding = self._judge_command(tool, part, text)
        for candidate in files:
            if _RANK[candidate[0]] > _RANK[deciding[0]]:
                deciding = candidate
        return verdict(*deciding)

    def _judge_command(self, tool: str, part: Part, text: str) -> tuple[Decision, Rule | None, str, bool]:
        """The command's own verdict, without its redirections and deny rules (already checked)."""
        if part.kind == "construct" or (part.problems and self.settings.cannot_judge == "deny"):
            problem = "; ".join(part.problems) or "not analysed"
            return self.cannot_judge(tool), None, f"cannot judge {text} safely: {problem}", False
        rule = self._first_command_rule("ask", tool, part.deny_views)
        if rule is not None:
            return "ask", rule, f'rule "{rule.text}" asks for approval: {text}', False
        matched: Rule | None = None
        decision: Decision = "allow"
        if part.kind == "wrapper":
            reason = f"{text} runs the script judged in its own parts"
        elif part.kind == "redirect":
            reason = f"{text} only redirects"
        else:
            matched = self._first_command_rule("allow", tool, part.allow_views)
            if matched is not None:
                reason = f'allowed by rule "{matched.text}": {text}'
            else:
                decision, reason = self._default(tool, text)
                if part.unmatchable:
                    reason = f"{reason}; no allow rule applies: {part.unmatchable}"
                if part.cautions and decision == "allow":
                    return "ask", None, f"{text} needs a rule that names it in full: {part.cautions[0]}", False
                if part.cautions:
                    reason = f"{reason}; {part.cautions[0]}"
        if decision == "deny":
            return decision, None, reason, False
        if part.problems:
            return self.cannot_judge(tool), None, f"cannot judge {text} safely: {part.problems[0]}", False
        return decision, matched, reason, False

    def _judge_file(self, tool: str, path: str, base: str, text: str, folder_unknown: bool,
                    other_bases: tuple[str, ...] = ()) -> tuple[Decision, Rule | None, str, bool]:
        """A redirection judged as the call ``tool(path)`` (``write`` or ``read``) would be.

        ``edit`` deny rules protect a file from redirections too (``>>`` edits it). When the command
        line changes folder, an allow rule cannot vouch for a relative path: it may land elsewhere.
        """
        candidates = self.path_candidates(path, base)
        restricted = self.deny_candidates(path, (base, *other_bases))
        verb = "writes to" if tool == "write" else "reads"
        what = f"{text} {verb} {path}"
        found = self.first_path_rule("deny", ("write", "edit") if tool == "write" else (tool,), restricted)
        if found is not None:
            return "deny", found, f'denied by rule "{found.text}": {what}', True
        found = self.first_path_rule("ask", (tool,), restricted)
        if found is not None:
            return "ask", found, f'rule "{found.text}" asks for approval: {what}', False
        relative = not (path.startswith("/") or path == "~" or path.startswith("~/"))
        if not (folder_unknown and relative):
            for rule in self.rules["allow"]:
                if rule.names(tool) and (rule.kind == "any" or (
                        rule.kind == "path" and self._path_rule_matches(rule, candidates, every=True))):
                    return "allow", rule, f'allowed by rule "{rule.text}": {what}', False
        decision, reason = self._default(tool, f"{tool} {path}")
        if folder_unknown and relative:
            reason += "; the command changes folder, so no allow rule vouches for a relative path"
        return decision, None, f"{what}: {reason}", False

    def _first_command_rule(self, kind: str, tool: str, views: tuple[str, ...]) -> Rule | None:
        for rule in self.rules[kind]:
            if not rule.names(tool):
                continue
            if rule.kind == "any":
                return rule
            if rule.command is not None and any(rule.command.fullmatch(view) for view in views):
                return rule
        return None

    # --- examples ---------------------------------------------------------------------------------

    def example_matches(self, rule: Rule, kind: str, example: str | Mapping[str, Any]) -> bool:
        """Whether ``rule`` (from the ``kind`` list) decides ``example``: an allow rule must cover the
        whole call (every part of a command, every spelling of a path); a deny or ask rule must
        match some part or spelling."""
        every = kind == "allow"
        if rule.tool in self.command_tools:
            if not isinstance(example, str):
                return False
            parts = analyse(example)
            if every:
                return bool(parts) and all(self._part_allowed_by(rule, part) for part in parts)
            return any(rule.kind == "any" or (rule.command is not None and any(
                rule.command.fullmatch(view) for view in part.deny_views)) for part in parts)
        if rule.tool in self.path_tools:
            if not isinstance(example, str):
                return False
            if rule.kind == "any":
                return True
            return self._path_rule_matches(rule, self.path_candidates(example), every=every)
        if rule.kind == "any":
            return True
        if isinstance(example, str):
            import json

            try:
                example = json.loads(example)
            except ValueError:
                return False
        return isinstance(example, Mapping) and conditions_match(rule.conditions, example)

    def _part_allowed_by(self, rule: Rule, part: Part) -> bool:
        if part.kind == "construct" or part.problems or part.writes:
            return False
        if part.kind in ("wrapper", "redirect"):
            return True
        if rule.kind == "any":
            return True
        return rule.command is not None and any(rule.command.fullmatch(view) for view in part.allow_views)

    def examples_failures(self) -> list[str]:
        """Every ``[[rules.examples]]`` entry that does not hold, as one line each."""
        failures: list[str] = []
        kinds = {"command_tools": frozenset(self.command_tools), "path_tools": frozenset(self.path_tools)}
        for index, example in enumerate(self.settings.examples):
            rule = parse_rule(example.rule, **kinds)
            kind = next((k for k in RULE_LISTS if rule.text in (r.text for r in self.rules[k])), None)
            label = f"rules.examples[{index}] ({rule.text})"
            if kind is None:
                failures.append(f"{label}: the rule is not in rules.allow, rules.ask or rules.deny")
                continue
            for item in example.match:
                if not self.example_matches(rule, kind, item):
                    failures.append(f"{label}: should match {_show(item)}, but does not{self._why(rule, kind, item)}")
            for item in example.not_match:
                if self.example_matches(rule, kind, item):
                    failures.append(f"{label}: should not match {_show(item)}, but does")
        return failures

    def _why(self, rule: Rule, kind: str, item: Any) -> str:
        if kind != "allow" or rule.tool not in self.command_tools or not isinstance(item, str):
            return ""
        for part in analyse(item):
            if not self._part_allowed_by(rule, part):
                if part.problems:
                    return f" (part {_show(part.text)}: {part.problems[0]})"
                if part.writes:
                    return f" (part {_show(part.text)} writes to {part.writes[0]})"
                return f" (part {_show(part.text)} is not matched)"
        return ""


def _merged(builtin: Mapping[str, str], configured: Mapping[str, str]) -> dict[str, tuple[str, ...]]:
    """Tool -> argument names: the built-in mapping, with each configured argument added (never replacing)."""
    merged: dict[str, list[str]] = {tool: [argument] for tool, argument in builtin.items()}
    for tool, argument in configured.items():
        merged.setdefault(tool, [])
        if argument not in merged[tool]:
            merged[tool].append(argument)
    return {tool: tuple(arguments) for tool, arguments in merged.items()}


def _show(item: object) -> str:
    if isinstance(item, str):
        return '"' + item.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    import json

    return json.dumps(item, sort_keys=True)

