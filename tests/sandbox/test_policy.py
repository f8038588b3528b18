"""Policy resolution (reference/plugins.md §2–§3): canonical workspace root, writable roots, network axis."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from harness_sandbox.policy import canonical_path, check_mode, resolve_policy, temp_roots

from .conftest import start


def test_the_workspace_root_is_the_canonical_project_folder(tmp_path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    _harness, plugin = start(tmp_path / "link")
    assert plugin.policy().workspace_root == str(real)


def test_symlinks_resolve_before_dot_dot_as_the_kernel_would(tmp_path) -> None:
    deep = tmp_path / "elsewhere" / "deep"
    deep.mkdir(parents=True)
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "link").symlink_to(deep, target_is_directory=True)
    # Lexically, project/link/.. is project; the kernel lands in elsewhere (the link target's parent).
    _harness, plugin = start(tmp_path / "project" / "link" / "..")
    assert plugin.policy().workspace_root == str(tmp_path / "elsewhere")
    assert canonical_path("link/..", base=str(tmp_path / "project")) == str(tmp_path / "elsewhere")


def test_writable_roots_are_the_workspace_then_temp_then_extra_roots_without_duplicates(workspace, tmp_path) -> None:
    (tmp_path / "cache").mkdir()
    _harness, plugin = start(workspace, {"writable_roots": ["build", "../cache", "/tmp", str(workspace)]})
    policy = plugin.policy()
    expected = [str(workspace), *temp_roots(), str(workspace / "build"), str(tmp_path / "cache")]
    assert list(policy.writable_roots) == list(dict.fromkeys(expected))


def test_an_extra_root_may_start_with_the_home_folder(workspace, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    _harness, plugin = start(workspace, {"writable_roots": ["~/.cache/tool"]})
    assert str(tmp_path / ".cache" / "tool") in plugin.policy().writable_roots


def test_a_symlinked_extra_root_is_resolved(workspace, tmp_path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    (workspace / "out").symlink_to(target, target_is_directory=True)
    _harness, plugin = start(workspace, {"writable_roots": ["out"]})
    assert str(target) in plugin.policy().writable_roots
    assert str(workspace / "out") not in plugin.policy().writable_roots


def test_temp_roots_are_tmp_and_the_canonical_platform_temp_dir(tmp_path, monkeypatch) -> None:
    real = tmp_path / "realtmp"
    real.mkdir()
    (tmp_path / "tmplink").symlink_to(real, target_is_directory=True)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmplink"))
    assert temp_roots() == (os.path.realpath("/tmp"), str(real))
    monkeypatch.setattr(tempfile, "tempdir", "/tmp")
    assert temp_roots() == (os.path.realpath("/tmp"),)


def test_read_only_has_no_writable_roots_and_full_access_has_the_network() -> None:
    read_only = resolve_policy("read-only", "/w", ("/tmp",), ("/x",), network=True)
    assert read_only.writable_roots == () and read_only.network is True and read_only.confined
    full = resolve_policy("danger-full-access", "/w", ("/tmp",), (), network=False)
    assert full.network is True and not full.confined
    write = resolve_policy("workspace-write", "/w", ("/tmp", "/w"), ("/x",), network=False)
    assert write.writable_roots == ("/w", "/tmp", "/x") and write.network is False


def test_confined_modes_have_no_network_unless_the_project_allows_it(workspace) -> None:
    _harness, plugin = start(workspace)
    assert plugin.policy("read-only").network is False and plugin.policy("workspace-write").network is False
    _harness, plugin = start(workspace, {"network": True})
    assert plugin.policy("read-only").network is True


@pytest.mark.parametrize("mode", ["read-only", "workspace-write", "danger-full-access"])
def test_check_mode_accepts_the_three_modes(mode) -> None:
    assert check_mode(mode) == mode


@pytest.mark.parametrize("mode", ["", "READ-ONLY", "full", None, 3])
def test_check_mode_refuses_anything_else(mode) -> None:
    with pytest.raises(ValueError, match="unknown sandbox mode"):
        check_mode(mode)


def test_a_missing_root_keeps_its_unresolved_path(tmp_path) -> None:
    assert canonical_path(str(tmp_path / "missing" / ".." / "gone")) == str(Path(tmp_path) / "gone")
