"""The README demo, end to end: examples/demo's composition through the real CLI and every installed plugin.

The demo project selects the workspace-write permission preset, adds rules, runs the project's
Claude Code hook and lets its agent write Code Mode programs; each call of its batch shows one
behaviour, and this test pins what each one must produce.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "demo"


def _sandbox_works() -> bool:
    from harness_sandbox.selection import default_backends

    return any(backend.probe(False, 10.0).usable for backend in default_backends().values())


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    project = tmp_path_factory.mktemp("demo") / "demo"
    shutil.copytree(DEMO, project, ignore=shutil.ignore_patterns(".harness", "__pycache__"))
    env = dict(os.environ, HARNESS_USER_CONFIG="")
    env.pop("HARNESS_LOAD_PLUGINS", None)
    completed = subprocess.run(
        [sys.executable, "-m", "harness_core", "-C", str(project), "--no-user-config", "run", "calls.jsonl", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert completed.returncode == 1, completed.stderr  # some calls fail on purpose
    return {row["id"]: row for row in map(json.loads, completed.stdout.splitlines())}


def _text(row: dict) -> str:
    return "".join(block["text"] for block in row["content"])


def test_policies_of_the_demo_plugins(outcomes):
    assert not outcomes["c1"]["is_error"] and not outcomes["c4"]["is_error"]
    assert _text(outcomes["c3"]) == "Error: arguments mention a password; not sending that anywhere"
    assert _text(outcomes["c5"]) == 'Error: the user rejected tool "save_file"'
    assert _text(outcomes["c6"]) == 'Error: path "app/.env" is protected by path-guard rule "**/.env"'
    assert outcomes["c10"]["error"]["info"]["code"] == "UNKNOWN_TOOL"


def test_a_deny_rule_beats_the_allow_rule_for_the_harmless_prefix(outcomes):
    row = outcomes["c12"]
    assert row["is_error"] and 'denied by rule "bash(rm *)"' in row["error"]["message"]


def test_the_projects_claude_code_hook_denies_a_network_command(outcomes):
    assert outcomes["c13"]["error"]["message"] == "this project keeps shell commands off the network"


def test_an_allowed_command_runs_confined_or_fails_closed(outcomes):
    row = outcomes["c11"]
    if _sandbox_works():
        assert not row["is_error"] and ".claude" in _text(row)
    else:
        assert row["is_error"] and "sandbox" in _text(row).lower()


def test_a_code_mode_program_sees_the_guard_refusal_and_carries_on(outcomes):
    row = outcomes["c14"]
    if not _sandbox_works():
        assert row["is_error"] and row["error"]["info"]["code"] == "CODE_RUN_FAILED"
        return
    text = _text(row)
    assert not row["is_error"], text
    assert text.startswith("signal: a cooperative cancellation flag with a reason\n")
    assert 'save_file refused: path "app/.env" is protected by path-guard rule "**/.env"' in text
    assert '"looked_up": 1' in text


def test_the_demo_rules_examples_hold():
    env = dict(os.environ, HARNESS_USER_CONFIG="")
    env.pop("HARNESS_LOAD_PLUGINS", None)
    completed = subprocess.run(
        [sys.executable, "-m", "harness_core", "-C", str(DEMO), "--no-user-config", "rules", "check"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
