"""The tools plugin's own hook: ``fs_write_intent``, a veto on file mutations by write and edit."""

# Hook specifications have docstrings for bodies: nothing runs them.
# mypy: disable-error-code="empty-body"

from __future__ import annotations

from typing import Literal

from harness_core import Execution, hookspec

__all__ = ["fs_write_intent"]


@hookspec
def fs_write_intent(execution: Execution, path: str, operation: Literal["write", "edit"]) -> str | None:
    """Veto a file mutation: return ``None`` to abstain, a reason (``str``) to deny it.

    When: inside the ``write`` / ``edit`` body, after the arguments were checked, the path was
    resolved (``path`` is canonical: absolute, symlinks resolved) and the sandbox fence let it
    through, and before the file is read for the version check or written; implementations are
    called in pluggy's call order and the first denial wins.
    May: read the execution (its arguments, agent, call id) and the path; deny with a reason
    the model sees as ``cannot <operation> "<path>": <reason>`` (code ``FS_INTENT_DENIED``).
    Must not: be ``async def`` or a wrapper (either denies every mutation: a veto cannot await, and
    nothing may turn a denial into an allow); touch the file. A raising implementation denies.
    Default: abstain (the mutation proceeds to the read-before-edit check).
    """
