"""The path-guard wheel works as a third-party plugin in a clean environment, through the `harness` CLI.

What it proves: a wheel built from contrib/path-guard, installed with pip next to harness-core in a
fresh virtual environment (no editable installs, no repository on sys.path), is discovered through
its `harness` entry point; its `[path_guard]` section is validated from harness.toml (exit 2 naming
file and key); its guard denies a protected path in a real call (exit 1) and in a dry run
(`pre_execute` allow, `decision` deny) and allows the rest (exit 0); and HARNESS_LOAD_PLUGINS=""
keeps it from loading. DESIGN §4 and §7.

Slow (it builds two distributions and installs their dependencies from the package index); skipped
only when a virtual environment cannot be created at all.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PLUGIN_SOURCE = REPO / "contrib" / "path-guard"
# Neither build inputs nor worth copying: VCS data, environments, caches, build output, sessions.
LITTER = shutil.ignore_patterns(
    ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis", ".harness"
)
INSTALL_TIMEOUT = 900
CLI_TIMEOUT = 120

pytestmark = pytest.mark.slow


def run(command: list[str], *, timeout: float = INSTALL_TIMEOUT, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, **kwargs)  # type: ignore[call-overload]


def checked(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    completed = run(command, **kwargs)
    if completed.returncode != 0:
        pytest.fail(f"{' '.join(command)} exited {completed.returncode}\n{completed.stdout}\n{completed.stderr}")
    return completed


@dataclass(frozen=True)
class Installed:
    """A fresh virtual environment holding harness-core and the path-guard wheel."""

    bin: Path
    wheel: Path


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    root = tmp_path_factory.mktemp("path-guard-wheel")
    # Build from a copy, so that setuptools leaves no build/ or *.egg-info in the repository.
    core_copy = root / "repo"
    shutil.copytree(REPO, core_copy, ignore=LITTER)
    plugin_copy = core_copy / PLUGIN_SOURCE.relative_to(REPO)

    venv = root / "venv"
    created = run([sys.executable, "-m", "venv", str(venv)], timeout=CLI_TIMEOUT)
    if created.returncode != 0:
        pytest.skip(f"cannot create a virtual environment with {sys.executable} -m venv: {created.stderr.strip()}")
    bin_dir = venv / ("Scripts" if os.name == "nt" else "bin")

    wheels = root / "wheels"
    quiet = ["--quiet", "--disable-pip-version-check", "--no-input"]
    checked([sys.executable, "-m", "pip", "wheel", *quiet, "--no-deps", "-w", str(wheels), str(plugin_copy)])
    [wheel] = wheels.glob("harness_path_guard-*.whl")
    checked([str(bin_dir / "python"), "-m", "pip", "install", *quiet, str(core_copy), str(wheel)])
    yield Installed(bin=bin_dir, wheel=wheel)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def harness(installed: Installed, project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if not key.startswith(("HARNESS_", "PYTHON"))}
    environment.update({"HARNESS_USER_CONFIG": "", **env})
    return run([str(installed.bin / "harness"), *args], cwd=project, env=environment, timeout=CLI_TIMEOUT)


def write_config(project: Path, text: str) -> None:
    (project / "harness.toml").write_text(text, encoding="utf-8")


def test_the_wheel_holds_the_package_and_the_entry_point(installed: Installed) -> None:
    import zipfile

    with zipfile.ZipFile(installed.wheel) as wheel:
        names = wheel.namelist()
        [entry_points] = [name for name in names if name.endswith(".dist-info/entry_points.txt")]
        assert "[harness]\npath-guard = harness_path_guard.plugin:PathGuard" in wheel.read(entry_points).decode()
    assert "harness_path_guard/plugin.py" in names and "harness_path_guard/py.typed" in names


def test_harness_plugins_lists_path_guard_loaded_from_its_distribution(installed: Installed, project: Path) -> None:
    listed = harness(installed, project, "plugins", "--json")
    assert listed.returncode == 0, listed.stderr
    [row] = [row for row in json.loads(listed.stdout) if row["name"] == "path-guard"]
    assert row["distribution"] == "harness-path-guard" and row["status"] == "loaded"
    assert set(row["hooks"]) == {"harness_register_config", "harness_configure", "tools_guard"}


def test_config_check_accepts_the_section(installed: Installed, project: Path) -> None:
    write_config(project, '[path_guard]\ndeny = ["**/.env"]\n')
    checked_config = harness(installed, project, "config", "check")
    assert checked_config.returncode == 0, checked_config.stderr


def test_config_check_names_an_unknown_key_and_the_file(installed: Installed, project: Path) -> None:
    write_config(project, "[path_guard]\ndenny = []\n")
    checked_config = harness(installed, project, "config", "check")
    assert checked_config.returncode == 2
    assert "path_guard.denny" in checked_config.stderr and "harness.toml" in checked_config.stderr


def test_a_call_on_a_protected_path_is_denied(installed: Installed, project: Path) -> None:
    # No plugin here provides a write tool: the guards run before dispatch looks the tool up, so the
    # denial (not UNKNOWN_TOOL) is the outcome, as it would be with a real write tool installed.
    write_config(project, '[path_guard]\ndeny = ["**/.env"]\n')
    called = harness(installed, project, "call", "write", '{"file_path": "app/.env", "content": "x"}', "--json")
    assert called.returncode == 1, called.stderr
    result = json.loads(called.stdout)
    assert result["is_error"] is True
    assert 'path "app/.env" is protected by path-guard rule "**/.env"' in result["error"]["message"]
    assert not (project / "app").exists()


def test_a_dry_run_shows_the_guard_overruling_an_allowing_waterfall(installed: Installed, project: Path) -> None:
    write_config(project, '[path_guard]\ndeny = ["**/.env"]\n')
    dry = harness(
        installed, project, "call", "write", '{"file_path": "app/.env", "content": "x"}', "--dry-run", "--json"
    )
    assert dry.returncode == 1, dry.stderr
    verdict = json.loads(dry.stdout)
    assert verdict["pre_execute"] == "allow" and verdict["decision"] == "deny"
    assert "protected by path-guard" in verdict["reason"]


def test_a_dry_run_on_a_path_no_rule_matches_is_allowed(installed: Installed, project: Path) -> None:
    write_config(project, '[path_guard]\ndeny = ["**/.env"]\n')
    dry = harness(
        installed, project, "call", "write", '{"file_path": "app/main.py", "content": "x"}', "--dry-run", "--json"
    )
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout) == {"pre_execute": "allow", "decision": "allow", "reason": None}


def test_an_empty_load_plugins_allow_list_keeps_path_guard_out(installed: Installed, project: Path) -> None:
    listed = harness(installed, project, "plugins", "--json", HARNESS_LOAD_PLUGINS="")
    assert listed.returncode == 0, listed.stderr
    rows = [row for row in json.loads(listed.stdout) if row["name"] == "path-guard"]
    assert all(row["status"] != "loaded" for row in rows)
    assert [row["status"] for row in rows] == ["not-allowed"]
