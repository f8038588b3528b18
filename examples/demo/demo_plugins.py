"""The demo project's own plugins: three small tools and example policies for every stage.

`harness.toml` loads them through `[plugins] modules`, the way a project keeps local plugins
next to its configuration without packaging them.
"""

from __future__ import annotations

from typing import Any

import anyio

from harness_core import (
    Accept,
    Ask,
    ContextMessage,
    Deny,
    RunContext,
    TextBlock,
    hookimpl,
    tool,
)


@tool(is_concurrency_safe=lambda args: True)
async def lookup(topic: str, ctx: RunContext) -> str:
    """Look a topic up in a tiny built-in glossary."""
    glossary = {
        "guard": "a synchronous check that can only deny or abstain",
        "waterfall": "a chain of listeners, each deciding whether to call the next",
        "signal": "a cooperative cancellation flag with a reason",
    }
    await anyio.sleep(0.05)  # pretend to do I/O, so the batch shows the overlap
    if topic not in glossary:
        ctx.defer_context(ContextMessage(content=[TextBlock(text=f"(no entry for {topic!r})")], source="lookup"))
        return f"{topic}: not in the glossary"
    return f"{topic}: {glossary[topic]}"


@tool
async def save_file(file_path: str, content: str) -> str:
    """Pretend to save a file (the demo writes nothing to disk)."""
    return f"saved {len(content)} characters to {file_path}"


@tool
async def fetch_price(symbol: str) -> float:
    """Fetch a price from an upstream service (always times out in the demo)."""
    raise TimeoutError(f"the price service did not answer for {symbol}")


class DemoTools:
    """Registers the demo tools."""

    @hookimpl
    def harness_register_tools(self, register: Any) -> None:
        register(lookup)
        register(save_file)
        register(fetch_price)


class NoSecrets:
    """tools_pre_execute: deny any call whose arguments mention a password."""

    @hookimpl
    async def tools_pre_execute(self, execution: Any, call_next: Any) -> Any:
        if "password" in str(execution.arguments).lower():
            return Deny(reason="arguments mention a password; not sending that anywhere")
        return await call_next()


class AskBeforeSaving:
    """tools_pre_execute: saving a file needs a human's approval."""

    @hookimpl
    async def tools_pre_execute(self, execution: Any, call_next: Any) -> Any:
        decision = await call_next()
        if execution.name == "save_file" and not isinstance(decision, Deny):
            return Ask(reason="saving a file changes the workspace")
        return decision


class Timing:
    """tools_post_execute: adds a note to successful lookups, as a policy might add context."""

    @hookimpl
    async def tools_post_execute(self, execution: Any, result: Any, call_next: Any) -> Any:
        decision = await call_next()
        if execution.name == "lookup" and not result.is_error and isinstance(decision, Accept):
            note = ContextMessage(content=[TextBlock(text="lookups come from a static glossary")], source="demo")
            return Accept(additional_contexts=[*decision.additional_contexts, note])
        return decision
