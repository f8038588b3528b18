"""Policy resolution: canonical paths, the temp areas, and one complete SandboxPolicy per call."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Sequence

from harness_core.sandbox import SANDBOX_MODES, SandboxMode, SandboxPolicy, writable_roots

__all__ = ["canonical_path", "check_mode", "resolve_policy", "temp_roots"]


def canonical_path(path: str, base: str | None = None) -> str:
    """The path the kernel would reach: ``~`` expanded, joined to ``base``, symlinks resolved.

    Symlinks are resolved before ``..`` is applied (``<symlink>/..`` is the parent of the link's
    target, where a process that changes into it lands), then the rest is normalised lexically.
    A path that does not exist (yet) keeps its unresolved tail: a missing root matches nothing.
    """
    expanded = os.path.expanduser(path)
    if base is not None and not os.path.isabs(expanded):
        expanded = os.path.join(base, expanded)
    return os.path.normpath(os.path.realpath(expanded))


def temp_roots() -> tuple[str, ...]:
    """``/tmp`` and the platform temp dir (``$TMPDIR``...), canonicalized and de-duplicated."""
    candidates = [] if sys.platform == "win32" else ["/tmp"]
    candidates.append(tempfile.gettempdir())
    roots: list[str] = []
    for candidate in candidates:
        root = canonical_path(candidate)
        if root not in roots:
            roots.append(root)
    return tuple(roots)


def check_mode(mode: object) -> SandboxMode:
    """``mode`` if it is one of the three modes; ``ValueError`` naming them otherwise."""
    for known in SANDBOX_MODES:
        if mode == known:
            return known
    raise ValueError(f"unknown sandbox mode {mode!r}; expected one of {', '.join(SANDBOX_MODES)}")


def resolve_policy(
    mode: SandboxMode, workspace_root: str, temps: Sequence[str], extra_roots: Sequence[str], network: bool
) -> SandboxPolicy:
    """The complete policy for one call (reference/plugins.md §3: mode, root, writable roots)."""
    return SandboxPolicy(
        mode=mode,
        workspace_root=workspace_root,
        writable_roots=writable_roots(mode, workspace_root, temps, extra_roots),
        # Confined modes get the network only when the project allows it; full access is unconfined.
        network=True if mode == "danger-full-access" else network,
    )
