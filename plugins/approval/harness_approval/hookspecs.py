"""The approval plugin's own hook: ``approval_answer``, the chain of answerers (a waterfall)."""

# Hook specifications have docstrings for bodies: nothing runs them.
# mypy: disable-error-code="empty-body"

from __future__ import annotations

from collections.abc import Awaitable, Callable

from harness_core import ApprovalRequest, Execution, hookspec

__all__ = ["approval_answer"]


@hookspec
def approval_answer(
    request: ApprovalRequest, call: Execution | None, call_next: Callable[[], Awaitable[str]]
) -> str | Awaitable[str]:
    """Answer one ask: ``"allowed-once"``, ``"rejected"``, ``"cancelled"`` or ``"unavailable"``.

    When: for an ask the session policy lets through (``ask``), answerer by answerer in the order
    of ``[approval] answerers`` (outermost first); only answerers listed there are consulted.
    May: return an outcome to claim the request; ``await call_next()`` to let the next answerer
    decide (the last one's ``call_next`` gives ``"unavailable"``); read ``call`` (the execution,
    with the arguments as the model sent them, or ``None`` if the call is not known) and
    ``request.reason``; take as long as a human needs, watching ``request.signal``. With
    ``[approval] grants = true``, ``"allowed-session"`` also grants this exact call for the rest of
    the session.
    Must not: return anything else (it counts as ``"unavailable"``); raise (same); expect
    ``"allowed-once"`` to skip the guards.
    Default: ``"unavailable"``: nobody answered, the ask is denied.
    """


