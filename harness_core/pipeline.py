"""The pipeline: one call through every stage, error normalization, cancellation, and batches.

reference/core-pipeline.md §3. Stages, in order: create the execution (A), entry cancellation
(B), pre-execute (C), ask (D, E), denial and guards (F), cancellation before dispatch (G),
dispatch through the ``tools_execute`` waterfall around the body (I) and its normalization (J),
post-execute (K, L) and finish (M: finalizer, ``tools_result``). A stage returns either a
*post-result* (post-execute still runs) or a *final-result* (straight to finish); the §3.3 table
says which. The chain terminals and every fail-closed check are plain code here, never impls a
plugin could unregister (STYLE rule 12). Code Mode (the ``run_code`` tool, presentation modes and
a program's sub-call lane) lives in :mod:`harness_core.code_transport`; this module only resolves
``run_code`` and applies the ``code`` collapse at creation (§6.7).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any, Final, Literal

import anyio

from .code_mode import RUN_CODE
from .code_transport import CodeTransport, PresentationModes, collapse_result
from .errors import HarnessError, ToolNotFoundError, ToolOutputError
from .lossless import LosslessJSONError, snapshot
from .registry import ToolDefinition, ToolRegistry
from .schema import validate
from .signal import Signal, fuse
from .types import (
    Accept,
    Allow,
    ApprovalRequest,
    Ask,
    Block,
    ContentBlock,
    ContextMessage,
    Deny,
    DispatchExecution,
    ErrorInfo,
    Execution,
    PreDecision,
    RunContext,
    TextBlock,
    ToolCall,
    ToolError,
    ToolResult,
    _content_tuple,
    new_execution,
)

if TYPE_CHECKING:
    from .events import EventSink
    from .host import HookCalls

__all__ = ["STAGES", "DryRun", "Pipeline", "Stage", "error_result"]

_POST: Final = "post"
_FINAL: Final = "final"
_DISPATCH: Final = "dispatch"

ARGUMENTS_NOT_JSON = "tool execution arguments must be losslessly JSON-serializable"
RESULT_NOT_JSON = "tool result must be losslessly JSON-serializable"
BLOCKED_WITHOUT_FEEDBACK = "tool result blocked by post-execute policy"
APPROVAL_OUTCOMES = frozenset({"allowed-once", "rejected", "cancelled", "unavailable"})


# --- The stage table: the pipeline's shape, for generated docs (harness docs) -----------------


@dataclass(frozen=True, slots=True)
class Stage:
    """One stage of a call: its key, what it does, the hook it runs (if any) and where it leads."""

    key: str
    label: str
    hook: str | None
    leads_to: tuple[tuple[str, str], ...]


#: Every stage in firing order, with the routes of reference §3.3. ``harness docs`` draws the
#: pipeline graph from this table; keep it in step with the code below.
STAGES: tuple[Stage, ...] = (
    Stage("create", "create the execution: arguments snapshotted and frozen once", None,
          (("entry", "ok"), ("finish", "arguments are not lossless JSON"),
           ("finish", "Code Mode collapse: UNKNOWN_TOOL"))),
    Stage("entry", "entry cancellation check", None, (("pre", "signal live"), ("finish", "already aborted"))),
    Stage("pre", "pre-execute waterfall", "tools_pre_execute",
          (("guards", "Allow"), ("approval", "Ask"), ("post", "Deny"), ("finish", "a listener raised"))),
    Stage("approval", "approval service (one human decision)", "approval_request",
          (("guards", "allowed-once"), ("post", "rejected, cancelled, unavailable or no service"),
           ("finish", "the service raised"))),
    Stage("guards", "guards (monotonic: deny or abstain)", "tools_guard",
          (("dispatch_check", "all abstain"), ("post", "a guard denies"), ("finish", "a guard raised"))),
    Stage("dispatch_check", "cancellation check before dispatch", None,
          (("execute", "signal live"), ("post", "aborted: ABORTED_BEFORE_DISPATCH"))),
    Stage("execute", "execute waterfall around the body (timeout, retry, metrics)", "tools_execute",
          (("post", "a result, failures included"), ("finish", "a wrapper raised"))),
    Stage("post", "post-execute waterfall (accept, replace, block)", "tools_post_execute",
          (("finish", "decision applied, or a listener raised"),)),
    Stage("finish", "finalize_content, exactly once", None, (("result", "frozen result"),)),
    Stage("result", "observers see the frozen outcome, exactly once", "tools_result", ()),
)


# --- Result builders ----------------------------------------------------------------------------


def _message_of(thrown: object) -> str:
    """The message of anything raised: reference §2.9's rules, the Python way."""
    try:
        if isinstance(thrown, HarnessError):
            message = thrown.message
        elif isinstance(thrown, BaseException):
            message = str(thrown)
            if isinstance(thrown, KeyError) and len(thrown.args) == 1 and isinstance(thrown.args[0], str):
                message = thrown.args[0]
        else:
            attribute = getattr(thrown, "message", None)
            message = attribute if type(attribute) is str else str(thrown)
        # An empty message tells the model nothing; the class name at least says what failed.
        return message if message else type(thrown).__name__
    except Exception:
        return "<unprintable thrown value>"


def error_result(thrown: object, contexts: tuple[ContextMessage, ...] = ()) -> ToolResult:
    """Normalize anything raised into a failed result: ``Error: <message>`` for the model.

    ``info`` is set only for :class:`HarnessError` and its subclasses.
    """
    message = _message_of(thrown)
    info = ErrorInfo(name=type(thrown).__name__, code=thrown.code) if isinstance(thrown, HarnessError) else None
    return ToolResult(
        is_error=True,
        content=(TextBlock(text="Error: " + message),),
        error=ToolError(message=message, info=info),
        additional_contexts=contexts,
    )


def denial_result(reason: str) -> ToolResult:
    """A denial: ``Error: <reason>`` with no error code (denials are not coded errors, §10.3)."""
    return ToolResult(is_error=True, content=(TextBlock(text="Error: " + reason),), error=ToolError(message=reason))


_ABORTED_BEFORE = "tool call aborted before dispatch"
_ABORTED_AFTER = "tool call aborted"


def abort_result(body_invoked: bool, contexts: Sequence[ContextMessage] = ()) -> ToolResult:
    """Cancellation's result: ``ABORTED`` once the body was invoked, else ``ABORTED_BEFORE_DISPATCH``."""
    message, code = (_ABORTED_AFTER, "ABORTED") if body_invoked else (_ABORTED_BEFORE, "ABORTED_BEFORE_DISPATCH")
    return ToolResult(
        is_error=True,
        content=(TextBlock(text="Error: " + message),),
        error=ToolError(message=message, info=ErrorInfo(name="AbortError", code=code)),
        additional_contexts=contexts,
    )


def _blocked_message(feedback: Sequence[ContentBlock]) -> str:
    parts = [block.text if isinstance(block, TextBlock) else f"[{block.type} content]" for block in feedback]
    return "\n".join(parts) or BLOCKED_WITHOUT_FEEDBACK


def build_success(
    definition: ToolDefinition,
    arguments: Any,
    value: Any,
    *,
    top_level: bool,
    concludes_turn: bool,
    contexts: Sequence[ContextMessage] = (),
) -> ToolResult:
    """Stage I.6: snapshot, validate, render and present a value; raise ToolOutputError if it fails."""
    name = definition.name
    output = definition.output
    try:
        value = snapshot(value)
    except LosslessJSONError:
        raise ToolOutputError(name, ["value is not lossless JSON"]) from None
    violations = validate(value, output.schema)
    if violations:
        raise ToolOutputError(name, violations)
    try:
        rendered = output.render(arguments, value)
    except Exception as exc:
        raise ToolOutputError(name, [f"output.render failed: {_message_of(exc)}"]) from None
    try:
        content = _content_tuple("render", rendered)
    except TypeError:
        raise ToolOutputError(name, ["output.render returned non-lossless JSON"]) from None
    meta = None
    if top_level and output.presentation_meta is not None:
        try:
            meta = output.presentation_meta(arguments, value)
        except Exception as exc:
            raise ToolOutputError(name, [f"output.presentation_meta failed: {_message_of(exc)}"]) from None
        try:
            meta = snapshot(meta)
        except LosslessJSONError:
            raise ToolOutputError(name, ["output.presentation_meta returned non-lossless JSON"]) from None
    return ToolResult(
        is_error=False,
        value=value,
        content=content,
        meta=meta,
        additional_contexts=contexts,
        concludes_turn=concludes_turn,
    )


def _with_contexts(result: ToolResult, contexts: Sequence[ContextMessage]) -> ToolResult:
    return replace(result, additional_contexts=contexts) if contexts != result.additional_contexts else result


# --- Per-call state -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class DryRun:
    """What policy would decide for a call: the waterfall's own verdict, then the final one."""

    pre_execute: Literal["allow", "deny", "ask"]
    decision: Literal["allow", "deny"]
    reason: str | None

    def to_json(self) -> dict[str, Any]:
        """``{"pre_execute", "decision", "reason"}`` as ``harness call --dry-run --json`` prints it."""
        return {"pre_execute": self.pre_execute, "decision": self.decision, "reason": self.reason}


class _CallState:
    """What the pipeline tracks for one call between stages (never shown to plugins)."""

    __slots__ = (
        "execution",
        "finalizer",
        "caller_signal",
        "body_invoked",
        "deferred",
        "concluded",
        "canonical",
    )

    def __init__(self, execution: Execution, finalizer: Any) -> None:
        self.execution = execution
        self.finalizer = finalizer
        self.caller_signal: Signal = execution.signal
        self.body_invoked = False
        self.deferred: list[ContextMessage] = []
        self.concluded = False
        # Results the body stage built for this very call: trusted as they are at normalization.
        self.canonical: list[ToolResult] = []

    def conclude(self) -> None:
        self.concluded = True


async def _allow() -> Allow:
    return _ALLOW


async def _accept() -> Accept:
    return _ACCEPT


_ALLOW: Final = Allow()
_ACCEPT: Final = Accept()


class Pipeline:
    """Runs calls through the stages over a registry and the hook facade."""

    def __init__(
        self, registry: ToolRegistry, hooks: HookCalls, sink: EventSink | None, modes: PresentationModes | None = None
    ) -> None:
        self.registry = registry
        self.hooks = hooks
        self.sink = sink
        self.modes = modes if modes is not None else PresentationModes(hooks.change)
        self.code = CodeTransport(self, self.modes)

    def resolve(self, name: str, agent: str | None, parent: object = None) -> ToolDefinition | None:
        """The definition a call of ``name`` runs: a registered tool, or ``run_code`` for a
        model-direct call of an agent whose presentation mode is not ``native`` (reference §6.1)."""
        definition = self.registry.get(name)
        if definition is None and name == RUN_CODE and parent is None and self.modes.active:
            if self.modes.of(agent) != "native":
                return self.code.definition
        return definition

    def collapses(self, name: str, agent: str | None, parent: object, definition: ToolDefinition | None) -> bool:
        """The ``code`` collapse (§6.7): model-direct, a visible tool other than ``run_code``, mode ``code``."""
        return (
            self.modes.active
            and parent is None
            and definition is not None
            and name != RUN_CODE
            and self.modes.of(agent) == "code"
        )

    # --- one call -----------------------------------------------------------------------------

    async def execute(self, call: ToolCall) -> ToolResult:
        """Run one call through every stage; the returned object is the one observers saw."""
        state, failure = self._create(call)
        if failure is not None:
            return self._finish(state, failure)
        try:
            stage, prepared = await self._prepare(state)
            if prepared is None:
                stage, prepared = await self._dispatch(state)
            result = await self._post(state, prepared) if stage is _POST else prepared
        except BaseException as exc:
            if isinstance(exc, anyio.get_cancelled_exc_class()):
                self._record_cancelled(state)
            raise
        return self._finish(state, result)

    def _record_cancelled(self, state: _CallState) -> None:
        """The awaiting task was cancelled: abort the signal and still record the outcome."""
        state.caller_signal.abort("the task awaiting the tool call was cancelled")
        with anyio.CancelScope(shield=True):
            self._finish(state, abort_result(state.body_invoked, tuple(state.deferred)))

    # --- Stage A and B: create the execution, entry cancellation --------------------------------

    def _create(self, call: ToolCall) -> tuple[_CallState, ToolResult | None]:
        # Each input field is read once, in the reference's order (§2.1), finalizer before arguments.
        call_id = call.call_id
        root_call_id = call.root_call_id
        name = call.name
        agent = call.agent
        parent = call.parent
        signal = call.signal
        definition = self.resolve(name, agent, parent)
        collapsed = self.collapses(name, agent, parent, definition)
        finalizer = definition.finalize_content if definition is not None else None
        failure: ToolResult | None = None
        raw = call.arguments
        try:
            arguments = snapshot(raw)
        except LosslessJSONError:
            arguments, failure = None, error_result(TypeError(ARGUMENTS_NOT_JSON))
        if collapsed and not signal.aborted:
            # A collapsed call never reaches its tool, so its finalizer has nothing to finish (§3.3).
            finalizer = None
        if self.sink is not None and parent is None:
            # A Code Mode sub-call has no model-visible call/result pair: the run_code transport
            # logs tool/code-dispatch-start and tool/code-dispatch for it instead (§7).
            # tool/call is the call's first event; the snapshot taken for policy is the one logged.
            logged = arguments if failure is None else repr(raw)
            self.sink.append("tool/call", {"call_id": call_id, "name": name, "arguments": logged})
        execution = new_execution(
            call_id=call_id,
            name=name,
            arguments=arguments,
            agent=agent,
            parent=parent,
            root_call_id=root_call_id or call_id,
            signal=signal,
            sink=self.sink,
        )
        state = _CallState(execution, finalizer)
        if failure is None:
            if signal.aborted:
                failure = abort_result(False)
            elif collapsed:
                failure = collapse_result(name)
        return state, failure

    # --- Stages C to H: pre-execute, ask, guards, cancellation before dispatch ------------------

    async def _prepare(self, state: _CallState) -> tuple[str, ToolResult | None]:
        try:
            _verdict, reason, cancelled_approval = await self._decide(state)
        except Exception as exc:
            return _FINAL, error_result(exc)
        if cancelled_approval and state.caller_signal.aborted:
            return _POST, abort_result(False)
        if reason is not None:
            # A denial outranks a cancellation that happened meanwhile (§3.2 F).
            return _POST, denial_result(reason)
        if state.caller_signal.aborted:
            return _POST, abort_result(False)
        return _DISPATCH, None

    async def _decide(self, state: _CallState) -> tuple[PreDecision, str | None, bool]:
        """Stages C, D and F: the waterfall's own verdict, the denial reason (``None``: allowed),
        and whether an approval came back ``cancelled``. Guards run only on allow."""
        execution = state.execution
        verdict = await self.hooks.pre_execute(execution, _allow)
        decision: PreDecision = verdict
        cancelled_approval = False
        if type(verdict) is Ask:
            decision, cancelled_approval = await self._ask(execution, verdict)
        if type(decision) is Allow:
            return verdict, self.hooks.guard(execution), cancelled_approval
        if type(decision) is Deny:
            reason = decision.reason
            if reason is None:
                reason = f'tool "{execution.name}" was denied by a policy that gave no reason'
            return verdict, reason, cancelled_approval
        # Unreachable through the chain check, which only lets Allow, Deny and Ask through.
        return verdict, f'tool "{execution.name}" got an unknown pre-execute decision', cancelled_approval

    async def dry_run(self, call: ToolCall) -> DryRun:
        """Pre-execute, approval and guards for ``call``, never the body, nothing recorded."""
        state, failure = self._create(call)
        if failure is not None:
            message = failure.error.message if failure.error else "the call cannot run"
            return DryRun(pre_execute="deny", decision="deny", reason=message)
        try:
            verdict, reason, _cancelled = await self._decide(state)
        except Exception as exc:
            return DryRun(pre_execute="deny", decision="deny", reason=_message_of(exc))
        kind: Literal["allow", "deny", "ask"] = (
            "allow" if type(verdict) is Allow else "ask" if type(verdict) is Ask else "deny"
        )
        first_reason = verdict.reason if type(verdict) is not Allow else None  # type: ignore[union-attr]
        if reason is None:
            return DryRun(pre_execute=kind, decision="allow", reason=first_reason)
        return DryRun(pre_execute=kind, decision="deny", reason=reason)

    async def _ask(self, execution: Execution, ask: Ask) -> tuple[Allow | Deny, bool]:
        """Stage D: route an ask to the approval service; return the decision and 'was cancelled'."""
        name = execution.name
        no_service = ask.reason if ask.reason is not None else f'tool "{name}" requires approval (not yet supported)'
        if not self.hooks.has_approval():
            return Deny(reason=no_service), False
        if execution.agent is None:
            return Deny(reason=f'tool "{name}" requires approval, but the call has no agent to route it through'), False
        outcome = await self._request_approval(execution, ask.reason, execution.signal)
        if outcome is None:
            return Deny(reason=no_service), False
        if outcome == "allowed-once":
            return _ALLOW, False
        if outcome == "rejected":
            return Deny(reason=f'the user rejected tool "{name}"'), False
        if outcome == "cancelled":
            return Deny(reason=f'approval for tool "{name}" was cancelled'), True
        return Deny(reason=f'tool "{name}" requires approval, but no approval channel is available'), False

    async def _request_approval(self, execution: Execution, reason: str | None, signal: Signal) -> str | None:
        """One request to the approval service, audited by exactly one asked/decided pair.

        Returns the outcome, or ``None`` when every service abstained; an outcome outside the
        vocabulary raises (a confused service fails the call, it never allows it).
        """
        assert execution.agent is not None
        request = ApprovalRequest(
            agent=execution.agent,
            tool_name=execution.name,
            call_id=execution.call_id,
            reason=reason,
            signal=signal,
            token=execution.token,
        )
        ask_id = os.urandom(16).hex()
        if self.sink is not None:
            asked: dict[str, Any] = {"id": ask_id, "tool_name": execution.name, "call_id": execution.call_id}
            if reason is not None:
                asked["reason"] = reason
            self.sink.append("approval/asked", asked)
        outcome: object = None
        try:
            outcome = await self.hooks.approval_request(request)
        except BaseException as exc:
            # The awaiting task was cancelled while someone was being asked: that is a cancellation.
            if isinstance(exc, anyio.get_cancelled_exc_class()):
                outcome = "cancelled"
            raise
        finally:
            if self.sink is not None:
                self.sink.append("approval/decided", {"id": ask_id, "outcome": outcome if outcome in APPROVAL_OUTCOMES else None})
        if outcome is None or outcome in APPROVAL_OUTCOMES:
            return outcome
        try:
            shown = json.dumps(outcome)
        except (TypeError, ValueError):
            shown = repr(outcome)
        raise TypeError(f"unreachable variant in ApprovalOutcome: {shown}")

    async def _approval_from_body(self, execution: Execution, signal: Signal, reason: str) -> str | None:
        if not self.hooks.has_approval():
            return None
        if execution.agent is None:
            raise ValueError(f'tool "{execution.name}" asked for approval, but the call has no agent to route it through')
        return await self._request_approval(execution, reason, signal)

    # --- Stages I and J: the tools_execute waterfall around the body ----------------------------

    async def _dispatch(self, state: _CallState) -> tuple[str, ToolResult]:
        view = DispatchExecution(state.execution)
        try:
            result = await self.hooks.execute(view, partial(self._run_body, state, view))
            return _POST, self._normalize(state, result)
        except Exception as exc:
            # A wrapper throw or a failed normalization: post-execute is skipped and the body's
            # deferred contexts are lost (§3.3).
            return _FINAL, error_result(exc)

    async def _run_body(self, state: _CallState, view: DispatchExecution) -> ToolResult:
        """The innermost ``call_next`` of ``tools_execute``: fuse signals, dispatch, build the result."""
        upstream = view.signal
        signal, dispose = fuse(upstream, state.caller_signal)
        try:
            if signal.aborted:
                result = abort_result(False)
            else:
                object.__setattr__(view, "_signal", signal)
                result = await self._invoke(state, signal)
        finally:
            dispose()
            object.__setattr__(view, "_signal", upstream)
        state.canonical.append(result)
        return result

    async def _invoke(self, state: _CallState, signal: Signal) -> ToolResult:
        execution = state.execution
        try:
            definition = self.resolve(execution.name, execution.agent, execution.parent)
            if definition is None:
                raise ToolNotFoundError(execution.name)
            state.body_invoked = True
            # Each attempt (a retry wrapper may call the body again) starts with its own contexts
            # and conclude mark; the attempt whose result comes out is the one they belong to.
            state.deferred = []
            state.concluded = False
            ctx = RunContext(
                execution,
                signal,
                state.deferred,
                state.conclude,
                partial(self._approval_from_body, execution, signal),
                self.hooks.has_approval,
            )
            try:
                value = await definition.execute(execution.arguments, ctx)
            finally:
                ctx._close()
            result = build_success(
                definition,
                execution.arguments,
                value,
                top_level=execution.parent is None,
                concludes_turn=state.concluded,
            )
        except Exception as exc:
            # Tool-owned failures are kept even if cancellation comes later (§3.4).
            return error_result(exc)
        if signal.aborted:
            return abort_result(True)
        return result

    def _normalize(self, state: _CallState, result: object) -> ToolResult:
        """Stage J: trust this call's own results, re-render foreign successes, add deferred contexts."""
        if type(result) is not ToolResult:  # pragma: no cover - the chain check refuses these
            raise TypeError(f"tools_execute returned {type(result).__name__}; expected ToolResult")
        if not any(result is own for own in state.canonical) and not result.is_error:
            execution = state.execution
            definition = self.resolve(execution.name, execution.agent, execution.parent)
            if definition is None:
                raise ToolNotFoundError(execution.name)
            result = build_success(
                definition,
                execution.arguments,
                result.value,
                top_level=execution.parent is None,
                concludes_turn=state.concluded,
                contexts=result.additional_contexts,
            )
        if state.deferred:
            result = _with_contexts(result, (*state.deferred, *result.additional_contexts))
        if not result.is_error and state.caller_signal.aborted:
            result = abort_result(state.body_invoked, result.additional_contexts)
        return result

    # --- Stages K and L: post-execute -----------------------------------------------------------

    async def _post(self, state: _CallState, result: ToolResult) -> ToolResult:
        try:
            decision = await self.hooks.post_execute(state.execution, result, _accept)
            result = self._apply_post(state, result, decision)
        except Exception as exc:
            return error_result(exc)
        if not result.is_error and state.caller_signal.aborted:
            result = abort_result(state.body_invoked, result.additional_contexts)
        return result

    def _apply_post(self, state: _CallState, result: ToolResult, decision: Accept | Block) -> ToolResult:
        if isinstance(decision, Block):
            message = _blocked_message(decision.feedback)
            return ToolResult(
                is_error=True,
                content=decision.feedback,
                error=ToolError(message=message),
                additional_contexts=decision.additional_contexts,
            )
        contexts = (*result.additional_contexts, *decision.additional_contexts)
        if decision.replaces_value:
            if decision.replaces_content:
                raise TypeError("tools/post-execute accept decision cannot replace both value and content")
            if result.is_error:
                raise TypeError("tools/post-execute cannot replace the value of a failed result")
            execution = state.execution
            definition = self.resolve(execution.name, execution.agent, execution.parent)
            if definition is None:
                raise ToolNotFoundError(execution.name)
            return build_success(
                definition,
                execution.arguments,
                decision.value,
                top_level=execution.parent is None,
                concludes_turn=state.concluded,
                contexts=contexts,
            )
        if decision.replaces_content:
            return replace(result, content=decision.content, additional_contexts=contexts)
        return _with_contexts(result, contexts)

    # --- Stage M: finish ------------------------------------------------------------------------

    def _finish(self, state: _CallState, result: ToolResult) -> ToolResult:
        finalizer = state.finalizer
        if finalizer is not None:
            # Called exactly once, on every path; it may change only the content (§3.2 M).
            try:
                content = finalizer(state.execution, result)
            except Exception as exc:
                result = error_result(exc)
            else:
                if content is not None:
                    try:
                        result = replace(result, content=_content_tuple("finalize_content", content))
                    except TypeError:
                        result = error_result(TypeError(RESULT_NOT_JSON))
        self.hooks.result(state.execution, result)
        if self.sink is not None and state.execution.parent is None:
            error = result.error
            self.sink.append(
                "tool/result",
                {
                    "call_id": state.execution.call_id,
                    "name": state.execution.name,
                    "is_error": result.is_error,
                    "content": result.content,
                    "error": None if error is None or error.info is None else error.info.to_json(),
                    "meta": result.meta,
                },
            )
        return result

    # --- Batches --------------------------------------------------------------------------------

    def is_parallel(self, call: ToolCall) -> bool:
        """Whether a call may overlap others: its tool says so for these raw arguments (§3.1).

        A collapsed call (§6.7) and ``run_code`` are exclusive."""
        definition = self.resolve(call.name, call.agent, call.parent)
        if definition is None or definition.is_concurrency_safe is None:
            return False
        if self.collapses(call.name, call.agent, call.parent, definition):
            return False
        try:
            return definition.is_concurrency_safe(call.arguments) is True
        except Exception:
            return False

    async def execute_batch(
        self, calls: Sequence[ToolCall], *, signal: Signal | None = None, max_parallel: int = 10
    ) -> list[ToolResult]:
        """Run a model turn's calls: policy serially in model order, dispatch overlapped, commits in order."""
        return await _Batch(self, calls, signal, max_parallel).run()


class _Batch:
    """One batch: a serial driver that prepares and starts calls, and a committer in model order."""

    def __init__(self, pipeline: Pipeline, calls: Sequence[ToolCall], signal: Signal | None, max_parallel: int) -> None:
        if type(max_parallel) is not int or max_parallel < 1:
            raise ValueError(f"max_parallel must be a positive int, got {max_parallel!r}")
        for index, call in enumerate(calls):
            if not isinstance(call, ToolCall):
                raise TypeError(f"execute_batch: call {index} is a {type(call).__name__}, not a ToolCall")
        self.pipeline = pipeline
        self.calls = list(calls)
        self.signal = signal
        self.max_parallel = max_parallel
        self.results: list[ToolResult | None] = [None] * len(self.calls)
        self.states: list[_CallState | None] = [None] * len(self.calls)
        self.outcomes: list[tuple[str, ToolResult] | None] = [None] * len(self.calls)
        self.settled = [anyio.Event() for _ in self.calls]
        self.started = 0
        self.committed = 0
        self.exclusive_running = False
        self.total: int | None = None
        self.changed = anyio.Event()

    def _call_for(self, call: ToolCall) -> ToolCall:
        if self.signal is None or self.signal is call.signal:
            return call
        # The batch's signal reaches every call; the fusion stays attached for the batch's life.
        fused, _dispose = fuse(call.signal, self.signal)
        return replace(call, signal=fused)

    async def run(self) -> list[ToolResult]:
        try:
            return await self._run()
        except BaseException as exc:
            if isinstance(exc, anyio.get_cancelled_exc_class()):
                self._record_cancelled()
            raise

    def _record_cancelled(self) -> None:
        """The awaiting task was cancelled: every call still gets its outcome recorded, once."""
        pipeline = self.pipeline
        reason = "the task awaiting the batch was cancelled"
        with anyio.CancelScope(shield=True):
            for index, original in enumerate(self.calls):
                if self.results[index] is not None:
                    continue
                state = self.states[index]
                if state is None:
                    call = self._call_for(original)
                    state, _ = pipeline._create(call)
                state.caller_signal.abort(reason)
                self.results[index] = pipeline._finish(state, abort_result(state.body_invoked, tuple(state.deferred)))

    async def _run(self) -> list[ToolResult]:
        pipeline = self.pipeline
        async with anyio.create_task_group() as group:
            group.start_soon(self._commit_all)
            for index, original in enumerate(self.calls):
                if self.signal is not None and self.signal.aborted:
                    break
                parallel = pipeline.is_parallel(original)
                while not self._has_room(parallel):
                    await self._wait_for_change()
                if self.signal is not None and self.signal.aborted:
                    break
                call = self._call_for(original)
                state, result = pipeline._create(call)
                self.states[index] = state
                if parallel is False:
                    self.exclusive_running = True
                self.started = index + 1
                self._notify()
                if result is not None:
                    self._settle(index, (_FINAL, result))
                    continue
                stage, prepared = await pipeline._prepare(state)
                if stage is _DISPATCH:
                    group.start_soon(self._dispatch, index, state)
                else:
                    assert prepared is not None
                    self._settle(index, (stage, prepared))
            self.total = self.started
            self._notify()
        # Calls never started get the entry-abort path: a tool/call, ABORTED_BEFORE_DISPATCH,
        # the finalizer and tools_result, like any other call.
        for index in range(self.started, len(self.calls)):
            call = self._call_for(self.calls[index])
            state, result = pipeline._create(call)
            self.results[index] = pipeline._finish(state, result or abort_result(False))
        return [result for result in self.results if result is not None]

    def _has_room(self, parallel: bool) -> bool:
        in_flight = self.started - self.committed
        if not parallel:
            return in_flight == 0
        return not self.exclusive_running and in_flight < self.max_parallel

    async def _wait_for_change(self) -> None:
        await self.changed.wait()

    def _notify(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()

    def _settle(self, index: int, outcome: tuple[str, ToolResult]) -> None:
        self.outcomes[index] = outcome
        self.settled[index].set()

    async def _dispatch(self, index: int, state: _CallState) -> None:
        self._settle(index, await self.pipeline._dispatch(state))

    async def _commit_all(self) -> None:
        pipeline = self.pipeline
        index = 0
        while True:
            if index >= self.started:
                if self.total is not None and index >= self.total:
                    return
                await self._wait_for_change()
                continue
            await self.settled[index].wait()
            outcome = self.outcomes[index]
            state = self.states[index]
            assert outcome is not None and state is not None
            stage, result = outcome
            if stage is _POST:
                result = await pipeline._post(state, result)
            self.results[index] = pipeline._finish(state, result)
            index += 1
            self.committed = index
            if self.committed == self.started:
                self.exclusive_running = False
            self._notify()
