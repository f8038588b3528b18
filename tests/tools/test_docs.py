"""docs/tools.md and contrib/tools/README.md stay true to the code: config keys, defaults, texts."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from harness_tools.bash import BACKGROUND_NOT_INSTALLED, EXIT_CODE_GUIDANCE
from harness_tools.config import ToolsConfig

REPO = Path(__file__).resolve().parents[2]
GUIDE = (REPO / "docs" / "tools.md").read_text(encoding="utf-8")
README = (REPO / "contrib" / "tools" / "README.md").read_text(encoding="utf-8")


def unwrap(text: str) -> str:
    """The text with line breaks inside paragraphs turned into spaces (quotes may wrap)."""
    return re.sub(r"\s*\n\s*", " ", text)


def test_the_guide_documents_every_tools_key_with_its_default() -> None:
    [block] = re.findall(r"```toml\n(\[tools\]\n.*?)```", GUIDE, re.S)
    documented = tomllib.loads(block)["tools"]
    defaults = ToolsConfig().model_dump()
    assert documented == defaults
    ToolsConfig(**documented)


def test_the_readme_table_lists_every_key_with_its_default() -> None:
    for name, value in ToolsConfig().model_dump().items():
        shown = f'"{value}"' if isinstance(value, str) else str(value).replace("'", '"')
        assert f"| `{name}` | `{shown}` |" in README, name


def test_the_model_visible_texts_are_quoted_verbatim() -> None:
    guide = unwrap(GUIDE)
    assert BACKGROUND_NOT_INSTALLED in guide and BACKGROUND_NOT_INSTALLED in unwrap(README)
    assert unwrap(EXIT_CODE_GUIDANCE) in guide
    for marker in ("[timed out after <ms>ms]", "[exit code: <n>]", "[output truncated; full output: <path>]"):
        assert marker in guide, marker
