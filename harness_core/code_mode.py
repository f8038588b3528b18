"""Code Mode seam: what the core hands a code runtime, what the runtime gives back, and the texts.

The vocabulary shared by the core's ``run_code`` transport and any plugin that runs programs (a
Python runtime in ``contrib/``), so neither depends on the other: a runtime plugin answers the
``code_runtime`` hook (spec in :mod:`harness_core.hookspecs`) with a :class:`CodeRuntime`; the core
calls ``runtime.run(request)`` once per ``run_code`` call and dispatches every ``tools.<name>(args)``
the program makes through the whole pipeline as a sub-call. Texts follow reference/core-pipeline.md §6.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, TypeAlias

from .errors import HarnessError

if TYPE_CHECKING:
    from .signal import Signal
    from .types import ContentBlock, Execution

__all__ = [
    "NO_RESULT",
    "PRESENTATION_MODES",
    "RUN_CODE",
    "CodeBinding",
    "CodeDispatchLog",
    "CodeRunFailedError",
    "CodeRunFailure",
    "CodeRunRequest",
    "CodeRunResult",
    "CodeRuntime",
    "CodeRuntimeMissingError",
    "PresentationMode",
    "ToolCallError",
]

#: The reserved name of the Code Mode transport tool; no plugin may register it.
RUN_CODE: Final = "run_code"

PresentationMode: TypeAlias = Literal["native", "code", "both"]
#: ``native``: every visible tool is sent, no ``run_code``; ``code``: only ``run_code`` (model-direct
#: calls to other visible tools fail); ``both``: the native tools and ``run_code``.
PRESENTATION_MODES: tuple[PresentationMode, ...] = ("native", "code", "both")


class _NoResult:
    """The type of :data:`NO_RESULT`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_RESULT"


#: A program that returned nothing (``None`` is a real ``null`` result and is kept).
NO_RESULT: Final = _NoResult()


@dataclass(frozen=True, slots=True, kw_only=True)
class CodeBinding:
    """One tool a program may call as ``tools.<name>(args)``: the schema the model would see."""

    name: str
    description: str
    parameters: Mapping[str, Any]


class ToolCallError(HarnessError):
    """How a program sees a sub-call that failed (denied, blocked, unknown, raised, bad arguments).

    ``tool_name`` names the tool; the message is the sub-call's ``error.message`` without the
    ``Error:`` prefix, content or codes. Raised by :attr:`CodeRunRequest.call_tool`; a runtime
    re-raises it inside the program under the same name.
    """

    code = "TOOL_CALL_FAILED"

    def __init__(self, tool_name: str, message: str) -> None:
        super().__init__(message)
        self.tool_name = tool_name


@dataclass(frozen=True, slots=True, kw_only=True)
class CodeRunRequest:
    """One ``run_code`` program to run, handed to :meth:`CodeRuntime.run`.

    ``program`` is the model's code (an async function body: top-level ``await`` and ``return``).
    ``bindings`` are the calling agent's visible tools, fixed at run start (never ``run_code``).
    ``call_tool(name, arguments)`` dispatches one sub-call through the whole pipeline and returns
    its final value, or raises :class:`ToolCallError`; it may be called concurrently.
    ``signal`` aborts when the outer call is aborted (a timeout, the caller) and always when the
    run settles (reason ``run_code settled``): stop the program and release what it holds.
    ``execution`` is the outer ``run_code`` execution, for ``sandbox_policy``.
    """

    program: str
    bindings: tuple[CodeBinding, ...]
    call_tool: Callable[[str, Any], Awaitable[Any]]
    signal: Signal
    execution: Execution


@dataclass(frozen=True, slots=True, kw_only=True)
class CodeRunFailure:
    """Why a program failed: ``kind`` (``syntax``, ``exception``, ``aborted``, ``runtime``…) and a message."""

    kind: str
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CodeRunResult:
    """What a program produced: captured ``print`` lines, its return value, or the failure.

    ``result`` is :data:`NO_RESULT` when the program returned nothing; it must be lossless JSON.
    """

    logs: tuple[str, ...] = ()
    result: Any = NO_RESULT
    error: CodeRunFailure | None = field(default=None)


class CodeRuntime(Protocol):
    """A plugin's program runner, returned from the ``code_runtime`` hook."""

    #: The language programs are written in (``"python"``), named in the SDK text.
    language: str

    def render_sdk(self, bindings: tuple[CodeBinding, ...]) -> str:
        """The prompt text that tells the model how to call ``bindings`` from a program."""

    async def run(self, request: CodeRunRequest) -> CodeRunResult:
        """Run one program to completion; return its result (never raise for a program's own failure)."""


class CodeRunFailedError(HarnessError):
    """A ``run_code`` program failed: reference §2.9's ``CODE_RUN_FAILED`` with the captured logs."""

    code = "CODE_RUN_FAILED"

    def __init__(self, failure: CodeRunFailure, logs: tuple[str, ...] = ()) -> None:
        message = f"code run failed ({failure.kind}): {failure.message}"
        if logs:
            message += "\nCaptured output:\n" + "\n".join(logs)
        super().__init__(message)
        self.failure = failure
        self.logs = logs


class CodeRuntimeMissingError(HarnessError):
    """Raised by ``run_code`` when no plugin answers the ``code_runtime`` hook.

    The message names the deployment's default presentation mode (``[code_mode] mode``), as the
    modelled system does, even when the calling agent got its mode elsewhere (reference §10.25).
    """

    code = "CODE_RUNTIME_MISSING"

    def __init__(self, deployment_mode: str) -> None:
        super().__init__(
            f"run_code requires a code runtime, but no installed plugin provides one (deployment mode "
            f'"{deployment_mode}"); install a runtime distribution such as harness-code-python, or '
            'set [code_mode] mode = "native"'
        )
        self.deployment_mode = deployment_mode


@dataclass(frozen=True, slots=True, kw_only=True)
class CodeDispatchLog:
    """What a ``tools_code_dispatch_log`` impl receives: one settled sub-call of a program.

    ``execution`` is the outer ``run_code`` execution, ``agent`` its agent, ``sub_call_id``
    ``<outer call_id>:code:<n>``; ``content`` is the sub-call's final model-facing content (what a
    native ``tool/result`` would carry). The impl's answer replaces the content of the durable
    ``tool/code-dispatch`` event only (reference §2.8, §6.8).
    """

    execution: Execution
    agent: str | None
    sub_call_id: str
    name: str
    is_error: bool
    content: tuple[ContentBlock, ...]
