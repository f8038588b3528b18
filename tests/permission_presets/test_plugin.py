"""reference/plugins.md §9 and §17 item 13: the permission presets — table, derivation, switching, pinning.

A switch records ``permission/preset`` before the knob events (``sandbox/mode``, ``approval/policy``);
re-selecting the current preset records nothing; ties go to a still-matching recorded selection, then
table order; ``custom`` is derived only; misconfigured compositions refuse to start.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

import pytest

from harness_core import ConfigError, HarnessError, MemoryEventSink
from harness_core.session_log import SessionLog
from harness_permission_presets import CUSTOM, PRESET_EVENT, PermissionPresets, UnknownPresetError

from .support import events_of, start

NOTICE = 'The approval policy changed from "ask" to "never" (changed by the user).'


def test_the_entry_point_loads_the_plugin() -> None:
    (entry,) = [ep for ep in entry_points(group="harness") if ep.name == "permission-presets"]
    assert entry.load() is PermissionPresets


# --- the shipped presets -------------------------------------------------------------------


def test_three_presets_ship_with_their_fragments_descriptions_and_workspace_write_as_default(tmp_path: Path) -> None:
    harness, presets = start(tmp_path)
    shipped = harness.config.available_presets
    careful = {"default": "allow", "default_for": {"bash": "ask", "write": "ask", "edit": "ask", "run_code": "ask"}}
    assert dict(shipped["read-only"].fragment) == {
        "sandbox": {"mode": "read-only"},
        "approval": {"policy": "ask"},
        "timeout": {"enabled": True},
        "rules": careful,
    }
    assert dict(shipped["workspace-write"].fragment) == {
        "sandbox": {"mode": "workspace-write"},
        "approval": {"policy": "ask"},
        "timeout": {"enabled": True},
        "rules": careful,
    }
    # approval "never" rejects every ask, so the unprompted preset asks for nothing.
    assert dict(shipped["danger-full-access"].fragment) == {
        "sandbox": {"mode": "danger-full-access"},
        "approval": {"policy": "never"},
        "timeout": {"enabled": True},
        "rules": {"default": "allow"},
    }
    assert shipped["workspace-write"].description == (
        "Write inside the workspace and permitted temporary directories; wider retries require approval."
    )
    assert shipped["danger-full-access"].description == "Full file access without approval prompts."
    assert "write nowhere" in shipped["read-only"].description
    assert [name for name, preset in shipped.items() if preset.default] == ["workspace-write"]
    assert presets.names() == ["read-only", "workspace-write", "danger-full-access"]


def test_without_a_selection_the_default_preset_applies_and_is_current(tmp_path: Path) -> None:
    harness, presets = start(tmp_path)
    assert harness.config.presets == ("workspace-write",)
    assert harness.config.section("sandbox").mode == "workspace-write"
    assert harness.config.section("approval").policy == "ask"
    assert harness.config.section("timeout").enabled is True
    assert presets.current() == "workspace-write"


def test_a_selected_preset_sets_both_knobs(tmp_path: Path) -> None:
    harness, presets = start(tmp_path, 'preset = "danger-full-access"\n')
    assert harness.config.section("sandbox").mode == "danger-full-access"
    assert harness.config.section("approval").policy == "never"
    assert presets.current() == "danger-full-access"
    assert (presets.knobs().sandbox, presets.knobs().approval) == ("danger-full-access", "never")


# --- switching ------------------------------------------------------------------------------


def test_select_records_the_preset_before_the_knob_events_in_the_session_log(tmp_path: Path) -> None:
    log = SessionLog(tmp_path / "sessions")
    _harness, presets = start(tmp_path / "project", events=log)
    assert events_of(log) == [(PRESET_EVENT, {"preset": "workspace-write"})]  # the session's pin
    notices = presets.select("danger-full-access")
    assert [block.text for notice in notices for block in notice.content] == [NOTICE]
    assert events_of(log) == [
        (PRESET_EVENT, {"preset": "workspace-write"}),
        (PRESET_EVENT, {"preset": "danger-full-access"}),
        ("sandbox/mode", {"mode": "danger-full-access", "source": "user"}),
        ("approval/policy", {"policy": "never", "source": "user"}),
    ]
    assert presets.current() == "danger-full-access"


def test_only_the_knobs_that_differ_are_switched(tmp_path: Path) -> None:
    sink = MemoryEventSink()
    _harness, presets = start(tmp_path, events=sink)
    assert presets.select("read-only") == []  # same approval policy: no notice
    assert sink.kinds() == [PRESET_EVENT, PRESET_EVENT, "sandbox/mode"]
    assert sink.of_kind("sandbox/mode") == [{"mode": "read-only", "source": "user"}]


def test_re_selecting_the_current_preset_records_nothing(tmp_path: Path) -> None:
    log = SessionLog(tmp_path / "sessions")
    _harness, presets = start(tmp_path / "project", events=log)
    presets.select("read-only")
    before = events_of(log)
    assert presets.select("read-only") == []
    assert presets.select("read-only") == []
    assert events_of(log) == before
    pinned_only = SessionLog(tmp_path / "other")
    _harness, fresh = start(tmp_path / "project2", events=pinned_only)
    assert fresh.select("workspace-write") == []
    assert events_of(pinned_only) == [(PRESET_EVENT, {"preset": "workspace-write"})]


def test_an_unknown_preset_is_an_error_naming_the_known_ones_and_records_nothing(tmp_path: Path) -> None:
    sink = MemoryEventSink()
    _harness, presets = start(tmp_path, events=sink)
    before = list(sink.events)
    with pytest.raises(UnknownPresetError) as caught:
        presets.select("yolo")
    assert (
        str(caught.value) == 'permission: unknown preset "yolo" (known: read-only, workspace-write, danger-full-access)'
    )
    assert caught.value.code == "UNKNOWN_PRESET"
    with pytest.raises(UnknownPresetError):
        presets.select(CUSTOM)  # derived only: it can never be targeted
    assert sink.events == before


def test_source_is_passed_to_the_knob_owners(tmp_path: Path) -> None:
    sink = MemoryEventSink()
    _harness, presets = start(tmp_path, events=sink)
    notices = presets.select("danger-full-access", source="ci")
    assert notices[0].content[0].text == 'The approval policy changed from "ask" to "never" (changed by ci).'
    assert sink.of_kind("sandbox/mode") == [{"mode": "danger-full-access", "source": "ci"}]


# --- derivation -----------------------------------------------------------------------------


def test_knobs_that_match_no_preset_derive_custom_and_are_not_pinned(tmp_path: Path) -> None:
    sink = MemoryEventSink()
    # read-only + never: denials are final, which no preset bundles (reference §16.2).
    _harness, presets = start(tmp_path, 'preset = "read-only"\n[approval]\npolicy = "never"\n', events=sink)
    assert presets.current() == CUSTOM
    assert sink.events == []
    presets.select("read-only")
    assert sink.kinds() == [PRESET_EVENT, "approval/policy"]
    assert presets.current() == "read-only"


def test_a_knob_switched_behind_the_selectors_back_makes_the_selection_stale(tmp_path: Path) -> None:
    harness, presets = start(tmp_path, events=MemoryEventSink())
    presets.select("read-only")
    harness.plugin_manager.hook.permission_knob_set(name="approval.policy", value="never", source="user")
    assert presets.current() == CUSTOM
    harness.plugin_manager.hook.permission_knob_set(name="sandbox.mode", value="danger-full-access", source="user")
    assert presets.current() == "danger-full-access"


TEAM = """
[presets.team]
description = "the team's defaults"
extends = ["workspace-write"]
rules.deny = ["bash(curl *)"]

[presets.zz-open]
sandbox.mode = "danger-full-access"
approval.policy = "never"

[presets.quiet]
session.log = false
"""


def test_user_presets_that_set_both_knobs_join_the_table_after_the_shipped_ones_by_name(tmp_path: Path) -> None:
    _harness, presets = start(tmp_path, TEAM)
    # "quiet" leaves both knobs alone: it is a preset, but not a permission preset.
    assert presets.names() == ["read-only", "workspace-write", "danger-full-access", "team", "zz-open"]


def test_ties_go_to_table_order_then_to_a_still_matching_recorded_selection(tmp_path: Path) -> None:
    sink = MemoryEventSink()
    _harness, presets = start(tmp_path, TEAM, events=sink)
    assert presets.current() == "workspace-write"  # team has the same bundle, but comes later
    assert presets.select("team") == []
    # The intent is recorded although no knob changes.
    assert sink.of_kind(PRESET_EVENT) == [{"preset": "workspace-write"}, {"preset": "team"}]
    assert presets.current() == "team"
    assert presets.select("team") == [] and len(sink.events) == 2
    presets.select("zz-open")
    assert presets.current() == "zz-open"  # danger-full-access has the same bundle and comes first
    presets.select("danger-full-access")
    assert presets.current() == "danger-full-access"
    assert sink.kinds()[-1] == PRESET_EVENT  # no knob changed


# --- session pinning ------------------------------------------------------------------------


def test_a_session_log_attached_after_start_up_is_pinned_on_its_first_call_once(tmp_path: Path) -> None:
    import anyio

    from harness_core import ToolCall, tool

    @tool
    async def echo(text: str) -> str:
        """Echo."""
        return text

    harness, presets = start(tmp_path)
    harness.tools.register(echo)
    sink = MemoryEventSink()
    harness.events = sink

    async def two_calls() -> None:
        await harness.execute(ToolCall(call_id="c1", name="echo", arguments={"text": "a"}, agent="main"))
        await harness.execute(ToolCall(call_id="c2", name="echo", arguments={"text": "b"}, agent="main"))

    anyio.run(two_calls)
    assert sink.of_kind(PRESET_EVENT) == [{"preset": "workspace-write"}]
    assert sink.kinds().index(PRESET_EVENT) < sink.kinds().index("tool/result")


# --- load-time misconfiguration ---------------------------------------------------------------


def test_a_user_preset_named_custom_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        start(tmp_path, '[presets.custom]\nsandbox.mode = "read-only"\napproval.policy = "ask"\n')
    assert str(caught.value) == (
        'harness.toml: presets.custom: permission: "custom" is reserved for the derived not-a-preset state and '
        "cannot name a table entry; give the preset another name"
    )


def test_without_the_sandbox_plugin_a_preset_names_its_section_and_nothing_starts(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        start(tmp_path, without=("sandbox",))
    assert (
        'preset workspace-write: sandbox: preset "workspace-write" sets section [sandbox], which no loaded plugin owns'
        in str(caught.value)
    )


def test_without_the_sandbox_plugin_and_no_preset_the_presets_plugin_refuses_to_start(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        start(tmp_path, "preset = []\n", without=("sandbox",))
    message = str(caught.value)
    assert message.startswith(
        "plugins: sandbox: permission: no loaded plugin owns sandbox.mode (is the sandbox plugin loaded?)"
    )
    assert "composing this plugin without a confining sandbox is a misconfiguration" in message


def test_without_the_approval_plugin_the_presets_plugin_refuses_to_start(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"permission: no loaded plugin owns approval\.policy"):
        start(tmp_path, "preset = []\n", without=("approval",))


def test_without_the_timeout_policy_the_presets_plugin_refuses_to_start(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"permission: no timeout policy is loaded \(nobody owns \[timeout\]\)"):
        start(tmp_path, "preset = []\n", without=("timeout-policy",))


def test_without_the_rules_plugin_the_preset_that_sets_rules_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        start(tmp_path, 'preset = "read-only"\n', without=("rules",))
    message = str(caught.value)
    assert 'preset read-only: rules: preset "read-only" sets section [rules], which no loaded plugin owns' in message
    assert "load the plugin that owns [rules]" in message


def test_a_user_preset_with_a_bad_knob_value_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"harness.toml: presets.odd.approval.policy: permission: unknown approval policy 'maybe'"
    ):
        start(tmp_path, '[presets.odd]\nsandbox.mode = "read-only"\napproval.policy = "maybe"\n')


def test_the_permission_section_has_no_default_preset_key(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError,
        match=r"\"default_preset\" is not a key of \[permission\], which has none: select presets with the top-level",
    ):
        start(tmp_path, '[permission]\ndefault_preset = "read-only"\n')


def test_the_runtime_api_needs_a_configured_plugin() -> None:
    with pytest.raises(HarnessError, match="never configured"):
        PermissionPresets().current()


# --- doctor -------------------------------------------------------------------------------------


def test_doctor_reports_the_current_preset_and_its_knobs(tmp_path: Path) -> None:
    harness, presets = start(tmp_path, 'preset = "read-only"\n')
    lines = [message for source, _level, message in harness.diagnose() if source == "PermissionPresets"]
    assert lines == [
        'current preset read-only: sandbox mode "read-only", approval policy "ask" '
        "(available: read-only, workspace-write, danger-full-access)"
    ]
    harness.plugin_manager.hook.permission_knob_set(name="approval.policy", value="never", source="user")
    (line,) = [message for source, _level, message in harness.diagnose() if source == "PermissionPresets"]
    assert line.startswith('current preset custom: sandbox mode "read-only", approval policy "never" match no preset')
