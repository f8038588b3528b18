"""harness_core.processes: signalling whole process groups, telling whether they run, tracking live ones."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from harness_core.processes import ProcessGroups, descendants, group_alive, kill_group, process_table, signal_name

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _sleeper(*, grandchild_session: bool = False) -> subprocess.Popen[bytes]:
    """A shell in its own session that starts a grandchild (optionally in yet another session)."""
    inner = "setsid sleep 600 &" if grandchild_session else "sleep 600 &"
    return subprocess.Popen(["sh", "-c", f"{inner} sleep 600"], start_new_session=True)


def _wait_until(check, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return False


def test_a_group_runs_until_killed_and_a_gone_group_is_fine_to_signal():
    shell = _sleeper()
    try:
        assert _wait_until(lambda: bool(descendants(shell.pid)))
        assert group_alive(shell.pid)
        kill_group(shell.pid, signal.SIGKILL)
        shell.wait()
        # The backgrounded sleep died with the group; a zombie left unreaped would not count.
        assert _wait_until(lambda: not group_alive(shell.pid))
        kill_group(shell.pid, signal.SIGKILL)  # already gone: no error
    finally:
        kill_group(shell.pid, signal.SIGKILL)


def test_descendants_reach_a_grandchild_in_another_session_that_the_group_signal_misses():
    shell = _sleeper(grandchild_session=True)
    try:
        def escaped() -> set[int]:
            table = process_table() or {}
            return {pid for pid in descendants(shell.pid) if pid in table and table[pid][2] != shell.pid}

        assert _wait_until(lambda: bool(escaped()))
        members = descendants(shell.pid)
        kill_group(shell.pid, signal.SIGKILL)
        shell.wait()
        assert group_alive(shell.pid, members), "the grandchild left its group, so it still runs"
        for pid in members:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        assert _wait_until(lambda: not group_alive(shell.pid, members))
    finally:
        kill_group(shell.pid, signal.SIGKILL)


def test_the_process_table_reads_state_parent_and_group():
    table = process_table()
    assert table is not None
    state, ppid, pgrp = table[os.getpid()]
    assert ppid == os.getppid() and pgrp == os.getpgrp() and state not in (b"Z", b"X")


def test_closing_the_tracked_groups_kills_them_and_any_added_later():
    groups = ProcessGroups()
    first = _sleeper()
    groups.add(first.pid)
    assert len(groups) == 1
    groups.close()
    assert first.wait(timeout=10) == -signal.SIGKILL
    late = _sleeper()
    groups.add(late.pid)  # added after close: killed at once
    assert late.wait(timeout=10) == -signal.SIGKILL
    groups.discard(late.pid)
    groups.discard(first.pid)
    assert len(groups) == 0


def test_signal_names():
    assert signal_name(9) == "SIGKILL"
    assert signal_name(12345) == "12345"
