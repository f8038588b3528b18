"""Fixtures for the tools tests: a workspace folder (the project folder) and a Harness factory."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_core import Harness, MemoryEventSink
from harness_tools import ToolsPlugin

#: Short enough for a quick suite, long enough for a real process to notice SIGTERM.
GRACE_MS = 300


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The project folder: a config given as a mapping makes the current folder the project."""
    folder = tmp_path / "ws"
    folder.mkdir()
    monkeypatch.chdir(folder)
    yield folder


@pytest.fixture
def sink() -> MemoryEventSink:
    return MemoryEventSink()


@pytest.fixture
def make_harness(workspace: Path, sink: MemoryEventSink) -> Iterator[Callable[..., Harness]]:
    """``make_harness(*plugins, **tools_settings)``: the tools plugin first, then ``plugins``."""
    def make(*plugins: object, **settings: Any) -> Harness:
        settings.setdefault("bash_grace_ms", GRACE_MS)
        harness = Harness(plugins=[ToolsPlugin(), *plugins], config={"tools": settings}, events=sink)
        return harness

    yield make
