"""The configuration and CLI docs stay true: every command and core key they name exists."""

from __future__ import annotations

import argparse
import re
import tomllib
from pathlib import Path

import pydantic
import pytest

from harness_cli import build_parser
from harness_core import ConfigSource, Harness
from harness_core.sections import PluginsSection, SessionSection

DOCS = Path(__file__).resolve().parents[2] / "docs"
CLI_DOCS = DOCS / "cli.md"
CONFIG_DOCS = DOCS / "configuration.md"

TOML_BLOCK = re.compile(r"^```toml\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
#: The one ```toml block of configuration.md that must validate as a whole harness.toml.
TESTED_MARKER = "# tested: complete example"


def subcommands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command path of ``parser``: ``("call",)``, ``("config", "show")``, ..."""
    found: list[tuple[str, ...]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, subparser in action.choices.items():
                found.append((*prefix, name))
                found += subcommands(subparser, (*prefix, name))
    return found


def toml_blocks(text: str) -> list[tuple[int, str]]:
    """The ```toml blocks of a Markdown text, each with the line its content starts on."""
    return [(text.count("\n", 0, match.start(1)) + 1, match.group(1)) for match in TOML_BLOCK.finditer(text)]


CONFIG_BLOCKS = toml_blocks(CONFIG_DOCS.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def cli_docs() -> str:
    return CLI_DOCS.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def config_docs() -> str:
    return CONFIG_DOCS.read_text(encoding="utf-8")


def test_the_parser_has_commands_to_check() -> None:
    commands = subcommands(build_parser())
    assert ("call",) in commands and ("config", "show") in commands, commands


def test_every_command_of_the_parser_has_a_heading_in_the_cli_docs(cli_docs: str) -> None:
    missing = [
        " ".join(command)
        for command in subcommands(build_parser())
        if f"## `harness {' '.join(command)}`" not in cli_docs
    ]
    assert missing == []


def test_the_cli_docs_name_no_command_the_parser_lacks(cli_docs: str) -> None:
    known = {" ".join(command) for command in subcommands(build_parser())}
    documented = set(re.findall(r"^## `harness ([^`]+)`[ \t]*$", cli_docs, re.MULTILINE))
    assert documented - known == set()


@pytest.mark.parametrize(("section", "model"), [("plugins", PluginsSection), ("session", SessionSection)])
def test_every_field_of_the_core_sections_is_in_the_configuration_docs(
    config_docs: str, section: str, model: type[pydantic.BaseModel]
) -> None:
    assert f"## `[{section}]`" in config_docs, section
    for field in model.model_fields:
        # Shown in a harness.toml snippet, and explained by name.
        assert re.search(rf"^{re.escape(field)} = ", config_docs, re.MULTILINE), f"{section}.{field}"
        assert f"**`{field}`**" in config_docs, f"{section}.{field}"


@pytest.mark.parametrize(("line", "text"), CONFIG_BLOCKS, ids=[f"configuration.md:{line}" for line, _ in CONFIG_BLOCKS])
def test_every_toml_block_in_the_configuration_docs_parses(line: int, text: str) -> None:
    tomllib.loads(text)


def test_the_complete_example_harness_toml_validates(tmp_path: Path) -> None:
    tested = [text for _, text in CONFIG_BLOCKS if TESTED_MARKER in text]
    assert len(tested) == 1, f"exactly one ```toml block of configuration.md is marked {TESTED_MARKER!r}"
    (tmp_path / "harness.toml").write_text(tested[0], encoding="utf-8")
    harness = Harness(config=ConfigSource.for_project(tmp_path, user_file=False))
    assert harness.config.source is not None and harness.config.source.project_file is not None
    for section in ("plugins", "session"):
        assert section in tomllib.loads(tested[0]), f"the complete example shows [{section}]"
