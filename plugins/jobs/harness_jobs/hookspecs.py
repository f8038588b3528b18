"""The jobs plugin's own hook: ``jobs_backend``, which lets another backend run a job instead."""

# Hook specifications have docstrings for bodies: nothing runs them.
# mypy: disable-error-code="empty-body"

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, Protocol

from harness_core import hookspec

if TYPE_CHECKING:
    from harness_core.jobs import JobIO, JobRequest

__all__ = ["JobExecutor", "jobs_backend"]


class JobExecutor(Protocol):
    """Runs one job somewhere: writes its output through ``io`` and returns its exit code.

    ``None`` means the job was killed before it exited; a negative code is a signal death. The
    executor must stop the work when ``io.signal`` aborts (a kill, or the harness closing).
    """

    def run(self, job_id: str, request: JobRequest, io: JobIO) -> Awaitable[int | None]: ...


@hookspec(firstresult=True)
def jobs_backend(request: JobRequest) -> JobExecutor | None:
    """Choose who runs a job the local backend would otherwise run in this process.

    When: once per accepted job, after the preflight gave it an id, before its work starts.
    May: return a :class:`JobExecutor` (a task-queue client, say) for requests it can serve,
    typically those carrying a declarative ``request.command``; return ``None`` to let the next
    backend, and finally the local one (which calls ``request.start``), run it.
    Must not: start the work before returning; ignore ``io.signal``.
    Default: ``None``: the local backend runs the job in this process.
    """
