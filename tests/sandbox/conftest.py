"""Fixtures for the sandbox plugin: a Harness per workspace, the backends that work here, a protected folder."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_core import ConfigSource, Harness
from harness_core.config import Layer
from harness_core.sandbox import ConfinedCommand, SandboxPolicy
from harness_sandbox import SandboxPlugin
from harness_sandbox.backends import Verdict
from harness_sandbox.selection import default_backends

from ..sandbox_support import outside_folder

#: The backends that can run on a Linux machine, in the order auto tries them.
LINUX_BACKENDS = ("bubblewrap", "landlock")


def start(project: Path, section: dict[str, Any] | None = None, *plugins: object, **options: Any) -> tuple[Harness, SandboxPlugin]:
    """A Harness with a fresh SandboxPlugin (plus ``plugins``) whose project folder is ``project``."""
    plugin = SandboxPlugin()
    source = ConfigSource(layers=(Layer("config", {"sandbox": section or {}}),), project_dir=project)
    return Harness(plugins=[plugin, *plugins], config=source, **options), plugin


@pytest.fixture(scope="session")
def verdicts() -> dict[str, Verdict]:
    """What each backend's own probe says on this machine (probed once per test session)."""
    return {name: backend.probe(False, 10.0) for name, backend in default_backends().items()}


@pytest.fixture(params=LINUX_BACKENDS)
def backend(request: pytest.FixtureRequest, verdicts: dict[str, Verdict]) -> str:
    """Each Linux backend in turn; skipped, with the probe's reason, where it genuinely cannot run."""
    name: str = request.param
    verdict = verdicts[name]
    if not verdict.usable:
        pytest.skip(f"{name} is unusable on this machine: {verdict.detail}")
    return name


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The project folder (under the temp dir, like most real checkouts are not: a root under /tmp must bind)."""
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


@pytest.fixture
def outside() -> Iterator[Path]:
    """A folder no writable root covers (not under /tmp or the temp dir), holding ``target.txt``."""
    with outside_folder("harness-sandbox-test-") as folder:
        (folder / "target.txt").write_text("original\n")
        yield folder


class Sandboxed:
    """Runs ``bash -c`` through the ConfinedCommand argv, as a bash tool would."""

    def __init__(self, harness: Harness, plugin: SandboxPlugin) -> None:
        self.harness, self.plugin = harness, plugin

    def confine(self, command: str, mode: str | None = None) -> tuple[ConfinedCommand | None, SandboxPolicy]:
        hook = self.harness.plugin_manager.hook
        policy = hook.sandbox_policy(execution=None, mode=mode)
        return hook.sandbox_confine(argv=["bash", "-c", command], policy=policy, cwd=None), policy

    def run(self, command: str, mode: str | None = None) -> tuple[subprocess.CompletedProcess[str], ConfinedCommand]:
        confined, policy = self.confine(command, mode)
        assert confined is not None, "a confined mode must come back wrapped"
        assert confined.argv[-3:] == ("bash", "-c", command)
        completed = subprocess.run(
            list(confined.argv), cwd=policy.workspace_root, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
        )
        return completed, confined


@pytest.fixture
def sandboxed(workspace: Path, backend: str) -> Sandboxed:
    """The plugin for ``workspace`` with ``backend`` named (workspace-write, no network)."""
    return Sandboxed(*start(workspace, {"backend": backend}))


@pytest.fixture
def make_sandboxed(workspace: Path, backend: str) -> Any:
    """Build a :class:`Sandboxed` with more ``[sandbox]`` keys (the backend is the parametrized one)."""

    def make(**section: Any) -> Sandboxed:
        return Sandboxed(*start(workspace, {"backend": backend, **section}))

    return make

