"""`harness presets`, `harness permission` and `harness doctor` with the installed plugins, as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from harness_core.session_log import find_session, read_session

from .support import PLUGINS

KNOWN = "read-only, workspace-write, danger-full-access"


def harness(folder: Path, *args: str, plugins: tuple[str, ...] = PLUGINS) -> subprocess.CompletedProcess[str]:
    """Run the `harness` command in ``folder`` with only ``plugins`` loaded from their entry points."""
    env = {**os.environ, "HARNESS_USER_CONFIG": "", "HARNESS_LOAD_PLUGINS": ",".join(plugins)}
    return subprocess.run(
        [sys.executable, "-m", "harness_core", "-C", str(folder), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def project(tmp_path: Path, toml: str = "") -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "harness.toml").write_text(textwrap.dedent(toml), encoding="utf-8")
    return folder


def session_events(folder: Path) -> list[tuple[str, dict[str, object]]]:
    path = find_session(folder / ".harness" / "sessions", None)
    return [(event.type, event.data) for event in read_session(path).events]


def test_presets_shows_each_presets_knobs_network_and_rules_in_effect(tmp_path: Path) -> None:
    folder = project(tmp_path, "[sandbox]\nnetwork = true\n")
    done = harness(folder, "presets")
    assert done.returncode == 0, done.stderr
    blocks = {block.split()[0]: block for block in done.stdout.split("\n") if block and not block.startswith(" ")}
    assert set(blocks) == {"read-only", "workspace-write", "danger-full-access"}
    sections = done.stdout.split("\nread-only")[1].split("\nworkspace-write")[0]
    assert '      sandbox.mode = "read-only"    # preset read-only' in sections
    assert "      sandbox.network = true    # harness.toml" in sections
    assert '      approval.policy = "ask"    # preset read-only' in sections
    assert '      rules.default = "allow"    # preset read-only' in sections
    assert '      rules.default_for.bash = "ask"    # preset read-only' in sections
    assert 'workspace-write  (selected, default)  — from plugin "permission-presets"' in done.stdout


def test_presets_json_is_a_superset_with_the_effective_values_and_their_origins(tmp_path: Path) -> None:
    folder = project(tmp_path, '[approval]\npolicy = "never"\n')
    done = harness(folder, "presets", "--json")
    assert done.returncode == 0, done.stderr
    rows = {row["name"]: row for row in json.loads(done.stdout)}
    row = rows["read-only"]
    assert {"name", "source", "description", "extends", "default", "selected", "settings"} <= set(row)
    assert row["settings"]["sandbox"] == {"mode": "read-only"}
    assert row["effective"]["sandbox"]["mode"] == "read-only" and row["effective"]["sandbox"]["network"] is False
    # The project file wins over the preset, and the output says so.
    assert row["effective"]["approval"]["policy"] == "never"
    assert row["origins"]["approval.policy"] == "harness.toml"
    assert row["origins"]["sandbox.network"] == "default"
    assert row["effective"]["rules"]["default_for"] == {"bash": "ask", "write": "ask", "edit": "ask", "run_code": "ask"}
    assert rows["danger-full-access"]["effective"]["rules"]["default"] == "allow"
    assert rows["workspace-write"]["default"] is True and row["error"] is None


def test_presets_says_why_a_preset_cannot_be_selected_when_its_section_has_no_plugin(tmp_path: Path) -> None:
    folder = project(tmp_path, 'preset = []\n[presets.mine]\nrules.default = "ask"\n')
    done = harness(folder, "presets", "--json", plugins=("sandbox",))
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)
    assert row["effective"] is None
    assert 'preset "mine" sets section [rules], which no loaded plugin owns' in row["error"]
    shown = harness(folder, "presets", plugins=("sandbox",))
    assert shown.returncode == 0 and "    cannot be selected here:\n      preset mine: rules: preset" in shown.stdout


def test_permission_shows_the_current_preset_and_switches_with_events_in_order(tmp_path: Path) -> None:
    folder = project(tmp_path)
    shown = harness(folder, "permission")
    assert (shown.returncode, shown.stdout) == (0, f"current preset workspace-write (available: {KNOWN})\n")
    assert not (folder / ".harness").exists()  # looking records nothing
    switched = harness(folder, "permission", "danger-full-access")
    assert (switched.returncode, switched.stdout) == (0, "preset danger-full-access\n"), switched.stderr
    assert session_events(folder) == [
        ("permission/preset", {"preset": "workspace-write"}),
        ("permission/preset", {"preset": "danger-full-access"}),
        ("sandbox/mode", {"mode": "danger-full-access", "source": "user"}),
        ("approval/policy", {"policy": "never", "source": "user"}),
    ]


def test_permission_json_reports_the_knobs_and_the_notices(tmp_path: Path) -> None:
    folder = project(tmp_path, 'preset = "read-only"\n')
    shown = json.loads(harness(folder, "permission", "--json").stdout)
    assert shown == {"current": "read-only", "available": KNOWN.split(", "), "sandbox": "read-only", "approval": "ask"}
    switched = json.loads(harness(folder, "permission", "danger-full-access", "--json").stdout)
    assert switched == {
        "preset": "danger-full-access",
        "notices": ['The approval policy changed from "ask" to "never" (changed by the user).'],
    }


def test_permission_with_an_unknown_name_exits_2_and_leaves_no_log(tmp_path: Path) -> None:
    folder = project(tmp_path)
    done = harness(folder, "permission", "yolo")
    assert done.returncode == 2
    assert done.stderr == f'unknown preset "yolo" (available: {KNOWN})\n'
    assert not (folder / ".harness").exists()


def test_a_harness_without_the_sandbox_plugin_refuses_every_command_naming_the_preset(tmp_path: Path) -> None:
    folder = project(tmp_path)
    done = harness(folder, "config", "check", plugins=tuple(name for name in PLUGINS if name != "sandbox"))
    assert done.returncode == 2
    assert 'preset "workspace-write" sets section [sandbox], which no loaded plugin owns' in done.stderr


def test_doctor_names_the_current_preset(tmp_path: Path) -> None:
    folder = project(tmp_path, 'preset = "read-only"\n')
    done = harness(folder, "doctor")
    assert (
        f'info: [permission-presets] current preset read-only: sandbox mode "read-only", approval policy "ask" '
        f"(available: {KNOWN})"
    ) in done.stdout
