"""One command in its own process group: bounded output capture, spill files, timeout and cancel.

reference/plugins.md §11. Each stream keeps a head and a tail window in memory and, once it could
be truncated, streams everything to a private spill file, so a 100 MB output costs a few hundred
kilobytes. The process starts a new session (its own process group); on timeout, cancellation or
when the command ends with members of its group still alive, the whole group gets SIGTERM, then
SIGKILL after the grace period. The leader is always reaped.
"""

from __future__ import annotations

import errno
import os
import secrets
import signal as signals
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import anyio
from anyio.abc import ByteReceiveStream, Process

from harness_core import Signal
from harness_core.processes import ProcessGroups, group_alive, kill_group, signal_name

__all__ = [
    "OutputSink",
    "ProcessGroups",
    "ProcessOutcome",
    "StreamCapture",
    "group_alive",
    "kill_group",
    "run_group",
    "signal_name",
    "terminate_group",
    "truncation_marker",
]

#: The most one read takes from a pipe (a pipe rarely holds more than 64 KiB at once).
READ_CHUNK = 1 << 20
#: Spill writes are batched to about this size, each in a worker thread.
SPILL_BATCH = 1 << 20
#: UTF-8 continuation bytes; the other bytes each start one character.
_CONTINUATION = bytes(range(0x80, 0xC0))
#: How often the group is polled while it gets its grace period.
_POLL_S = 0.02

Cause = Literal["timeout", "abort"]


def truncation_marker(spill_path: str | None) -> str:
    """reference/plugins.md §12: where the full output of a truncated stream is."""
    return f"[output truncated; full output: {spill_path or '(unavailable)'}]"


class OutputSink(Protocol):
    """Where ``run_group`` sends one stream: a :class:`StreamCapture`, or a background job's output."""

    async def feed(self, chunk: bytes) -> None:
        """Take the next chunk of the stream."""

    async def finish(self) -> None:
        """The stream ended."""


class StreamCapture:
    """One output stream: a head and a tail window in memory, everything in a spill file if needed.

    Memory stays at about ``8 * max_chars`` bytes however long the stream is. The spill file is
    opened once the stream passes ``max_chars`` bytes (before that it cannot be truncated) and
    removed again if the whole stream fits after all.
    """

    def __init__(self, label: str, *, max_chars: int, spill_dir: str, spill_prefix: str, max_spill_bytes: int) -> None:
        self.label = label
        self.max_chars = max_chars
        self._window = max_chars * 4  # a character is at most four UTF-8 bytes
        self._head = bytearray()
        self._tail = bytearray()
        self.total_bytes = 0
        self._spill_dir = spill_dir
        self._spill_prefix = spill_prefix
        self._max_spill_bytes = max_spill_bytes
        self._spill_fd: int | None = None
        self._pending = bytearray()
        self._spilled = 0
        #: The spill file, while it exists; ``None`` once it was given up or proved unneeded.
        self.spill_path: str | None = None
        self._spill_state: Literal["none", "open", "lost"] = "none"

    @property
    def gap(self) -> int:
        """Bytes that neither window holds (they live only in the spill file)."""
        return self.total_bytes - len(self._head) - len(self._tail)

    async def feed(self, chunk: bytes) -> None:
        """Take the next chunk of the stream."""
        if not chunk:
            return
        if self._spill_state == "none" and self.total_bytes + len(chunk) > self.max_chars:
            await self._open_spill()
        self.total_bytes += len(chunk)
        if self._spill_state == "open":
            self._pending += chunk
        room = self._window - len(self._head)
        rest = chunk
        if room > 0:
            self._head += chunk[:room]
            rest = chunk[room:]
        if rest:
            self._tail += rest
            excess = len(self._tail) - self._window
            if excess > 0:
                del self._tail[:excess]
        if len(self._pending) >= SPILL_BATCH:
            await self._flush()

    async def _open_spill(self) -> None:
        # Everything so far is still in the windows (the stream was at most max_chars bytes long).
        try:
            self._spill_fd, self.spill_path = await anyio.to_thread.run_sync(self._create_spill_file)
        except OSError:
            self._spill_state = "lost"
            return
        self._spill_state = "open"
        self._pending += self._head + self._tail

    def _create_spill_file(self) -> tuple[int, str]:
        os.makedirs(self._spill_dir, mode=0o700, exist_ok=True)
        for _ in range(100):
            path = os.path.join(self._spill_dir, f"{self._spill_prefix}-{secrets.token_hex(4)}.{self.label}")
            try:
                return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600), path
            except FileExistsError:
                continue
        raise FileExistsError(errno.EEXIST, "no free spill file name", self._spill_dir)

    async def _flush(self) -> None:
        if self._spill_fd is None or not self._pending:
            return
        data, self._pending = bytes(self._pending), bytearray()
        if self._spilled + len(data) > self._max_spill_bytes:
            await self._give_up_spill()
            return
        try:
            await anyio.to_thread.run_sync(_write_all, self._spill_fd, data)
        except OSError:
            await self._give_up_spill()
            return
        self._spilled += len(data)

    async def _give_up_spill(self) -> None:
        # reference §11: a stream over the spill cap keeps only its in-memory windows and no path.
        fd, path = self._spill_fd, self.spill_path
        self._spill_fd, self.spill_path, self._spill_state = None, None, "lost"
        self._pending = bytearray()
        await anyio.to_thread.run_sync(_discard, fd, path)

    def _decoded(self) -> str | None:
        """The whole stream as text when both windows hold all of it, else ``None``."""
        if self.gap > 0:
            return None
        return (self._head + self._tail).decode("utf-8", "replace")

    @property
    def truncated(self) -> bool:
        """Whether the model is shown less than the whole stream."""
        whole = self._decoded()
        return whole is None or len(whole) > self.max_chars

    async def finish(self) -> None:
        """The stream ended: write the rest of the spill file, or remove it if nothing was cut."""
        if self._spill_state != "open":
            return
        await self._flush()
        fd, path = self._spill_fd, self.spill_path
        if fd is None:
            return
        self._spill_fd = None
        if self.truncated:
            await anyio.to_thread.run_sync(os.close, fd)
        else:
            self.spill_path = None
            await anyio.to_thread.run_sync(_discard, fd, path)

    def abandon(self) -> None:
        """Release the spill file without keeping it (the call failed or was cancelled)."""
        fd, path = self._spill_fd, self.spill_path
        self._spill_fd, self.spill_path = None, None
        _discard(fd, path)

    def shown(self) -> str:
        """What the model sees: everything, or the head, the truncation marker and the tail."""
        whole = self._decoded()
        if whole is not None and len(whole) <= self.max_chars:
            return whole
        head_chars = self.max_chars // 4
        tail_chars = self.max_chars - head_chars
        if whole is not None:
            head, tail = whole[:head_chars], whole[len(whole) - tail_chars :]
        else:
            head = self._head.decode("utf-8", "replace")[:head_chars]
            tail_bytes = bytes(self._tail)
            # The tail window may start inside a character: drop its continuation bytes.
            skip = 0
            while skip < 3 and skip < len(tail_bytes) and tail_bytes[skip] in _CONTINUATION:
                skip += 1
            decoded = tail_bytes[skip:].decode("utf-8", "replace")
            tail = decoded[len(decoded) - tail_chars :] if len(decoded) > tail_chars else decoded
        separator = "" if not head or head.endswith("\n") else "\n"
        return f"{head}{separator}{truncation_marker(self.spill_path)}\n{tail}"


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _discard(fd: int | None, path: str | None) -> None:
    if fd is not None:
        try:
            os.close(fd)
        except OSError:
            pass
    if path is not None:
        try:
            os.unlink(path)
        except OSError:
            pass


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessOutcome:
    """How a command ended: its exit code or the signal that killed it, and the first cause of a kill."""

    exit_code: int | None
    signal: str | None
    timed_out: bool
    aborted: bool


async def terminate_group(process: Process, pgid: int, grace_s: float) -> None:
    """SIGTERM to the whole group, SIGKILL after the grace period, and reap the leader.

    A member that ignores SIGTERM (a trap) keeps the group alive through the grace period; the
    SIGKILL that follows cannot be ignored.
    """
    kill_group(pgid, signals.SIGTERM)
    with anyio.move_on_after(grace_s):
        await process.wait()
        while group_alive(pgid):
            await anyio.sleep(_POLL_S)
    kill_group(pgid, signals.SIGKILL)
    await process.wait()
    # SIGKILL is queued, not instant: wait until the members are gone (or only zombies), so that
    # nothing of the call still runs when it returns. A process stuck in the kernel bounds this.
    with anyio.move_on_after(grace_s):
        while group_alive(pgid):
            await anyio.sleep(_POLL_S)


async def _wait_for_exit(process: Process, timeout_s: float, signal: Signal) -> Cause | None:
    """Wait for the leader to exit; say whether the deadline or the call's signal came first."""
    with anyio.move_on_after(timeout_s):
        with signal.cancel_scope() as aborted:
            await process.wait()
        return "abort" if aborted.cancelled_caught else None
    return "timeout"


async def _pump(stream: ByteReceiveStream | None, capture: OutputSink) -> None:
    if stream is None:
        return
    while True:
        try:
            chunk = await stream.receive(READ_CHUNK)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            return
        await capture.feed(chunk)


async def run_group(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    timeout_s: float,
    signal: Signal,
    grace_s: float,
    stdout: OutputSink,
    stderr: OutputSink,
    live: ProcessGroups,
) -> ProcessOutcome:
    """Run ``argv`` in a new process group and capture both streams; ``live`` tracks running groups.

    Raises ``OSError`` when the process cannot start. If the awaiting task is cancelled, the group
    is still terminated and reaped (shielded) before the cancellation propagates.
    """
    with anyio.CancelScope(shield=True):
        # A cancellation delivered inside the spawn would lose the process handle (an orphan):
        # finish spawning, then let the cancellation arrive at the next await, inside the try.
        process = await anyio.open_process(
            list(argv), cwd=cwd, env=dict(env), start_new_session=True, stdin=subprocess.DEVNULL
        )
    pgid = process.pid  # a new session's leader is its group's leader
    cause: Cause | None = None
    try:
        live.add(pgid)
        async with anyio.create_task_group() as group:
            pumps_done = anyio.Event()

            async def pump_both() -> None:
                async with anyio.create_task_group() as pumps:
                    pumps.start_soon(_pump, process.stdout, stdout)
                    pumps.start_soon(_pump, process.stderr, stderr)
                pumps_done.set()

            group.start_soon(pump_both)
            cause = await _wait_for_exit(process, timeout_s, signal)
            if cause is not None or group_alive(pgid):
                # Timeout, cancellation, or members left running after the command ended (no orphans).
                await terminate_group(process, pgid, grace_s)
            with anyio.move_on_after(grace_s):
                # A process that escaped the group may still hold a pipe: stop reading after the grace.
                await pumps_done.wait()
            group.cancel_scope.cancel()
        await stdout.finish()
        await stderr.finish()
    finally:
        with anyio.CancelScope(shield=True):
            if process.returncode is None or group_alive(pgid):
                await terminate_group(process, pgid, grace_s)
            live.discard(pgid)
            await process.aclose()
    code = process.returncode
    assert code is not None
    return ProcessOutcome(
        exit_code=code if code >= 0 else None,
        signal=signal_name(-code) if code < 0 else None,
        timed_out=cause == "timeout",
        aborted=cause == "abort",
    )
