"""The timeout policy: a tools_execute wrapper giving each call a deadline and claiming its expiry."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio

from harness_core import (
    DispatchExecution,
    ErrorInfo,
    Harness,
    HarnessConfig,
    HarnessError,
    Signal,
    TextBlock,
    ToolError,
    ToolResult,
    hookimpl,
)
from harness_core.signal import fuse

if TYPE_CHECKING:
    from .config import TimeoutConfig

__all__ = ["TOOL_TIMEOUT", "TimeoutPolicy", "ToolTimeoutError"]

TOOL_TIMEOUT = "TOOL_TIMEOUT"


class ToolTimeoutError(HarnessError):
    """Raised (and reported) when a call outlived its budget: ``tool call timed out after <ms>ms``."""

    code = TOOL_TIMEOUT

    def __init__(self, budget_ms: int | float) -> None:
        super().__init__(f"tool call timed out after {budget_ms:g}ms")
        self.budget_ms = budget_ms


class _Expired:
    """The abort reason of one deadline, so only this wrapper's own expiry is claimed."""

    __slots__ = ("budget_ms",)

    def __init__(self, budget_ms: int | float) -> None:
        self.budget_ms = budget_ms

    def __repr__(self) -> str:
        return f"tool call timed out after {self.budget_ms:g}ms"


def timeout_result(budget_ms: int | float) -> ToolResult:
    """The TOOL_TIMEOUT result of reference/plugins.md §6."""
    error = ToolTimeoutError(budget_ms)
    return ToolResult(
        is_error=True,
        content=[TextBlock(text=f"Error: {error.message}")],
        error=ToolError(message=error.message, info=ErrorInfo(name="ToolTimeoutError", code=TOOL_TIMEOUT)),
    )


class TimeoutPolicy:
    """Enforces each tool's ``timeout_ms`` (or a ``[timeout]`` override or default) cooperatively.

    The body sees a deadline signal derived from the upstream one (so an outer wrapper's deadline
    and the caller's abort still reach it); the wrapper never races or abandons the body.
    """

    def __init__(self) -> None:
        self.settings: TimeoutConfig | None = None
        self.harness: Harness | None = None

    @hookimpl
    def harness_register_config(self, register: Callable[[str, type[Any]], None]) -> None:
        from .config import TimeoutConfig

        register("timeout", TimeoutConfig)

    @hookimpl
    def harness_configure(self, config: HarnessConfig, harness: Harness) -> None:
        self.settings = config.section("timeout")
        self.harness = harness

    @property
    def enabled(self) -> bool:
        """False when ``[timeout] enabled = false``: calls pass through without a deadline."""
        return self.settings is None or self.settings.enabled

    @hookimpl
    def harness_provides(self) -> list[str]:
        # Switched off, it enforces nothing, so it must not silence the host's warning.
        return ["timeout_ms"] if self.enabled else []

    @hookimpl
    def harness_diagnose(self) -> list[tuple[str, str]]:
        """Whether deadlines are enforced, for `harness doctor`."""
        if not self.enabled:
            return [
                ("warning", "disabled by [timeout] enabled = false: no call gets a deadline, declared timeouts included")
            ]
        settings = self.settings
        default = f"{settings.default_ms}ms" if settings is not None and settings.default_ms is not None else "none"
        return [("info", f"enforcing declared timeouts (default for the others: {default})")]

    def budget_for(self, name: str) -> int | float | None:
        """The deadline of a call to ``name``: override, else the tool's declaration, else the default."""
        settings = self.settings
        if settings is not None and name in settings.tools:
            return settings.tools[name]
        definition = self.harness.tools.get(name) if self.harness is not None else None
        if definition is not None and definition.timeout_ms is not None:
            return definition.timeout_ms
        return settings.default_ms if settings is not None else None

    @hookimpl
    async def tools_execute(self, execution: DispatchExecution, call_next: Callable[[], Awaitable[ToolResult]]) -> ToolResult:
        budget = self.budget_for(execution.name) if self.enabled else None
        if budget is None:
            return await call_next()
        upstream = execution.signal
        deadline = Signal()
        # Derived from the upstream signal: a caller abort or an outer deadline reaches the body too.
        body_signal, dispose = fuse(deadline, upstream)
        expired = _Expired(budget)
        failure: Exception | None = None
        result: ToolResult | None = None
        execution.signal = body_signal
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._expire, deadline, upstream, expired, budget)
                try:
                    result = await call_next()
                except Exception as exc:  # re-raised below, outside the task group, unwrapped
                    failure = exc
                finally:
                    group.cancel_scope.cancel()
        finally:
            execution.signal = upstream
            dispose()
        if deadline.aborted and deadline.reason is expired:
            # Our own deadline fired first: claim the outcome, whatever the body made of it.
            return timeout_result(budget)
        if failure is not None:
            raise failure
        assert result is not None
        return result

    @staticmethod
    async def _expire(deadline: Signal, upstream: Signal, expired: _Expired, budget: int | float) -> None:
        await anyio.sleep(budget / 1000)
        # A caller abort (or an outer deadline) that came first keeps the call its own outcome.
        if not upstream.aborted:
            deadline.abort(expired)
