"""The Python code runtime: one worker process per program, its tool calls relayed to the pipeline.

reference/core-pipeline.md §6.3. ``run`` starts ``worker.py`` in its own session (its own process
group), confined by the sandbox plugin when one answers, sends it the program, and then serves its
protocol: log lines are kept (bounded), each ``call`` becomes a concurrent ``request.call_tool``
whose value or error goes back to the program, and the final ``done`` / ``fail`` message becomes
the :class:`CodeRunResult`. When the request's signal aborts (or the hard cap passes) the group
gets SIGTERM, then SIGKILL after the grace; whatever happens, nothing of the run outlives ``run``.
"""

from __future__ import annotations

import functools
import json
import os
import signal as signals
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process, TaskGroup
from anyio.streams.buffered import BufferedByteReceiveStream

from harness_core import Harness
from harness_core.code_mode import NO_RESULT, CodeBinding, CodeRunFailure, CodeRunRequest, CodeRunResult, ToolCallError
from harness_core.lossless import LosslessJSONError, snapshot, thaw
from harness_core.processes import ProcessGroups, descendants, group_alive, kill_group, signal_name
from harness_core.sandbox import ConfinedCommand, SandboxPolicy, SandboxUnavailableError, denial_marker

from .sdk import render_sdk

if TYPE_CHECKING:
    from .config import CodePythonConfig

__all__ = [
    "LogBook",
    "ProtocolError",
    "PythonRuntime",
    "StderrTail",
    "WORKER",
    "terminate_group",
]

#: The worker script (standard library only, so any Python 3.9+ interpreter can run it).
WORKER = str(Path(__file__).with_name("worker.py"))
#: How much of the worker's direct stderr output is kept for failure messages and the logs.
STDERR_TAIL_BYTES = 16 * 1024
#: How often a process group is polled while it gets its grace period.
_POLL_S = 0.02


# --- process groups (the same approach as the bash tool: a new session, TERM, grace, KILL) ------------


def _killed_by(number: int) -> str:
    name = signal_name(number)
    return f"signal {name}" if name.isdigit() else name


def _kill_members(members: set[int], sig: int) -> None:
    for pid in members:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


async def terminate_group(process: Process, pgid: int, grace_s: float, known: Iterable[int] = ()) -> None:
    """SIGTERM to the group and every descendant, SIGKILL after the grace, reap the leader, wait for all.

    The descendants are collected before the first signal (once the leader dies they are
    reparented and can no longer be found from it); ``known`` adds members found earlier.
    """
    members = descendants(process.pid) | set(known)
    kill_group(pgid, signals.SIGTERM)
    _kill_members(members, signals.SIGTERM)
    with anyio.move_on_after(grace_s):
        await process.wait()
        while group_alive(pgid, members):
            await anyio.sleep(_POLL_S)
    members |= descendants(process.pid)
    kill_group(pgid, signals.SIGKILL)
    _kill_members(members, signals.SIGKILL)
    await process.wait()
    # SIGKILL is queued, not instant: wait (bounded) until every member is gone.
    with anyio.move_on_after(max(grace_s, 2.0)):
        while group_alive(pgid, members):
            await anyio.sleep(_POLL_S)


# --- the run's pieces ----------------------------------------------------------------------------


class ProtocolError(Exception):
    """Raised when the worker sends something the protocol does not allow (the run fails, kind ``runtime``)."""


class LogBook:
    """The run's log lines, bounded by ``max_log_lines`` and ``max_log_bytes`` whatever the worker sends."""

    def __init__(self, max_lines: int, max_bytes: int) -> None:
        self._max_lines = max_lines
        self._max_bytes = max_bytes
        self._lines: list[str] = []
        self._bytes = 0
        self.dropped = 0

    def add(self, line: str) -> None:
        """Keep ``line`` if the bounds allow (cut to the bytes left), else count it."""
        # A lone surrogate (print('\udcff')) cannot be written as UTF-8 anywhere downstream.
        line = line.encode("utf-8", "replace").decode("utf-8")
        if len(self._lines) >= self._max_lines or self._bytes >= self._max_bytes:
            self.dropped += 1
            return
        encoded = line.encode("utf-8", "replace")
        room = self._max_bytes - self._bytes
        if len(encoded) > room:
            line = encoded[:room].decode("utf-8", "ignore")
            encoded = encoded[:room]
        self._lines.append(line)
        self._bytes += len(encoded)

    def lines(self, more_dropped: int = 0) -> tuple[str, ...]:
        """The kept lines, plus one marker line if any were dropped (here or in the worker)."""
        dropped = self.dropped + more_dropped
        if not dropped:
            return tuple(self._lines)
        noun = "line" if dropped == 1 else "lines"
        marker = f"[{dropped} more log {noun} not shown: over the [code_python] max_log_lines / max_log_bytes limit]"
        return (*self._lines, marker)


class StderrTail:
    """The worker's direct stderr (child processes, interpreter crashes, the sandbox runner): its last bytes."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._data = bytearray()
        self.total = 0
        #: Set once the stream has ended (every byte the worker wrote is in).
        self.ended = anyio.Event()

    async def pump(self, stream: ByteReceiveStream | None) -> None:
        """Read the stream to its end, keeping the tail."""
        try:
            if stream is not None:
                await self._read(stream)
        finally:
            self.ended.set()

    async def _read(self, stream: ByteReceiveStream) -> None:
        while True:
            try:
                chunk = await stream.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                return
            self.total += len(chunk)
            self._data += chunk
            if len(self._data) > self._limit:
                del self._data[: len(self._data) - self._limit]

    def text(self) -> str:
        """The kept tail as text (a cut first line is dropped when anything came before it)."""
        text = self._data.decode("utf-8", "replace")
        if self.total > len(self._data) and "\n" in text:
            text = text.split("\n", 1)[1]
        return text

    def lines(self) -> list[str]:
        """The kept tail as lines, with a note first when earlier output was not kept."""
        body = self.text().rstrip("\n")
        if not body:
            return []
        lines = body.split("\n")
        if self.total > len(self._data):
            lines.insert(0, f"[{self.total - len(self._data)} earlier bytes of direct output not kept]")
        return lines


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _decode(line: bytes) -> dict[str, Any]:
    try:
        message = json.loads(line, parse_constant=_reject_constant)
    except ValueError as exc:
        raise ProtocolError(f"the worker sent a line that is not JSON ({exc})") from None
    if not isinstance(message, dict) or not isinstance(message.get("t"), str):
        raise ProtocolError("the worker sent a message that is not an object with a type")
    return message


def _encode(message: Mapping[str, Any]) -> bytes:
    return (json.dumps(message, ensure_ascii=True, allow_nan=False) + "\n").encode("ascii")


def _failure(kind: str, message: str, logs: tuple[str, ...] = ()) -> CodeRunResult:
    return CodeRunResult(logs=logs, error=CodeRunFailure(kind=kind, message=message))


@dataclass(frozen=True, slots=True)
class _Launch:
    """What to start: the argv (wrapped when confined), where, and the policy it runs under."""

    argv: list[str]
    cwd: str
    policy: SandboxPolicy | None
    confined: ConfinedCommand | None


class _Session:
    """One running worker: serves its protocol until its final message, its end, or a stop."""

    def __init__(self, process: Process, request: CodeRunRequest, settings: CodePythonConfig) -> None:
        self.process = process
        self.request = request
        self.settings = settings
        self.logs = LogBook(settings.max_log_lines, settings.max_log_bytes)
        self.stderr = StderrTail(max(STDERR_TAIL_BYTES, settings.max_log_bytes))
        self.bindings = frozenset(binding.name for binding in request.bindings)
        #: The program's processes found when its final message came (killed if still running).
        self.left_behind: set[int] = set()
        self._send_lock = anyio.Lock()

    async def send(self, message: Mapping[str, Any]) -> None:
        """Write one message to the worker; a worker that is gone is not an error here."""
        stdin: ByteSendStream | None = self.process.stdin
        if stdin is None:
            return
        data = _encode(message)
        async with self._send_lock:
            try:
                await stdin.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                pass

    async def close_input(self) -> None:
        """Close the worker's stdin: after its final message, that tells it to exit."""
        if self.process.stdin is not None:
            async with self._send_lock:
                try:
                    await self.process.stdin.aclose()
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    pass

    async def converse(self) -> dict[str, Any] | None:
        """Serve the worker until its final message (returned); ``None`` when its output ended first.

        Raises :class:`ProtocolError` (unwrapped, outside the calls' task group) for a bad message.
        """
        outcome: dict[str, Any] | ProtocolError | None = None
        async with anyio.create_task_group() as calls:
            try:
                outcome = await self._serve(calls)
            except ProtocolError as exc:
                outcome = exc
            finally:
                # The program is over (or the worker is): its calls still in flight have no one to answer.
                calls.cancel_scope.cancel()
        if isinstance(outcome, ProtocolError):
            raise outcome
        return outcome

    async def _serve(self, calls: TaskGroup) -> dict[str, Any] | None:
        assert self.process.stdout is not None
        reader = BufferedByteReceiveStream(self.process.stdout)
        limit = self.settings.max_message_bytes
        while True:
            try:
                line = await reader.receive_until(b"\n", limit)
            except anyio.DelimiterNotFound:
                line = None
            except (anyio.IncompleteRead, anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                return None
            # receive_until returns a line that arrived whole in one read, however long: check it too.
            if line is None or len(line) > limit:
                raise ProtocolError(
                    f"the program sent a message larger than {limit} bytes (tool arguments or its return value); "
                    "[code_python] max_message_bytes sets the limit"
                )
            message = _decode(line)
            kind = message["t"]
            if kind == "log":
                self.logs.add(str(message.get("line", "")))
            elif kind == "call":
                self._start_call(calls, message)
            elif kind in ("done", "fail"):
                return message
            else:
                raise ProtocolError(f"the worker sent an unknown message type {kind!r}")

    def _start_call(self, calls: TaskGroup, message: dict[str, Any]) -> None:
        call_id, name = message.get("id"), message.get("name")
        if type(call_id) is not int or not isinstance(name, str) or "args" not in message:
            raise ProtocolError("the worker sent a tool call without an integer id, a name and arguments")
        calls.start_soon(self._call, call_id, name, message["args"])

    async def _call(self, call_id: int, name: str, arguments: Any) -> None:
        if name not in self.bindings:
            # Bindings are fixed at run start (reference §6.3): a name outside them is never dispatched.
            await self.send({"t": "reply", "id": call_id, "ok": False, "message": f'unknown tool "{name}"'})
            return
        try:
            value = await self.request.call_tool(name, arguments)
        except ToolCallError as error:
            reply: dict[str, Any] = {"t": "reply", "id": call_id, "ok": False, "message": str(error)}
        except Exception as error:  # whatever the transport raised, the program sees a failed call
            reply = {"t": "reply", "id": call_id, "ok": False, "message": str(error) or type(error).__name__}
        else:
            reply = {"t": "reply", "id": call_id, "ok": True, "value": value}
            try:
                _encode(reply)
            except (TypeError, ValueError):
                # The core hands back lossless JSON; anything else must not reach the program half-encoded.
                reply = {"t": "reply", "id": call_id, "ok": False, "message": f"the value of {name} is not JSON"}
        await self.send(reply)


def base_interpreter() -> str:
    """The interpreter of the base installation behind this (possibly virtual) environment."""
    # CPython records it as sys._base_executable (a venv's pyvenv.cfg "home"); elsewhere, our own.
    base = getattr(sys, "_base_executable", None) or sys.executable
    return os.path.realpath(base if os.path.exists(base) else sys.executable)


@functools.cache
def worker_source() -> str:
    """The text of ``worker.py``, read once."""
    return Path(WORKER).read_text(encoding="utf-8")


class PythonRuntime:
    """Runs ``run_code`` programs written in Python, each in its own worker process.

    ``harness`` is used for ``sandbox_policy`` / ``sandbox_confine``; ``live`` tracks the process
    groups of runs in flight so that closing the harness kills them.
    """

    language = "python"

    def __init__(
        self, settings: CodePythonConfig, harness: Harness, project_dir: Path, live: ProcessGroups | None = None
    ) -> None:
        self.settings = settings
        self.harness = harness
        self.project_dir = project_dir
        self.live = live if live is not None else ProcessGroups()

    @property
    def interpreter(self) -> str:
        """The Python that runs programs: ``[code_python] python``, else the harness's own.

        The harness's own is taken as its base installation: a virtual environment's ``python``
        (a link or a copy) may live where a sandbox hides it (a private ``/tmp`` under
        workspace-write), and the worker needs only the standard library.
        """
        return self.settings.python or base_interpreter()

    def render_sdk(self, bindings: tuple[CodeBinding, ...]) -> str:
        """The prompt text that tells the model how to write programs that call ``bindings``."""
        return render_sdk(bindings)

    def worker_argv(self) -> list[str]:
        """The unconfined command that starts a worker: isolated mode, no bytecode written.

        The worker's source travels on the command line (``-c``) rather than as a path, so a
        sandbox only has to show the interpreter, not wherever this package is installed.
        """
        return [self.interpreter, "-I", "-B", "-c", worker_source()]

    def _launch(self, request: CodeRunRequest) -> _Launch | CodeRunResult:
        """The argv to start, confined when the sandbox says so; a failure result when it cannot be."""
        argv = self.worker_argv()
        cwd = str(self.project_dir)
        if not self.settings.sandbox:
            return _Launch(argv, cwd, None, None)
        hook = self.harness.plugin_manager.hook
        try:
            policy: SandboxPolicy | None = hook.sandbox_policy(execution=request.execution, mode=None)
        except Exception as exc:  # fail closed: an unknown policy is not "no sandbox"
            return _failure("runtime", f"the program did not run: the sandbox policy could not be resolved ({exc})")
        if policy is None:
            return _Launch(argv, cwd, None, None)  # no sandbox plugin installed: unconfined, as doctor says
        cwd = policy.workspace_root
        if not policy.confined:
            return _Launch(argv, cwd, policy, None)
        try:
            confined: ConfinedCommand | None = hook.sandbox_confine(argv=list(argv), policy=policy, cwd=cwd)
        except SandboxUnavailableError as exc:
            return _failure("runtime", f"the program did not run: the sandbox is unavailable. {exc.message}")
        except Exception as exc:
            return _failure("runtime", f"the program did not run: the sandbox could not confine it ({exc})")
        if confined is None:
            # A confined mode with nobody to confine it: refuse, never run unconfined.
            unavailable = SandboxUnavailableError(policy.mode)
            return _failure("runtime", f"the program did not run: the sandbox is unavailable. {unavailable.message}")
        return _Launch(list(confined.argv), cwd, policy, confined)

    async def run(self, request: CodeRunRequest) -> CodeRunResult:
        """Run one program to its end, its failure, its abort or the hard cap; never raises for the program."""
        if request.signal.aborted:
            return _failure("aborted", f"the program did not start: {request.signal.reason}")
        launch = self._launch(request)
        if isinstance(launch, CodeRunResult):
            return launch
        try:
            with anyio.CancelScope(shield=True):
                # A cancellation delivered inside the spawn would lose the process handle (an orphan).
                process = await anyio.open_process(
                    launch.argv,
                    cwd=launch.cwd,
                    env=dict(os.environ),
                    start_new_session=True,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                )
        except OSError as exc:
            if launch.confined is not None and launch.policy is not None:
                unavailable = SandboxUnavailableError(
                    launch.policy.mode, f"cannot start {launch.argv[0]}: {exc.strerror}"
                )
                return _failure(
                    "runtime", f"the program did not run: the sandbox is unavailable. {unavailable.message}"
                )
            return _failure(
                "runtime", f"cannot start the Python interpreter {self.interpreter!r} ([code_python] python): {exc}"
            )
        pgid = process.pid  # a new session's leader leads its group
        session = _Session(process, request, self.settings)
        try:
            self.live.add(pgid)
            return await self._drive(session, launch, pgid)
        finally:
            with anyio.CancelScope(shield=True):
                if process.returncode is None or group_alive(pgid, session.left_behind):
                    await terminate_group(process, pgid, self.settings.kill_grace_ms / 1000, session.left_behind)
                self.live.discard(pgid)
                await process.aclose()

    async def _drive(self, session: _Session, launch: _Launch, pgid: int) -> CodeRunResult:
        request, process, settings = session.request, session.process, self.settings
        grace_s = settings.kill_grace_ms / 1000
        final: dict[str, Any] | None = None
        protocol_error: ProtocolError | None = None
        with anyio.CancelScope() as stop:
            dispose = request.signal.on_abort(lambda _reason: stop.cancel())
            try:
                deadline = settings.timeout_ms / 1000 if settings.timeout_ms is not None else float("inf")
                with anyio.move_on_after(deadline) as cap:
                    async with anyio.create_task_group() as group:
                        group.start_soon(session.stderr.pump, process.stderr)
                        await session.send(
                            {
                                "program": request.program,
                                "bindings": sorted(session.bindings),
                                "max_log_lines": settings.max_log_lines,
                                "max_log_bytes": settings.max_log_bytes,
                            }
                        )
                        try:
                            final = await session.converse()
                        except ProtocolError as exc:
                            protocol_error = exc
                        if final is not None and protocol_error is None:
                            # The worker waits after its final message: take stock of what the program
                            # started (even children in sessions of their own), then let it exit. The
                            # outcome is known, so a late abort must not cut this short.
                            with anyio.CancelScope(shield=True):
                                session.left_behind = descendants(process.pid)
                                await session.close_input()
                                with anyio.move_on_after(grace_s):
                                    await process.wait()
                        if process.returncode is None or group_alive(pgid, session.left_behind):
                            # Stopped early, or the program left processes behind: none may outlive the run.
                            await terminate_group(process, pgid, grace_s, session.left_behind)
                        with anyio.move_on_after(grace_s):
                            await process.wait()
                            # A process that escaped the group may hold stderr open: read for the grace only.
                            await session.stderr.ended.wait()
                        group.cancel_scope.cancel()
            finally:
                dispose()
        if final is None and protocol_error is None:
            if stop.cancelled_caught or request.signal.aborted:
                return _failure("aborted", f"the program was stopped: {request.signal.reason}", session.logs.lines())
            if cap.cancelled_caught:
                return _failure(
                    "timeout",
                    f"the program ran longer than {settings.timeout_ms} ms ([code_python] timeout_ms) and was stopped",
                    session.logs.lines(),
                )
        return self._settle(session, launch, final, protocol_error)

    def _settle(
        self, session: _Session, launch: _Launch, final: dict[str, Any] | None, protocol_error: ProtocolError | None
    ) -> CodeRunResult:
        """The result from the final message, or why the worker ended without one."""
        stderr_lines = session.stderr.lines()
        if protocol_error is not None:
            return _failure("runtime", str(protocol_error), session.logs.lines())
        if final is None:
            return _failure("runtime", self._exit_message(session, launch), session.logs.lines())
        dropped = final.get("dropped")
        worker_dropped = dropped if type(dropped) is int and dropped > 0 else 0
        for line in stderr_lines:
            session.logs.add(line)
        logs = session.logs.lines(worker_dropped)
        if final["t"] == "fail":
            kind, message = final.get("kind"), final.get("message")
            if not isinstance(kind, str) or not isinstance(message, str):
                return _failure("runtime", "the worker reported a failure without a kind and a message", logs)
            if kind == "exception" and launch.confined is not None and launch.policy is not None:
                if launch.confined.denied(1, message):
                    message += "\n" + denial_marker(launch.policy.mode)
            return _failure(kind, message, logs)
        if "result" not in final:
            return CodeRunResult(logs=logs, result=NO_RESULT)
        try:
            result = thaw(snapshot(final["result"]))
        except LosslessJSONError as exc:
            return _failure("result", f"the program returned a value that is not lossless JSON ({exc})", logs)
        return CodeRunResult(logs=logs, result=result)

    def _exit_message(self, session: _Session, launch: _Launch) -> str:
        code = session.process.returncode
        if code is None:
            how = "stopped responding"
        elif code < 0:
            how = f"was killed by {_killed_by(-code)}"
        else:
            how = f"exited with status {code}"
        message = f"the Python worker {how} before the program finished"
        detail = session.stderr.text().strip()
        if launch.confined is not None and launch.policy is not None:
            runner = launch.confined.runner_failure(code if code is not None and code >= 0 else None, detail)
            if runner is not None:
                return f"the program did not run: the sandbox runner failed under {launch.policy.mode} mode ({runner})"
        if detail:
            message += "; its last output:\n" + detail[-2000:]
        return message
