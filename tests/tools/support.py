"""Shared pieces of the tools tests: a fake sandbox, an approval answerer, process checks, calls."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import anyio

from harness_core import Harness, ToolCall, ToolResult, hookimpl
from harness_core.sandbox import ConfinedCommand, RunnerFailureRule, SandboxPolicy, SandboxUnavailableError

#: What the fake runner prints when it "blocks" a write: the bubblewrap dialect (reference §4).
DENIAL_STDERR = "touch: cannot touch 'x': Read-only file system"


class FakeSandbox:
    """A confining sandbox plugin for tests: a policy per mode and a runner per behaviour.

    ``behaviors`` maps a mode to what ``sandbox_confine`` does under it: ``wrap`` runs the command
    with ``FAKEBOX_MODE=<mode>`` in its environment; ``deny`` never runs it and prints the
    backend's denial dialect; ``runner-fail`` prints a runner failure; ``missing-runner`` names a
    runner program that does not exist; ``none`` answers nothing; ``raise`` raises
    SandboxUnavailableError.
    """

    def __init__(self, root: Path, mode: str = "read-only", behaviors: dict[str, str] | None = None) -> None:
        self.root = str(root)
        self.mode = mode
        self.behaviors = behaviors or {}
        self.policies: list[tuple[str, str | None]] = []
        self.confined: list[tuple[list[str], str]] = []
        self.cwds: list[str | None] = []

    @hookimpl
    def harness_provides(self) -> list[str]:
        return ["sandbox:confining"]

    @hookimpl
    def sandbox_policy(self, execution: Any, mode: str | None) -> SandboxPolicy:
        self.policies.append((execution.call_id, mode))
        effective = mode or self.mode
        roots = () if effective == "read-only" else (self.root,)
        return SandboxPolicy(mode=effective, workspace_root=self.root, writable_roots=roots, network=False)  # type: ignore[arg-type]

    @hookimpl
    def sandbox_confine(self, argv: list[str], policy: SandboxPolicy, cwd: str | None) -> ConfinedCommand | None:
        self.confined.append((list(argv), policy.mode))
        self.cwds.append(cwd)
        behavior = self.behaviors.get(policy.mode, "wrap")
        if behavior == "none":
            return None
        if behavior == "raise":
            raise SandboxUnavailableError(policy.mode)
        runner: list[str]
        if behavior == "deny":
            runner = ["bash", "-c", f'echo "{DENIAL_STDERR}" >&2; exit 1']
        elif behavior == "runner-fail":
            runner = ["bash", "-c", "echo 'fakebox: cannot create the mount namespace' >&2; exit 1"]
        elif behavior == "missing-runner":
            runner = ["/nonexistent/fakebox", "--", *argv]
        else:
            runner = ["env", f"FAKEBOX_MODE={policy.mode}", *argv]
        return ConfinedCommand(
            argv=tuple(runner),
            backend="fakebox",
            enforcement="full",
            denial_signatures=("read-only file system",),
            runner_failure_rules=(RunnerFailureRule(fatal_signatures=("fakebox: ",)),),
        )


class Answerer:
    """An approval service that answers every request with one outcome and records the requests."""

    def __init__(self, outcome: str | None) -> None:
        self.outcome = outcome
        self.requests: list[Any] = []

    @hookimpl
    def approval_request(self, request: Any) -> str | None:
        self.requests.append(request)
        return self.outcome


def marker() -> str:
    """A string unique to one test, to find its processes by command line."""
    return f"harness-tools-test-{uuid.uuid4().hex}"


def processes_with(text: str) -> list[int]:
    """Live processes whose command line holds ``text`` (zombies have an empty command line)."""
    found = []
    needle = text.encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read()
        except OSError:
            continue
        if needle in cmdline and int(entry) != os.getpid():
            found.append(int(entry))
    return found


async def wait_for_file(path: Path, timeout: float = 10) -> None:
    with anyio.fail_after(timeout):
        while not path.exists():
            await anyio.sleep(0.01)


async def run(harness: Harness, name: str, agent: str | None = "main", signal: Any = None, **arguments: Any) -> ToolResult:
    """One call through the whole pipeline."""
    call = ToolCall(call_id=f"call-{uuid.uuid4().hex[:8]}", name=name, arguments=arguments, agent=agent)
    if signal is not None:
        call = ToolCall(call_id=call.call_id, name=name, arguments=arguments, agent=agent, signal=signal)
    return await harness.execute(call)


def text(result: ToolResult) -> str:
    """The model-visible text of a result."""
    [block] = result.content
    return block.text  # type: ignore[attr-defined,no-any-return]


def code(result: ToolResult) -> str | None:
    """The error code of a failed result (``None`` for an uncoded failure)."""
    assert result.error is not None
    return None if result.error.info is None else result.error.info.code
