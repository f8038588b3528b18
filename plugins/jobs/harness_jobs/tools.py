"""The job tools (job_list, job_output, job_wait, job_kill), their texts and the byte-exact bounds.

reference/plugins.md §8. Every size is counted in UTF-8 bytes and every cut lands on a character
boundary. A job started with ``output_limit_bytes`` bounds every job_output and job_kill result
about it, whatever the outcome (denials and failures included): see :func:`fit_job_output` and
:func:`fit_text`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from harness_core import ContentBlock, ContextMessage, RunContext, TextBlock, ToolDefinition, ToolOutput

from .manager import JobError, JobManager, JobSnapshot, complete_utf8_prefix

if TYPE_CHECKING:
    from .config import JobsConfig

__all__ = [
    "JOBS_PROMPT",
    "OUTPUT_TRUNCATED",
    "RESULT_TRUNCATED",
    "JobTools",
    "fit_job_output",
    "fit_text",
    "notice_message",
    "notice_text",
    "render_job_output",
]

OUTPUT_TRUNCATED = "\n[output truncated]"
RESULT_TRUNCATED = "\n[result truncated]"
NOTICE_TRUNCATED = "\n[notice truncated]"
NOTICE_DONE = "\nDone; job_output."
#: reference §8(c)4: the prompt section of the job tools.
JOBS_PROMPT = (
    "Track every background job id you start. You are notified in-session when a job finishes — do not busy-poll "
    "or sleep on one; keep working on independent steps and do not duplicate a running job's work. Before giving "
    "a final answer, collect every still-relevant job with job_output (set wait: true only when you are genuinely "
    "blocked on it), and job_kill jobs that stopped mattering."
)

_SNAPSHOT_SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "kind": {"type": "string"},
        "label": {"type": "string"},
        "status": {"enum": ["running", "stopping", "completed", "killed", "failed"]},
        "detail": {"type": "string"},
        "started_at": {"type": "integer"},
        "finished_at": {"type": "integer"},
    },
    "required": ["id", "kind", "label", "status", "started_at"],
}
_JOB_ID = {"type": "string", "description": "The id of the job (as returned when it started, e.g. bash-1)."}


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def _head(text: str, limit: int) -> str:
    """The longest head of ``text`` of at most ``limit`` UTF-8 bytes."""
    data = text.encode("utf-8")[: max(limit, 0)]
    return data[: complete_utf8_prefix(data)].decode("utf-8")


def _tail(text: str, limit: int) -> str:
    """The longest tail of ``text`` of at most ``limit`` UTF-8 bytes."""
    data = text.encode("utf-8")
    if limit <= 0:
        return ""
    start = max(len(data) - limit, 0)
    while start < len(data) and 0x80 <= data[start] < 0xC0:
        start += 1
    return data[start:].decode("utf-8")


def fit_text(text: str, limit: int, marker: str = RESULT_TRUNCATED) -> str:
    """``text`` if it fits in ``limit`` bytes, else its head and ``marker``, together within the limit."""
    if _size(text) <= limit:
        return text
    if _size(marker) >= limit:
        return _tail(marker, limit)
    return _head(text, limit - _size(marker)) + marker


def fit_job_output(body: str, status: str, limit: int) -> str:
    """reference §8(c)3: the body's tail, ``[output truncated]`` once, and the status line, within ``limit``."""
    suffix = "\n" + status
    whole = body + suffix
    if _size(whole) <= limit:
        return whole
    if body.endswith(OUTPUT_TRUNCATED):
        body = body[: -len(OUTPUT_TRUNCATED)]
    room = limit - _size(OUTPUT_TRUNCATED) - _size(suffix)
    if room < 0:
        return fit_text(whole, limit)
    return _tail(body, room) + OUTPUT_TRUNCATED + suffix


def render_job_output(text: str, job: Mapping[str, Any]) -> str:
    """The body (or ``(no new output)``), a newline if needed, then ``[status: …]``."""
    body = text or "(no new output)"
    if not body.endswith("\n"):
        body += "\n"
    return body + _status(job)


def _status(job: Mapping[str, Any]) -> str:
    detail = job.get("detail")
    return f"[status: {job['status']}{', ' + detail if detail else ''}]"


def notice_text(job: JobSnapshot) -> str:
    """reference §8(c)5: the completion notice, bounded by the job's output limit when it has one."""
    text = (
        f"background job {job.id} ({job.kind}: {job.label}) finished {job.status_marker()}. "
        "Read its output with job_output."
    )
    limit = job.output_limit_bytes
    if limit is None or _size(text) <= limit:
        return text
    prefix = f"background job {job.id}"
    detail = f" ({job.kind}: {job.label}) finished {job.status_marker()}."
    fixed = _size(prefix) + _size(NOTICE_TRUNCATED) + _size(NOTICE_DONE)
    if fixed < limit:
        return prefix + _head(detail, limit - fixed) + NOTICE_TRUNCATED + NOTICE_DONE
    if _size(prefix + NOTICE_DONE) <= limit:
        return prefix + NOTICE_DONE
    if _size(NOTICE_DONE) < limit:
        return _head(prefix, limit - _size(NOTICE_DONE)) + NOTICE_DONE
    return _tail(NOTICE_DONE, limit)


def notice_message(job: JobSnapshot) -> ContextMessage:
    """The completion notice as an additional context for the owner's next tool result."""
    return ContextMessage(content=[TextBlock(text=notice_text(job))], source="jobs")


def _render_output(_args: Any, value: Any) -> list[ContentBlock]:
    return [TextBlock(text=render_job_output(value["text"], value["job"]))]


def _render_list(_args: Any, value: Any) -> list[ContentBlock]:
    if not value:
        return [TextBlock(text="(no background jobs)")]
    lines = [f"{job['id']} [{job['kind']}] {job['status']} — {job['label']}" for job in value]
    return [TextBlock(text="\n".join(lines))]


def _render_kill(_args: Any, value: Any) -> list[ContentBlock]:
    job = value["job"]
    if value["outcome"] == "cancellation-requested":
        return [TextBlock(text=f"requested cancellation of job {job['id']}")]
    return [TextBlock(text=f"job {job['id']} had already finished {_status(job)}")]


def _render_wait(_args: Any, value: Any) -> list[ContentBlock]:
    job = value["job"]
    if value["outcome"] == "finished":
        return [TextBlock(text=f"job {job['id']} finished {_status(job)}")]
    return [TextBlock(text=f"job {job['id']} is still {job['status']} after {value['waited_ms']}ms {_status(job)}")]


def _arguments(args: Any) -> Mapping[str, Any]:
    if not isinstance(args, Mapping):
        raise JobError("invalid arguments: expected an object", code="INVALID_ARGS")
    return args


def _job_id(args: Mapping[str, Any]) -> str:
    job_id = args.get("job_id", "")
    if type(job_id) is not str or not job_id:
        # reference §8(e): `invalid job_id: expected a non-empty string, got ""`
        raise JobError(f'invalid job_id: expected a non-empty string, got {_quote(job_id)}', code="INVALID_ARGS")
    return job_id


def _quote(value: object) -> str:
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def _timeout(args: Mapping[str, Any], default: int, cap: int) -> float:
    timeout = args.get("timeout_ms")
    if timeout is None:
        return min(default, cap)
    if type(timeout) not in (int, float) or not (0 < timeout < float("inf")):
        raise JobError(
            f"invalid wait timeout: expected a positive number of milliseconds, got {_quote(timeout)}",
            code="INVALID_ARGS",
        )
    return float(min(timeout, cap))


class JobTools:
    """The four job tools over one manager, with the limits recorded before each call."""

    def __init__(self, manager: JobManager, settings: JobsConfig) -> None:
        self.manager = manager
        self.settings = settings
        #: Output limits captured by the head-of-chain recorder, by execution token.
        self.captured: dict[object, int] = {}

    def definitions(self) -> list[ToolDefinition]:
        read_only = lambda _args: True  # noqa: E731 - job tools touch only the registry
        return [
            ToolDefinition(
                name="job_list",
                description="List your background jobs (and unowned ones): one line each, "
                "`<id> [<kind>] <status> — <label>`.",
                parameters={"type": "object", "properties": {}},
                output=ToolOutput(schema={"type": "array", "items": _SNAPSHOT_SCHEMA}, render=_render_list),
                execute=self._list,
                is_concurrency_safe=read_only,
            ),
            ToolDefinition(
                name="job_output",
                description="Read what a background job wrote since your last read, then its `[status: …]`. "
                "Set `wait: true` only when you are blocked on the job: it waits until the job finishes or "
                f"`timeout_ms` passes (default {self.settings.wait_timeout_ms}, at most "
                f"{self.settings.max_wait_timeout_ms}); a timed-out wait returns the output so far.",
                parameters={
                    "type": "object",
                    "properties": {
                        "job_id": _JOB_ID,
                        "wait": {"type": "boolean", "description": "Wait for the job to finish first."},
                        "timeout_ms": {"type": "number", "description": "How long to wait, in milliseconds."},
                    },
                    "required": ["job_id"],
                },
                output=ToolOutput(
                    schema={
                        "type": "object",
                        "properties": {"text": {"type": "string"}, "job": _SNAPSHOT_SCHEMA},
                        "required": ["text", "job"],
                    },
                    render=_render_output,
                ),
                execute=self._output,
                finalize_content=self.finalize,
            ),
            ToolDefinition(
                name="job_wait",
                description="Wait until a background job finishes or `timeout_ms` passes, and say its state "
                "(a timed-out wait leaves the job running). Prefer working on; you are notified when it ends.",
                parameters={
                    "type": "object",
                    "properties": {
                        "job_id": _JOB_ID,
                        "timeout_ms": {"type": "number", "description": "How long to wait, in milliseconds."},
                    },
                    "required": ["job_id"],
                },
                output=ToolOutput(
                    schema={
                        "type": "object",
                        "properties": {
                            "outcome": {"enum": ["finished", "timed-out"]},
                            "waited_ms": {"type": "number"},
                            "job": _SNAPSHOT_SCHEMA,
                        },
                        "required": ["outcome", "waited_ms", "job"],
                    },
                    render=_render_wait,
                ),
                execute=self._wait,
            ),
            ToolDefinition(
                name="job_kill",
                description="Stop a background job and everything it started.",
                parameters={
                    "type": "object",
                    "properties": {
                        "job_id": _JOB_ID,
                        "reason": {"type": "string", "description": "Why the job is no longer needed."},
                    },
                    "required": ["job_id"],
                },
                output=ToolOutput(
                    schema={
                        "type": "object",
                        "properties": {
                            "outcome": {"enum": ["cancellation-requested", "already-finished"]},
                            "job": _SNAPSHOT_SCHEMA,
                        },
                        "required": ["outcome", "job"],
                    },
                    render=_render_kill,
                ),
                execute=self._kill,
                finalize_content=self.finalize,
            ),
        ]

    # --- bodies ----------------------------------------------------------------------------------

    async def _list(self, args: Any, ctx: RunContext) -> list[dict[str, Any]]:
        return [job.public() for job in self.manager.list_jobs(ctx.agent)]

    async def _output(self, args: Any, ctx: RunContext) -> dict[str, Any]:
        arguments = _arguments(args)
        job_id = _job_id(arguments)
        wait = arguments.get("wait")
        if wait is not None and type(wait) is not bool:
            raise JobError(f"invalid wait: expected a boolean, got {_quote(wait)}", code="INVALID_ARGS")
        if wait:
            timeout = _timeout(arguments, self.settings.wait_timeout_ms, self.settings.max_wait_timeout_ms)
            await self.manager.wait(job_id, timeout, ctx.agent, ctx.signal)
        text, job = self.manager.read(job_id, ctx.agent)
        return {"text": text, "job": job.public()}

    async def _wait(self, args: Any, ctx: RunContext) -> dict[str, Any]:
        arguments = _arguments(args)
        job_id = _job_id(arguments)
        timeout = _timeout(arguments, self.settings.wait_timeout_ms, self.settings.max_wait_timeout_ms)
        job = await self.manager.wait(job_id, timeout, ctx.agent, ctx.signal)
        waited = int(timeout) if float(timeout).is_integer() else timeout
        return {"outcome": "timed-out" if job.live else "finished", "waited_ms": waited, "job": job.public()}

    async def _kill(self, args: Any, ctx: RunContext) -> dict[str, Any]:
        arguments = _arguments(args)
        job_id = _job_id(arguments)
        reason = arguments.get("reason")
        if reason is not None and type(reason) is not str:
            raise JobError(f"invalid reason: expected a string, got {_quote(reason)}", code="INVALID_ARGS")
        outcome, _ = self.manager.kill(job_id, ctx.agent, reason or "killed by job_kill")
        job = self.manager.get(job_id, ctx.agent)
        return {
            "outcome": "cancellation-requested" if outcome == "requested" else "already-finished",
            "job": job.public(),
        }

    # --- the bound on every outcome ---------------------------------------------------------------

    def record(self, execution: Any) -> None:
        """The head-of-chain recorder: remember the job's output limit before any policy runs."""
        if execution.name not in ("job_output", "job_kill"):
            return
        arguments = execution.arguments
        job_id = arguments.get("job_id") if isinstance(arguments, Mapping) else None
        if type(job_id) is not str or not job_id:
            return
        limit = self.manager.visible_limit(job_id, execution.agent)
        if limit is not None:
            self.captured[execution.token] = limit

    def finalize(self, execution: Any, result: Any) -> list[ContentBlock] | None:
        """reference §8(c)3: bound a job_output / job_kill result by the job's ``output_limit_bytes``."""
        limit = self.captured.pop(execution.token, None)
        if limit is None:
            arguments = execution.arguments
            job_id = arguments.get("job_id") if isinstance(arguments, Mapping) else None
            limit = self.manager.visible_limit(job_id, execution.agent)
        if limit is None:
            return None
        content = list(result.content)
        if (
            execution.name == "job_output"
            and not result.is_error
            and isinstance(result.value, Mapping)
            and len(content) == 1
            and isinstance(content[0], TextBlock)
            and content[0].text == render_job_output(result.value["text"], result.value["job"])
        ):
            body = result.value["text"] or "(no new output)"
            return [TextBlock(text=fit_job_output(body, _status(result.value["job"]), limit))]
        if len(content) == 1 and isinstance(content[0], TextBlock):
            fitted = fit_text(content[0].text, limit)
            return None if fitted == content[0].text else [TextBlock(text=fitted)]
        return None
