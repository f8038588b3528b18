"""Code Mode transport: presentation modes per agent, the ``run_code`` tool, and a program's sub-call lane.

reference/core-pipeline.md §6. ``run_code`` is not in the registry (its name is reserved): the
pipeline resolves it for an agent whose mode is not ``native``. Its body asks the ``code_runtime``
hook for a runner, hands it the program and the agent's tools as bindings, and dispatches every
``tools.<name>(args)`` the program makes as a sub-call through the whole pipeline (pre-execute,
approval, guards, wrappers, post-execute, finish) with ``parent`` set to the outer token. Sub-calls
go through one ordered lane per run (§6.4): policy is awaited in the lane, only dispatch overlaps,
and commits happen in submission order.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

import anyio

from .code_mode import (
    NO_RESULT,
    PRESENTATION_MODES,
    RUN_CODE,
    CodeBinding,
    CodeDispatchLog,
    CodeRunFailedError,
    CodeRunRequest,
    CodeRunResult,
    CodeRuntime,
    CodeRuntimeMissingError,
    PresentationMode,
    ToolCallError,
)
from .errors import ToolArgsError
from .log import get_logger
from .lossless import LosslessJSONError, snapshot, thaw
from .registry import ToolDefinition, ToolOutput
from .signal import Dispose, Signal
from .types import (
    ContentBlock,
    ContextMessage,
    ErrorInfo,
    ImageBlock,
    RunContext,
    TextBlock,
    ToolCall,
    ToolError,
    ToolResult,
)

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from .pipeline import Pipeline, _CallState

__all__ = [
    "CODE_ONLY_RULE",
    "RUN_CODE_PARAMETERS",
    "CodeTransport",
    "PresentationModes",
    "collapse_result",
    "render_run_code",
]

#: Where image-bearing sub-call content is deferred from (reference §6.4, commit step 2).
CONTEXT_SOURCE: Final = "tools-code-mode"
SETTLED: Final = "run_code settled"
NO_OUTPUT: Final = "(run_code completed with no output)"
ARGUMENTS_NOT_JSON: Final = "tool arguments must be lossless JSON (call the tool with an arguments object, e.g. `{}`)"
#: The ``tools:code-only`` rule shown with the SDK under mode ``code`` (the reference gives no text).
CODE_ONLY_RULE: Final = (
    "Only `run_code` can be called directly: call every other tool from inside a `run_code` program."
)

RUN_CODE_DESCRIPTION: Final = (
    "Run a short program that calls the tools as functions (tools.<name>(arguments)). Lines the "
    "program prints and the value it returns come back as the result; each tool call inside it goes "
    "through the same policy as a direct call. Use it to chain tool calls or to process their "
    "results before reading them."
)
RUN_CODE_PARAMETERS: Final[Mapping[str, Any]] = {
    "type": "object",
    "properties": {
        "code": {"type": "string", "description": "the program to run"},
        "description": {"type": "string", "description": "what the program does, in a few words, for the user"},
    },
    "required": ["code", "description"],
    "additionalProperties": False,
}
RUN_CODE_OUTPUT: Final[Mapping[str, Any]] = {
    "type": "object",
    "properties": {"logs": {"type": "array", "items": {"type": "string"}}, "result": {}},
    "required": ["logs"],
    "additionalProperties": False,
}
#: Pretty JSON indents by two spaces until the indentation would pass this width (reference §6.2).
INDENT_LIMIT: Final = 10


# --- Presentation modes --------------------------------------------------------------------------


class PresentationModes:
    """Each agent's presentation mode: a runtime declaration, else ``[code_mode] agents``, else ``mode``.

    The merged agent → mode map is rebuilt on every change, so a lookup is one dict read; ``active``
    is False while every agent is ``native``, and the pipeline then skips Code Mode entirely.
    """

    def __init__(self, notify_change: Callable[[], None]) -> None:
        self._notify_change = notify_change
        self.deployment: PresentationMode = "native"
        self.max_parallel_sub_calls = 10
        self._configured: dict[str, PresentationMode] = {}
        self._declared: dict[str, tuple[PresentationMode, object]] = {}
        self._merged: dict[str, PresentationMode] = {}
        self.active = False

    def configure(
        self, deployment: PresentationMode, agents: Mapping[str, PresentationMode], max_parallel: int
    ) -> None:
        """Take the ``[code_mode]`` section's values (after every composition of the configuration)."""
        self.deployment = deployment
        self._configured = dict(agents)
        self.max_parallel_sub_calls = max_parallel
        self._rebuild()

    def _rebuild(self) -> None:
        merged = dict(self._configured)
        merged.update({agent: mode for agent, (mode, _token) in self._declared.items()})
        self._merged = merged
        self.active = self.deployment != "native" or any(mode != "native" for mode in merged.values())

    def of(self, agent: str | None) -> PresentationMode:
        """The mode that applies to calls of ``agent`` (a call without agent: the deployment's)."""
        if not self.active or agent is None:
            return self.deployment
        return self._merged.get(agent, self.deployment)

    def declare(self, agent: str, mode: PresentationMode) -> Dispose:
        """Declare ``agent``'s mode at run time; a second declaration for the same agent is an error."""
        if type(agent) is not str or not agent:
            raise ValueError(f"present_as(agent=...) needs a non-empty str, got {agent!r}")
        if mode not in PRESENTATION_MODES:
            raise ValueError(f'present_as(mode=...) must be "native", "code" or "both", got {mode!r}')
        if agent in self._declared:
            raise ValueError(
                f'agent "{agent}" already declared presentation mode "{self._declared[agent][0]}"; '
                "dispose that declaration first (present_as returns its dispose)"
            )
        token = object()
        self._declared[agent] = (mode, token)
        self._rebuild()
        try:
            self._notify_change()
        except BaseException:
            del self._declared[agent]
            self._rebuild()
            raise

        def dispose() -> None:
            entry = self._declared.get(agent)
            if entry is None or entry[1] is not token:
                return
            del self._declared[agent]
            self._rebuild()
            try:
                self._notify_change()
            except BaseException:
                self._declared[agent] = entry
                self._rebuild()
                raise

        return dispose


# --- Results and rendering -------------------------------------------------------------------------


def collapse_result(name: str) -> ToolResult:
    """The ``code`` collapse: a model-direct call to a visible tool other than ``run_code`` (§6.7)."""
    message = (
        f'unknown tool "{name}": only `run_code` is callable directly — '
        f"call `{name}` from inside a `run_code` program instead"
    )
    return ToolResult(
        is_error=True,
        content=(TextBlock(text="Error: " + message),),
        error=ToolError(message=message, info=ErrorInfo(name="ToolNotFoundError", code="UNKNOWN_TOOL")),
    )


def _scalar(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def pretty_json(value: Any) -> str:
    """Two-space JSON; a subtree whose members would sit deeper than 10 columns is written compact.

    Walks with an explicit stack, so a value nested thousands of levels deep renders without
    recursion (reference §5.4).
    """
    out: list[str] = []
    # Work items: a literal to write (str), or (value, depth, compact) to render.
    work: list[str | tuple[Any, int, bool]] = [(value, 0, False)]
    while work:
        item = work.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        node, depth, compact = item
        if isinstance(node, dict):
            members: list[tuple[str | None, Any]] = list(node.items())
            opening, closing = "{", "}"
        elif isinstance(node, list):
            members = [(None, element) for element in node]
            opening, closing = "[", "]"
        else:
            out.append(_scalar(node))
            continue
        if not members:
            out.append(opening + closing)
            continue
        inner_compact = compact or (depth + 1) * 2 > INDENT_LIMIT
        pushed: list[str | tuple[Any, int, bool]] = [opening]
        for index, (key, member) in enumerate(members):
            if index:
                pushed.append(",")
            if not inner_compact:
                pushed.append("\n" + "  " * (depth + 1))
            if key is not None:
                pushed.append(_scalar(key) + (":" if inner_compact else ": "))
            pushed.append((member, depth + 1, inner_compact))
        pushed.append(closing if inner_compact else "\n" + "  " * depth + closing)
        work.extend(reversed(pushed))
    return "".join(out)


def render_run_code(_args: Any, value: Any) -> list[ContentBlock]:
    """§6.2: the log lines, then the rendered result; ``(run_code completed with no output)`` if both are empty."""
    logs = "\n".join(value["logs"])
    if "result" not in value:
        result = ""
    else:
        result = value["result"] if type(value["result"]) is str else pretty_json(value["result"])
    text = "\n".join(part for part in (logs, result) if part)
    return [TextBlock(text=text or NO_OUTPUT)]


def _present_run_code(args: Any) -> Any:
    if not isinstance(args, dict) or type(args.get("code")) is not str or type(args.get("description")) is not str:
        return None  # presenters validate softly
    return {"card": "generic", "title": args["description"], "kind": "execute", "raw_input": args["code"]}


def _check_arguments(args: Any) -> tuple[str, str]:
    """``run_code``'s own argument check, inside the body like a ``@tool`` function's (§10.25)."""
    if not isinstance(args, dict):
        raise ToolArgsError(["arguments: input should be a valid dictionary"])
    violations = []
    for key in ("code", "description"):
        if key not in args:
            violations.append(f'missing required property "{key}"')
        elif type(args[key]) is not str:
            violations.append(f'"{key}": input should be a valid string')
    extra = sorted(set(args) - {"code", "description"})
    violations += [f'"{key}": extra inputs are not permitted' for key in extra]
    if violations:
        raise ToolArgsError(violations)
    if not args["description"].strip():
        raise ValueError("invalid description: expected a non-empty string")
    return args["code"], args["description"]


# --- The transport -------------------------------------------------------------------------------


class CodeTransport:
    """Owns the ``run_code`` definition and runs programs for the pipeline."""

    def __init__(self, pipeline: Pipeline, modes: PresentationModes) -> None:
        self.pipeline = pipeline
        self.modes = modes
        self.definition = ToolDefinition(
            name=RUN_CODE,
            description=RUN_CODE_DESCRIPTION,
            parameters=snapshot(dict(RUN_CODE_PARAMETERS)),
            output=ToolOutput(schema=snapshot(dict(RUN_CODE_OUTPUT)), render=render_run_code),
            execute=self._execute,
            present_call=_present_run_code,
        )

    def schema(self) -> dict[str, Any]:
        """``run_code`` as the model sees it: ``{name, description, parameters}``."""
        return self.definition.schema()

    def bindings(self) -> tuple[CodeBinding, ...]:
        """The tools a program may call: every registered tool (``run_code`` is never registered)."""
        return tuple(
            CodeBinding(
                name=definition.name, description=definition.description, parameters=thaw(definition.parameters)
            )
            for definition in self.pipeline.registry
        )

    def runtime(self) -> CodeRuntime | None:
        """The installed runtime (first ``code_runtime`` answer), checked for the two methods the core calls."""
        runtime: CodeRuntime | None = self.pipeline.hooks.code_runtime()
        if runtime is None:
            return None
        if not callable(getattr(runtime, "run", None)) or not callable(getattr(runtime, "render_sdk", None)):
            raise TypeError(
                f"the code_runtime hook returned {type(runtime).__name__}; expected a CodeRuntime "
                "with run(request) and render_sdk(bindings)"
            )
        return runtime

    async def _execute(self, args: Any, ctx: RunContext) -> Any:
        program, _description = _check_arguments(args)
        runtime = self.runtime()
        if runtime is None:
            raise CodeRuntimeMissingError(self.modes.deployment)
        run = _Run(self.pipeline, ctx, self.modes.max_parallel_sub_calls)
        outcome = await run.run(runtime, program, self.bindings())
        if not isinstance(outcome, CodeRunResult):
            raise TypeError(f"the code runtime returned {type(outcome).__name__} from run(); expected CodeRunResult")
        logs = tuple(outcome.logs)
        if outcome.error is not None:
            raise CodeRunFailedError(outcome.error, logs)
        value: dict[str, Any] = {"logs": list(logs)}
        if outcome.result is not NO_RESULT:
            value["result"] = outcome.result
        return value


class _SubCall:
    """One ``tools.<name>(args)`` of a program, from submission to its settled binding."""

    __slots__ = ("name", "call", "start_data", "parallel", "state", "outcome", "done", "value", "error")

    def __init__(self, name: str, call: ToolCall, start_data: dict[str, Any]) -> None:
        self.name = name
        self.call = call
        self.start_data = start_data
        self.parallel = False
        self.state: _CallState | None = None
        self.outcome: tuple[str, ToolResult] | None = None
        self.done = anyio.Event()
        self.value: Any = None
        self.error: ToolCallError | None = None

    def reject(self, message: str) -> None:
        self.error = ToolCallError(self.name, message)
        self.done.set()


class _Run:
    """One program run: the run signal, the ordered sub-call lane and the log tasks (§6.3, §6.4)."""

    def __init__(self, pipeline: Pipeline, ctx: RunContext, max_parallel: int) -> None:
        self.pipeline = pipeline
        self.ctx = ctx
        self.execution = ctx.execution
        self.max_parallel = max_parallel
        # The run signal follows the outer body's (fused) signal, and aborts when the run settles.
        self.signal = Signal()
        self.over: str | None = None
        self.numbered = 0
        self.queue: deque[_SubCall] = deque()
        self.active: deque[_SubCall] = deque()
        self.exclusive_active = 0
        self.logging = 0
        self._changed = anyio.Event()
        self.logs_events = self.execution.agent is not None and pipeline.sink is not None
        # Last: a signal that has already aborted calls back at once, and the run must exist by then.
        self._unfollow = ctx.signal.on_abort(self._outer_aborted)

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def _wait(self) -> None:
        await self._changed.wait()

    # --- the program side ----------------------------------------------------------------------

    async def call_tool(self, name: str, arguments: Any) -> Any:
        """A binding call: reject when the run is over or the arguments are not JSON, else dispatch."""
        if type(name) is not str or not name:
            raise ToolCallError(str(name), f"tool name must be a non-empty string, got {name!r}")
        if self.over is not None:
            raise ToolCallError(name, f"run_code run is over ({self.over}); {name} not dispatched")
        try:
            arguments = snapshot(arguments)
        except LosslessJSONError:
            raise ToolCallError(name, ARGUMENTS_NOT_JSON) from None
        except Exception as exc:
            raise ToolCallError(name, f"tool arguments must be lossless JSON: {exc}") from None
        # The number is taken only once the arguments are accepted (§10.22).
        self.numbered += 1
        execution = self.execution
        sub_call_id = f"{execution.call_id}:code:{self.numbered}"
        call = ToolCall(
            call_id=sub_call_id,
            name=name,
            arguments=arguments,
            agent=execution.agent,
            parent=execution.token,
            root_call_id=execution.root_call_id,
            signal=self.signal,
        )
        # The arguments are a frozen snapshot: the dispatched and the logged copy can be one object.
        start_data = {
            "root_call_id": execution.root_call_id,
            "parent_call_id": execution.call_id,
            "sub_call_id": sub_call_id,
            "name": name,
            "arguments": arguments,
        }
        entry = _SubCall(name, call, start_data)
        self.queue.append(entry)
        self._notify()
        try:
            await entry.done.wait()
        except BaseException:
            # The program stopped waiting (its task was cancelled): a sub-call that has not started
            # yet is withdrawn, so nothing runs that nobody will read; a started one still commits.
            if entry in self.queue:
                self.queue.remove(entry)
                self._notify()
            raise
        if entry.error is not None:
            raise entry.error
        return entry.value

    # --- the run --------------------------------------------------------------------------------

    async def run(self, runtime: CodeRuntime, program: str, bindings: tuple[CodeBinding, ...]) -> object:
        request = CodeRunRequest(
            program=program, bindings=bindings, call_tool=self.call_tool, signal=self.signal, execution=self.execution
        )
        failure: Exception | None = None
        outcome: object = None
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._drive, group)
                try:
                    outcome = await runtime.run(request)
                except Exception as exc:
                    # Normalized by the pipeline once the lane is drained (§6.3 step 5).
                    failure = exc
                finally:
                    self._settle()
        except BaseException as exc:
            if isinstance(exc, anyio.get_cancelled_exc_class()):
                self._record_cancelled()
            raise
        finally:
            self._unfollow()
        if failure is not None:
            raise failure
        return outcome

    def _outer_aborted(self, reason: object) -> None:
        """The outer call was aborted: the run is over at once, for the same reason (§6.3).

        Queued sub-calls are abandoned, later binding calls are not dispatched, and in-flight ones
        are discarded when they commit; the program itself is stopped by the runtime, which sees
        the run signal abort.
        """
        if self.over is None:
            self.over = "aborted" if reason is None else str(reason)
        self.signal.abort(reason)
        self._abandon_queue()

    def _abandon_queue(self) -> None:
        while self.queue:
            entry = self.queue.popleft()
            entry.reject(f"run_code run is over ({self.over}); {entry.name} tool call abandoned")
        self._notify()

    def _settle(self) -> None:
        """The program ended: abort the run signal, abandon what never started, let the lane drain."""
        if self.over is None:
            self.over = SETTLED
        self.signal.abort(SETTLED)
        self._abandon_queue()

    async def _drive(self, group: TaskGroup) -> None:
        """The lane: commit the head once settled, else start the next if there is room, else sleep."""
        while True:
            if self.active and self.active[0].outcome is not None:
                await self._commit(self.active[0], group)
                continue
            if self.queue:
                entry = self.queue[0]
                parallel = self.pipeline.is_parallel(entry.call)
                if self._has_room(parallel):
                    self.queue.popleft()
                    await self._start(entry, parallel, group)
                    continue
            elif self.over is not None and not self.active and not self.logging:
                return
            await self._wait()

    def _has_room(self, parallel: bool) -> bool:
        if not parallel:
            return not self.active
        return not self.exclusive_active and len(self.active) < self.max_parallel

    async def _start(self, entry: _SubCall, parallel: bool, group: TaskGroup) -> None:
        entry.parallel = parallel
        if not parallel:
            self.exclusive_active += 1
        self.active.append(entry)
        pipeline = self.pipeline
        if self.logs_events:
            assert pipeline.sink is not None
            pipeline.sink.append("tool/code-dispatch-start", entry.start_data)
        state, failure = pipeline._create(entry.call)
        entry.state = state
        if failure is not None:
            entry.outcome = ("final", failure)
            return
        stage, prepared = await pipeline._prepare(state)
        if prepared is None:
            group.start_soon(self._dispatch, entry)
        else:
            entry.outcome = (stage, prepared)

    async def _dispatch(self, entry: _SubCall) -> None:
        assert entry.state is not None
        entry.outcome = await self.pipeline._dispatch(entry.state)
        self._notify()

    async def _commit(self, entry: _SubCall, group: TaskGroup) -> None:
        """§6.4 commit: finish, defer images and contexts onto the outer call, settle, log."""
        pipeline = self.pipeline
        state, outcome = entry.state, entry.outcome
        assert state is not None and outcome is not None
        stage, result = outcome
        if stage == "post":
            result = await pipeline._post(state, result)
        result = pipeline._finish(state, result)
        # Off the lane only once finished: a cancellation before this still records the outcome.
        self.active.popleft()
        self._forward(result)
        if not entry.parallel:
            self.exclusive_active -= 1
        if self.over is not None:
            entry.reject(f"run_code run is over ({self.over}); {entry.name} result discarded")
        elif result.is_error:
            assert result.error is not None
            entry.reject(result.error.message)
        else:
            entry.value = result.value
            entry.done.set()
        if self.logs_events:
            self.logging += 1
            group.start_soon(self._log, entry, result)
            while self.logging > self.max_parallel:
                await self._wait()
        self._notify()

    def _forward(self, result: ToolResult) -> None:
        """Sub-calls have no model-visible result of their own: what they add goes onto the outer call (§6.6)."""
        ctx = self.ctx
        if not result.is_error and any(isinstance(block, ImageBlock) for block in result.content):
            ctx.defer_context(ContextMessage(content=result.content, source=CONTEXT_SOURCE))
        for context in result.additional_contexts:
            ctx.defer_context(context)
        if result.concludes_turn and not result.is_error:
            ctx.conclude_turn()

    async def _log(self, entry: _SubCall, result: ToolResult) -> None:
        content = tuple(result.content)
        try:
            content = await self._shaped_content(entry, result)
        finally:
            # Written even when the task is cancelled while a listener is still shaping the copy:
            # every started sub-call gets exactly one settle event (§7), then with its own content.
            self._append_settled(entry, result, content)
            self.logging -= 1
            self._notify()

    async def _shaped_content(self, entry: _SubCall, result: ToolResult) -> tuple[ContentBlock, ...]:
        original = tuple(result.content)

        async def unchanged() -> list[ContentBlock]:
            return list(original)

        dispatch = CodeDispatchLog(
            execution=self.execution,
            agent=self.execution.agent,
            sub_call_id=entry.call.call_id,
            name=entry.name,
            is_error=result.is_error,
            content=original,
        )
        try:
            return tuple(await self.pipeline.hooks.code_dispatch_log(dispatch, unchanged))
        except Exception as exc:
            get_logger().warning(
                "tools: code-dispatch-log listener failed for %s: %s; logging the original settled content",
                entry.name,
                exc,
            )
            return original

    def _append_settled(self, entry: _SubCall, result: ToolResult, content: tuple[ContentBlock, ...]) -> None:
        sink = self.pipeline.sink
        if sink is not None:
            sink.append("tool/code-dispatch", {**entry.start_data, "is_error": result.is_error, "content": content})

    def _record_cancelled(self) -> None:
        """The task running the outer call was cancelled: every started sub-call still gets its
        outcome recorded once (``tools_result``, the settle event), as ``execute`` does for a call."""
        from .pipeline import abort_result

        self._settle()
        with anyio.CancelScope(shield=True):
            while self.active:
                entry = self.active.popleft()
                state = entry.state
                if state is None:
                    continue
                result = self.pipeline._finish(state, abort_result(state.body_invoked, tuple(state.deferred)))
                entry.reject(f"run_code run is over ({self.over}); {entry.name} result discarded")
                if self.logs_events:
                    self._append_settled(entry, result, tuple(result.content))
