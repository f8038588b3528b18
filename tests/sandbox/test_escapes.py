"""Real escape attempts under every backend that works here, spawned as `bash -c` through the confined argv.

reference/plugins.md §4: workspace-write may write beneath the workspace and temp only; read-only
nowhere but /dev/null; without ``network = true`` a confined command cannot reach a TCP listener.
Each test names the trick it tries; the protected folder lives outside /tmp and the temp dir.
"""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness_core.sandbox import SandboxUnavailableError

from .conftest import Sandboxed


def assert_untouched(outside: Path, *names: str) -> None:
    assert (outside / "target.txt").read_text() == "original\n"
    for name in names:
        assert not (outside / name).exists(), f"{name} escaped into the protected folder"


# --- workspace-write: the workspace is writable ---------------------------------------------------


def test_writes_inside_the_workspace_work_by_relative_and_absolute_path(sandboxed: Sandboxed, workspace: Path) -> None:
    completed, confined = sandboxed.run(f"echo rel > rel.txt && mkdir -p sub && echo abs > {workspace}/sub/abs.txt && rm rel.txt && echo kept > kept.txt")
    assert completed.returncode == 0, completed.stderr
    assert (workspace / "sub" / "abs.txt").read_text() == "abs\n" and (workspace / "kept.txt").exists()
    assert not confined.denied(completed.returncode, completed.stderr)


def test_the_temp_dir_is_writable(sandboxed: Sandboxed) -> None:
    completed, _ = sandboxed.run("echo t > /tmp/harness-sandbox-probe.txt && cat /tmp/harness-sandbox-probe.txt && rm /tmp/harness-sandbox-probe.txt")
    assert completed.returncode == 0 and completed.stdout == "t\n", completed.stderr


# --- workspace-write: nothing outside it -----------------------------------------------------------


def test_a_write_by_absolute_path_outside_the_workspace_is_denied(sandboxed: Sandboxed, outside: Path) -> None:
    completed, confined = sandboxed.run(f"echo pwned > {outside}/abs.txt")
    assert completed.returncode != 0
    assert confined.denied(completed.returncode, completed.stderr), completed.stderr
    assert confined.runner_failure(completed.returncode, completed.stderr) is None
    assert_untouched(outside, "abs.txt")


def test_a_write_through_dot_dot_is_denied(sandboxed: Sandboxed, workspace: Path, outside: Path) -> None:
    relative = os.path.relpath(outside, workspace)
    assert relative.startswith("..")
    completed, confined = sandboxed.run(f"echo pwned > {relative}/dotdot.txt; echo pwned > {relative}/target.txt")
    assert confined.denied(completed.returncode, completed.stderr), completed.stderr
    assert_untouched(outside, "dotdot.txt")


def test_a_symlink_in_the_workspace_pointing_out_does_not_lead_out(sandboxed: Sandboxed, workspace: Path, outside: Path) -> None:
    (workspace / "dirlink").symlink_to(outside, target_is_directory=True)
    (workspace / "filelink").symlink_to(outside / "target.txt")
    completed, confined = sandboxed.run("echo pwned > dirlink/sym.txt; echo pwned > filelink; ln -s /var/tmp made && echo x > made/x")
    assert completed.returncode != 0 and confined.denied(completed.returncode, completed.stderr)
    assert_untouched(outside, "sym.txt")


def test_a_hardlink_to_an_outside_file_cannot_be_made_to_write_through(sandboxed: Sandboxed, workspace: Path, outside: Path) -> None:
    # Where both folders share a file system (they do on most machines), only the sandbox stops ln.
    completed, _ = sandboxed.run(f"ln {outside}/target.txt hard")
    assert completed.returncode != 0 and "hard link" in completed.stderr
    sandboxed.run("echo pwned > hard; echo pwned >> hard")
    assert_untouched(outside)
    assert not os.path.samefile(workspace / "hard", outside / "target.txt")


def test_a_rename_into_or_out_of_a_protected_folder_is_denied(sandboxed: Sandboxed, workspace: Path, outside: Path) -> None:
    completed, _ = sandboxed.run(f"echo x > moved.txt; mv moved.txt {outside}/; mv {outside}/target.txt stolen.txt; mkdir d; mv d {outside}/d")
    assert completed.returncode != 0
    # mv falls back to copy-and-delete: the copy is a read (allowed), the delete is refused.
    assert_untouched(outside, "moved.txt", "d")


def test_deleting_or_truncating_an_outside_file_is_denied(sandboxed: Sandboxed, outside: Path) -> None:
    completed, _ = sandboxed.run(f"rm -f {outside}/target.txt; truncate -s 0 {outside}/target.txt; : > {outside}/target.txt; rmdir {outside}")
    assert completed.returncode != 0
    assert_untouched(outside)


def test_proc_self_root_does_not_lead_around_the_sandbox(sandboxed: Sandboxed, outside: Path) -> None:
    completed, confined = sandboxed.run(f"echo pwned > /proc/self/root{outside}/proc.txt; echo pwned > /proc/1/root{outside}/proc1.txt")
    assert completed.returncode != 0 and confined.denied(completed.returncode, completed.stderr), completed.stderr
    assert_untouched(outside, "proc.txt", "proc1.txt")


def test_a_root_caller_cannot_remount_its_way_out(sandboxed: Sandboxed, outside: Path) -> None:
    # As root, bwrap would keep CAP_SYS_ADMIN without --cap-drop ALL, and `mount -o remount,rw` escapes.
    completed, _ = sandboxed.run(
        f"mount -o remount,rw,bind / 2>/dev/null; mount -o remount,rw,bind {outside} 2>/dev/null; echo pwned > {outside}/mounted.txt;"
        " grep -E '^Cap(Eff|Prm):' /proc/self/status"
    )
    assert_untouched(outside, "mounted.txt")
    assert "CapEff:\t0000000000000000" in completed.stdout and "CapPrm:\t0000000000000000" in completed.stdout


def test_an_extra_writable_root_is_writable_and_its_neighbours_are_not(make_sandboxed, outside: Path) -> None:
    extra = outside / "extra"
    extra.mkdir()
    sandboxed = make_sandboxed(writable_roots=[str(extra)])
    completed, _ = sandboxed.run(f"echo ok > {extra}/in.txt && echo no > {outside}/next.txt")
    assert (extra / "in.txt").read_text() == "ok\n"
    assert completed.returncode != 0
    assert_untouched(outside, "next.txt")


# --- read-only -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "target",
    ["{workspace}/ro.txt", "ro-relative.txt", "/tmp/harness-sandbox-ro.txt", "{outside}/ro.txt", "/dev/shm/harness-sandbox-ro", "/dev/harness-sandbox-ro"],
)
def test_read_only_blocks_writes_everywhere(make_sandboxed, workspace: Path, outside: Path, target: str) -> None:
    sandboxed = make_sandboxed(mode="read-only")
    path = target.format(workspace=workspace, outside=outside)
    completed, confined = sandboxed.run(f"echo x > {path}")
    assert completed.returncode != 0
    assert confined.denied(completed.returncode, completed.stderr), completed.stderr
    assert not (workspace / path).exists() and not Path("/tmp/harness-sandbox-ro.txt").exists()
    assert_untouched(outside, "ro.txt")


def test_read_only_still_writes_to_dev_null_and_reads_everything(make_sandboxed, workspace: Path) -> None:
    (workspace / "data.txt").write_text("data\n")
    sandboxed = make_sandboxed(mode="read-only")
    completed, _ = sandboxed.run("echo x > /dev/null && cat data.txt && head -c 3 /etc/hostname >/dev/null")
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "data\n"


def test_read_only_has_no_writable_roots(make_sandboxed) -> None:
    sandboxed = make_sandboxed(mode="read-only")
    _confined, policy = sandboxed.confine("true")
    assert policy.writable_roots == ()


# --- network ---------------------------------------------------------------------------------------


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(10)
    try:
        yield server
    finally:
        server.close()


def connect_command(listener: socket.socket) -> str:
    port = listener.getsockname()[1]
    return f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"


def test_without_network_a_tcp_connect_to_a_local_listener_is_blocked(sandboxed: Sandboxed, listener: socket.socket) -> None:
    completed, _ = sandboxed.run(connect_command(listener))
    assert completed.returncode != 0 and "connected" not in completed.stdout
    listener.settimeout(0.2)
    with pytest.raises(TimeoutError):
        listener.accept()


def test_with_network_on_the_same_connect_works(make_sandboxed, listener: socket.socket) -> None:
    sandboxed = make_sandboxed(network=True)
    completed, _ = sandboxed.run(connect_command(listener))
    assert completed.returncode == 0 and completed.stdout == "connected\n", completed.stderr
    connection, _address = listener.accept()
    connection.close()


def test_read_only_without_network_blocks_the_connect_too(make_sandboxed, listener: socket.socket) -> None:
    sandboxed = make_sandboxed(mode="read-only")
    completed, _ = sandboxed.run(connect_command(listener))
    assert completed.returncode != 0 and "connected" not in completed.stdout


# --- escalation: an approved wider mode for one call -------------------------------------------------


def test_an_escalation_to_danger_full_access_is_not_wrapped(sandboxed: Sandboxed) -> None:
    confined, policy = sandboxed.confine("true", mode="danger-full-access")
    assert confined is None and not policy.confined and policy.network


def test_an_escalation_from_read_only_to_workspace_write_writes_the_workspace(make_sandboxed, workspace: Path) -> None:
    sandboxed = make_sandboxed(mode="read-only")
    completed, _ = sandboxed.run("echo granted > escalated.txt", mode="workspace-write")
    assert completed.returncode == 0, completed.stderr
    assert (workspace / "escalated.txt").read_text() == "granted\n"


# --- across calls: a root swapped for a symlink -------------------------------------------------------


def test_a_missing_writable_root_made_a_symlink_by_one_command_is_refused_for_the_next(make_sandboxed, workspace: Path, outside: Path) -> None:
    sandboxed = make_sandboxed(writable_roots=["build"])  # does not exist yet: it grants nothing
    completed, _ = sandboxed.run(f"ln -s {outside} build")
    assert completed.returncode == 0, completed.stderr  # the workspace is writable, so the link is made
    with pytest.raises(SandboxUnavailableError) as error:
        sandboxed.run(f"echo pwned > {outside}/swapped.txt")
    assert error.value.runner_failure == f'writable root "{workspace}/build" now resolves to "{outside}" (replaced by a symlink?); refusing to grant it'
    assert_untouched(outside, "swapped.txt")


def test_a_workspace_swapped_for_a_symlink_is_refused_for_the_next_command(sandboxed: Sandboxed, workspace: Path, outside: Path) -> None:
    # Under Landlock the host's /tmp is writable, so a workspace below it can be renamed away.
    sandboxed.run(f"cd / && mv {workspace} {workspace}.old && ln -s {outside} {workspace}")
    try:
        completed, _ = sandboxed.run(f"echo pwned > {outside}/swapped.txt")
    except SandboxUnavailableError as error:
        assert error.runner_failure is not None and "now resolves to" in error.runner_failure
    else:
        assert completed.returncode != 0  # the swap itself was refused (bubblewrap: /tmp is private)
    assert_untouched(outside, "swapped.txt")


def test_the_landlock_launcher_checks_the_opened_root_not_the_path(verdicts, workspace: Path, outside: Path) -> None:
    if not verdicts["landlock"].usable:
        pytest.skip(f"landlock is unusable on this machine: {verdicts['landlock'].detail}")
    from harness_sandbox.backends import Landlock

    (workspace / "link").symlink_to(outside, target_is_directory=True)
    command = [*Landlock().runner, "--rw", str(workspace / "link"), "--", "bash", "-c", f"echo pwned > {outside}/x.txt"]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert completed.returncode == 125
    assert completed.stderr.strip() == (
        f"landlock-run: writable root '{workspace}/link' now resolves to '{outside}' (replaced by a symlink?); refusing to grant it"
    )
    assert_untouched(outside, "x.txt")
