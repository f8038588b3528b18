"""Programs run confined when a sandbox plugin answers, and not at all when confinement cannot be had.

reference/plugins.md §2 (a confined mode with no usable backend refuses to run, never runs unconfined).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from harness_core import hookimpl
from harness_core.sandbox import ConfinedCommand, SandboxPolicy, SandboxUnavailableError
from harness_sandbox import SandboxPlugin
from harness_sandbox.backends import Verdict
from harness_sandbox.selection import default_backends

from ..sandbox_support import outside_folder
from .conftest import Run, Tools, runtime_of, start


@pytest.fixture(scope="module")
def verdicts() -> dict[str, Verdict]:
    """What each Linux backend's own probe says on this machine."""
    backends = default_backends()
    return {name: backends[name].probe(False, 10.0) for name in ("bubblewrap", "landlock") if name in backends}


@pytest.fixture(params=["bubblewrap", "landlock"])
def backend(request: pytest.FixtureRequest, verdicts: dict[str, Verdict]) -> str:
    """Each Linux backend in turn; skipped, with the probe's reason, where it cannot run."""
    name: str = request.param
    verdict = verdicts.get(name)
    if verdict is None or not verdict.usable:
        pytest.skip(f"{name} is unusable on this machine: {verdict.detail if verdict else 'not offered here'}")
    return name


@pytest.fixture
def outside() -> Iterator[Path]:
    """A folder that no writable root covers (not under the temp roots)."""
    with outside_folder("harness-code-python-test-") as folder:
        yield folder


def write_program(path: Path) -> str:
    return f"with open({str(path)!r}, 'w') as handle:\n    handle.write('escaped')\nreturn 'written'"


@pytest.mark.anyio
async def test_a_write_outside_the_workspace_is_denied_under_read_only(
    project: Path, backend: str, outside: Path, run: Run, tools: Tools
):
    harness, _ = start(project, {"sandbox": {"mode": "read-only", "backend": backend}}, SandboxPlugin())
    target = outside / "target.txt"
    result = await run("print('inside')\n" + write_program(target), on=runtime_of(harness))
    assert result.error is not None and result.error.kind == "exception", result
    assert "OSError" in result.error.message or "PermissionError" in result.error.message
    assert "[sandbox: file access denied under read-only mode]" in result.error.message
    assert result.logs == ("inside",)
    assert not target.exists()


@pytest.mark.anyio
async def test_read_only_denies_the_workspace_too_but_tools_and_results_still_work(
    project: Path, backend: str, run: Run, tools: Tools
):
    harness, _ = start(project, {"sandbox": {"mode": "read-only", "backend": backend}}, SandboxPlugin())
    runtime = runtime_of(harness)
    assert (await run(write_program(project / "out.txt"), on=runtime)).error is not None
    assert not (project / "out.txt").exists()
    result = await run("import os\nprint(os.getcwd())\nreturn await tools.echo({'ok': True})", on=runtime)
    assert result.error is None, result.error
    assert result.result == {"ok": True}
    assert result.logs == (str(project),)


@pytest.mark.anyio
async def test_workspace_write_lets_the_program_write_its_workspace_only(
    project: Path, backend: str, outside: Path, run: Run
):
    harness, _ = start(project, {"sandbox": {"mode": "workspace-write", "backend": backend}}, SandboxPlugin())
    runtime = runtime_of(harness)
    assert (await run(write_program(project / "out.txt"), on=runtime)).result == "written"
    assert (project / "out.txt").read_text() == "escaped"
    assert (await run(write_program(outside / "target.txt"), on=runtime)).error is not None
    assert not (outside / "target.txt").exists()


@pytest.mark.anyio
async def test_danger_full_access_runs_unwrapped(project: Path, outside: Path, run: Run):
    harness, _ = start(project, {"sandbox": {"mode": "danger-full-access"}}, SandboxPlugin())
    assert (await run(write_program(outside / "target.txt"), on=runtime_of(harness))).result == "written"


class FakeSandbox:
    """Answers with a confined policy; ``confine`` decides what sandbox_confine does."""

    def __init__(self, project: Path, confine: Any, policy_error: Exception | None = None) -> None:
        self.project = project
        self.confine = confine
        self.policy_error = policy_error
        self.confine_calls: list[list[str]] = []

    @hookimpl
    def sandbox_policy(self, execution: object, mode: str | None) -> SandboxPolicy:
        if self.policy_error is not None:
            raise self.policy_error
        return SandboxPolicy(mode="read-only", workspace_root=str(self.project), writable_roots=(), network=False)

    @hookimpl
    def sandbox_confine(self, argv: Sequence[str], policy: SandboxPolicy, cwd: str | None) -> ConfinedCommand | None:
        self.confine_calls.append(list(argv))
        result: ConfinedCommand | None = self.confine(argv)
        return result


def refuse(_argv: Sequence[str]) -> ConfinedCommand:
    raise SandboxUnavailableError("read-only")


def missing_runner(argv: Sequence[str]) -> ConfinedCommand:
    return ConfinedCommand(
        argv=("/nonexistent/sandbox-runner", "--", *argv), backend="fake", enforcement="full", denial_signatures=()
    )


@pytest.mark.parametrize(
    ("confine", "policy_error", "says"),
    [
        (lambda _argv: None, None, "the sandbox is unavailable"),
        (refuse, None, "the sandbox is unavailable"),
        (missing_runner, None, "the sandbox is unavailable"),
        (lambda _argv: None, RuntimeError("policy plugin broke"), "policy plugin broke"),
    ],
    ids=["confine-answers-none", "confine-raises-unavailable", "runner-cannot-start", "policy-raises"],
)
@pytest.mark.anyio
async def test_when_confinement_is_required_but_unavailable_nothing_runs(
    project: Path, tmp_path: Path, run: Run, tools: Tools, confine: Any, policy_error: Exception | None, says: str
):
    sandbox = FakeSandbox(project, confine, policy_error)
    harness, _ = start(project, {}, sandbox)
    marker = tmp_path / "ran"
    result = await run(f"open({str(marker)!r}, 'w').close()\nawait tools.echo()", on=runtime_of(harness))
    assert result.error is not None and result.error.kind == "runtime"
    assert says in result.error.message and "did not run" in result.error.message
    assert not marker.exists()
    assert tools.calls == []


@pytest.mark.anyio
async def test_sandbox_false_runs_unconfined_without_asking_the_sandbox(project: Path, tmp_path: Path, run: Run):
    sandbox = FakeSandbox(project, lambda _argv: None)
    harness, _ = start(project, {"code_python": {"sandbox": False}}, sandbox)
    marker = tmp_path / "ran"
    result = await run(f"open({str(marker)!r}, 'w').close()\nreturn 1", on=runtime_of(harness))
    assert result.result == 1 and marker.exists()
    assert sandbox.confine_calls == []


@pytest.mark.anyio
async def test_the_worker_argv_is_handed_to_sandbox_confine_and_the_wrapped_argv_runs(project: Path, run: Run):
    sandbox = FakeSandbox(
        project,
        lambda argv: ConfinedCommand(argv=("env", *argv), backend="fake", enforcement="full", denial_signatures=()),
    )
    harness, _ = start(project, {}, sandbox)
    assert (await run("return 'ran through env'", on=runtime_of(harness))).result == "ran through env"
    ((python, isolated, no_bytecode, source_flag, source),) = sandbox.confine_calls
    assert (isolated, no_bytecode, source_flag) == ("-I", "-B", "-c") and "def main()" in source


def processes_with(token: str) -> list[int]:
    """Live (non-zombie) processes whose command line contains ``token``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read()
            with open(f"/proc/{entry}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if token.encode() in cmdline and state not in (b"Z", b"X"):
            found.append(int(entry))
    return found


@pytest.mark.anyio
async def test_an_abort_kills_a_sandboxed_program_and_its_children(project: Path, backend: str, run: Run, tools: Tools):
    from harness_core import Signal

    token = f"harness-code-python-test-{os.getpid()}-{backend}"
    harness, _ = start(project, {"sandbox": {"mode": "read-only", "backend": backend}}, SandboxPlugin())
    signal = Signal()
    seen: list[list[int]] = []

    def on_pid(_pid: int) -> None:
        seen.append(processes_with(token))
        signal.abort("stopped by the test")

    tools.on_pid = on_pid
    program = (
        "import os, subprocess, sys, time\n"
        "child = subprocess.Popen(\n"
        f"    [sys.executable, '-c', 'import time; print(1, flush=True); time.sleep(600)', {token!r}],\n"
        "    stdout=subprocess.PIPE,\n"
        ")\n"
        "child.stdout.readline()  # the child is up and running\n"
        "await tools.pid({'pid': os.getpid()})\n"
        "time.sleep(600)"
    )
    result = await run(program, signal=signal, on=runtime_of(harness))
    assert result.error is not None and result.error.kind == "aborted"
    assert seen and seen[0], "the child was running when the abort came"
    assert processes_with(token) == []


def test_doctor_reports_an_error_when_programs_need_confinement_that_is_unavailable(project: Path):
    harness, _ = start(project, {}, FakeSandbox(project, refuse))
    (entry,) = [(level, message) for _source, level, message in harness.diagnose() if "run_code programs" in message]
    assert entry[0] == "error"
    assert 'sandbox mode "read-only" needs confinement and none is usable here' in entry[1]
