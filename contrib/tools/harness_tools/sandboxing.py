"""The tools' side of the sandbox seam: per-call policy, one-shot escalation, the write fence.

reference/plugins.md §2, §12 and §15. A tool asks ``sandbox_policy`` for the standing policy of a
call; when the model sends ``sandbox_permissions`` + ``justification`` (advertised only while a
confining sandbox is installed), the user approves the wider mode through ``approve_escalation``
and the policy is resolved again with that mode, for this one call.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal

from harness_core import Harness, RunContext
from harness_core.sandbox import (
    ESCALATION_TARGETS,
    WIDER_MODES,
    SandboxEscalationError,
    SandboxPolicy,
    approve_escalation,
    denial_marker,
    escalation_hint,
    validate_escalation_args,
)

from .errors import FsError

__all__ = ["CONFINING", "SandboxAccess", "canonical", "escalation_parameters", "inside"]

#: The capability a confining sandbox plugin provides (``harness_provides``).
CONFINING = "sandbox:confining"

Subject = Literal["command", "operation"]

#: reference/plugins.md Appendix C: the escalation parameters as the model sees them.
_DESCRIPTIONS: dict[Subject, tuple[str, str]] = {
    "command": (
        "The wider sandbox mode this command needs. Only valid as a one-shot retry of a command the sandbox "
        "just denied; requires justification and user approval.",
        "Required with sandbox_permissions: one sentence for the user explaining why this exact command needs "
        "the wider access.",
    ),
    "operation": (
        "The wider sandbox mode this file operation needs. Only valid as a one-shot retry of an operation the "
        "sandbox just denied; requires justification and user approval.",
        "Required with sandbox_permissions: one sentence for the user explaining why this exact file operation "
        "needs the wider access.",
    ),
}

_NOT_AVAILABLE: dict[Subject, str] = {
    "command": "sandbox_permissions is not available in this composition (no sandboxing executor to escalate)",
    "operation": "sandbox_permissions is not available in this composition (no sandboxing filesystem to escalate)",
}


def escalation_parameters(subject: Subject) -> dict[str, Any]:
    """The two schema properties a tool adds while a confining sandbox is installed."""
    permissions, justification = _DESCRIPTIONS[subject]
    return {
        "sandbox_permissions": {"type": "string", "enum": list(ESCALATION_TARGETS), "description": permissions},
        "justification": {"type": "string", "description": justification},
    }


def canonical(path: str) -> str:
    """The path with every existing symlink resolved (a missing tail is kept lexically)."""
    return os.path.realpath(path)


def inside(path: str, root: str) -> bool:
    """Whether canonical ``path`` is ``root`` or lies below it."""
    if path == root:
        return True
    prefix = root if root.endswith(os.sep) else root + os.sep
    return path.startswith(prefix)


class SandboxAccess:
    """Resolves the sandbox policy of a call, with its one-shot escalation, for one tool family."""

    def __init__(self, harness: Harness, *, advertised: bool, subject: Subject) -> None:
        self._hook = harness.plugin_manager.hook
        #: Whether the tools' schemas offer ``sandbox_permissions`` (a confining sandbox was present).
        self.advertised = advertised
        self._subject = subject

    def standing(self, ctx: RunContext) -> SandboxPolicy | None:
        """The call's policy without escalation; ``None`` when no sandbox plugin answers."""
        policy: SandboxPolicy | None = self._hook.sandbox_policy(execution=ctx.execution, mode=None)
        return policy

    async def policy_for(self, ctx: RunContext, args: Mapping[str, Any]) -> SandboxPolicy | None:
        """The policy this call runs under: standing, or the wider mode the user just approved.

        Raises (and nothing runs) when the escalation arguments are malformed, not offered in this
        composition, or the escalation is not approved.
        """
        requested = args.get("sandbox_permissions")
        justification = args.get("justification")
        if requested is None and justification is None:
            return self.standing(ctx)
        if not self.advertised:
            # The argument root is open (reference §0.3): an unadvertised key still reaches the body.
            raise SandboxEscalationError(_NOT_AVAILABLE[self._subject])
        if requested is not None and not isinstance(requested, str):
            targets = ", ".join(f'"{mode}"' for mode in ESCALATION_TARGETS)
            raise SandboxEscalationError(f"invalid sandbox_permissions: expected one of {targets}")
        if justification is not None and not isinstance(justification, str):
            raise SandboxEscalationError("invalid justification: expected a non-empty sentence")
        validate_escalation_args(requested, justification)
        assert requested is not None and justification is not None
        standing = self.standing(ctx)
        if standing is None:
            raise SandboxEscalationError(_NOT_AVAILABLE[self._subject])
        approved = await approve_escalation(
            ctx, requested=requested, effective=standing.mode, justification=justification, subject=self._subject
        )
        policy: SandboxPolicy | None = self._hook.sandbox_policy(execution=ctx.execution, mode=approved)
        if policy is None or policy.mode != approved:
            got = "no policy" if policy is None else f'mode "{policy.mode}"'
            raise SandboxEscalationError(
                f'the sandbox plugin answered {got} for the approved escalation to "{approved}"; refusing to run '
                "under a policy the user did not approve"
            )
        return policy

    def can_escalate(self, ctx: RunContext, mode: str) -> bool:
        """Whether a denial under ``mode`` should carry the escalation hint."""
        return self.advertised and bool(WIDER_MODES.get(mode)) and ctx.approval_available

    def denial_text(self, ctx: RunContext, mode: str) -> str:
        """The denial marker, plus the escalation hint when a retry could be approved."""
        text = denial_marker(mode)
        if self.can_escalate(ctx, mode):
            text += "\n" + escalation_hint(self._subject)
        return text

    def fence(self, ctx: RunContext, policy: SandboxPolicy | None, target: str) -> None:
        """Refuse a write to canonical ``target`` outside the policy's writable roots (confined modes).

        ``target`` has its symlinks resolved already, so a link pointing out of the roots is judged
        by where it leads, and the caller writes to that very path (no check-here-write-there).
        """
        if policy is None or not policy.confined:
            return
        if any(inside(target, canonical(root)) for root in policy.writable_roots):
            return
        raise FsError("FS_SANDBOX_DENIED", self.denial_text(ctx, policy.mode))
