"""The job registry: preflight, ids, lifecycle, bounded output, owner fence, waiting, kill and close.

reference/plugins.md §7. Jobs run as anyio tasks on the manager's own event loop, in a daemon
thread started on the first job (a ``BlockingPortal``): a job outlives the tool call that started
it, whichever loop that call ran on, and closing the manager stops every job and then that loop.
State is shared between that thread and the callers' threads, so it sits behind one lock; callers
wait by polling the settled flag, never by blocking their loop.
"""

from __future__ import annotations

import codecs
import itertools
import json
import logging
import os
import shutil
import signal as signals
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Literal

import anyio
from anyio.from_thread import BlockingPortal

from harness_core import AbortError, HarnessError, Signal
from harness_core.jobs import JobRefusedError, JobRequest, JobStatus, JobStream, capacity_text

__all__ = ["JobError", "JobManager", "JobSnapshot", "OutputStream", "complete_utf8_prefix"]

#: How often a waiting caller looks at the job again.
POLL_S = 0.02
#: UTF-8 continuation bytes.
_CONTINUATION = range(0x80, 0xC0)
_LIVE: tuple[JobStatus, ...] = ("running", "stopping")

logger = logging.getLogger(__name__)


class JobError(HarnessError):
    """Raised when a job operation names a job the caller cannot reach or asks for something invalid."""

    code = "JOB_ERROR"


def _json(value: object) -> str:
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def complete_utf8_prefix(data: bytes) -> int:
    """The length of the longest prefix of ``data`` that does not end inside a UTF-8 character."""
    end = len(data)
    start = end
    # Walk back over at most three continuation bytes to the lead byte of the last character.
    while start > 0 and end - start < 3 and data[start - 1] in _CONTINUATION:
        start -= 1
    if start == 0:
        return end if start == end else 0
    lead = data[start - 1]
    need = 2 if 0xC0 <= lead < 0xE0 else 3 if 0xE0 <= lead < 0xF0 else 4 if 0xF0 <= lead < 0xF8 else 1
    have = end - start + 1
    return end if have >= need else start - 1


@dataclass(frozen=True, slots=True, kw_only=True)
class JobSnapshot:
    """A fresh copy of a job's public state (never live state)."""

    id: str
    kind: str
    label: str
    owner: str | None
    status: JobStatus
    detail: str | None
    started_at: int
    finished_at: int | None
    output_limit_bytes: int | None
    reported: bool

    @property
    def live(self) -> bool:
        """Whether the job has not settled yet (``running`` or ``stopping``)."""
        return self.status in _LIVE

    def public(self) -> dict[str, Any]:
        """reference §8 ``PublicJobSnapshot``: no owner, no ``reported``."""
        value: dict[str, Any] = {
            "id": self.id,
            "kind": self.kind,
            "label": self.label,
            "status": self.status,
            "started_at": self.started_at,
        }
        if self.detail is not None:
            value["detail"] = self.detail
        if self.finished_at is not None:
            value["finished_at"] = self.finished_at
        return value

    def status_marker(self) -> str:
        """``[status: <status>]`` or ``[status: <status>, <detail>]``."""
        return f"[status: {self.status}{', ' + self.detail if self.detail else ''}]"


class OutputStream:
    """One output stream of a job: a head window in memory, a total count, everything in a spill file.

    The spill file opens once the stream passes the window (before that nothing could be lost)
    and is dropped, with its path, once it would pass ``max_spill_bytes``. Reads consume: each
    returns what arrived since the last one, cut at a character boundary while the job runs.
    """

    def __init__(self, name: JobStream, *, window: int, max_spill_bytes: int, spill_dir: str, prefix: str) -> None:
        self.name = name
        self.window = window
        self.max_spill_bytes = max_spill_bytes
        self._spill_dir = spill_dir
        self._prefix = prefix
        self.head = bytearray()
        self.total = 0
        self.read_pos = 0
        self.spill_path: str | None = None
        self._spill_fd: int | None = None
        self._spill_state: Literal["none", "open", "lost"] = "none"
        self._spilled = 0

    def write(self, data: bytes) -> None:
        if not data:
            return
        if self._spill_state == "none" and self.total + len(data) > self.window:
            self._open_spill()
        if self._spill_state == "open":
            self._spill(data)
        room = self.window - len(self.head)
        if room > 0:
            self.head += data[:room]
        self.total += len(data)

    def _open_spill(self) -> None:
        try:
            os.makedirs(self._spill_dir, mode=0o700, exist_ok=True)
            fd, path = tempfile.mkstemp(prefix=f"{self._prefix}-", suffix=f".{self.name}", dir=self._spill_dir)
        except OSError:
            self._spill_state = "lost"
            return
        self._spill_fd, self.spill_path, self._spill_state = fd, path, "open"
        self._spill(bytes(self.head))

    def _spill(self, data: bytes) -> None:
        fd = self._spill_fd
        if fd is None:
            return
        if self._spilled + len(data) > self.max_spill_bytes:
            self.drop_spill()
            return
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        except OSError:
            self.drop_spill()
            return
        self._spilled += len(data)

    def drop_spill(self) -> None:
        """Give the spill file up (over its cap, or unwritable): remove it and forget its path."""
        fd, path = self._spill_fd, self.spill_path
        self._spill_fd, self.spill_path, self._spill_state = None, None, "lost"
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

    def finish(self) -> None:
        """The stream ended: close the spill file (kept, so its path stays valid until close)."""
        fd, self._spill_fd = self._spill_fd, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass

    def take(self, final: bool) -> tuple[str, bool]:
        """The text that arrived since the last read, and whether some of it is no longer in memory."""
        held = len(self.head)
        lossy = self.total > held and self.read_pos < self.total
        chunk = bytes(self.head[self.read_pos : held]) if self.read_pos < held else b""
        if lossy:
            # The window ended somewhere inside the stream: cut it at a character boundary.
            chunk = chunk[: complete_utf8_prefix(chunk)]
            self.read_pos = self.total
        elif not final:
            # The job still writes: keep an unfinished character for the next read.
            chunk = chunk[: complete_utf8_prefix(chunk)]
            self.read_pos += len(chunk)
        else:
            self.read_pos = held
        return codecs.decode(chunk, "utf-8", "replace"), lossy


class _Job:
    """The live record of one job (guarded by the manager's lock)."""

    def __init__(self, job_id: str, request: JobRequest, streams: dict[JobStream, OutputStream]) -> None:
        self.id = job_id
        self.request = request
        self.streams = streams
        self.status: JobStatus = "running"
        self.detail: str | None = None
        self.started_at = int(time.time() * 1000)
        self.finished_at: int | None = None
        self.reported = False
        self.signal = Signal()
        self.scope: anyio.CancelScope | None = None
        self.future: Future[None] | None = None

    def snapshot(self) -> JobSnapshot:
        return JobSnapshot(
            id=self.id,
            kind=self.request.kind,
            label=self.request.label,
            owner=self.request.owner,
            status=self.status,
            detail=self.detail,
            started_at=self.started_at,
            finished_at=self.finished_at,
            output_limit_bytes=self.request.output_limit_bytes,
            reported=self.reported,
        )


class _JobIO:
    """The :class:`~harness_core.jobs.JobIO` handed to one job's ``start``."""

    def __init__(self, manager: JobManager, job: _Job) -> None:
        self._manager = manager
        self._job = job

    @property
    def signal(self) -> Signal:
        return self._job.signal

    def write(self, stream: JobStream, data: bytes) -> None:
        if stream not in ("stdout", "stderr"):
            raise ValueError(f'JobIO.write(stream=...) needs "stdout" or "stderr", got {stream!r}')
        with self._manager.lock:
            if self._job.status in _LIVE:
                self._job.streams[stream].write(bytes(data))


def _signal_detail(code: int) -> str:
    try:
        return f"signal: {signals.Signals(-code).name}"
    except ValueError:
        return f"signal: {-code}"


class JobManager:
    """Owner-isolated registry of background jobs (reference §7), running them on its own loop."""

    def __init__(
        self,
        *,
        max_per_owner: int = 10,
        max_output_bytes: int = 64000,
        max_spill_bytes: int = 64 * 1024 * 1024,
        close_grace_s: float = 10.0,
        choose_executor: Callable[[JobRequest], Any] | None = None,
    ) -> None:
        self.max_per_owner = max_per_owner
        #: Asks the ``jobs_backend`` hook for another backend per job; ``None`` runs it locally.
        self.choose_executor = choose_executor
        self.max_output_bytes = max_output_bytes
        self.max_spill_bytes = max_spill_bytes
        self.close_grace_s = close_grace_s
        self.lock = threading.RLock()
        self._jobs: dict[str, _Job] = {}
        self._counters: dict[str, itertools.count[int]] = {}
        self._closed = False
        self._portal: BlockingPortal | None = None
        self._thread: threading.Thread | None = None
        self._spill_dir: str | None = None
        #: Called (under no lock, in the jobs' thread) with each settled job's snapshot.
        self.on_done: list[Callable[[JobSnapshot], None]] = []

    # --- start ----------------------------------------------------------------------------------

    def preflight(self, request: JobRequest) -> None:
        """Every check of reference §7 ``start``, before anything starts; raises JobRefusedError."""
        if self._closed:
            raise JobRefusedError(JobRefusedError.CLOSED, code="JOB_CLOSED")
        if not isinstance(request, JobRequest):
            raise JobRefusedError(f"jobs_start needs a JobRequest, got {type(request).__name__}", code="JOB_INVALID")
        if type(request.kind) is not str or not request.kind.strip():
            raise JobRefusedError(JobRefusedError.INVALID_KIND, code="JOB_INVALID")
        if type(request.label) is not str or not request.label.strip():
            raise JobRefusedError(JobRefusedError.INVALID_LABEL, code="JOB_INVALID")
        limit = request.output_limit_bytes
        if limit is not None and (type(limit) is not int or limit <= 0 or limit > 2**53 - 1):
            raise JobRefusedError(
                f"invalid outputLimitBytes: expected a positive safe integer, got {_json(limit)}", code="JOB_INVALID"
            )
        owner = request.owner
        if owner is not None and (type(owner) is not str or not owner):
            raise JobRefusedError(
                f'agent "{owner}" is not the registered agent instance (background job owner must be live)',
                code="JOB_OWNER",
            )
        if not callable(request.start):
            raise JobRefusedError("jobs_start needs a request whose start is callable", code="JOB_INVALID")
        live = sum(1 for job in self._jobs.values() if job.request.owner == owner and job.status in _LIVE)
        if live >= self.max_per_owner:
            raise JobRefusedError(capacity_text(self.max_per_owner), code="JOB_LIMIT")

    def start(self, request: JobRequest) -> str:
        """Check the request, then allocate ``<kind>-<N>``, register the job and start its work."""
        with self.lock:
            self.preflight(request)
            portal = self._ensure_portal()
            counter = self._counters.setdefault(request.kind, itertools.count(1))
            job_id = f"{request.kind}-{next(counter)}"
            assert self._spill_dir is not None
            streams: dict[JobStream, OutputStream] = {
                name: OutputStream(
                    name,
                    window=self.max_output_bytes,
                    max_spill_bytes=self.max_spill_bytes,
                    spill_dir=self._spill_dir,
                    prefix=job_id,
                )
                for name in ("stdout", "stderr")
            }
            job = _Job(job_id, request, streams)
            self._jobs[job_id] = job
        # Outside the lock: handing a task to the jobs' loop waits for that loop, whose jobs take
        # the lock to write their output.
        try:
            job.future = portal.start_task_soon(self._run, job)
        except RuntimeError as exc:  # the loop stopped under us (closing)
            self._settle(job, "failed", f"could not start: {exc}")
        return job_id

    def _ensure_portal(self) -> BlockingPortal:
        if self._portal is not None:
            return self._portal
        ready = threading.Event()
        holder: list[BlockingPortal] = []

        async def serve() -> None:
            async with BlockingPortal() as portal:
                holder.append(portal)
                ready.set()
                await portal.sleep_until_stopped()

        # A daemon thread: an unclosed harness must not keep the interpreter from exiting.
        thread = threading.Thread(target=anyio.run, args=(serve,), name="harness-jobs", daemon=True)
        thread.start()
        ready.wait()
        self._spill_dir = tempfile.mkdtemp(prefix="harness-jobs-")
        self._portal, self._thread = holder[0], thread
        return holder[0]

    async def _run(self, job: _Job) -> None:
        io = _JobIO(self, job)
        status: JobStatus = "failed"
        detail: str | None = None
        with anyio.CancelScope() as scope:
            job.scope = scope
            try:
                executor = self.choose_executor(job.request) if self.choose_executor is not None else None
                if executor is None:
                    code = await job.request.start(io)  # the local backend: run it here
                else:
                    code = await executor.run(job.id, job.request, io)
            except Exception as exc:  # a failing job is contained as ``failed`` (reference §7)
                status, detail = "failed", f"{type(exc).__name__}: {exc}"
            else:
                if code is None:
                    status, detail = "killed", "killed before exit"
                elif type(code) is int and code < 0:
                    status, detail = "killed", _signal_detail(code)
                elif type(code) is int:
                    status, detail = "completed", f"exit code: {code}"
                else:
                    status, detail = "failed", f"start returned {type(code).__name__}, expected an int or None"
        if scope.cancelled_caught:
            status, detail = "killed", "killed before exit"
        self._settle(job, status, detail)

    def _settle(self, job: _Job, status: JobStatus, detail: str | None) -> None:
        with self.lock:
            if job.status not in _LIVE:
                return  # first-wins
            for stream in job.streams.values():
                stream.finish()
            job.status, job.detail = status, detail
            job.finished_at = max(int(time.time() * 1000), job.started_at)
            snapshot = job.snapshot()
        for listener in list(self.on_done):
            try:
                listener(snapshot)
            except Exception:  # a listener never breaks settlement
                logger.exception("jobs: a completion listener failed")

    # --- operations -------------------------------------------------------------------------------

    def _reach(self, job_id: object, caller: str | None) -> _Job:
        if type(job_id) is not str or not job_id:
            raise JobError(f"invalid job_id: expected a non-empty string, got {_json(job_id)}", code="INVALID_ARGS")
        job = self._jobs.get(job_id)
        if job is None:
            raise JobError(f"unknown job {job_id}", code="UNKNOWN_JOB")
        if job.request.owner is not None and job.request.owner != caller:
            raise JobError(f"job {job_id} belongs to another session", code="JOB_FORBIDDEN")
        return job

    def list_jobs(self, caller: str | None) -> list[JobSnapshot]:
        """The caller's jobs and every unowned job, in registration order."""
        with self.lock:
            return [
                job.snapshot()
                for job in self._jobs.values()
                if job.request.owner is None or job.request.owner == caller
            ]

    def get(self, job_id: object, caller: str | None) -> JobSnapshot:
        """A non-consuming snapshot."""
        with self.lock:
            return self._reach(job_id, caller).snapshot()

    def visible_limit(self, job_id: object, caller: str | None) -> int | None:
        """The job's ``output_limit_bytes`` if the caller can see it, else ``None`` (never raises)."""
        with self.lock:
            job = self._jobs.get(job_id) if type(job_id) is str else None
            if job is None or (job.request.owner is not None and job.request.owner != caller):
                return None
            return job.request.output_limit_bytes

    def read(self, job_id: object, caller: str | None) -> tuple[str, JobSnapshot]:
        """What the job wrote since the last read (stdout, then ``[stderr]`` and stderr), and its state."""
        with self.lock:
            job = self._reach(job_id, caller)
            final = job.status not in _LIVE
            out, out_lost = job.streams["stdout"].take(final)
            err, err_lost = job.streams["stderr"].take(final)
            text = out
            if err:
                if text and not text.endswith("\n"):
                    text += "\n"
                text += "[stderr]\n" + err
            if out_lost or err_lost:
                paths = [s.spill_path for s in job.streams.values() if s.spill_path is not None]
                if text and not text.endswith("\n"):
                    text += "\n"
                text += f"[some output was dropped from memory; full output: {', '.join(paths) or '(unavailable)'}]"
            if final:
                job.reported = True
            return text, job.snapshot()

    def kill(self, job_id: object, caller: str | None, reason: str = "killed") -> tuple[str, JobSnapshot]:
        """``("requested", …)`` for a live job (now ``stopping``), ``("already-finished", …)`` otherwise."""
        with self.lock:
            job = self._reach(job_id, caller)
            job.reported = True
            if job.status not in _LIVE:
                return "already-finished", job.snapshot()
            abort = job.status == "running"
            job.status = "stopping"
            snapshot = job.snapshot()
        if abort:
            self._abort(job, reason)
        return "requested", snapshot

    def _abort(self, job: _Job, reason: str) -> None:
        """Abort the job's signal inside the jobs' loop; never call this holding the lock."""
        portal = self._portal
        if portal is not None:
            try:
                portal.start_task_soon(_abort_signal, job.signal, reason)
            except RuntimeError:
                pass  # the loop is gone: the job is gone with it

    async def wait(
        self, job_id: object, timeout_ms: object, caller: str | None, signal: Signal | None = None
    ) -> JobSnapshot:
        """Wait for the job to settle, at most ``timeout_ms``; a timeout returns the live snapshot."""
        if type(timeout_ms) not in (int, float) or not (0 < timeout_ms < float("inf")):  # type: ignore[operator]
            raise JobError(
                f"invalid wait timeout: expected a positive number of milliseconds, got {_json(timeout_ms)}",
                code="INVALID_ARGS",
            )
        job = self._reach_locked(job_id, caller)
        signal = signal if signal is not None else Signal()
        with anyio.move_on_after(float(timeout_ms) / 1000):  # type: ignore[arg-type]
            with signal.cancel_scope():
                while job.status in _LIVE:
                    await anyio.sleep(POLL_S)
        with self.lock:
            if job.status not in _LIVE:
                job.reported = True
                return job.snapshot()
            if signal.aborted:
                raise AbortError("wait aborted")
            return job.snapshot()

    def _reach_locked(self, job_id: object, caller: str | None) -> _Job:
        with self.lock:
            return self._reach(job_id, caller)

    # --- close ------------------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    async def aclose(self) -> None:
        """Stop every live job, wait for it to release its resources, then stop the jobs' loop."""
        with self.lock:
            if self._closed:
                return
            self._closed = True
            self.on_done.clear()
            live = [job for job in self._jobs.values() if job.status in _LIVE]
            running = [job for job in live if job.status == "running"]
            for job in live:
                job.reported = True
                job.status = "stopping"
        for job in running:
            self._abort(job, "jobs service disposed")
        portal, thread = self._portal, self._thread
        if portal is not None:
            with anyio.move_on_after(self.close_grace_s):
                while any(job.future is not None and not job.future.done() for job in live):
                    await anyio.sleep(POLL_S)
            # Whatever ignored its signal is cancelled with the loop (its own cleanup still runs).
            try:
                await anyio.to_thread.run_sync(portal.call, portal.stop, True)
            except RuntimeError:
                pass
            if thread is not None:
                await anyio.to_thread.run_sync(thread.join)
        with self.lock:
            for job in self._jobs.values():
                if job.status in _LIVE:
                    job.status, job.detail = "killed", "killed before exit"
                    job.finished_at = max(int(time.time() * 1000), job.started_at)
                for stream in job.streams.values():
                    stream.finish()
            self._jobs.clear()
        if self._spill_dir is not None:
            shutil.rmtree(self._spill_dir, ignore_errors=True)

    def live_count(self) -> int:
        with self.lock:
            return sum(1 for job in self._jobs.values() if job.status in _LIVE)


async def _abort_signal(signal: Signal, reason: str) -> None:
    signal.abort(reason)

