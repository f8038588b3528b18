"""``harness rules check|explain|list``: run the rule examples, explain one decision, show the rules."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from harness_core import Harness

from .config import RULE_LISTS
from .plugin import SECTION, RulesPlugin

__all__ = ["run_rules", "setup_rules"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def setup_rules(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.add_parser("check", help="run every [[rules.examples]] entry; exit 1 if one does not hold")
    explain = actions.add_parser("explain", help="show the verdict of the rules on one call, part by part")
    explain.add_argument("name", metavar="NAME", help="the tool name, e.g. bash")
    explain.add_argument(
        "arguments", metavar="ARGS_JSON", help='the arguments as a JSON object, e.g. \'{"command": "ls"}\''
    )
    explain.add_argument("--json", action="store_true", help="machine-readable output")
    listing = actions.add_parser("list", help="the effective rules, with the layers they came from")
    listing.add_argument("--json", action="store_true", help="machine-readable output")


def _error(message: str) -> None:
    print(f"harness rules: error: {message}", file=sys.stderr, flush=True)


def _plugin(harness: Harness) -> RulesPlugin | None:
    for plugin in harness.plugin_manager.get_plugins():
        if isinstance(plugin, RulesPlugin):
            return plugin
    return None


def run_rules(args: argparse.Namespace, harness: Harness) -> int:
    try:
        code = _run(args, harness)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (`harness rules explain ... | head`): nothing left to say, and the
        # interpreter's final flush must not fail again on the closed pipe.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return EXIT_OK
    return code


def _run(args: argparse.Namespace, harness: Harness) -> int:
    if args.action is None:
        _error("choose an action: check, explain or list")
        return EXIT_USAGE
    plugin = _plugin(harness)
    if plugin is None or plugin.ruleset is None:
        _error("the rules plugin is not loaded or not configured")
        return EXIT_USAGE
    if args.action == "check":
        return _check(plugin)
    if args.action == "explain":
        return _explain(plugin, args)
    return _list(plugin, harness, args)


def _check(plugin: RulesPlugin) -> int:
    assert plugin.ruleset is not None and plugin.settings is not None
    examples = plugin.settings.examples
    cases = sum(len(example.match) + len(example.not_match) for example in examples)
    rules = sum(len(rules) for rules in plugin.ruleset.rules.values())
    failures = plugin.ruleset.examples_failures()
    for failure in failures:
        print(f"FAIL {failure}")
    if failures:
        print(f"{len(failures)} failure(s) in {len(examples)} example(s) ({cases} case(s)); {rules} rule(s) parsed")
        return EXIT_FAILED
    print(f"ok: {rules} rule(s) parsed, {len(examples)} example(s) ({cases} case(s)) hold")
    return EXIT_OK


def _explain(plugin: RulesPlugin, args: argparse.Namespace) -> int:
    try:
        arguments = json.loads(args.arguments)
    except json.JSONDecodeError as exc:
        _error(f"ARGS_JSON is not valid JSON: {exc}")
        return EXIT_USAGE
    if not isinstance(arguments, dict):
        _error(f"ARGS_JSON must be a JSON object of arguments, got {type(arguments).__name__}")
        return EXIT_USAGE
    verdict = plugin.decide(args.name, arguments)
    if args.json:
        data: dict[str, Any] = {
            "tool": verdict.tool,
            "decision": verdict.decision,
            "rule": verdict.rule,
            "reason": verdict.reason,
            "parts": [
                {"text": p.text, "origin": p.origin, "decision": p.decision, "rule": p.rule, "reason": p.reason}
                for p in verdict.parts
            ],
        }
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return EXIT_OK
    print(f"verdict: {verdict.decision}")
    print(f"rule: {verdict.rule}" if verdict.rule else "rule: none")
    print(f"reason: {verdict.reason}")
    if verdict.parts:
        print("parts:")
        for part in verdict.parts:
            where = f" (in {part.origin})" if part.origin else ""
            rule = f'rule "{part.rule}"' if part.rule else "no rule"
            text = " ".join(part.text.split())
            print(f"  {part.decision:<5}  {text}{where}  [{rule}]  {part.reason}")
    return EXIT_OK


def _list(plugin: RulesPlugin, harness: Harness, args: argparse.Namespace) -> int:
    assert plugin.settings is not None
    settings = plugin.settings
    config = harness.config
    if args.json:
        data: dict[str, Any] = {
            "default": settings.default,
            "default_for": dict(settings.default_for),
            **{kind: list(getattr(settings, kind)) for kind in RULE_LISTS},
            "origins": {key: config.origin(f"{SECTION}.{key}") for key in ("default", "default_for", *RULE_LISTS)},
        }
        print(json.dumps(data, indent=2))
        return EXIT_OK
    print(f"default: {settings.default}  (from {config.origin(f'{SECTION}.default')})")
    for tool, decision in sorted(settings.default_for.items()):
        print(f"default_for.{tool}: {decision}  (from {config.origin(f'{SECTION}.default_for.{tool}')})")
    for kind in RULE_LISTS:
        rules = getattr(settings, kind)
        print(f"{kind}: {len(rules)} rule(s)  (from {config.origin(f'{SECTION}.{kind}')})")
        for text in rules:
            print(f"  {text}")
    return EXIT_OK
