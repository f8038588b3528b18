"""Cost of the Claude Code hook bridge against spawning the same hook command directly, same run.

Measured, for two hooks that read their JSON and allow — a Python one (the usual kind: interpreter
start-up dominates, goal ≤ 1.2×) and a bare shell one (the worst case for the ratio) — a call
through the bridge and the whole pipeline against `subprocess.run` of the same command with the
same JSON on stdin; and four matching hooks that each sleep 200 ms, which the bridge runs in
parallel (goal: the call finishes in under 300 ms). ``--write`` records the
figures in docs/performance.md.

    python bench/hook_bridge.py [--runs 60] [--write]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from performance_doc import replace_section  # noqa: E402  (a sibling script module)

from harness_core import Harness, TextBlock, ToolCall, ToolDefinition, ToolOutput  # noqa: E402
from harness_core.config import ConfigSource, Layer  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SECTION = "## Hook bridge (`bench/hook_bridge.py`)"
PYTHON_HOOK = f"{sys.executable} -I -S -c 'import json, sys; json.load(sys.stdin)'"
SHELL_HOOK = "cat >/dev/null"
SLEEPER = "cat >/dev/null; sleep 0.2"


async def _noop(args: object, ctx: object) -> str:
    return "ok"


NOOP = ToolDefinition(
    name="bash",
    description="does nothing",
    parameters={"type": "object"},
    output=ToolOutput(schema={"type": "string"}, render=lambda args, value: [TextBlock(text=value)]),
    execute=_noop,
)


def project_with(commands: list[str]) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="harness-hook-bench-"))
    (folder / ".claude").mkdir()
    hooks = {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": c} for c in commands]}]}
    (folder / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))
    return folder


def harness_for(project: Path) -> Harness:
    from harness_hooks_claude_code import ClaudeCodeHooks

    source = ConfigSource(layers=(Layer("config", {"hooks": {"claude_code": {"user_settings": False}}}),), project_dir=project)
    harness = Harness(plugins=[ClaudeCodeHooks()], config=source)
    harness.tools.register(NOOP)
    return harness


async def through_bridge(harness: Harness, runs: int) -> list[float]:
    samples = []
    for index in range(runs):
        call = ToolCall(call_id=f"b{index}", name="bash", arguments={"command": "ls"}, agent="main")
        start = time.perf_counter()
        result = await harness.execute(call)
        samples.append((time.perf_counter() - start) * 1000)
        assert not result.is_error, result
    return samples


def direct(runs: int, cwd: Path, hook: str) -> list[float]:
    payload = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}}).encode()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(["sh", "-c", hook], input=payload, capture_output=True, cwd=cwd, check=True)
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def compare(hook: str, runs: int) -> tuple[float, float]:
    """Median ms of (through the bridge, direct) for one hook command, interleaved in blocks."""
    project = project_with([hook])
    harness = harness_for(project)
    anyio.run(through_bridge, harness, 5)  # warm up both paths
    direct(5, project, hook)
    bridged: list[float] = []
    spawned: list[float] = []
    for _ in range(max(1, runs // 10)):
        bridged += anyio.run(through_bridge, harness, 10)
        spawned += direct(10, project, hook)
    return statistics.median(bridged), statistics.median(spawned)


def measure(runs: int) -> dict[str, float]:
    python_bridge, python_direct = compare(PYTHON_HOOK, runs)
    shell_bridge, shell_direct = compare(SHELL_HOOK, runs)
    four = anyio.run(through_bridge, harness_for(project_with([f"{SLEEPER} # {n}" for n in range(4)])), 5)
    return {
        "python_bridge": python_bridge,
        "python_direct": python_direct,
        "shell_bridge": shell_bridge,
        "shell_direct": shell_direct,
        "four_sleeping": statistics.median(four),
    }


def report(figures: dict[str, float], runs: int) -> str:
    python_ratio = figures["python_bridge"] / figures["python_direct"]
    shell_ratio = figures["shell_bridge"] / figures["shell_direct"]
    return "\n".join(
        [
            SECTION,
            "",
            f"Median of {runs} calls per path, interleaved. Each hook reads its JSON and allows.",
            "",
            "| measurement | direct ms | through the bridge ms | ratio | goal |",
            "|---|---|---|---|---|",
            f"| Python hook (`python -I -S -c 'json.load(sys.stdin)'`) | {figures['python_direct']:.2f} | "
            f"{figures['python_bridge']:.2f} | {python_ratio:.2f} | ≤ 1.2 |",
            f"| shell hook (`sh -c 'cat >/dev/null'`), the worst case | {figures['shell_direct']:.2f} | "
            f"{figures['shell_bridge']:.2f} | {shell_ratio:.2f} | — |",
            "",
            f"Four matching hooks that each sleep 200 ms: the call takes {figures['four_sleeping']:.0f} ms "
            "(they run in parallel; goal < 300 ms).",
            "",
        ]
    )


def write_report(text: str) -> None:
    replace_section(text, SECTION, ROOT / "docs" / "performance.md")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=60, help="calls per path (default 60)")
    parser.add_argument("--write", action="store_true", help="record the figures in docs/performance.md")
    options = parser.parse_args()
    text = report(measure(options.runs), options.runs)
    print(text)
    if options.write:
        write_report(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
