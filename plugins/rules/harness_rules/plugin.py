"""The rules plugin: hook implementations only (config section, pre-execute decision, deny guard, doctor, CLI)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness_core import Allow, Ask, Deny, Execution, ExecutionToken, Harness, HarnessConfig, hookimpl

if TYPE_CHECKING:
    from .config import RulesConfig
    from .engine import RuleSet, Verdict

__all__ = ["DECISION_EVENT", "RulesPlugin", "SECTION", "workspace_root"]

#: The config section this plugin owns: ``[rules]`` in harness.toml.
SECTION = "rules"
#: The session event recording a deny or ask decision (log-only, never model-visible).
DECISION_EVENT = "rules/decision"
#: How many verdicts are kept between pre-execute and the guard of the same call. Denied and dry-run
#: calls never reach the guard, so without a bound those entries would accumulate.
CACHE_LIMIT = 256


def workspace_root(settings: RulesConfig, project_dir: Path) -> str:
    """``rules.workspace`` (relative to the project folder), else the project folder itself."""
    if settings.workspace is None:
        return str(project_dir)
    return str((project_dir / Path(settings.workspace).expanduser()).resolve())


class RulesPlugin:
    """Allow, ask or deny each call by the ``[rules]`` lists; deny rules are enforced again by a guard.

    The entry point names the class, so each Harness gets its own instance and rules.
    """

    def __init__(self) -> None:
        # Set by harness_configure, which the host runs before any call can reach the hooks.
        self.settings: RulesConfig | None = None
        self.ruleset: RuleSet | None = None
        self.harness: Harness | None = None
        # Verdicts of calls between pre-execute and the guard, by execution identity.
        self._verdicts: OrderedDict[ExecutionToken, Verdict] = OrderedDict()

    # --- start-up ---------------------------------------------------------------------------------

    @hookimpl
    def harness_register_config(self, register: Callable[[str, type[Any]], None]) -> None:
        # Imported here: defining a pydantic model is the slow part of start-up, and commands such
        # as `harness plugins` never compose the configuration.
        from .config import RulesConfig

        register(SECTION, RulesConfig)

    @hookimpl
    def harness_configure(self, config: HarnessConfig, harness: Harness) -> None:
        from .engine import RuleSet

        settings: RulesConfig = config.section(SECTION)
        self.settings, self.harness = settings, harness
        self.ruleset = RuleSet(settings, workspace_root(settings, config.project_dir), str(config.project_dir))

    # --- deciding -----------------------------------------------------------------------------------

    def decide(self, name: str, arguments: Any) -> Verdict:
        """The verdict of the rules on one call (what ``harness rules explain`` prints)."""
        if self.ruleset is None:
            raise RuntimeError("the rules plugin was never configured (harness_configure did not run)")
        return self.ruleset.decide(name, arguments)

    def _verdict(self, execution: Execution) -> Verdict:
        cached = self._verdicts.get(execution.token)
        if cached is not None:
            return cached
        verdict = self.decide(execution.name, execution.arguments)
        self._verdicts[execution.token] = verdict
        while len(self._verdicts) > CACHE_LIMIT:
            self._verdicts.popitem(last=False)
        return verdict

    @hookimpl
    async def tools_pre_execute(self, execution: Execution, call_next: Callable[[], Awaitable[Any]]) -> Any:
        if self.ruleset is None:
            return Deny(reason="the rules plugin was never configured, so it cannot tell which calls are allowed")
        verdict = self._verdict(execution)
        if verdict.decision == "allow":
            return await call_next()
        _record(execution, verdict)
        if verdict.decision == "deny":
            self._verdicts.pop(execution.token, None)  # a denied call never reaches the guard
            return Deny(reason=verdict.reason)
        # Ask: the rest of the chain still speaks, and its denial is stricter than our ask.
        downstream = await call_next()
        if not isinstance(downstream, Allow | Ask):
            return downstream  # a Deny is stricter; anything else the core refuses (fail closed)
        return Ask(reason=verdict.reason)

    @hookimpl
    def tools_guard(self, execution: Execution) -> str | None:
        # Deny rules again, after every listener and the approval: nothing upstream can lift them.
        if self.ruleset is None:
            return "the rules plugin was never configured, so it cannot tell which calls are denied"
        verdict = self._verdicts.pop(execution.token, None) or self.decide(execution.name, execution.arguments)
        if verdict.decision == "deny" and verdict.by_deny_rule:
            return verdict.reason
        return None

    # --- doctor and CLI -------------------------------------------------------------------------------

    @hookimpl
    def harness_diagnose(self) -> list[tuple[str, str]]:
        settings, ruleset = self.settings, self.ruleset
        if settings is None or ruleset is None:
            return [("error", "the rules plugin was never configured")]
        defaults = ", ".join(f"{tool} {decision}" for tool, decision in sorted(settings.default_for.items()))
        lines: list[tuple[str, str]] = [
            (
                "info",
                f"{len(settings.allow)} allow, {len(settings.ask)} ask, {len(settings.deny)} deny; "
                f"default {settings.default}" + (f" ({defaults})" if defaults else ""),
            ),
            ("info", f"path globs are relative to {ruleset.workspace}"),
        ]
        tools = set(self.harness.tools.names()) if self.harness is not None else set()
        if tools:
            for kind, rules in ruleset.rules.items():
                for rule in rules:
                    if not any(rule.names(tool) for tool in tools):
                        lines.append(("warning", f'rules.{kind}: rule "{rule.text}" names no registered tool'))
        for failure in ruleset.examples_failures():
            lines.append(("error", failure))
        return lines

    @hookimpl
    def harness_register_commands(self, register: Callable[..., None]) -> None:
        from .cli import run_rules, setup_rules

        register("rules", help="check the [rules] examples, explain a decision, list the rules",
                 setup=setup_rules, run=run_rules)


def _record(execution: Execution, verdict: Verdict) -> None:
    execution.record_event(
        DECISION_EVENT,
        {"tool": verdict.tool, "decision": verdict.decision, "rule": verdict.rule, "reason": verdict.reason},
    )
