"""docs/writing-a-plugin.md stays true to path-guard: every `# file:` snippet is an exact excerpt of its file."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "docs" / "writing-a-plugin.md"

CODE_BLOCK = re.compile(r"^```(python|toml)\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
FILE_MARK = re.compile(r"# file: (\S+)\n")


def blocks() -> list[tuple[int, str, str]]:
    """``(line, language, code)`` for each python and toml block of the guide."""
    text = GUIDE.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start(2)) + 1, m.group(1), m.group(2)) for m in CODE_BLOCK.finditer(text)]


BLOCKS = blocks()


def test_the_guide_has_snippets_to_check() -> None:
    assert sum(1 for _, _, code in BLOCKS if FILE_MARK.match(code)) >= 8


@pytest.mark.parametrize(("line", "language", "code"), BLOCKS, ids=[f"line {line}" for line, _, _ in BLOCKS])
def test_every_snippet_is_an_exact_excerpt_or_a_marked_example_that_parses(line, language, code) -> None:
    mark = FILE_MARK.match(code)
    if mark:
        path = REPO / mark.group(1)
        assert path.is_file(), f"line {line}: {mark.group(1)} does not exist"
        excerpt = code[mark.end() :]
        assert excerpt in path.read_text(encoding="utf-8"), f"line {line}: the snippet differs from {mark.group(1)}"
        return
    assert code.startswith("# example"), f"line {line}: start the snippet with '# file: PATH' or '# example'"
    if language == "python":
        ast.parse(code)
    else:
        tomllib.loads(code)
