"""Value types of the pipeline: calls, executions, content, contexts, decisions and results.

Every type here is immutable at run time: assigning an attribute raises, content and context
sequences are tuples, and arguments and values are :mod:`harness_core.lossless` snapshots. The one
writable attribute in the whole pipeline is ``DispatchExecution.signal`` (DESIGN §2).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, NoReturn, TypeAlias

from .lossless import LosslessJSONError, snapshot
from .signal import Signal

if TYPE_CHECKING:
    from .events import EventSink

__all__ = [
    "Accept",
    "Allow",
    "ApprovalOutcome",
    "ApprovalRequest",
    "Ask",
    "Block",
    "ContentBlock",
    "ContextMessage",
    "Deny",
    "DispatchExecution",
    "ErrorInfo",
    "Execution",
    "ExecutionToken",
    "ImageBlock",
    "PostDecision",
    "PreDecision",
    "ReasoningBlock",
    "RunContext",
    "TextBlock",
    "ToolCall",
    "ToolError",
    "ToolResult",
    "UNSET",
]


# --- Content blocks -------------------------------------------------------------------------


class ContentBlock:
    """Base of the model-facing content union, keyed by ``type``; subclass it to extend the union.

    A subclass is a frozen dataclass with a ``type`` class attribute and a ``to_json()`` that
    returns the block as lossless JSON (for session logs and ``--json`` output).
    """

    __slots__ = ()
    type: ClassVar[str]

    def to_json(self) -> dict[str, Any]:
        """The block as lossless JSON, ``{"type": ..., ...}``."""
        raise NotImplementedError


def _check_str(owner: str, field_name: str, value: object) -> None:
    if type(value) is not str:
        raise TypeError(f"{owner}({field_name}=...) needs a str, got {type(value).__name__}")


@dataclass(frozen=True, slots=True)
class TextBlock(ContentBlock):
    """Plain text for the model: ``{"type": "text", "text": ...}``."""

    type: ClassVar[str] = "text"
    text: str

    def __post_init__(self) -> None:
        _check_str("TextBlock", "text", self.text)

    def to_json(self) -> dict[str, Any]:
        """This value as lossless JSON (for session logs and ``--json`` output)."""
        return {"type": "text", "text": self.text}


@dataclass(frozen=True, slots=True)
class ReasoningBlock(ContentBlock):
    """Model reasoning carried as content: ``{"type": "reasoning", "text": ...}``."""

    type: ClassVar[str] = "reasoning"
    text: str

    def __post_init__(self) -> None:
        _check_str("ReasoningBlock", "text", self.text)

    def to_json(self) -> dict[str, Any]:
        """This value as lossless JSON (for session logs and ``--json`` output)."""
        return {"type": "reasoning", "text": self.text}


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageBlock(ContentBlock):
    """An image by reference to an attachment store; the bytes never travel in the result."""

    type: ClassVar[str] = "image"
    attachment_id: str
    media_type: str
    size_bytes: int
    width: int
    height: int

    def __post_init__(self) -> None:
        _check_str("ImageBlock", "attachment_id", self.attachment_id)
        _check_str("ImageBlock", "media_type", self.media_type)
        for name in ("size_bytes", "width", "height"):
            value = getattr(self, name)
            if type(value) is not int or value < 0:
                raise TypeError(f"ImageBlock({name}=...) needs a non-negative int, got {value!r}")

    def to_json(self) -> dict[str, Any]:
        """This value as lossless JSON (for session logs and ``--json`` output)."""
        return {
            "type": "image",
            "attachment": {
                "attachmentId": self.attachment_id,
                "mediaType": self.media_type,
                "bytes": self.size_bytes,
                "width": self.width,
                "height": self.height,
            },
        }


def _content_tuple(owner: str, blocks: object) -> tuple[ContentBlock, ...]:
    """Coerce a sequence of blocks to a tuple, refusing anything that is not a ContentBlock."""
    if type(blocks) is tuple:
        items: tuple[Any, ...] = blocks
    elif isinstance(blocks, list | tuple):
        items = tuple(blocks)
    else:
        raise TypeError(f"{owner} needs a list of content blocks, got {type(blocks).__name__}")
    for block in items:
        if not isinstance(block, ContentBlock):
            raise TypeError(f"{owner} holds a {type(block).__name__}; content must be ContentBlock instances")
    return items


# --- Additional contexts ----------------------------------------------------------------------


def _new_message_id() -> str:
    # 128 random bits, like a uuid4, without importing uuid (and platform) at start-up.
    return os.urandom(16).hex()


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextMessage:
    """A user-role message a call adds to the conversation after its batch (an additional context).

    ``source`` names who produced it (a plugin or tool name); ``id`` is assigned at creation.
    """

    content: Sequence[ContentBlock]
    source: str
    id: str = field(default_factory=_new_message_id)

    def __post_init__(self) -> None:
        object.__setattr__(self, "content", _content_tuple("ContextMessage(content=...)", self.content))
        _check_str("ContextMessage", "source", self.source)
        _check_str("ContextMessage", "id", self.id)

    def to_json(self) -> dict[str, Any]:
        """This value as lossless JSON (for session logs and ``--json`` output)."""
        return {
            "id": self.id,
            "role": "user",
            "content": [block.to_json() for block in self.content],
            "source": {"kind": "plugin", "plugin": self.source},
        }


def _context_tuple(owner: str, contexts: object) -> tuple[ContextMessage, ...]:
    if contexts == ():
        return ()
    if not isinstance(contexts, list | tuple):
        raise TypeError(f"{owner} needs a list of ContextMessage, got {type(contexts).__name__}")
    for message in contexts:
        if not isinstance(message, ContextMessage):
            raise TypeError(f"{owner} holds a {type(message).__name__}; expected ContextMessage")
    return tuple(contexts)


# --- Results ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorInfo:
    """The stable identity of a coded failure: the error class name and its ``code``."""

    name: str
    code: str

    def to_json(self) -> dict[str, str]:
        """This value as lossless JSON (for session logs and ``--json`` output)."""
        return {"name": self.name, "code": self.code}


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolError:
    """Why a call failed: ``message`` (no ``Error:`` prefix) and ``info`` for coded errors only."""

    message: str
    info: ErrorInfo | None = None

    def to_json(self) -> dict[str, Any]:
        """This value as lossless JSON (for session logs and ``--json`` output)."""
        return {"message": self.message, "info": None if self.info is None else self.info.to_json()}


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult:
    """The outcome of one call: a success with a ``value`` or a failure with an ``error``.

    ``content`` is what the model sees. On a success ``error is None``; on a failure
    ``value is None`` and ``concludes_turn`` is False. ``value`` and ``meta`` are lossless JSON.
    A ``tools_execute`` wrapper may build a success as ``ToolResult(is_error=False, value=...)``;
    the core re-renders its content from the tool's output declaration.
    """

    is_error: bool
    content: Sequence[ContentBlock] = ()
    value: Any = None
    error: ToolError | None = None
    meta: Any = None
    additional_contexts: Sequence[ContextMessage] = ()
    concludes_turn: bool = False

    def __post_init__(self) -> None:
        if type(self.is_error) is not bool:
            raise TypeError(f"ToolResult(is_error=...) needs a bool, got {type(self.is_error).__name__}")
        if type(self.content) is not tuple:
            object.__setattr__(self, "content", _content_tuple("ToolResult(content=...)", self.content))
        if self.additional_contexts != ():
            object.__setattr__(
                self,
                "additional_contexts",
                _context_tuple("ToolResult(additional_contexts=...)", self.additional_contexts),
            )
        if self.meta is not None:
            # Presentation meta reaches observers and logs: it must be frozen lossless JSON too.
            try:
                object.__setattr__(self, "meta", snapshot(self.meta))
            except LosslessJSONError as exc:
                raise TypeError(f"ToolResult(meta=...) must be lossless JSON: {exc}") from None
        if self.is_error:
            if not isinstance(self.error, ToolError):
                raise TypeError("a failed ToolResult needs error=ToolError(message=...)")
            if self.value is not None or self.concludes_turn:
                raise TypeError("a failed ToolResult carries no value and cannot conclude the turn")
        elif self.error is not None:
            raise TypeError("a successful ToolResult has error=None")

    def to_json(self) -> dict[str, Any]:
        """The persisted projection (the canonical ``value`` is deliberately left out)."""
        return {
            "is_error": self.is_error,
            "content": [block.to_json() for block in self.content],
            "error": None if self.error is None else self.error.to_json(),
        }


# --- Decisions --------------------------------------------------------------------------------


class _Unset:
    """Marks an ``Accept`` field that was not given (``None`` is a real JSON value)."""

    __slots__ = ()
    _instance: ClassVar[_Unset | None] = None

    def __new__(cls) -> _Unset:
        if cls._instance is None:
            cls._instance = object.__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


#: The "not given" marker of ``Accept(content=..., value=...)``.
UNSET: Final = _Unset()


@dataclass(frozen=True, slots=True)
class Allow:
    """Pre-execute: let the call proceed (the guards still run)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Deny:
    """Pre-execute: refuse the call; ``reason`` becomes the model-visible ``Error: <reason>``.

    A ``Deny`` with no reason still denies (the original dispatched such calls; we fail closed).
    """

    reason: str | None = None

    def __post_init__(self) -> None:
        if self.reason is not None and type(self.reason) is not str:
            raise TypeError(f"Deny(reason=...) needs a str, got {type(self.reason).__name__}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Ask:
    """Pre-execute: ask a human once through the ``approval_request`` service; no service denies."""

    reason: str | None = None

    def __post_init__(self) -> None:
        if self.reason is not None and type(self.reason) is not str:
            raise TypeError(f"Ask(reason=...) needs a str, got {type(self.reason).__name__}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Accept:
    """Post-execute: keep the result, optionally replacing its ``content`` or its ``value`` (not both).

    ``content=None`` (or leaving it out) keeps the content; ``value=None`` replaces the value with
    JSON ``null``, so only leaving ``value`` out keeps it.
    """

    content: Any = UNSET
    value: Any = UNSET
    additional_contexts: Sequence[ContextMessage] = ()

    def __post_init__(self) -> None:
        if self.content is not UNSET and self.content is not None:
            object.__setattr__(self, "content", _content_tuple("Accept(content=...)", self.content))
        if self.additional_contexts != ():
            object.__setattr__(
                self, "additional_contexts", _context_tuple("Accept(additional_contexts=...)", self.additional_contexts)
            )

    @property
    def replaces_content(self) -> bool:
        """True when the decision carries replacement content."""
        return self.content is not UNSET and self.content is not None

    @property
    def replaces_value(self) -> bool:
        """True when the decision carries a replacement value (``None`` included)."""
        return self.value is not UNSET


@dataclass(frozen=True, slots=True, kw_only=True)
class Block:
    """Post-execute: turn the result into a failure whose content is ``feedback`` verbatim."""

    feedback: Sequence[ContentBlock]
    additional_contexts: Sequence[ContextMessage] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "feedback", _content_tuple("Block(feedback=...)", self.feedback))
        if self.additional_contexts != ():
            object.__setattr__(
                self, "additional_contexts", _context_tuple("Block(additional_contexts=...)", self.additional_contexts)
            )


PreDecision: TypeAlias = Allow | Deny | Ask
PostDecision: TypeAlias = Accept | Block
ApprovalOutcome: TypeAlias = Literal["allowed-once", "rejected", "cancelled", "unavailable"]


# --- Calls and executions ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """What a caller asks the pipeline to run. The arguments are not checked here.

    ``arguments`` may be anything; the pipeline snapshots it once as lossless JSON and a bad value
    becomes an error result. ``parent`` is the token of an enclosing execution (Code Mode sets it).
    """

    call_id: str
    name: str
    arguments: Any = field(default_factory=dict)
    agent: str | None = None
    parent: ExecutionToken | None = None
    root_call_id: str | None = None
    signal: Signal = field(default_factory=Signal)

    def __post_init__(self) -> None:
        for name in ("call_id", "name"):
            value = getattr(self, name)
            if type(value) is not str or not value:
                raise ValueError(f"ToolCall({name}=...) needs a non-empty str, got {value!r}")
        if self.agent is not None and type(self.agent) is not str:
            raise TypeError(f"ToolCall(agent=...) needs a str or None, got {type(self.agent).__name__}")
        if self.root_call_id is not None and (type(self.root_call_id) is not str or not self.root_call_id):
            raise ValueError(f"ToolCall(root_call_id=...) needs a non-empty str or None, got {self.root_call_id!r}")
        if self.parent is not None and type(self.parent) is not ExecutionToken:
            raise TypeError("ToolCall(parent=...) needs the ExecutionToken of the enclosing execution")
        if not isinstance(self.signal, Signal):
            raise TypeError(f"ToolCall(signal=...) needs a Signal, got {type(self.signal).__name__}")


class ExecutionToken:
    """The identity of one execution, shared by every stage of it; compare with ``is`` only.

    It never crosses a process, log or model boundary.
    """

    __slots__ = ("call_id",)
    call_id: str

    def __init__(self, call_id: str) -> None:
        object.__setattr__(self, "call_id", call_id)

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError("ExecutionToken is immutable")

    def __repr__(self) -> str:
        return f"<ExecutionToken {self.call_id} at {id(self):#x}>"

    def __reduce__(self) -> NoReturn:
        raise TypeError("an ExecutionToken is an in-process identity and cannot be serialized")


def _read_only(self: object, name: str, value: object = None) -> NoReturn:
    raise AttributeError(f"{type(self).__name__}.{name} is read-only")


class Execution:
    """The pipeline's view of one call, seen by every stage: all attributes are read-only.

    ``arguments`` is the deep-frozen snapshot (``None`` when the arguments were not lossless JSON),
    ``root_call_id`` defaults to ``call_id``, ``token`` is this execution's identity and ``signal``
    the caller's cancellation signal.
    """

    __slots__ = ("call_id", "name", "arguments", "agent", "parent", "root_call_id", "token", "signal", "_sink")

    call_id: str
    name: str
    arguments: Any
    agent: str | None
    parent: ExecutionToken | None
    root_call_id: str
    token: ExecutionToken
    signal: Signal
    _sink: EventSink | None

    __setattr__ = _read_only
    __delattr__ = _read_only

    def __repr__(self) -> str:
        return f"Execution(call_id={self.call_id!r}, name={self.name!r}, agent={self.agent!r})"

    def record_event(self, kind: str, data: Mapping[str, Any]) -> None:
        """Append a tool- or plugin-owned event (``fs/observed``, ``hook/result``, ...) to the session.

        ``data`` must be lossless JSON; ``call_id`` is added. Events are log-only, never model-visible.
        """
        sink: EventSink | None = self._sink
        if sink is None:
            return
        try:
            payload = snapshot(dict(data))
        except LosslessJSONError as exc:
            raise TypeError(f"event {kind!r} data must be lossless JSON: {exc}") from None
        sink.append(kind, {"call_id": self.call_id, **payload})


_set = object.__setattr__


def new_execution(
    *,
    call_id: str,
    name: str,
    arguments: Any,
    agent: str | None,
    parent: ExecutionToken | None,
    root_call_id: str,
    signal: Signal,
    sink: EventSink | None,
) -> Execution:
    """Build an Execution (the pipeline's own constructor; stages never build one)."""
    execution = object.__new__(Execution)
    _set(execution, "call_id", call_id)
    _set(execution, "name", name)
    _set(execution, "arguments", arguments)
    _set(execution, "agent", agent)
    _set(execution, "parent", parent)
    _set(execution, "root_call_id", root_call_id)
    _set(execution, "token", ExecutionToken(call_id))
    _set(execution, "signal", signal)
    _set(execution, "_sink", sink)
    return execution


class _ExecutionView:
    """Read-only delegation to an Execution, plus a signal of the view's own (shared by two views)."""

    __slots__ = ("_execution", "_signal")
    _execution: Execution
    _signal: Signal

    __setattr__ = _read_only
    __delattr__ = _read_only

    def __repr__(self) -> str:
        return f"{type(self).__name__}(call_id={self.call_id!r}, name={self.name!r})"

    @property
    def execution(self) -> Execution:
        """The read-only execution behind this view."""
        return self._execution

    @property
    def call_id(self) -> str:
        """The call id the model (or the caller) assigned."""
        return self._execution.call_id

    @property
    def name(self) -> str:
        """The tool name the call asked for."""
        return self._execution.name

    @property
    def arguments(self) -> Any:
        """The deep-frozen lossless-JSON snapshot of the arguments."""
        return self._execution.arguments

    @property
    def agent(self) -> str | None:
        """The agent on whose behalf the call runs, if any."""
        return self._execution.agent

    @property
    def parent(self) -> ExecutionToken | None:
        """The token of the enclosing execution for nested calls (Code Mode), else None."""
        return self._execution.parent

    @property
    def root_call_id(self) -> str:
        """The call id of the root model call of this execution tree."""
        return self._execution.root_call_id

    @property
    def token(self) -> ExecutionToken:
        """This execution's identity, the same object in every stage."""
        return self._execution.token

    def record_event(self, kind: str, data: Mapping[str, Any]) -> None:
        """See :meth:`Execution.record_event`."""
        self._execution.record_event(kind, data)


class DispatchExecution(_ExecutionView):
    """The view given to ``tools_execute`` wrappers: read-only except ``signal``.

    A wrapper may assign ``execution.signal`` (a deadline, say) for the calls it delegates and
    should restore the upstream signal afterwards; the core restores it after the body anyway.
    """

    __slots__ = ()

    def __init__(self, execution: Execution) -> None:
        _set(self, "_execution", execution)
        _set(self, "_signal", execution.signal)

    def __setattr__(self, name: str, value: object) -> None:  # type: ignore[override]
        if name != "signal":
            _read_only(self, name)
        _set(self, name, value)  # through the property's setter, which checks the value

    @property
    def signal(self) -> Signal:
        """The signal the body will watch (fused with the caller's); wrappers may replace it."""
        return self._signal

    @signal.setter
    def signal(self, value: Signal) -> None:
        if not isinstance(value, Signal):
            raise TypeError(f"execution.signal must be a Signal, got {type(value).__name__}")
        _set(self, "_signal", value)


class RunContext(_ExecutionView):
    """What a tool body receives as ``ctx``: the execution, the fused signal, and two channels back.

    ``ctx.defer_context(message)`` adds a context to this call's own result (kept through a body
    failure and cancellation, dropped by a post-execute ``Block``); ``ctx.conclude_turn()`` asks the
    agent loop to stop after this batch if the call succeeds.
    """

    __slots__ = ("_deferred", "_conclude", "_open", "_approve", "_approval_available")
    _deferred: list[ContextMessage]
    _conclude: Callable[[], None]
    _open: bool
    _approve: Callable[[str], Awaitable[str | None]]
    _approval_available: Callable[[], bool]

    def __init__(
        self,
        execution: Execution,
        signal: Signal,
        deferred: list[ContextMessage],
        conclude: Callable[[], None],
        approve: Callable[[str], Awaitable[str | None]],
        approval_available: Callable[[], bool],
    ) -> None:
        _set(self, "_execution", execution)
        _set(self, "_signal", signal)
        _set(self, "_deferred", deferred)
        _set(self, "_conclude", conclude)
        _set(self, "_open", True)
        _set(self, "_approve", approve)
        _set(self, "_approval_available", approval_available)

    @property
    def approval_available(self) -> bool:
        """True when an approval service is installed (something implements ``approval_request``)."""
        return self._approval_available()

    async def request_approval(self, reason: str) -> str | None:
        """Ask the approval service about this call from inside the body (a sandbox escalation, say).

        Audited like an ask (``approval/asked`` / ``approval/decided``) and watched by this call's
        signal. Returns the outcome, or ``None`` when no service is installed or all abstained;
        raises ``ValueError`` for a call without an agent. An ``"allowed-once"`` covers this call
        only, and only what the reason describes.
        """
        return await self._approve(reason)

    @property
    def signal(self) -> Signal:
        """Aborts when the caller or any ``tools_execute`` wrapper (a deadline) aborts."""
        return self._signal

    def defer_context(self, message: ContextMessage) -> None:
        """Attach ``message`` to this call's result; after the body has settled it is dropped."""
        if not isinstance(message, ContextMessage):
            raise TypeError(f"defer_context needs a ContextMessage, got {type(message).__name__}")
        if self._open:
            self._deferred.append(message)

    def conclude_turn(self) -> None:
        """Mark a successful result with ``concludes_turn=True`` (failures never carry it)."""
        if self._open:
            self._conclude()

    def _close(self) -> None:
        _set(self, "_open", False)


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRequest:
    """One ask routed to the approval service. The arguments are deliberately absent.

    An answerer that needs them finds the call by ``call_id``. ``signal`` is the caller's signal:
    if it aborts, a ``"cancelled"`` answer ends the call as ``ABORTED_BEFORE_DISPATCH`` and an
    ``"allowed-once"`` answer cannot start the body any more (the call is aborted before dispatch);
    a ``"rejected"`` or ``"unavailable"`` answer still denies, since a denial outranks cancellation.
    """

    agent: str
    tool_name: str
    call_id: str
    reason: str | None
    signal: Signal
    #: The identity of the execution asked about, so a service can match it exactly (call ids
    #: may repeat across calls); ``None`` for a request built outside the pipeline.
    token: ExecutionToken | None = None

