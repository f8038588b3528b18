"""Sandbox seam: modes, the per-call policy, the confinement contract and the escalation texts.

The vocabulary shared by every plugin that runs something with side effects (the bash and file
tools) and every plugin that confines it (the sandbox plugin), so neither depends on the other:
tools ask ``sandbox_policy`` / ``sandbox_confine`` (hook specs in :mod:`harness_core.hookspecs`)
and use the texts below; a sandbox plugin implements the hooks. Modes describe file effects; the
policy's ``network`` flag is the one axis beyond them. Texts follow reference/plugins.md §2.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias

from .errors import HarnessError

if TYPE_CHECKING:
    from .types import RunContext

__all__ = [
    "ESCALATION_TARGETS",
    "SANDBOX_MODES",
    "WIDER_MODES",
    "ConfinedCommand",
    "RunnerFailureRule",
    "SandboxEscalationError",
    "SandboxMode",
    "SandboxPolicy",
    "SandboxUnavailableError",
    "approve_escalation",
    "denial_marker",
    "escalation_hint",
    "runner_failure_marker",
    "validate_escalation_args",
]

SandboxMode: TypeAlias = Literal["read-only", "workspace-write", "danger-full-access"]
SANDBOX_MODES: tuple[SandboxMode, ...] = ("read-only", "workspace-write", "danger-full-access")
#: The strictly wider modes each mode may escalate to (danger-full-access: none).
WIDER_MODES: dict[str, tuple[SandboxMode, ...]] = {
    "read-only": ("workspace-write", "danger-full-access"),
    "workspace-write": ("danger-full-access",),
}
#: The ``sandbox_permissions`` enum a tool advertises whenever a confining sandbox is present.
ESCALATION_TARGETS: tuple[SandboxMode, ...] = ("workspace-write", "danger-full-access")


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxPolicy:
    """Everything needed to confine one call: the mode, the workspace, what is writable, network."""

    mode: SandboxMode
    workspace_root: str
    writable_roots: tuple[str, ...]
    network: bool

    @property
    def confined(self) -> bool:
        """False under ``danger-full-access``: the command runs unwrapped and no backend is asked."""
        return self.mode != "danger-full-access"


@dataclass(frozen=True, slots=True, kw_only=True)
class RunnerFailureRule:
    """Evidence that the sandbox runner itself failed before the command ran (reference §2)."""

    fatal_signatures: tuple[str, ...]
    allowed_exit_codes: tuple[int, ...] | None = None
    informational_lines: tuple[str, ...] = ()

    def detail(self, exit_code: int | None, stderr: str) -> str | None:
        """The stderr line proving a runner failure, or ``None``. Exit status alone never proves it."""
        if exit_code is None or exit_code == 0:
            return None
        if self.allowed_exit_codes is not None and exit_code not in self.allowed_exit_codes:
            return None
        informational = {line.strip().lower() for line in self.informational_lines}
        signatures = [signature.lower() for signature in self.fatal_signatures if signature.strip()]
        for line in stderr.splitlines():
            if line.strip().lower() in informational:
                continue
            lowered = line.lower()
            if any(signature in lowered for signature in signatures):
                return line.strip()
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfinedCommand:
    """What a backend returns for one command: the argv to spawn instead, and how to read failures."""

    argv: tuple[str, ...]
    backend: str
    enforcement: Literal["full", "partial"]
    denial_signatures: tuple[str, ...]
    runner_failure_rules: tuple[RunnerFailureRule, ...] = ()

    def denied(self, exit_code: int | None, stderr: str) -> bool:
        """Whether a finished command was blocked by this backend (non-zero exit, its own stderr dialect)."""
        if exit_code is None or exit_code <= 0:
            return False
        lowered = stderr.lower()
        return any(signature.lower() in lowered for signature in self.denial_signatures)

    def runner_failure(self, exit_code: int | None, stderr: str) -> str | None:
        """The detail line if the runner itself failed (this outranks a denial)."""
        for rule in self.runner_failure_rules:
            detail = rule.detail(exit_code, stderr)
            if detail is not None:
                return detail
        return None


class SandboxUnavailableError(HarnessError):
    """Raised when a confined mode is requested and no backend can enforce it: nothing runs."""

    code = "SANDBOX_UNAVAILABLE"

    def __init__(self, mode: str, runner_failure: str | None = None) -> None:
        message = (
            f'sandbox mode "{mode}" is requested but no sandbox backend is usable on this host; refusing to run '
            "the command unconfined. Install bubblewrap or run a Landlock-enforcing kernel (Linux), ensure "
            "sandbox-exec is usable (macOS), or ensure the ACL restricted-token runner can start (Windows) — "
            "otherwise switch the consumer to danger-full-access."
        )
        if runner_failure:
            message += f" Runner failure: {runner_failure}"
        super().__init__(message)
        self.mode = mode
        self.runner_failure = runner_failure


class SandboxEscalationError(Exception):
    """Raised when a request for a wider sandbox mode is invalid or refused (a plain, uncoded error)."""


def denial_marker(mode: str) -> str:
    """The line appended to a result whose command the sandbox blocked."""
    return f"[sandbox: file access denied under {mode} mode]"


def escalation_hint(subject: Literal["command", "operation"]) -> str:
    """The line telling the model how to ask for a wider mode, once."""
    return (
        f"[sandbox: escalation available — retry this exact {subject} once with sandbox_permissions "
        "(the narrowest wider mode that suffices) + justification; the approval prompt asks the user]"
    )


def runner_failure_marker(mode: str) -> str:
    """Shown when the sandbox runner itself failed and the command never ran."""
    return (
        f"[sandbox: the sandbox runner itself failed under {mode} mode — the command did not run; "
        "this is a sandbox problem, not a command failure]"
    )


def validate_escalation_args(sandbox_permissions: str | None, justification: str | None) -> None:
    """Both absent is fine; one without the other, or a blank justification, is an error."""
    if sandbox_permissions is None and justification is None:
        return
    if justification is None:
        raise SandboxEscalationError("invalid escalation: sandbox_permissions requires a justification")
    if sandbox_permissions is None:
        raise SandboxEscalationError("invalid escalation: justification is only valid together with sandbox_permissions")
    if not justification.strip():
        raise SandboxEscalationError("invalid justification: expected a non-empty sentence")


async def approve_escalation(
    ctx: RunContext,
    *,
    requested: str,
    effective: str,
    justification: str,
    subject: Literal["command", "operation"],
) -> SandboxMode:
    """Ask for a strictly wider mode for this one call; return it if the user allows it once.

    The order is fixed and fails closed: the widening check first (no human is asked for a mode
    that is not wider), then an approval service must be installed, then the call needs an agent.
    """
    if requested not in WIDER_MODES.get(effective, ()):
        raise SandboxEscalationError(
            f'sandbox escalation to "{requested}" is not strictly wider than this call\'s current "{effective}" mode'
        )
    if not ctx.approval_available:
        raise SandboxEscalationError(f'sandbox escalation to "{requested}" requires approval, but no approval service is composed')
    if ctx.agent is None:
        raise SandboxEscalationError(
            f'sandbox escalation to "{requested}" requires approval, but the call has no agent to route it through'
        )
    outcome = await ctx.request_approval(f"escalate sandbox to {requested}: {justification}")
    if outcome == "allowed-once":
        return requested
    if outcome == "rejected":
        raise SandboxEscalationError(f'the user rejected escalating this {subject} to "{requested}"')
    if outcome == "cancelled":
        raise SandboxEscalationError(f'approval for escalating to "{requested}" was cancelled')
    raise SandboxEscalationError(f'sandbox escalation to "{requested}" requires approval, but no approval channel is available')


def writable_roots(mode: str, workspace_root: str, temp_roots: Sequence[str], extra: Sequence[str] = ()) -> tuple[str, ...]:
    """``()`` under read-only; the workspace, temp areas and extra roots (de-duplicated) otherwise."""
    if mode == "read-only":
        return ()
    roots: list[str] = []
    for root in (workspace_root, *temp_roots, *extra):
        if root not in roots:
            roots.append(root)
    return tuple(roots)
