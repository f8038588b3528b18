"""`harness sandbox`: the probe report the plugin registers as a CLI command (reference/plugins.md §4)."""

from __future__ import annotations

import json
import os
import sys
import tempfile

import pytest

from harness_core.cli import main


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_USER_CONFIG", "")
    monkeypatch.setenv("HARNESS_LOAD_PLUGINS", "sandbox")
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def sandbox(project, *extra: str) -> int:
    return main(["-C", str(project), "--no-user-config", *extra, "sandbox"])


def test_the_report_names_the_active_backend_and_why_the_others_are_not(project, capsys, verdicts) -> None:
    if not any(verdicts[name].usable for name in ("bubblewrap", "landlock")):
        pytest.skip("no Linux backend works on this machine")
    assert sandbox(project) == 0
    lines = capsys.readouterr().out.splitlines()
    real = os.path.realpath(project)
    temps = ", ".join(dict.fromkeys([real, os.path.realpath("/tmp"), os.path.realpath(tempfile.gettempdir())]))
    assert lines[:5] == [
        "mode: workspace-write (from default)",
        "network: off",
        f"workspace: {real}",
        f"writable: {temps}",
        "backend: auto (tries bubblewrap, then landlock)",
    ]
    active = "bubblewrap" if verdicts["bubblewrap"].usable else "landlock"
    assert f"  {active}: usable, full enforcement, active — {verdicts[active].detail}" in lines
    assert lines[-1] == f"verdict: commands are confined by {active} (full enforcement)"
    if active == "bubblewrap" and verdicts["landlock"].usable:
        assert f"  landlock: usable, full enforcement, not selected: bubblewrap comes first — {verdicts['landlock'].detail}" in lines
    assert f"  seatbelt: unusable — sandbox-exec exists only on macOS (this is {sys.platform})" in lines


def test_it_exits_1_when_a_confined_mode_cannot_be_enforced(project, capsys) -> None:
    (project / "harness.toml").write_text('[sandbox]\nmode = "read-only"\nbackend = "seatbelt"\n')
    assert sandbox(project) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "mode: read-only (from harness.toml)"
    assert "writable: nothing but /dev/null" in out
    assert "backend: seatbelt" in out
    assert out[-1] == "verdict: no backend can enforce read-only here: every confined command is refused (SANDBOX_UNAVAILABLE)"


def test_full_access_without_a_backend_is_not_a_failure(project, capsys) -> None:
    assert sandbox(project, "-c", 'sandbox.mode="danger-full-access"', "-c", 'sandbox.backend="seatbelt"') == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == ["mode: danger-full-access (from -c)", "network: on (danger-full-access is unconfined)"]
    assert "writable: everything" in out
    assert out[-1] == "verdict: commands run unconfined (danger-full-access); no backend could confine a narrower mode"


def test_json_output_for_scripts(project, capsys) -> None:
    assert main(["-C", str(project), "--no-user-config", "-c", 'sandbox.backend="seatbelt"', "sandbox", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["mode"] == "workspace-write" and data["backend_setting"] == "seatbelt"
    assert data["active"] is None and data["enforceable"] is False and data["network"] is False
    assert {backend["name"] for backend in data["backends"]} == {"bubblewrap", "landlock", "seatbelt"}
    for backend in data["backends"]:
        assert set(backend) == {"name", "usable", "enforcement", "active", "detail"} and backend["active"] is False


def test_a_bad_sandbox_section_is_a_usage_error(project, capsys) -> None:
    (project / "harness.toml").write_text('[sandbox]\nbackend = "docker"\n')
    assert sandbox(project) == 2
    assert "sandbox.backend" in capsys.readouterr().err
