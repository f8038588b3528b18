"""Fixtures for the core tests: a fresh harness factory with a recorder, an event sink and an echo tool."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from harness_core import Harness, MemoryEventSink, ToolDefinition

from .support import Body, Recorder, make_echo


@pytest.fixture
def body() -> Body:
    return Body()


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def sink() -> MemoryEventSink:
    return MemoryEventSink()


@pytest.fixture
def make_harness(body: Body, recorder: Recorder, sink: MemoryEventSink) -> Callable[..., Harness]:
    """``make_harness(*plugins, tool=...)``: a fresh Harness with the recorder and an echo tool."""

    def make(*plugins: object, tool: ToolDefinition | None = None, echo: bool = True) -> Harness:
        harness = Harness(plugins=[recorder, *plugins], events=sink)
        if echo:
            harness.tools.register(tool or make_echo(body))
        return harness

    return make
