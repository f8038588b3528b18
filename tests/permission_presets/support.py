"""Helpers for the permission-presets tests: the real plugins composed over a project folder."""

from __future__ import annotations

import textwrap
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from harness_approval import ApprovalPlugin
from harness_core import ConfigSource, Harness
from harness_core.session_log import SessionLog, read_session
from harness_permission_presets import PermissionPresets
from harness_sandbox import SandboxPlugin
from harness_timeout_policy import TimeoutPolicy

__all__ = ["PLUGINS", "events_of", "project", "rules_plugin", "start"]

#: The entry points a full permission composition loads.
PLUGINS = ("approval", "permission-presets", "rules", "sandbox", "timeout-policy")


def rules_plugin() -> object:
    """The rules plugin (a dependency of the presets), loaded through its entry point as the harness would."""
    (entry,) = [entry for entry in entry_points(group="harness") if entry.name == "rules"]
    loaded = entry.load()
    return loaded() if isinstance(loaded, type) else loaded


def project(folder: Path, toml: str = "") -> ConfigSource:
    """``folder`` with ``harness.toml`` holding ``toml``; the user file is left out."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "harness.toml").write_text(textwrap.dedent(toml), encoding="utf-8")
    return ConfigSource.for_project(folder, user_file=False)


def start(
    folder: Path, toml: str = "", *, without: tuple[str, ...] = (), **options: Any
) -> tuple[Harness, PermissionPresets]:
    """The sandbox, approval, timeout, rules and presets plugins over ``folder``; ``without`` leaves some out."""
    presets = PermissionPresets()
    candidates = {
        "sandbox": SandboxPlugin,
        "approval": ApprovalPlugin,
        "timeout-policy": TimeoutPolicy,
        "rules": rules_plugin,
    }
    plugins = [make() for name, make in candidates.items() if name not in without]
    harness = Harness(plugins=[*plugins, presets], config=project(folder, toml), **options)
    return harness, presets


def events_of(log: SessionLog) -> list[tuple[str, dict[str, Any]]]:
    """``(type, data)`` of every event in the session file, read back from disk."""
    if not log.path.exists():
        return []
    return [(event.type, event.data) for event in read_session(log.path).events]
