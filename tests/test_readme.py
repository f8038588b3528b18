"""The README keeps its promises: two Quick start commands, CI runs the test one, the example config is valid."""

from __future__ import annotations

import re
from pathlib import Path

from harness_core import Harness
from harness_core.config import ConfigSource

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def quick_start_commands() -> list[str]:
    section = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```\n(.*?)```", section, re.S)]


def test_quick_start_holds_exactly_two_commands_demo_then_tests():
    assert quick_start_commands() == ["python3 dev.py demo", "python3 dev.py test"]


def test_ci_runs_the_readme_test_command():
    assert "python3 dev.py test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_the_readme_harness_toml_example_validates(tmp_path, monkeypatch):
    example = re.findall(r"```toml\n(.*?)```", README, re.S)[0]
    (tmp_path / "harness.toml").write_text(example)
    monkeypatch.setenv("HARNESS_LOAD_PLUGINS", "path-guard")
    harness = Harness(config=ConfigSource.for_project(tmp_path, user_file=False), load_entrypoints=True)
    assert harness.config.section("path_guard").deny == ["**/.env", "secrets/**"]


def test_the_readme_permission_composition_validates_with_the_real_plugins(tmp_path, monkeypatch):
    example = next(block for block in re.findall(r"```toml\n(.*?)```", README, re.S) if "[rules]" in block)
    (tmp_path / "harness.toml").write_text(example)
    monkeypatch.delenv("HARNESS_LOAD_PLUGINS", raising=False)
    harness = Harness(config=ConfigSource.for_project(tmp_path, user_file=False), load_entrypoints=True)
    config = harness.config
    assert config.presets == ("workspace-write",)
    assert config.section("sandbox").mode == "workspace-write"
    assert config.section("rules").default_for["bash"] == "ask"
    assert "bash(rm -rf *)" in config.section("rules").deny
    assert config.section("hooks.claude_code").enabled is True
