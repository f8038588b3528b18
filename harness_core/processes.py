"""Process groups: signalling a group, telling whether it still runs, and tracking live ones (POSIX).

Every plugin that spawns commands (the bash tool, the hook runner, the Code Mode runtime) starts
them in a session of their own and, to stop one, signals the whole group, since a shell's children
outlive a signal sent to the shell alone. Plugins may not import each other, so the primitives
they all need live here. Zombies never count as running where ``/proc`` can tell them apart: a
killed grandchild is reparented to PID 1, and an init that does not reap (some containers) would
otherwise keep a group "alive" for ever.
"""

from __future__ import annotations

import os
import signal as signals
from collections.abc import Collection

__all__ = ["ProcessGroups", "descendants", "group_alive", "kill_group", "process_table", "signal_name"]


def kill_group(pgid: int, sig: int) -> None:
    """Send ``sig`` to every process of the group; a group that is gone already is fine."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def process_table() -> dict[int, tuple[bytes, int, int]] | None:
    """``pid -> (state, ppid, pgrp)`` for every process in ``/proc``; ``None`` without ``/proc``."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    table: dict[int, tuple[bytes, int, int]] = {}
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                # After "pid (comm)": state, ppid, pgrp (comm may hold spaces and parentheses).
                state, ppid, pgrp = handle.read().rsplit(b")", 1)[1].split()[:3]
            table[int(entry)] = (state, int(ppid), int(pgrp))
        except (OSError, IndexError, ValueError):
            continue  # the process exited while we read
    return table


def _running(state: bytes) -> bool:
    return state not in (b"Z", b"X")


def descendants(pid: int) -> set[int]:
    """Every running process below ``pid`` in the process tree, whatever its group or session.

    A sandbox runner puts the command in a session (and PID namespace) of its own, so the process
    group alone does not reach it; the parent links do. Empty without ``/proc``.
    """
    table = process_table()
    if table is None:
        return set()
    children: dict[int, list[int]] = {}
    for child, (_state, ppid, _pgrp) in table.items():
        children.setdefault(ppid, []).append(child)
    found: set[int] = set()
    stack = list(children.get(pid, ()))
    while stack:
        child = stack.pop()
        if child not in found:
            found.add(child)
            stack.extend(children.get(child, ()))
    return {child for child in found if _running(table[child][0])}


def group_alive(pgid: int, members: Collection[int] = ()) -> bool:
    """Whether any process of the group, or any of ``members``, still runs (zombies do not count)."""
    try:
        os.killpg(pgid, 0)
        group_exists = True
    except ProcessLookupError:
        group_exists = False
    except PermissionError:
        return True  # someone else's process reuses the id: treat it as running, never as gone
    if not group_exists and not members:
        return False
    table = process_table()
    if table is None:
        return group_exists  # no /proc: trust killpg
    return any(_running(state) and (pgrp == pgid or pid in members) for pid, (state, _ppid, pgrp) in table.items())


def signal_name(number: int) -> str:
    """``SIGKILL`` for 9; the number itself for a signal Python has no name for."""
    try:
        return signals.Signals(number).name
    except ValueError:
        return str(number)


class ProcessGroups:
    """The process groups a plugin has running; closing kills them and any that start later."""

    def __init__(self) -> None:
        self._groups: set[int] = set()
        self.closed = False

    def add(self, pgid: int) -> None:
        """Track a group that just started; a group starting after ``close`` is killed at once."""
        self._groups.add(pgid)
        if self.closed:
            kill_group(pgid, signals.SIGKILL)

    def discard(self, pgid: int) -> None:
        """Stop tracking a group that has finished."""
        self._groups.discard(pgid)

    def __len__(self) -> int:
        return len(self._groups)

    def close(self) -> None:
        """SIGKILL every tracked group (whoever started them still reaps the leaders) and refuse new ones."""
        self.closed = True
        for pgid in list(self._groups):
            kill_group(pgid, signals.SIGKILL)
