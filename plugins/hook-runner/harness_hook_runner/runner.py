"""Hook runner: spawn hook commands in their own process group, feed JSON, capture capped output.

reference/hook-bridges.md A.4 and C.3: a handler is a shell command (``sh -c``) that reads one JSON
object on stdin. All matching handlers of an event run in parallel and identical commands run once.
A timeout or an abort kills the whole process group (SIGTERM, then SIGKILL after a short grace) and
the run reports no exit code; what that means (fail open or closed) is the bridge's decision.
"""

from __future__ import annotations

import json
import os
import signal as signals
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
from anyio.abc import ByteReceiveStream, Process

from harness_core.processes import group_alive, kill_group

__all__ = ["DEFAULT_MAX_OUTPUT_BYTES", "AbortSignal", "HookHandler", "HookRun", "run_hook", "run_hooks", "unique_handlers"]

#: Bytes kept of each of stdout and stderr; the rest is read and dropped so the hook never blocks.
DEFAULT_MAX_OUTPUT_BYTES = 1_000_000
#: Seconds between SIGTERM and SIGKILL of a hook's process group.
KILL_GRACE_S = 0.5


class AbortSignal(Protocol):
    """What the runner needs of a cancellation signal (``harness_core.Signal`` fits)."""

    @property
    def aborted(self) -> bool: ...

    def on_abort(self, callback: Callable[[object], None]) -> Callable[[], None]: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class HookHandler:
    """One command handler: the shell command, its own timeout (seconds) and where it was defined."""

    command: str
    timeout_s: float | None = None
    source: str = ""
    matcher: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class HookRun:
    """What one hook process did. ``exit_code`` is ``None`` when it could not start or was killed."""

    command: str
    exit_code: int | None
    stdout: str
    stderr: str
    duration_ms: float
    timed_out: bool = False
    aborted: bool = False
    #: Why the process could not start (missing shell, bad working directory), else ``None``.
    spawn_error: str | None = None
    stdout_truncated: bool = False
    stderr_truncated: bool = False


class _Capture:
    """Keeps the first ``limit`` bytes of a stream and drains (and counts) the rest."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.chunks: list[bytes] = []
        self.kept = 0
        self.truncated = False

    async def drain(self, stream: ByteReceiveStream | None) -> None:
        if stream is None:
            return
        try:
            async for chunk in stream:
                room = self.limit - self.kept
                if room > 0:
                    piece = chunk[:room]
                    self.chunks.append(piece)
                    self.kept += len(piece)
                if len(chunk) > max(room, 0):
                    self.truncated = True
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return

    def text(self) -> str:
        # Hooks may print anything: never fail on bytes that are not UTF-8.
        return b"".join(self.chunks).decode("utf-8", errors="replace")


async def _terminate(process: Process, pgid: int) -> None:
    """SIGTERM the whole group, SIGKILL it after the grace period, and reap the leader."""
    kill_group(pgid, signals.SIGTERM)
    with anyio.move_on_after(KILL_GRACE_S):
        while group_alive(pgid) and process.returncode is None:
            await anyio.sleep(0.01)
    kill_group(pgid, signals.SIGKILL)
    with anyio.move_on_after(5):
        await process.wait()


async def _feed(process: Process, data: bytes) -> None:
    stdin = process.stdin
    if stdin is None:
        return
    try:
        await stdin.send(data)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass  # the hook did not read its input: that is its business
    finally:
        try:
            await stdin.aclose()
        except (anyio.BrokenResourceError, OSError):
            pass


async def run_hook(
    command: str,
    payload: Mapping[str, Any],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 600.0,
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
    signal: AbortSignal | None = None,
    shell: str = "sh",
    trailing_newline: bool = True,
) -> HookRun:
    """Run ``shell -c command`` with ``payload`` as JSON on stdin; never raises for a hook's failure.

    The process starts a new session (its own process group). On timeout or when ``signal``
    aborts, the whole group is terminated and the run has ``exit_code=None``. Output beyond
    ``max_output_bytes`` per stream is dropped (``*_truncated``); bytes that are not UTF-8 are
    decoded with replacement characters.
    """
    data = json.dumps(dict(payload), ensure_ascii=False).encode("utf-8") + (b"\n" if trailing_newline else b"")
    started = time.monotonic()

    def elapsed_ms() -> float:
        return round((time.monotonic() - started) * 1000, 3)

    if signal is not None and signal.aborted:
        return HookRun(command=command, exit_code=None, stdout="", stderr="", duration_ms=0.0, aborted=True)
    try:
        process = await anyio.open_process(
            [shell, "-c", command],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            start_new_session=True,
        )
    except OSError as exc:
        return HookRun(
            command=command, exit_code=None, stdout="", stderr="", duration_ms=elapsed_ms(), spawn_error=str(exc)
        )
    pgid = process.pid  # start_new_session: the leader's pid is the group id
    out, err = _Capture(max_output_bytes), _Capture(max_output_bytes)
    aborted = False
    finished = False
    scope = anyio.CancelScope(deadline=anyio.current_time() + timeout_s)

    def on_abort(_reason: object) -> None:
        nonlocal aborted
        aborted = True
        scope.cancel()

    dispose = signal.on_abort(on_abort) if signal is not None else None
    try:
        with scope:
            async with anyio.create_task_group() as group:
                group.start_soon(_feed, process, data)
                group.start_soon(out.drain, process.stdout)
                group.start_soon(err.drain, process.stderr)
                await process.wait()
            finished = True
    finally:
        if dispose is not None:
            dispose()
        with anyio.CancelScope(shield=True):
            if not finished or process.returncode is None:
                await _terminate(process, pgid)
            await process.aclose()
    if not finished:
        return HookRun(
            command=command,
            exit_code=None,
            stdout=out.text(),
            stderr=err.text(),
            duration_ms=elapsed_ms(),
            timed_out=not aborted,
            aborted=aborted,
            stdout_truncated=out.truncated,
            stderr_truncated=err.truncated,
        )
    code = process.returncode
    return HookRun(
        command=command,
        # A negative return code is a death by signal: no exit code, like a kill (C.3).
        exit_code=code if code is not None and code >= 0 else None,
        stdout=out.text(),
        stderr=err.text(),
        duration_ms=elapsed_ms(),
        stdout_truncated=out.truncated,
        stderr_truncated=err.truncated,
    )


def unique_handlers(handlers: Sequence[HookHandler]) -> list[HookHandler]:
    """The handlers with identical commands removed (the first definition is kept), A.4."""
    seen: set[str] = set()
    kept: list[HookHandler] = []
    for handler in handlers:
        if handler.command in seen:
            continue
        seen.add(handler.command)
        kept.append(handler)
    return kept


async def run_hooks(
    handlers: Sequence[HookHandler],
    payload: Mapping[str, Any],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    default_timeout_s: float = 600.0,
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
    signal: AbortSignal | None = None,
    shell: str = "sh",
) -> list[HookRun]:
    """Run every handler in parallel (identical commands once); the runs come back in handler order."""
    unique = unique_handlers(handlers)
    runs: list[HookRun | None] = [None] * len(unique)

    async def run_one(index: int, handler: HookHandler) -> None:
        runs[index] = await run_hook(
            handler.command,
            payload,
            cwd=cwd,
            env=env,
            timeout_s=handler.timeout_s if handler.timeout_s is not None else default_timeout_s,
            max_output_bytes=max_output_bytes,
            signal=signal,
            shell=shell,
        )

    async with anyio.create_task_group() as group:
        for index, handler in enumerate(unique):
            group.start_soon(run_one, index, handler)
    return [run for run in runs if run is not None]
