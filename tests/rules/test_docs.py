"""docs/rules.md and the [rules] block of docs/configuration.md stay true to the plugin."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from harness_core import Harness
from harness_rules import RulesPlugin
from harness_rules.config import RulesConfig

DOCS = Path(__file__).resolve().parents[2] / "docs"
RULES_DOCS = (DOCS / "rules.md").read_text(encoding="utf-8")
README = (Path(__file__).resolve().parents[2] / "plugins" / "rules" / "README.md").read_text(encoding="utf-8")
TOML_BLOCK = re.compile(r"^```toml\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)


def rules_blocks(text: str) -> list[str]:
    return [block for block in TOML_BLOCK.findall(text) if "[rules]" in block]


@pytest.mark.parametrize(
    "block",
    [*rules_blocks(RULES_DOCS), *rules_blocks(README), *rules_blocks((DOCS / "configuration.md").read_text("utf-8"))],
)
def test_every_rules_example_in_the_docs_validates_with_the_plugin(block, tmp_path):
    data = tomllib.loads(block)
    harness = Harness(plugins=[RulesPlugin()], config=data)
    assert harness.config.section("rules").deny == data["rules"].get("deny", [])


@pytest.mark.parametrize("field", list(RulesConfig.model_fields))
def test_every_key_is_in_the_docs_table_and_the_readme(field):
    assert f"| `{field}`" in RULES_DOCS or f"`{field}`" in RULES_DOCS.split("## Configuration keys")[1], field
    assert f"`{field}`" in README, field


def test_the_docs_examples_hold():
    block = rules_blocks(RULES_DOCS)[0]
    harness = Harness(plugins=[RulesPlugin()], config=tomllib.loads(block))
    plugin = next(p for p in harness.plugin_manager.get_plugins() if isinstance(p, RulesPlugin))
    assert plugin.ruleset is not None and plugin.ruleset.examples_failures() == []
