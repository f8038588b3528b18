"""Per-call overhead of Harness.execute against a raw pluggy baseline measured in the same run.

Loaded pipeline: a no-op tool, 5 pass-through listeners on each of tools_pre_execute,
tools_execute and tools_post_execute, and 3 abstaining guards. Baseline: 4 plain pluggy hook
calls with 5 impls each (what "5 listeners on 4 hooks" costs when pluggy runs them itself).
Prints median per-call times and the ratio; ``--write`` also records them in docs/performance.md.
Goal (issue 2): ratio <= 3.

    python bench/pipeline_overhead.py [--calls 5000] [--repeats 7] [--write]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path

import anyio
import pluggy

from harness_core import Harness, TextBlock, ToolCall, ToolDefinition, ToolOutput, hookimpl, tool

sys.path.insert(0, str(Path(__file__).resolve().parent))
from performance_doc import replace_section  # noqa: E402  (a sibling script module)

ROOT = Path(__file__).resolve().parent.parent


async def noop_body(args, ctx):
    return "ok"


NOOP = ToolDefinition(
    name="noop",
    description="Return ok.",
    parameters={"type": "object", "properties": {}},
    output=ToolOutput(schema={"type": "string"}, render=lambda args, value: [TextBlock(text=value)]),
    execute=noop_body,
)


@tool
async def typed_noop() -> str:
    """Return ok (built with @tool, so pydantic checks the arguments)."""
    return "ok"


class PassThrough:
    @hookimpl
    async def tools_pre_execute(self, execution, call_next):
        return await call_next()

    @hookimpl
    async def tools_execute(self, execution, call_next):
        return await call_next()

    @hookimpl
    async def tools_post_execute(self, execution, result, call_next):
        return await call_next()


class Abstain:
    @hookimpl
    def tools_guard(self, execution):
        return None


# --- the pluggy baseline ---------------------------------------------------------------------

spec = pluggy.HookspecMarker("bench")
impl = pluggy.HookimplMarker("bench")


class BaselineSpecs:
    @spec
    def pre(self, execution): ...

    @spec
    def around(self, execution): ...

    @spec
    def post(self, execution, result): ...

    @spec
    def observe(self, execution, result): ...


class BaselineImpl:
    @impl
    def pre(self, execution):
        return None

    @impl
    def around(self, execution):
        return None

    @impl
    def post(self, execution, result):
        return None

    @impl
    def observe(self, execution, result):
        return None


def baseline_manager() -> pluggy.PluginManager:
    pm = pluggy.PluginManager("bench")
    pm.add_hookspecs(BaselineSpecs)
    for _ in range(5):
        pm.register(BaselineImpl())
    return pm


def time_baseline(pm: pluggy.PluginManager, calls: int) -> float:
    hook = pm.hook
    execution, result = object(), object()
    start = time.perf_counter()
    for _ in range(calls):
        hook.pre(execution=execution)
        hook.around(execution=execution)
        hook.post(execution=execution, result=result)
        hook.observe(execution=execution, result=result)
    return (time.perf_counter() - start) / calls


async def time_harness(harness: Harness, name: str, calls: int) -> float:
    call = ToolCall(call_id="bench", name=name, arguments={})
    execute = harness.execute
    start = time.perf_counter()
    for _ in range(calls):
        result = await execute(call)
    elapsed = (time.perf_counter() - start) / calls
    assert not result.is_error, result
    return elapsed


def make_harness(loaded: bool) -> Harness:
    plugins: list[object] = []
    if loaded:
        plugins = [PassThrough() for _ in range(5)] + [Abstain() for _ in range(3)]
    harness = Harness(plugins=plugins)
    harness.tools.register(NOOP)
    harness.tools.register(typed_noop)
    return harness


async def measure(calls: int, repeats: int) -> dict[str, float]:
    pm = baseline_manager()
    bare, loaded = make_harness(False), make_harness(True)
    samples: dict[str, list[float]] = {"baseline": [], "bare": [], "loaded": [], "loaded_typed": []}
    # Warm up every path, then interleave the configurations and rotate their order per repeat.
    time_baseline(pm, calls)
    for harness in (bare, loaded):
        await time_harness(harness, "noop", calls)
    await time_harness(loaded, "typed_noop", calls)
    for repeat in range(repeats):
        order = ["baseline", "bare", "loaded", "loaded_typed"]
        order = order[repeat % 4 :] + order[: repeat % 4]
        for which in order:
            if which == "baseline":
                samples[which].append(time_baseline(pm, calls))
            elif which == "bare":
                samples[which].append(await time_harness(bare, "noop", calls))
            elif which == "loaded":
                samples[which].append(await time_harness(loaded, "noop", calls))
            else:
                samples[which].append(await time_harness(loaded, "typed_noop", calls))
    return {name: statistics.median(values) * 1e6 for name, values in samples.items()}


def report(figures: dict[str, float], calls: int, repeats: int) -> str:
    ratio = figures["loaded"] / figures["baseline"]
    lines = [
        "## Pipeline overhead (`bench/pipeline_overhead.py`)",
        "",
        f"Python {platform.python_version()}, pluggy {pluggy.__version__}, {platform.machine()}; "
        f"median of {repeats} repeats of {calls} sequential awaited calls.",
        "",
        "| configuration | µs per call |",
        "|---|---|",
        f"| pluggy baseline: 4 plain hook calls × 5 impls | {figures['baseline']:.1f} |",
        f"| `Harness.execute`, no-op tool, no plugins | {figures['bare']:.1f} |",
        f"| `Harness.execute`, 5 listeners on each waterfall + 3 guards | {figures['loaded']:.1f} |",
        f"| same, tool built with `@tool` (pydantic argument check) | {figures['loaded_typed']:.1f} |",
        "",
        f"**Ratio loaded / baseline: {ratio:.2f}** (goal: ≤ 3).",
        "",
    ]
    return "\n".join(lines)


def write_report(text: str) -> None:
    replace_section(text, "## Pipeline overhead (`bench/pipeline_overhead.py`)", ROOT / "docs" / "performance.md")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000, help="calls per timed repeat (default 5000)")
    parser.add_argument("--repeats", type=int, default=7, help="timed repeats per configuration (default 7)")
    parser.add_argument("--write", action="store_true", help="record the figures in docs/performance.md")
    options = parser.parse_args()
    figures = anyio.run(measure, options.calls, options.repeats)
    text = report(figures, options.calls, options.repeats)
    print(text)
    if options.write:
        write_report(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
