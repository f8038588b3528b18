"""reference/plugins.md §9 and §16.2: the sandbox plugin owns the ``sandbox.mode`` permission knob."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_core import ContextMessage, MemoryEventSink
from harness_core.permissions import APPROVAL_POLICY_KNOB, SANDBOX_MODE_KNOB

from .conftest import start


def test_the_knob_answers_the_configured_mode_and_nothing_for_other_knobs(workspace: Path) -> None:
    harness, _plugin = start(workspace, {"mode": "read-only"})
    hook = harness.plugin_manager.hook
    assert hook.permission_knob(name=SANDBOX_MODE_KNOB) == "read-only"
    assert hook.permission_knob(name=APPROVAL_POLICY_KNOB) is None
    assert hook.permission_knob(name="sandbox.network") is None


def test_setting_the_knob_goes_through_set_mode_and_records_one_sandbox_mode_event(workspace: Path) -> None:
    sink = MemoryEventSink()
    harness, plugin = start(workspace, {"mode": "workspace-write"}, events=sink)
    hook = harness.plugin_manager.hook
    notices = hook.permission_knob_set(name=SANDBOX_MODE_KNOB, value="read-only", source="user")
    assert notices == [] and isinstance(notices, list)
    assert plugin.effective_mode() == "read-only"
    assert hook.permission_knob(name=SANDBOX_MODE_KNOB) == "read-only"
    assert sink.of_kind("sandbox/mode") == [{"mode": "read-only", "source": "user"}]
    assert plugin.policy().mode == "read-only"


def test_setting_the_knob_to_its_current_value_records_nothing(workspace: Path) -> None:
    sink = MemoryEventSink()
    harness, _plugin = start(workspace, {"mode": "workspace-write"}, events=sink)
    assert (
        harness.plugin_manager.hook.permission_knob_set(name=SANDBOX_MODE_KNOB, value="workspace-write", source="user")
        == []
    )
    assert sink.events == []


def test_an_unknown_mode_raises_value_error_naming_the_knob_and_the_modes_and_switches_nothing(workspace: Path) -> None:
    sink = MemoryEventSink()
    harness, plugin = start(workspace, {"mode": "workspace-write"}, events=sink)
    with pytest.raises(
        ValueError,
        match=r"sandbox\.mode: unknown value 'everything'; expected one of read-only, "
        r"workspace-write, danger-full-access",
    ):
        harness.plugin_manager.hook.permission_knob_set(name=SANDBOX_MODE_KNOB, value="everything", source="user")
    assert plugin.effective_mode() == "workspace-write" and sink.events == []


def test_the_sandbox_plugin_does_not_answer_a_switch_of_a_knob_it_does_not_own(workspace: Path) -> None:
    harness, _plugin = start(workspace)
    answer = harness.plugin_manager.hook.permission_knob_set(name=APPROVAL_POLICY_KNOB, value="never", source="user")
    assert answer is None
    assert not isinstance(answer, ContextMessage)
