"""reference/core-pipeline.md §6.3–§6.6, §6.8, §7: program runs, sub-calls under policy, the lane, and events."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import anyio
import pytest

from harness_core import (
    Ask,
    Block,
    ContextMessage,
    Deny,
    Execution,
    ImageBlock,
    MemoryEventSink,
    Signal,
    TextBlock,
    ToolDefinition,
    ToolOutput,
    hookimpl,
)
from harness_core.code_mode import CodeRunRequest, CodeRunResult, ToolCallError
from harness_core.session_log import SessionLog

from .code_mode_support import PolicyLog, PythonRuntime, code_harness, echo_tool, run_code


class DenyTool:
    """Denies every call of one tool in pre-execute."""

    def __init__(self, name: str) -> None:
        self.name = name

    @hookimpl
    async def tools_pre_execute(self, execution: Execution, call_next: Any) -> Any:
        if execution.name == self.name:
            return Deny(reason=f"{self.name} is not allowed here")
        return await call_next()


# --- A program and its sub-calls ------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_program_calls_an_allowed_tool_through_the_whole_pipeline() -> None:
    policy = PolicyLog()
    harness = code_harness(policy)
    result = await harness.execute(
        run_code(
            """
            first = await tools.echo({"text": "hi"})
            print("got", first)
            return {"echoed": first}
            """
        )
    )
    assert (result.is_error, result.value) == (False, {"logs": ["got hi"], "result": {"echoed": "hi"}})
    assert result.content[0] == TextBlock(text='got hi\n{\n  "echoed": "hi"\n}')
    outer = policy.execution_of("c1")
    sub = policy.execution_of("c1:code:1")
    # Pre-execute saw the sub-call as nested: parent is the outer token, same agent and root.
    assert [execution.call_id for execution in policy.pre] == ["c1", "c1:code:1"]
    assert sub.parent is outer.token and sub.agent == "main" and sub.root_call_id == "c1"
    assert policy.guarded == ["c1", "c1:code:1"]
    # The sub-call's tools_result fired before the outer one's: it committed inside the run.
    assert [execution.call_id for execution, _ in policy.results] == ["c1:code:1", "c1"]


@pytest.mark.anyio
async def test_sub_calls_inherit_the_root_call_id_and_use_the_outer_call_id_in_their_ids() -> None:
    policy = PolicyLog()
    harness = code_harness(policy)
    from harness_core import ToolCall

    call = ToolCall(
        call_id="outer",
        name="run_code",
        arguments={"code": 'await tools.echo({"text": "a"})\nawait tools.echo({"text": "b"})', "description": "two"},
        agent="main",
        root_call_id="root-7",
    )
    await harness.execute(call)
    subs = [execution for execution, _ in policy.results if execution.parent is not None]
    assert [(e.call_id, e.root_call_id) for e in subs] == [("outer:code:1", "root-7"), ("outer:code:2", "root-7")]


@pytest.mark.anyio
async def test_a_denied_sub_call_raises_tool_call_error_and_the_program_continues() -> None:
    harness = code_harness(DenyTool("echo"))
    result = await harness.execute(
        run_code(
            """
            try:
                await tools.echo({"text": "hi"})
            except ToolCallError as exc:
                print(exc.tool_name, "|", exc)
            return "still running"
            """
        )
    )
    assert result.value == {"logs": ["echo | echo is not allowed here"], "result": "still running"}


@pytest.mark.anyio
async def test_a_sub_call_whose_guard_denies_is_refused_and_its_body_never_runs() -> None:
    ran: list[Any] = []

    async def body(args: Any, ctx: Any) -> str:
        ran.append(args)
        return "ran"

    class NoSecrets:
        @hookimpl
        def tools_guard(self, execution: Execution) -> str | None:
            secret = execution.name == "echo" and execution.arguments.get("text") == "secret"
            return "no secrets" if secret else None

    harness = code_harness(NoSecrets(), tools=(echo_tool(body=body),))
    result = await harness.execute(
        run_code(
            """
            try:
                await tools.echo({"text": "secret"})
            except ToolCallError as exc:
                print(str(exc))
            return await tools.echo({"text": "fine"})
            """
        )
    )
    assert result.value == {"logs": ["no secrets"], "result": "ran"}
    assert ran == [{"text": "fine"}]


class AskForEcho:
    @hookimpl
    async def tools_pre_execute(self, execution: Execution, call_next: Any) -> Any:
        if execution.name == "echo":
            return Ask(reason="echo needs a yes")
        return await call_next()


class Approver:
    def __init__(self, answer: str = "allowed-once") -> None:
        self.requests: list[Any] = []
        self.answer = answer

    @hookimpl
    async def approval_request(self, request: Any) -> str:
        self.requests.append(request)
        return self.answer


@pytest.mark.anyio
async def test_a_sub_call_that_asks_is_approved_once_per_sub_call() -> None:
    approver = Approver()
    harness = code_harness(AskForEcho(), approver)
    result = await harness.execute(
        run_code(
            """
            a = await tools.echo({"text": "one"})
            b = await tools.echo({"text": "two"})
            return [a, b]
            """
        )
    )
    assert result.value == {"logs": [], "result": ["one", "two"]}
    assert [(r.call_id, r.tool_name, r.agent, r.reason) for r in approver.requests] == [
        ("c1:code:1", "echo", "main", "echo needs a yes"),
        ("c1:code:2", "echo", "main", "echo needs a yes"),
    ]


CATCHES_THE_REFUSAL = """
try:
    await tools.echo({"text": "one"})
except ToolCallError as exc:
    return str(exc)
"""


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (None, "echo needs a yes"),  # no approval service: the ask is denied with its own reason
        ("rejected", 'the user rejected tool "echo"'),
    ],
)
async def test_a_sub_call_whose_ask_is_not_approved_is_refused_to_the_program(answer: str | None, message: str) -> None:
    plugins = [AskForEcho()] if answer is None else [AskForEcho(), Approver(answer)]
    harness = code_harness(*plugins)
    result = await harness.execute(run_code(CATCHES_THE_REFUSAL))
    assert result.value == {"logs": [], "result": message}


@pytest.mark.anyio
async def test_a_program_cannot_call_run_code_from_inside() -> None:
    harness = code_harness(mode="both")
    result = await harness.execute(
        run_code(
            """
            try:
                await tools.run_code({"code": "return 1", "description": "again"})
            except ToolCallError as exc:
                return str(exc)
            """
        )
    )
    assert result.value == {"logs": [], "result": 'unknown tool "run_code"'}


@pytest.mark.anyio
async def test_the_runtime_gets_the_agents_tools_as_bindings_and_the_outer_execution() -> None:
    runtime = PythonRuntime()
    harness = code_harness(runtime=runtime, mode="both", tools=(echo_tool("echo"), echo_tool("shout")))
    await harness.execute(run_code("return 1"))
    (request,) = runtime.requests
    assert [binding.name for binding in request.bindings] == ["echo", "shout"]
    assert request.bindings[0].parameters == {"type": "object", "properties": {"text": {"type": "string"}}}
    assert request.execution.call_id == "c1" and request.execution.name == "run_code"
    assert request.program == "return 1"


# --- Binding rejections -----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_arguments_that_are_not_json_dispatch_nothing_and_use_no_number() -> None:
    policy = PolicyLog()
    harness = code_harness(policy)
    result = await harness.execute(
        run_code(
            """
            try:
                await tools.echo({"when": object()})
            except ToolCallError as exc:
                print(exc)
            return await tools.echo({"text": "ok"})
            """
        )
    )
    assert result.value == {
        "logs": ["tool arguments must be lossless JSON (call the tool with an arguments object, e.g. `{}`)"],
        "result": "ok",
    }
    assert [execution.call_id for execution in policy.pre] == ["c1", "c1:code:1"]


class KeepsTheBinding(PythonRuntime):
    """Remembers call_tool so the test can use it after the run is over."""

    async def run(self, request: CodeRunRequest) -> CodeRunResult:
        self.kept = request.call_tool
        return await super().run(request)


@pytest.mark.anyio
async def test_a_binding_called_after_the_run_settled_is_not_dispatched() -> None:
    runtime = KeepsTheBinding()
    policy = PolicyLog()
    harness = code_harness(policy, runtime=runtime)
    await harness.execute(run_code("return 1"))
    with pytest.raises(ToolCallError) as caught:
        await runtime.kept("echo", {"text": "late"})
    assert str(caught.value) == "run_code run is over (run_code settled); echo not dispatched"
    assert caught.value.tool_name == "echo"
    assert [execution.call_id for execution in policy.pre] == ["c1"]


@pytest.mark.anyio
async def test_the_run_signal_aborts_with_run_code_settled_when_the_program_ends() -> None:
    runtime = PythonRuntime()
    await code_harness(runtime=runtime).execute(run_code("return 1"))
    signal = runtime.requests[0].signal
    assert signal.aborted and signal.reason == "run_code settled"


# --- Cancellation -------------------------------------------------------------------------------------


class WaitsForAbort(PythonRuntime):
    def __init__(self) -> None:
        super().__init__()
        self.started = anyio.Event()
        self.saw: object = None

    async def run(self, request: CodeRunRequest) -> CodeRunResult:
        self.started.set()
        self.saw = await request.signal.wait()
        return CodeRunResult(logs=("stopped",))


@pytest.mark.anyio
async def test_aborting_the_outer_call_aborts_the_run_signal() -> None:
    runtime = WaitsForAbort()
    harness = code_harness(runtime=runtime)
    signal = Signal()
    results = []

    async def call() -> None:
        results.append(await harness.execute(run_code("ignored", signal=signal)))

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        await runtime.started.wait()
        signal.abort("user pressed stop")
    assert runtime.saw == "user pressed stop"
    (result,) = results
    assert result.error is not None and result.error.info is not None and result.error.info.code == "ABORTED"


class BackgroundCalls(PythonRuntime):
    """Starts sub-calls in the background and returns without awaiting them."""

    def __init__(self) -> None:
        super().__init__()
        self.outcomes: list[str] = []
        self.tasks: list[asyncio.Task[None]] = []
        self.body_started = anyio.Event()

    async def run(self, request: CodeRunRequest) -> CodeRunResult:
        async def call(name: str, text: str) -> None:
            try:
                await request.call_tool(name, {"text": text})
                self.outcomes.append(f"{text}: ok")
            except ToolCallError as exc:
                self.outcomes.append(f"{text}: {exc}")

        self.tasks.append(asyncio.ensure_future(call("slow", "first")))
        self.tasks.append(asyncio.ensure_future(call("slow", "second")))
        await self.body_started.wait()
        return CodeRunResult(logs=())


@pytest.mark.anyio
async def test_settling_drains_in_flight_sub_calls_and_abandons_queued_ones() -> None:
    runtime = BackgroundCalls()
    policy = PolicyLog()
    sink = MemoryEventSink()

    async def slow(args: Any, ctx: Any) -> str:
        runtime.body_started.set()
        await ctx.signal.wait()  # the run signal aborts when the program ends
        return "late"

    harness = code_harness(policy, runtime=runtime, sink=sink, tools=(echo_tool("slow", body=slow),))
    result = await harness.execute(run_code("ignored"))
    await asyncio.gather(*runtime.tasks)
    assert result.value == {"logs": []}
    assert runtime.outcomes == [
        "second: run_code run is over (run_code settled); slow tool call abandoned",
        "first: run_code run is over (run_code settled); slow result discarded",
    ]
    # The in-flight call finished under policy (ABORTED: its signal was the run's); the abandoned
    # one never started, so it has no events and no tools_result.
    first = policy.result_of("c1:code:1")
    assert first.error is not None and first.error.info is not None and first.error.info.code == "ABORTED"
    assert [execution.call_id for execution, _ in policy.results] == ["c1:code:1", "c1"]
    assert [data["sub_call_id"] for data in sink.of_kind("tool/code-dispatch-start")] == ["c1:code:1"]
    assert [data["sub_call_id"] for data in sink.of_kind("tool/code-dispatch")] == ["c1:code:1"]


# --- Events --------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_sub_calls_are_logged_as_code_dispatch_events_inside_the_outer_call(tmp_path: Path) -> None:
    log = SessionLog(tmp_path / ".harness" / "sessions", "s1")
    harness = code_harness(DenyTool("shout"), tools=(echo_tool("echo"), echo_tool("shout")))
    harness.events = log
    await harness.execute(
        run_code(
            """
            await tools.echo({"text": "hi"})
            try:
                await tools.shout({"text": "HEY"})
            except ToolCallError:
                pass
            """
        )
    )
    log.close()
    lines = [json.loads(line) for line in log.path.read_text().splitlines()]
    assert [line["type"] for line in lines] == [
        "tool/call",
        "tool/code-dispatch-start",
        "tool/code-dispatch",
        "tool/code-dispatch-start",
        "tool/code-dispatch",
        "tool/result",
    ]
    start = {
        "root_call_id": "c1",
        "parent_call_id": "c1",
        "sub_call_id": "c1:code:1",
        "name": "echo",
        "arguments": {"text": "hi"},
    }
    assert lines[1]["data"] == start
    assert lines[2]["data"] == {**start, "is_error": False, "content": [{"type": "text", "text": "hi"}]}
    assert lines[4]["data"]["sub_call_id"] == "c1:code:2"
    assert lines[4]["data"]["is_error"] is True
    assert lines[4]["data"]["content"] == [{"type": "text", "text": "Error: shout is not allowed here"}]
    assert lines[5]["data"]["call_id"] == "c1"


@pytest.mark.anyio
async def test_code_dispatch_start_comes_before_the_sub_calls_pre_execute() -> None:
    sink = MemoryEventSink()
    seen: list[list[str]] = []

    class Snapshot:
        @hookimpl
        async def tools_pre_execute(self, execution: Execution, call_next: Any) -> Any:
            seen.append(sink.kinds())
            return await call_next()

    harness = code_harness(Snapshot(), sink=sink)
    await harness.execute(run_code('await tools.echo({"text": "x"})'))
    assert seen[1] == ["tool/call", "tool/code-dispatch-start"]


@pytest.mark.anyio
async def test_no_code_dispatch_events_without_an_agent() -> None:
    sink = MemoryEventSink()
    harness = code_harness(sink=sink)
    result = await harness.execute(run_code('return await tools.echo({"text": "x"})', agent=None))
    assert result.value == {"logs": [], "result": "x"}
    assert sink.kinds() == ["tool/call", "tool/result"]


class Spill:
    @hookimpl
    async def tools_code_dispatch_log(self, dispatch: Any, call_next: Any) -> Any:
        original = await call_next()
        return [TextBlock(text=f"[{dispatch.sub_call_id} {dispatch.name}: {len(original)} block(s) spilled]")]


@pytest.mark.anyio
async def test_tools_code_dispatch_log_shapes_only_the_log_copy() -> None:
    sink = MemoryEventSink()
    policy = PolicyLog()
    harness = code_harness(Spill(), policy, sink=sink)
    result = await harness.execute(run_code('return await tools.echo({"text": "the real content"})'))
    assert result.value == {"logs": [], "result": "the real content"}
    (logged,) = sink.of_kind("tool/code-dispatch")
    assert logged["content"] == (TextBlock(text="[c1:code:1 echo: 1 block(s) spilled]"),)
    assert policy.result_of("c1:code:1").content == (TextBlock(text="the real content"),)


class BrokenSpill:
    @hookimpl
    def tools_code_dispatch_log(self, dispatch: Any, call_next: Any) -> Any:
        raise RuntimeError("disk full")


@pytest.mark.anyio
async def test_a_raising_dispatch_log_listener_is_contained(caplog: pytest.LogCaptureFixture) -> None:
    sink = MemoryEventSink()
    harness = code_harness(BrokenSpill(), sink=sink)
    with caplog.at_level(logging.WARNING):
        result = await harness.execute(run_code('return await tools.echo({"text": "kept"})'))
    assert result.value == {"logs": [], "result": "kept"}
    (logged,) = sink.of_kind("tool/code-dispatch")
    assert logged["content"] == (TextBlock(text="kept"),)
    warning = "tools: code-dispatch-log listener failed for echo: disk full; logging the original settled content"
    assert warning in caplog.text


@pytest.mark.anyio
async def test_arguments_rejected_at_the_binding_get_no_events() -> None:
    sink = MemoryEventSink()
    harness = code_harness(sink=sink)
    await harness.execute(
        run_code(
            """
            try:
                await tools.echo({1: "not a str key"})
            except ToolCallError:
                pass
            """
        )
    )
    assert sink.kinds() == ["tool/call", "tool/result"]


# --- Contexts, images and concluding the turn (§6.6) ---------------------------------------------------

IMAGE = ImageBlock(attachment_id="a1", media_type="image/png", size_bytes=10, width=1, height=1)


def picture_tool(*, block: bool = False) -> ToolDefinition:
    async def execute(args: Any, ctx: Any) -> str:
        ctx.defer_context(ContextMessage(content=[TextBlock(text="note from picture")], source="picture"))
        ctx.conclude_turn()
        return "a picture"

    return ToolDefinition(
        name="picture",
        description="returns an image",
        parameters={"type": "object"},
        output=ToolOutput(schema={"type": "string"}, render=lambda args, value: [TextBlock(text=value), IMAGE]),
        execute=execute,
    )


@pytest.mark.anyio
async def test_images_and_contexts_of_sub_calls_are_deferred_onto_the_outer_result() -> None:
    harness = code_harness(tools=(picture_tool(),))
    result = await harness.execute(run_code("return await tools.picture({})"))
    assert result.value == {"logs": [], "result": "a picture"}
    image, note = result.additional_contexts
    assert image.source == "tools-code-mode" and tuple(image.content) == (TextBlock(text="a picture"), IMAGE)
    assert note.source == "picture" and tuple(note.content) == (TextBlock(text="note from picture"),)
    assert result.concludes_turn is True


@pytest.mark.anyio
async def test_contexts_survive_a_failing_program_but_a_blocked_sub_call_gives_none() -> None:
    class BlockPicture:
        @hookimpl
        async def tools_post_execute(self, execution: Execution, result: Any, call_next: Any) -> Any:
            if execution.call_id == "c2:code:1":
                return Block(feedback=[TextBlock(text="no pictures")])
            return await call_next()

    harness = code_harness(BlockPicture(), tools=(picture_tool(),))
    failed = await harness.execute(run_code('await tools.picture({})\nraise ValueError("after")', call_id="c1"))
    assert failed.error is not None and failed.error.info is not None and failed.error.info.code == "CODE_RUN_FAILED"
    assert [context.source for context in failed.additional_contexts] == ["tools-code-mode", "picture"]
    assert failed.concludes_turn is False  # a failure never concludes the turn
    blocked = await harness.execute(
        run_code("try:\n    await tools.picture({})\nexcept ToolCallError as exc:\n    return str(exc)", call_id="c2")
    )
    assert blocked.value == {"logs": [], "result": "no pictures"}
    assert blocked.additional_contexts == () and blocked.concludes_turn is False


# --- Scheduling (§6.4) ----------------------------------------------------------------------------------


class Gate:
    """Bodies that record when they run and wait for the test to release them in a chosen order."""

    def __init__(self) -> None:
        self.running = 0
        self.most = 0
        self.started: list[str] = []
        self.release: dict[str, anyio.Event] = {}
        self.changed = anyio.Event()

    async def body(self, args: Any, ctx: Any) -> str:
        text = args["text"]
        self.running += 1
        self.most = max(self.most, self.running)
        self.started.append(text)
        self.changed.set()
        self.changed = anyio.Event()
        try:
            await self.release.setdefault(text, anyio.Event()).wait()
        finally:
            self.running -= 1
        return text

    async def wait_started(self, count: int) -> None:
        while len(self.started) < count:
            await self.changed.wait()


GATHER = """
results = []
async def one(text):
    results.append(await tools.work({"text": text}))
async with anyio.create_task_group() as group:
    for text in ("a", "b", "c"):
        group.start_soon(one, text)
return results
"""


@pytest.mark.anyio
async def test_concurrency_safe_sub_calls_overlap_and_commit_in_submission_order() -> None:
    gate = Gate()
    policy = PolicyLog()
    harness = code_harness(policy, tools=(echo_tool("work", safe=True, body=gate.body),))
    outcome: list[Any] = []

    async def call() -> None:
        outcome.append(await harness.execute(run_code(GATHER)))

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        await gate.wait_started(3)
        for text in ("c", "b", "a"):  # finish in reverse
            gate.release.setdefault(text, anyio.Event()).set()
    assert gate.most == 3
    assert outcome[0].value == {"logs": [], "result": ["a", "b", "c"]}
    committed = [execution.call_id for execution, _ in policy.results]
    assert committed == ["c1:code:1", "c1:code:2", "c1:code:3", "c1"]


@pytest.mark.anyio
async def test_exclusive_sub_calls_run_one_at_a_time() -> None:
    gate = Gate()
    harness = code_harness(tools=(echo_tool("work", body=gate.body),))
    for text in ("a", "b", "c"):
        gate.release[text] = anyio.Event()
        gate.release[text].set()
    result = await harness.execute(run_code(GATHER))
    assert gate.most == 1 and gate.started == ["a", "b", "c"]
    assert result.value == {"logs": [], "result": ["a", "b", "c"]}


@pytest.mark.anyio
async def test_max_parallel_sub_calls_bounds_the_overlap() -> None:
    gate = Gate()
    harness = code_harness(tools=(echo_tool("work", safe=True, body=gate.body),), config={"max_parallel_sub_calls": 2})
    outcome: list[Any] = []

    async def call() -> None:
        outcome.append(await harness.execute(run_code(GATHER)))

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        await gate.wait_started(2)
        assert gate.started == ["a", "b"]
        gate.release.setdefault("a", anyio.Event()).set()
        await gate.wait_started(3)
        gate.release.setdefault("b", anyio.Event()).set()
        gate.release.setdefault("c", anyio.Event()).set()
    assert gate.most == 2
    assert outcome[0].value == {"logs": [], "result": ["a", "b", "c"]}


@pytest.mark.anyio
async def test_an_exclusive_sub_call_waits_for_the_parallel_ones_before_it_and_holds_the_barrier() -> None:
    order: list[str] = []

    async def record(args: Any, ctx: Any) -> str:
        order.append(f"start {args['text']}")
        await anyio.sleep(0)
        order.append(f"end {args['text']}")
        return args["text"]

    harness = code_harness(tools=(echo_tool("par", safe=True, body=record), echo_tool("excl", body=record)))
    program = """
async def one(name, text):
    await getattr(tools, name)({"text": text})
async with anyio.create_task_group() as group:
    group.start_soon(one, "par", "p1")
    group.start_soon(one, "par", "p2")
    group.start_soon(one, "excl", "x")
    group.start_soon(one, "par", "p3")
"""
    result = await harness.execute(run_code(program))
    assert not result.is_error, result.error
    x_start, x_end = order.index("start x"), order.index("end x")
    assert x_end == x_start + 1
    assert order.index("end p1") < x_start and order.index("end p2") < x_start
    assert order.index("start p3") > x_end


@pytest.mark.anyio
async def test_cancelling_the_task_awaiting_run_code_still_records_every_started_sub_call() -> None:
    policy = PolicyLog()
    sink = MemoryEventSink()
    started = anyio.Event()

    async def stuck(args: Any, ctx: Any) -> str:
        started.set()
        await anyio.sleep_forever()
        return "never"

    harness = code_harness(policy, sink=sink, tools=(echo_tool("stuck", body=stuck),))
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as group:
            group.start_soon(harness.execute, run_code('await tools.stuck({"text": "x"})'))
            await started.wait()
            scope.cancel()
    # Both the sub-call and the outer call got their one tools_result, as cancellation results.
    assert [execution.call_id for execution, _ in policy.results] == ["c1:code:1", "c1"]
    sub = policy.result_of("c1:code:1")
    assert sub.error is not None and sub.error.info is not None and sub.error.info.code == "ABORTED"
    assert [data["sub_call_id"] for data in sink.of_kind("tool/code-dispatch")] == ["c1:code:1"]


@pytest.mark.anyio
async def test_a_sub_call_whose_pre_execute_raises_is_an_error_with_its_pair_of_events() -> None:
    class Broken:
        @hookimpl
        async def tools_pre_execute(self, execution: Execution, call_next: Any) -> Any:
            if execution.parent is not None:
                raise RuntimeError("policy store unreachable")
            return await call_next()

    sink = MemoryEventSink()
    harness = code_harness(Broken(), sink=sink)
    result = await harness.execute(
        run_code('try:\n    await tools.echo({"text": "x"})\nexcept ToolCallError as exc:\n    return str(exc)')
    )
    assert result.value == {"logs": [], "result": "policy store unreachable"}
    (settled,) = sink.of_kind("tool/code-dispatch")
    assert settled["is_error"] is True


@pytest.mark.anyio
async def test_a_tool_unregistered_after_the_run_started_fails_as_unknown() -> None:
    ran: list[str] = []
    harness = code_harness()

    async def body(args: Any, ctx: Any) -> str:
        dispose_late()
        ran.append("first")
        return "first"

    dispose_late = harness.tools.register(echo_tool("late", body=body))
    result = await harness.execute(
        run_code(
            """
            await tools.late({})
            try:
                await tools.late({})
            except ToolCallError as exc:
                return str(exc)
            """
        )
    )
    assert result.value == {"logs": [], "result": 'unknown tool "late"'}
    assert ran == ["first"]


class CancelsASecondCall(PythonRuntime):
    """Submits two exclusive calls, then stops waiting for the second before it can start."""

    def __init__(self) -> None:
        super().__init__()
        self.body_started = anyio.Event()
        self.release = anyio.Event()

    async def run(self, request: CodeRunRequest) -> CodeRunResult:
        outcomes: list[str] = []

        async def call(text: str) -> None:
            outcomes.append(await request.call_tool("slow", {"text": text}))

        async with anyio.create_task_group() as group:
            group.start_soon(call, "first")
            await self.body_started.wait()
            with anyio.CancelScope() as scope:
                scope.cancel()
                await call("second")
            self.release.set()
        return CodeRunResult(logs=tuple(outcomes))


@pytest.mark.anyio
async def test_a_queued_sub_call_whose_waiter_was_cancelled_never_starts() -> None:
    runtime = CancelsASecondCall()
    policy = PolicyLog()

    async def slow(args: Any, ctx: Any) -> str:
        runtime.body_started.set()
        await runtime.release.wait()
        return args["text"]

    harness = code_harness(policy, runtime=runtime, tools=(echo_tool("slow", body=slow),))
    result = await harness.execute(run_code("ignored"))
    assert result.value == {"logs": ["first"]}
    assert [execution.call_id for execution in policy.pre] == ["c1", "c1:code:1"]


class StopsAfterAbort(PythonRuntime):
    """One sub-call in flight and two queued when the outer call is aborted; one more call after."""

    def __init__(self) -> None:
        super().__init__()
        self.outcomes: dict[str, str] = {}
        self.body_started = anyio.Event()

    async def run(self, request: CodeRunRequest) -> CodeRunResult:
        async def call(text: str) -> None:
            try:
                await request.call_tool("slow", {"text": text})
                self.outcomes[text] = "ok"
            except ToolCallError as exc:
                self.outcomes[text] = str(exc)

        async with anyio.create_task_group() as group:
            group.start_soon(call, "first")
            await self.body_started.wait()
            group.start_soon(call, "second")
            group.start_soon(call, "third")
            await anyio.sleep(0.05)  # both are queued behind the exclusive first call
            await request.signal.wait()
        await call("late")
        return CodeRunResult(logs=())


@pytest.mark.anyio
async def test_an_outer_abort_ends_the_run_at_once_with_the_aborts_reason() -> None:
    runtime = StopsAfterAbort()
    policy = PolicyLog()
    sink = MemoryEventSink()
    signal = Signal()

    async def slow(args: Any, ctx: Any) -> str:
        runtime.body_started.set()
        await ctx.signal.wait()
        return "late"

    harness = code_harness(policy, runtime=runtime, sink=sink, tools=(echo_tool("slow", body=slow),))
    async with anyio.create_task_group() as group:
        group.start_soon(harness.execute, run_code("ignored", signal=signal))
        await runtime.body_started.wait()
        await anyio.sleep(0.1)
        signal.abort("user pressed stop")
    # reference §6.3: in flight → discarded, queued → abandoned, later → not dispatched; the run
    # is over for the abort's own reason, not "run_code settled".
    assert runtime.outcomes == {
        "second": "run_code run is over (user pressed stop); slow tool call abandoned",
        "third": "run_code run is over (user pressed stop); slow tool call abandoned",
        "first": "run_code run is over (user pressed stop); slow result discarded",
        "late": "run_code run is over (user pressed stop); slow not dispatched",
    }
    # Only the started sub-call was numbered and logged.
    assert [data["sub_call_id"] for data in sink.of_kind("tool/code-dispatch-start")] == ["c1:code:1"]
    assert [data["sub_call_id"] for data in sink.of_kind("tool/code-dispatch")] == ["c1:code:1"]
    assert [execution.call_id for execution, _ in policy.results] == ["c1:code:1", "c1"]


class SlowSpill:
    """A dispatch-log listener that takes its time (a spill to slow storage)."""

    def __init__(self) -> None:
        self.entered = anyio.Event()

    @hookimpl
    async def tools_code_dispatch_log(self, dispatch: Any, call_next: Any) -> Any:
        self.entered.set()
        await anyio.sleep_forever()
        return await call_next()


@pytest.mark.anyio
async def test_a_cancelled_dispatch_log_listener_still_leaves_one_settle_event() -> None:
    sink = MemoryEventSink()
    spill = SlowSpill()
    harness = code_harness(spill, sink=sink)
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as group:
            group.start_soon(harness.execute, run_code('return await tools.echo({"text": "kept"})'))
            await spill.entered.wait()
            scope.cancel()
    (logged,) = sink.of_kind("tool/code-dispatch")
    assert logged["sub_call_id"] == "c1:code:1" and logged["content"] == (TextBlock(text="kept"),)
