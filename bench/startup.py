"""Cold-start time of the `harness` command against importing its own dependencies, same run.

Baseline: `python -c "import pluggy, pydantic, anyio"` (what any pluggy/pydantic host pays).
Measured: `harness --help` (goal ≤ 1.5× the baseline) and `harness plugins` with every plugin of
the workspace installed (goal ≤ 2×). Each figure is the median of many fresh processes, run
interleaved. ``--write`` records the figures in docs/performance.md.

    python bench/startup.py [--runs 15] [--write]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from performance_doc import replace_section  # noqa: E402  (a sibling script module)

ROOT = Path(__file__).resolve().parent.parent
SECTION = "## Start-up (`bench/startup.py`)"


def harness_command() -> list[str]:
    script = shutil.which("harness", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "harness_cli"]


def timed(command: list[str], env: dict[str, str], cwd: str) -> float:
    start = time.perf_counter()
    completed = subprocess.run(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if completed.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({completed.returncode}): {completed.stderr.decode()[-500:]}")
    return elapsed * 1000


def compile_sources() -> None:
    """Byte-compile the workspace's own sources, as pip does for an installed distribution.

    An editable install runs the sources in place; where PYTHONDONTWRITEBYTECODE is set nothing
    ever writes their .pyc files, and every start would pay for compiling them.
    """
    targets = [ROOT / "harness_core", ROOT / "harness_cli.py"]
    for folder in ("plugins", "contrib"):
        targets += sorted((ROOT / folder).glob("*/harness_*"))
    subprocess.run([sys.executable, "-m", "compileall", "-q", *map(str, targets)], check=True)


def measure(runs: int) -> dict[str, float]:
    compile_sources()
    env = dict(os.environ, HARNESS_USER_CONFIG="")
    env.pop("HARNESS_LOAD_PLUGINS", None)
    harness = harness_command()
    commands = {
        "baseline": [sys.executable, "-c", "import pluggy, pydantic, anyio"],
        "help": [*harness, "--help"],
        "plugins": [*harness, "plugins"],
    }
    samples: dict[str, list[float]] = {name: [] for name in commands}
    with tempfile.TemporaryDirectory() as project:
        for command in commands.values():
            timed(command, env, project)  # warm the file-system caches once
        for _ in range(runs):
            for name, command in commands.items():
                samples[name].append(timed(command, env, project))
    return {name: statistics.median(values) for name, values in samples.items()}


def plugin_count() -> int:
    from importlib.metadata import entry_points

    return len(list(entry_points(group="harness")))


def report(figures: dict[str, float], runs: int) -> str:
    base = figures["baseline"]
    help_ratio, plugins_ratio = figures["help"] / base, figures["plugins"] / base
    lines = [
        SECTION,
        "",
        f"Median of {runs} fresh processes each, interleaved; {plugin_count()} plugin entry point(s) installed.",
        "",
        "| command | ms | ratio to baseline | goal |",
        "|---|---|---|---|",
        f'| baseline: `python -c "import pluggy, pydantic, anyio"` | {base:.0f} | 1.00 | — |',
        f"| `harness --help` | {figures['help']:.0f} | {help_ratio:.2f} | ≤ 1.5 |",
        f"| `harness plugins` | {figures['plugins']:.0f} | {plugins_ratio:.2f} | ≤ 2 |",
        "",
    ]
    return "\n".join(lines)


def write_report(text: str) -> None:
    replace_section(text, SECTION, ROOT / "docs" / "performance.md")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="processes per command (default 15)")
    parser.add_argument("--write", action="store_true", help="record the figures in docs/performance.md")
    options = parser.parse_args()
    text = report(measure(options.runs), options.runs)
    print(text)
    if options.write:
        write_report(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
