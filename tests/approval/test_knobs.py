"""reference/plugins.md §9 (c) and §16.2: the approval plugin owns the ``approval.policy`` knob.

A switch goes through the live setter, so the model hears of it:
``The approval policy changed from "<a>" to "<b>" (changed by the user).``
"""

from __future__ import annotations

import pytest

from harness_approval import ApprovalPlugin
from harness_core import ContextMessage, Harness, MemoryEventSink
from harness_core.permissions import APPROVAL_POLICY_KNOB, KNOBS, SANDBOX_MODE_KNOB


def start(policy: str = "ask") -> tuple[Harness, ApprovalPlugin, MemoryEventSink]:
    sink = MemoryEventSink()
    plugin = ApprovalPlugin()
    harness = Harness(plugins=[plugin], config={"approval": {"policy": policy}}, events=sink)
    return harness, plugin, sink


def test_the_core_names_both_knobs_sandbox_first() -> None:
    assert KNOBS == (SANDBOX_MODE_KNOB, APPROVAL_POLICY_KNOB) == ("sandbox.mode", "approval.policy")


def test_the_knob_answers_the_configured_policy_and_nothing_for_other_knobs() -> None:
    harness, _plugin, _sink = start("never")
    hook = harness.plugin_manager.hook
    assert hook.permission_knob(name=APPROVAL_POLICY_KNOB) == "never"
    assert hook.permission_knob(name=SANDBOX_MODE_KNOB) is None


def test_a_switch_records_approval_policy_and_returns_the_model_visible_notice() -> None:
    harness, plugin, sink = start("ask")
    notices = harness.plugin_manager.hook.permission_knob_set(name=APPROVAL_POLICY_KNOB, value="never", source="user")
    assert len(notices) == 1 and isinstance(notices[0], ContextMessage)
    assert notices[0].content[0].text == 'The approval policy changed from "ask" to "never" (changed by the user).'
    assert plugin.policy == "never"
    assert harness.plugin_manager.hook.permission_knob(name=APPROVAL_POLICY_KNOB) == "never"
    assert sink.of_kind("approval/policy") == [{"policy": "never", "source": "user"}]


def test_switching_to_the_current_policy_returns_no_notice_and_records_nothing() -> None:
    harness, _plugin, sink = start("ask")
    assert harness.plugin_manager.hook.permission_knob_set(name=APPROVAL_POLICY_KNOB, value="ask", source="user") == []
    assert sink.events == []


def test_an_unknown_policy_raises_value_error_naming_the_knob_and_switches_nothing() -> None:
    harness, plugin, sink = start("ask")
    with pytest.raises(ValueError, match=r"approval\.policy: unknown value 'sometimes'; expected one of ask, never"):
        harness.plugin_manager.hook.permission_knob_set(name=APPROVAL_POLICY_KNOB, value="sometimes", source="user")
    assert plugin.policy == "ask" and sink.events == []


def test_the_approval_plugin_does_not_answer_a_switch_of_a_knob_it_does_not_own() -> None:
    harness, plugin, sink = start("ask")
    assert (
        harness.plugin_manager.hook.permission_knob_set(name=SANDBOX_MODE_KNOB, value="read-only", source="user")
        is None
    )
    assert plugin.policy == "ask" and sink.events == []
