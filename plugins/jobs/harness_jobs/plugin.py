"""The jobs plugin: answers ``jobs_start``, adds the job tools, delivers completion notices, closes jobs."""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from harness_core import Accept, Block, ContextMessage, Execution, Harness, HarnessConfig, ToolResult, hookimpl

if TYPE_CHECKING:
    from harness_core.jobs import JobRequest

    from .config import JobsConfig
    from .manager import JobManager, JobSnapshot
    from .tools import JobTools

# The manager (an event loop in a thread, spill files) and the job tools are imported at configure
# time, not when the entry point loads: `harness plugins` and `harness --help` never need them.

__all__ = ["JobsPlugin"]


class JobsPlugin:
    """Runs background work handed over through ``jobs_start`` (reference/plugins.md §7 and §8)."""

    def __init__(self) -> None:
        self.settings: JobsConfig | None = None
        self.manager: JobManager | None = None
        self.tools: JobTools | None = None
        self._notices: dict[str, list[tuple[str, ContextMessage]]] = {}
        self._notices_lock = threading.Lock()

    @hookimpl
    def harness_add_hookspecs(self, add: Callable[[object], None]) -> None:
        from . import hookspecs

        add(hookspecs)

    @hookimpl
    def harness_register_config(self, register: Callable[[str, type[Any]], None]) -> None:
        from .config import JobsConfig

        register("jobs", JobsConfig)

    @hookimpl
    def harness_configure(self, config: HarnessConfig, harness: Harness) -> None:
        from .config import JobsConfig

        settings = config.section("jobs")
        self.settings = settings if isinstance(settings, JobsConfig) else JobsConfig()
        from .manager import JobManager
        from .tools import JobTools

        self.manager = JobManager(
            max_per_owner=self.settings.max_per_owner,
            max_output_bytes=self.settings.max_output_bytes,
            max_spill_bytes=self.settings.max_spill_bytes,
            close_grace_s=self.settings.close_grace_ms / 1000,
            choose_executor=lambda request: harness.plugin_manager.hook.jobs_backend(request=request),
        )
        self.manager.on_done.append(self._queue_notice)
        self.tools = JobTools(self.manager, self.settings)

    @hookimpl
    def harness_provides(self) -> list[str]:
        return ["jobs"]

    @hookimpl
    def harness_register_tools(self, register: Callable[[Any], Callable[[], None]]) -> None:
        assert self.tools is not None, "harness_configure runs before harness_register_tools"
        for definition in self.tools.definitions():
            register(definition)

    @hookimpl
    def jobs_start(self, request: JobRequest) -> str:
        assert self.manager is not None, "harness_configure runs before any call"
        return self.manager.start(request)

    # --- the bound on job-tool results: recorded at the head of the chain -----------------------

    @hookimpl(tryfirst=True)
    def tools_pre_execute(self, execution: Execution, call_next: Callable[[], Awaitable[Any]]) -> Awaitable[Any]:
        # reference §8(c)2: capture before any policy runs, so the limit also bounds a denial.
        if self.tools is not None:
            self.tools.record(execution)
        return call_next()

    # --- completion notices ----------------------------------------------------------------------

    def _queue_notice(self, job: JobSnapshot) -> None:
        if job.reported or job.owner is None:
            return
        with self._notices_lock:
            from .tools import notice_message

            self._notices.setdefault(job.owner, []).append((job.id, notice_message(job)))

    def pending_notices(self, owner: str | None) -> list[ContextMessage]:
        """Take the owner's pending notices, dropping those whose job was reported meanwhile."""
        if owner is None or self.manager is None:
            return []
        with self._notices_lock:
            queued = self._notices.pop(owner, [])
        unreported = []
        for job_id, message in queued:
            try:
                if self.manager.get(job_id, owner).reported:
                    continue
            except Exception:
                continue
            unreported.append(message)
        return unreported

    @hookimpl
    async def tools_post_execute(
        self, execution: Execution, result: ToolResult, call_next: Callable[[], Awaitable[Any]]
    ) -> Any:
        decision = await call_next()
        notices = self.pending_notices(execution.agent)
        if not notices or not isinstance(decision, Accept | Block):
            return decision
        return replace(decision, additional_contexts=(*decision.additional_contexts, *notices))

    @hookimpl
    async def harness_close(self) -> None:
        if self.manager is not None:
            await self.manager.aclose()
