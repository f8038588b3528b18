#!/usr/bin/env python3
"""Developer entry point: bootstrap a virtual environment, then run the demo or the tests.

    python3 dev.py demo          # a scripted session through the pipeline
    python3 dev.py test [ARGS]   # the test suite (ARGS go to pytest)
    python3 dev.py bench         # the benchmarks (figures go to docs/performance.md)
    python3 dev.py docs [--check]  # regenerate the generated docs (or check they are current)

Needs only Python >= 3.11 and pip. The environment lives in .venv/ and is reinstalled when a
pyproject.toml of the workspace changes.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
STAMP = VENV / ".installed"


def workspace_projects() -> list[Path]:
    """The core plus every plugin and contrib distribution that has a pyproject.toml."""
    found = [ROOT]
    for folder in ("plugins", "contrib"):
        base = ROOT / folder
        if base.is_dir():
            found += sorted(p.parent for p in base.glob("*/pyproject.toml"))
    return found


def python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure_environment() -> None:
    if sys.version_info < (3, 11):
        sys.exit(f"Harness needs Python >= 3.11; this is {sys.version.split()[0]}")
    projects = workspace_projects()
    digest = hashlib.sha256()
    for project in projects:
        digest.update(str(project.relative_to(ROOT)).encode())
        digest.update((project / "pyproject.toml").read_bytes())
    wanted = digest.hexdigest()
    if STAMP.exists() and STAMP.read_text() == wanted and python().exists():
        return
    if not python().exists():
        print("dev.py: creating .venv ...", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    print("dev.py: installing the workspace into .venv ...", flush=True)
    editable: list[str] = []
    for project in projects:
        editable += ["-e", f"{project}[dev]" if project == ROOT else str(project)]
    subprocess.run([str(python()), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *editable], check=True)
    STAMP.write_text(wanted)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in {"-h", "--help", "help"}:
        print(__doc__)
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    commands = {"demo": demo, "test": run_tests, "bench": bench, "docs": docs}
    if command not in commands:
        print(f"dev.py: unknown command {command!r}; use one of: {', '.join(commands)}", file=sys.stderr)
        return 2
    ensure_environment()
    return commands[command](rest)


def harness(*args: str) -> int:
    return subprocess.run([str(python()), "-m", "harness_core", *args], cwd=ROOT).returncode


def demo(rest: list[str]) -> int:
    """The demo batch through the CLI; some of its calls are denied or fail on purpose."""
    project = ["-C", "examples/demo", "--no-user-config"]
    print("$ harness -C examples/demo plugins", flush=True)
    if harness(*project, "plugins") != 0:
        return 2
    print("\n$ harness -C examples/demo run calls.jsonl", flush=True)
    status = harness(*project, "run", "calls.jsonl", *rest)
    # Exit 1 means "some calls failed or were denied", which the demo batch does on purpose;
    # 2 (a usage or configuration error) or anything else means the demo itself is broken.
    if status not in (0, 1):
        return status
    print("\n$ harness -C examples/demo call save_file '{\"file_path\": \"secrets/key.pem\", \"content\": \"x\"}' --dry-run", flush=True)
    harness(*project, "call", "save_file", '{"file_path": "secrets/key.pem", "content": "x"}', "--dry-run")
    print("\nRead the session as cards: .venv/bin/harness -C examples/demo log", flush=True)
    return 0


#: The composition the generated docs describe: every first-party plugin and extra except the
#: sandbox, whose probe result (and so the tools' schemas) depends on the machine.
DOCS_PLUGINS = "approval,jobs,path-guard,timeout-policy,tools"


def docs(rest: list[str]) -> int:
    """Regenerate docs/pipeline-graph.md and docs/tool-catalog.md under a fixed composition."""
    env = dict(os.environ, HARNESS_LOAD_PLUGINS=DOCS_PLUGINS, HARNESS_USER_CONFIG="")
    command = [str(python()), "-m", "harness_core", "--no-user-config", "docs", *rest]
    return subprocess.run(command, cwd=ROOT, env=env).returncode


def run_tests(rest: list[str]) -> int:
    return subprocess.run([str(python()), "-m", "pytest", *rest], cwd=ROOT).returncode


def bench(rest: list[str]) -> int:
    """Every benchmark in bench/, each recording its figures in docs/performance.md."""
    for script in ("pipeline_overhead.py", "startup.py", "sandbox_spawn.py", "hook_bridge.py"):
        status = subprocess.run([str(python()), str(ROOT / "bench" / script), "--write", *rest], cwd=ROOT).returncode
        if status != 0:
            return status
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
