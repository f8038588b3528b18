"""Docs stay true to the code: every hook and public name is documented, and the guide's examples run."""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import harness_core
from harness_core import hookspecs

DOCS = Path(__file__).resolve().parents[2] / "docs"
GUIDE = DOCS / "pipeline.md"
API_REFERENCE = DOCS / "reference" / "api.md"
HOOK_REFERENCE = DOCS / "reference" / "hooks.md"

#: pluggy's spec marker leaves this attribute on every function it marks (``harness_spec``).
SPEC_ATTRIBUTE = hookspecs.hookspec.project_name + "_spec"

PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
NAME_HEADING = re.compile(r"^## `([^`]+)`[ \t]*$", re.MULTILINE)
HOOK_HEADING = re.compile(r"^## ([A-Za-z_][A-Za-z0-9_]*)\(([^)]*)\)[ \t]*$", re.MULTILINE)


def hookspec_functions() -> list[tuple[str, Callable[..., Any]]]:
    """Every hook specification in ``harness_core.hookspecs``, in the module's order."""
    return [
        (name, value)
        for name, value in vars(hookspecs).items()
        if inspect.isfunction(value) and hasattr(value, SPEC_ATTRIBUTE)
    ]


def params(function: Callable[..., Any]) -> list[str]:
    return list(inspect.signature(function).parameters)


def python_blocks(text: str) -> list[tuple[int, str]]:
    """The ```python blocks of a Markdown text, each with the line its code starts on."""
    return [(text.count("\n", 0, match.start(1)) + 1, match.group(1)) for match in PYTHON_BLOCK.finditer(text)]


GUIDE_BLOCKS = python_blocks(GUIDE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def hook_docs() -> str:
    return HOOK_REFERENCE.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def api_docs() -> str:
    return API_REFERENCE.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def guide() -> str:
    return GUIDE.read_text(encoding="utf-8")


def test_the_hookspecs_module_has_hook_specifications_to_check() -> None:
    names = [name for name, _ in hookspec_functions()]
    assert "tools_pre_execute" in names and "tools_guard" in names, names


def test_every_hookspec_docstring_says_what_an_impl_must_not_do() -> None:
    for name, function in hookspec_functions():
        assert "Must not:" in (function.__doc__ or ""), name


def test_every_hookspec_has_its_exact_heading_in_the_hook_reference(hook_docs: str) -> None:
    for name, function in hookspec_functions():
        assert f"## {name}({', '.join(params(function))})" in hook_docs, name


def test_the_hook_reference_documents_no_hook_that_is_not_specified(hook_docs: str) -> None:
    specified = {name for name, _ in hookspec_functions()}
    documented = {match.group(1) for match in HOOK_HEADING.finditer(hook_docs)}
    assert documented == specified


def test_every_hook_has_a_section_in_the_pipeline_guide(guide: str) -> None:
    for name, _ in hookspec_functions():
        assert f"## `{name}`" in guide, name


def test_every_public_name_has_a_heading_in_the_api_reference(api_docs: str) -> None:
    documented = set(NAME_HEADING.findall(api_docs))
    missing = [name for name in harness_core.__all__ if name not in documented]
    assert missing == []


def test_the_api_reference_documents_no_name_that_is_not_public(api_docs: str) -> None:
    extra = set(NAME_HEADING.findall(api_docs)) - set(harness_core.__all__)
    assert extra == set()


def test_the_public_names_are_sorted_and_unique() -> None:
    assert harness_core.__all__ == sorted(harness_core.__all__)
    assert len(set(harness_core.__all__)) == len(harness_core.__all__)


@pytest.mark.parametrize("name", harness_core.__all__)
def test_every_public_name_is_importable_from_the_package(name: str) -> None:
    namespace: dict[str, Any] = {}
    exec(f"from harness_core import {name}", namespace)
    assert namespace[name] is getattr(importlib.import_module("harness_core"), name)


def test_the_guide_has_an_example_that_runs_a_call_end_to_end() -> None:
    assert any("Harness(" in code and ".execute(" in code and "anyio.run(" in code for _, code in GUIDE_BLOCKS)


@pytest.mark.parametrize(("line", "code"), GUIDE_BLOCKS, ids=[f"pipeline.md:{line}" for line, _ in GUIDE_BLOCKS])
def test_every_python_example_in_the_guide_runs(line: int, code: str) -> None:
    # Padding keeps the line numbers of a traceback those of the Markdown file.
    compiled = compile("\n" * (line - 1) + code, str(GUIDE), "exec", dont_inherit=True)
    exec(compiled, {"__name__": f"pipeline_md_example_{line}"})
