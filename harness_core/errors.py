"""Coded errors: the HarnessError base and the codes the pipeline puts on failed results."""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "AbortError",
    "HarnessError",
    "PluginRefusedError",
    "ToolArgsError",
    "ToolDefinitionError",
    "ToolNotFoundError",
    "ToolOutputError",
]


class HarnessError(Exception):
    """Base of every error that carries a stable ``code``.

    A failed result built from a ``HarnessError`` (raised by a tool, listener, guard or wrapper)
    carries ``error.info = ErrorInfo(name=<class name>, code=<code>)``; plain exceptions do not.
    Subclass it and set ``code`` to give your plugin's failures a name the model and logs can key on.
    """

    code: ClassVar[str] = "HARNESS_ERROR"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            # An instance-level code lets one class cover a small family (AbortError does).
            self.code = code  # type: ignore[misc]

    def __str__(self) -> str:
        return self.message


class ToolNotFoundError(HarnessError):
    """Raised when a call names a tool that is not registered (found at dispatch, not earlier)."""

    code = "UNKNOWN_TOOL"

    def __init__(self, name: str) -> None:
        super().__init__(f'unknown tool "{name}"')
        self.name = name


class ToolArgsError(HarnessError):
    """Raised inside the body stage when a ``@tool`` function's arguments fail its model."""

    code = "INVALID_ARGS"

    def __init__(self, violations: list[str]) -> None:
        super().__init__("invalid arguments: " + "; ".join(violations))
        self.violations = violations


class ToolOutputError(HarnessError):
    """Raised when a tool's value (or a policy's replacement value) breaks its output declaration."""

    code = "INVALID_TOOL_OUTPUT"

    def __init__(self, name: str, violations: list[str]) -> None:
        super().__init__(f'tool "{name}" returned invalid output: ' + "; ".join(violations))
        self.violations = violations


class AbortError(HarnessError):
    """Raised (or reported) when cancellation stopped a call: ``ABORTED`` or ``ABORTED_BEFORE_DISPATCH``."""

    code = "ABORTED"


class ToolDefinitionError(HarnessError, TypeError):
    """Raised by ``register`` when a ToolDefinition is malformed, reserved or already registered."""

    code = "INVALID_TOOL_DEFINITION"


class PluginRefusedError(HarnessError):
    """Raised when a plugin is registered with a hook implementation the core cannot run safely."""

    code = "PLUGIN_REFUSED"
