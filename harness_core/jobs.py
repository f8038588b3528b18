"""Jobs seam: the background-work request, the output channel a job writes to, and the refusals.

The vocabulary shared by every plugin that hands work over to run in the background (the bash
tool's ``run_in_background``) and the plugin that runs it (harness-jobs), so neither depends on
the other: a producer builds a :class:`JobRequest` and calls the ``jobs_start`` hook (spec in
:mod:`harness_core.hookspecs`); a jobs plugin runs ``request.start(io)`` and owns ids, state,
output, waiting, cancellation and cleanup. Texts follow reference/plugins.md §7.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias

from .errors import HarnessError

if TYPE_CHECKING:
    from .signal import Signal

__all__ = [
    "JOB_STATUSES",
    "JobCommand",
    "JobIO",
    "JobRefusedError",
    "JobRequest",
    "JobStart",
    "JobStatus",
    "JobStream",
    "capacity_text",
]

JobStatus: TypeAlias = Literal["running", "stopping", "completed", "killed", "failed"]
#: Every status a job can have: ``running``, then optionally ``stopping``, then one terminal status.
JOB_STATUSES: tuple[JobStatus, ...] = ("running", "stopping", "completed", "killed", "failed")
JobStream: TypeAlias = Literal["stdout", "stderr"]


class JobIO(Protocol):
    """What a running job sees: the signal that asks it to stop, and where its output goes."""

    @property
    def signal(self) -> Signal:
        """Aborted when the job is killed or the harness closes: stop, release everything, return."""

    def write(self, stream: JobStream, data: bytes) -> None:
        """Append raw bytes to one of the job's output streams (cheap: the jobs plugin buffers)."""


#: The work of one job: run it, write output through the JobIO, return the exit code.
#: A negative code ``-N`` means the work died of signal ``N`` (as ``subprocess`` reports it);
#: ``None`` means it stopped before it had an exit code (killed before exit).
JobStart: TypeAlias = Callable[[JobIO], Awaitable["int | None"]]


@dataclass(frozen=True, slots=True, kw_only=True)
class JobCommand:
    """The declarative form of a process job: what a backend on another machine would need.

    ``argv`` is the exact argv (already wrapped by the sandbox when confined), ``cwd`` where it
    starts, ``env`` its whole environment.
    """

    argv: tuple[str, ...]
    cwd: str | None = None
    env: Mapping[str, str] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class JobRequest:
    """A piece of background work a producer hands to the jobs plugin.

    ``owner`` is the agent whose session may see and control the job (``None``: unowned, visible
    to everyone); ``kind`` names the producer (``"bash"``) and prefixes the job id; ``label`` is
    what the job does (the command); ``output_limit_bytes`` optionally bounds every job-tool result
    about this job; ``start`` is called exactly once, after the preflight accepted the request, by
    the local backend. ``command``, when the work is a process, describes it declaratively, so a
    backend that runs jobs elsewhere (a task queue) can take it instead of calling ``start``.
    """

    owner: str | None
    kind: str
    label: str
    start: JobStart
    output_limit_bytes: int | None = None
    command: JobCommand | None = None


class JobRefusedError(HarnessError):
    """Raised by ``jobs_start`` when the preflight refuses a request; nothing started, no id was used.

    ``code`` says why: ``JOB_INVALID`` (kind, label or output limit), ``JOB_OWNER`` (the owner is
    not a live agent), ``JOB_LIMIT`` (the owner's capacity is used up), ``JOB_CLOSED`` (the jobs
    plugin is closing).
    """

    code = "JOB_REFUSED"

    #: reference/plugins.md §7(e), verbatim.
    INVALID_KIND = "invalid job kind: expected a non-empty string"
    INVALID_LABEL = "invalid job label: expected a non-empty string"
    CLOSED = "background jobs unavailable: the jobs plugin is closing"

    def __init__(self, message: str, *, code: str = "JOB_REFUSED") -> None:
        super().__init__(message, code=code)


def capacity_text(limit: int) -> str:
    """reference/plugins.md §7(e): the refusal when an owner already runs ``limit`` jobs."""
    return (
        f"background job limit reached for this owner (limit: {limit}); use job_kill to stop an unneeded job, "
        "wait for it to finish, then retry"
    )
