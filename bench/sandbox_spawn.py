"""Per-call cost of spawning `true` through each working sandbox backend against spawning it unconfined.

Baseline: `subprocess.run(["true"])`. Measured: the same call with the argv that the sandbox
plugin's `sandbox_confine` returns for a workspace-write policy without network, for every backend
whose probe works on this machine (goal for bubblewrap: at most 5 ms more than the baseline).
Each figure is the median of many calls, run interleaved. ``--write`` records the figures in
docs/performance.md.

    python bench/sandbox_spawn.py [--runs 200] [--write]
"""

from __future__ import annotations

import argparse
import logging
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from performance_doc import replace_section  # noqa: E402  (a sibling script module)

ROOT = Path(__file__).resolve().parent.parent
SECTION = "## Sandbox spawn (`bench/sandbox_spawn.py`)"
BACKENDS = ("bubblewrap", "landlock", "seatbelt")
#: Extra milliseconds per spawn each backend may cost (None: reported, no goal).
GOALS: dict[str, float | None] = {"bubblewrap": 5.0, "landlock": None, "seatbelt": None}


def confined_commands(project: str) -> tuple[dict[str, list[str]], dict[str, str]]:
    """``(argv of `true` per working backend, why each other backend does not work)``."""
    from harness_core import ConfigSource, Harness
    from harness_core.config import Layer
    from harness_sandbox import SandboxPlugin

    # A backend that does not work here is reported in the table, not as a start-up warning.
    logging.getLogger("harness.sandbox").setLevel(logging.ERROR)
    argvs: dict[str, list[str]] = {}
    unusable: dict[str, str] = {}
    for name in BACKENDS:
        plugin = SandboxPlugin()
        source = ConfigSource(layers=(Layer("bench", {"sandbox": {"backend": name}}),), project_dir=Path(project))
        harness = Harness(plugins=[plugin], config=source)
        report = plugin.probe_report()
        if report.active is None:
            unusable[name] = next(verdict.detail for verdict in report.verdicts if verdict.backend == name)
            continue
        confined = harness.plugin_manager.hook.sandbox_confine(argv=["true"], policy=plugin.policy(), cwd=None)
        argvs[name] = list(confined.argv)
    return argvs, unusable


def timed(argv: list[str], cwd: str) -> float:
    start = time.perf_counter()
    completed = subprocess.run(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if completed.returncode != 0:
        raise SystemExit(f"{argv[0]} failed ({completed.returncode}): {completed.stderr.decode()[-500:]}")
    return elapsed * 1000


def measure(runs: int) -> tuple[dict[str, float], dict[str, str]]:
    """Median ms per spawn: ``baseline`` plus each working backend; and why the others do not work."""
    with tempfile.TemporaryDirectory() as project:
        argvs, unusable = confined_commands(project)
        commands = {"baseline": ["true"], **argvs}
        samples: dict[str, list[float]] = {name: [] for name in commands}
        for argv in commands.values():
            for _ in range(5):  # warm the page cache and the interpreter's own caches
                timed(argv, project)
        for _ in range(runs):
            for name, argv in commands.items():
                samples[name].append(timed(argv, project))
    return {name: statistics.median(values) for name, values in samples.items()}, unusable


def report(figures: dict[str, float], unusable: dict[str, str], runs: int) -> str:
    base = figures["baseline"]
    lines = [
        SECTION,
        "",
        f"Python {platform.python_version()}, {platform.system()} {platform.release()} {platform.machine()}; "
        f"median of {runs} interleaved calls each; policy workspace-write, network off.",
        "",
        "| command | ms per call | extra ms | goal |",
        "|---|---|---|---|",
        f'| baseline: `subprocess.run(["true"])` | {base:.2f} | — | — |',
    ]
    for name in BACKENDS:
        if name in figures:
            goal = GOALS[name]
            extra = figures[name] - base
            verdict = "—" if goal is None else (f"≤ +{goal:g} ({'met' if extra <= goal else 'missed'})")
            lines.append(f"| `true` under {name} | {figures[name]:.2f} | +{extra:.2f} | {verdict} |")
    lines.append("")
    for name, why in unusable.items():
        lines.append(f"- {name}: not measured ({why})")
    if unusable:
        lines.append("")
    return "\n".join(lines)


def write_report(text: str) -> None:
    replace_section(text, SECTION, ROOT / "docs" / "performance.md")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="calls per command (default 200)")
    parser.add_argument("--write", action="store_true", help="record the figures in docs/performance.md")
    options = parser.parse_args()
    figures, unusable = measure(options.runs)
    text = report(figures, unusable, options.runs)
    print(text)
    if options.write:
        write_report(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
