"""The demo: a short scripted session through the pipeline, printing what happened to each call.

Run it with ``python -m harness_core.demo`` (or ``python3 dev.py demo`` from a fresh clone). It uses
embedded defaults only: two small tools, four example policy plugins and a scripted approver, so
every stage of the pipeline shows up at least once.
"""

from __future__ import annotations

import time
from typing import Any

import anyio

from . import (
    Accept,
    Ask,
    ContextMessage,
    Deny,
    Execution,
    Harness,
    MemoryEventSink,
    RunContext,
    Signal,
    TextBlock,
    ToolCall,
    ToolResult,
    hookimpl,
    tool,
)

# --- Tools -------------------------------------------------------------------------------------


@tool(is_concurrency_safe=lambda args: True)
async def lookup(topic: str, ctx: RunContext) -> str:
    """Look a topic up in a tiny built-in glossary."""
    glossary = {
        "guard": "a synchronous check that can only deny or abstain",
        "waterfall": "a chain of listeners, each deciding whether to call the next",
        "signal": "a cooperative cancellation flag with a reason",
    }
    await anyio.sleep(0.05)  # pretend to do I/O, so a batch shows the overlap
    if topic not in glossary:
        ctx.defer_context(ContextMessage(content=[TextBlock(text=f"(no entry for {topic!r})")], source="lookup"))
        return f"{topic}: not in the glossary"
    return f"{topic}: {glossary[topic]}"


NOTES: dict[str, str] = {}


@tool
async def write_note(title: str, text: str) -> dict[str, Any]:
    """Save a short note under a title."""
    NOTES[title] = text
    return {"saved": title, "characters": len(text)}


@tool
async def wait_forever(ctx: RunContext) -> str:
    """Sleep until cancelled (shows cooperative cancellation)."""
    await ctx.signal.wait()
    return "woke up"


# --- Example policy plugins ---------------------------------------------------------------------


class NoSecrets:
    """tools_pre_execute: deny any call whose arguments mention a password."""

    @hookimpl
    async def tools_pre_execute(self, execution: Execution, call_next: Any) -> Any:
        if "password" in str(execution.arguments).lower():
            return Deny(reason="arguments mention a password; not sending that anywhere")
        return await call_next()


class AskBeforeWriting:
    """tools_pre_execute: writes need a human's approval."""

    @hookimpl
    async def tools_pre_execute(self, execution: Execution, call_next: Any) -> Any:
        decision = await call_next()
        if execution.name == "write_note" and not isinstance(decision, Deny):
            return Ask(reason="writing a note changes state")
        return decision


class ScriptedApprover:
    """approval_request: a stand-in for a human, approving notes except the one titled 'todo'."""

    @hookimpl
    async def approval_request(self, request: Any) -> str:
        return "rejected" if request.call_id == "c5" else "allowed-once"


class ReservedTitles:
    """tools_guard: the 'system' title is never writable, whatever the listeners or approver say."""

    @hookimpl
    def tools_guard(self, execution: Execution) -> str | None:
        if execution.name == "write_note" and execution.arguments.get("title") == "system":
            return 'the note title "system" is reserved'
        return None


class Stopwatch:
    """tools_execute: time each body; tools_post_execute: add the time to the model-facing text."""

    def __init__(self) -> None:
        self.elapsed: dict[str, float] = {}

    @hookimpl
    async def tools_execute(self, execution: Any, call_next: Any) -> ToolResult:
        start = time.perf_counter()
        try:
            return await call_next()  # type: ignore[no-any-return]
        finally:
            self.elapsed[execution.call_id] = time.perf_counter() - start

    @hookimpl
    async def tools_post_execute(self, execution: Execution, result: ToolResult, call_next: Any) -> Any:
        decision = await call_next()
        if execution.call_id in self.elapsed and not result.is_error and isinstance(decision, Accept):
            took = self.elapsed[execution.call_id] * 1000
            text = "".join(b.text for b in result.content if isinstance(b, TextBlock))
            return Accept(content=[TextBlock(text=f"{text}  [{took:.0f} ms]")], additional_contexts=decision.additional_contexts)
        return decision


class Narrator:
    """tools_result: print the final outcome of every call, exactly once per call."""

    @hookimpl
    def tools_result(self, execution: Execution, result: ToolResult) -> None:
        text = " | ".join(b.text for b in result.content if isinstance(b, TextBlock))
        status = "error" if result.is_error else "ok"
        code = f" [{result.error.info.code}]" if result.error and result.error.info else ""
        print(f"    -> {status}{code}: {text}")
        for context in result.additional_contexts:
            print(f"       + context from {context.source}: {context.content[0].to_json().get('text')}")


# --- The session --------------------------------------------------------------------------------


def _show(call: ToolCall, what: str) -> None:
    print(f"\n{call.call_id}  {call.name}({call.arguments})  — {what}")


async def main() -> None:
    events = MemoryEventSink()
    harness = Harness(
        plugins=[Narrator(), ScriptedApprover(), ReservedTitles(), AskBeforeWriting(), NoSecrets(), Stopwatch()],
        events=events,
    )
    for definition in (lookup, write_note, wait_forever):
        harness.tools.register(definition)

    print("Harness demo: every call goes through pre-execute, approval, guards, execute wrappers,")
    print("post-execute, the finalizer and tools_result. Tools the model sees:")
    for schema in harness.tools.schemas():
        print(f"  - {schema['name']}: {schema['description']}")

    script = [
        (ToolCall(call_id="c1", name="lookup", arguments={"topic": "guard"}, agent="main"), "allowed, timed by a wrapper"),
        (ToolCall(call_id="c2", name="lookup", arguments={"topic": "my password"}, agent="main"), "denied by a listener"),
        (ToolCall(call_id="c3", name="write_note", arguments={"title": "plan", "text": "ship it"}, agent="main"), "asks; the approver allows once"),
        (ToolCall(call_id="c4", name="write_note", arguments={"title": "system", "text": "x"}, agent="main"), "approved, but a guard denies"),
        (ToolCall(call_id="c5", name="write_note", arguments={"title": "todo", "text": "later"}, agent="main"), "asks; the approver rejects"),
        (ToolCall(call_id="c6", name="write_note", arguments={"title": "plan"}, agent="main"), "bad arguments: INVALID_ARGS inside the body stage"),
        (ToolCall(call_id="c7", name="delete_everything", arguments={}, agent="main"), "no such tool: UNKNOWN_TOOL at dispatch"),
        (ToolCall(call_id="c8", name="lookup", arguments={"topic": float("nan")}, agent="main"), "arguments are not lossless JSON"),
    ]
    for call, what in script:
        _show(call, what)
        await harness.execute(call)

    print("\nc9..c11  a batch of three lookups: policy in model order, bodies overlap, results in order")
    start = time.perf_counter()
    batch = [
        ToolCall(call_id=f"c{n}", name="lookup", arguments={"topic": topic}, agent="main")
        for n, topic in ((9, "waterfall"), (10, "signal"), (11, "pipeline"))
    ]
    await harness.execute_batch(batch)
    print(f"    (three 50 ms bodies took {(time.perf_counter() - start) * 1000:.0f} ms in all)")

    signal = Signal()
    cancel = ToolCall(call_id="c12", name="wait_forever", arguments={}, agent="main", signal=signal)
    _show(cancel, "cancelled by its caller after 20 ms; the body sees the signal and returns")
    async with anyio.create_task_group() as group:

        async def stop_soon() -> None:
            await anyio.sleep(0.02)
            signal.abort("the user pressed stop")

        group.start_soon(stop_soon)
        await harness.execute(cancel)

    counts: dict[str, int] = {}
    for event in events.events:
        counts[event.kind] = counts.get(event.kind, 0) + 1
    print("\nSession events recorded:", ", ".join(f"{kind} ×{n}" for kind, n in counts.items()))
    print("Notes saved:", NOTES)
    await harness.aclose()


if __name__ == "__main__":
    anyio.run(main)
