"""harness-approval: the service that turns a pipeline Ask into one human decision, failing closed.

Install it next to ``harness-core``; configure it in ``harness.toml``::

    [approval]
    policy = "ask"                          # or "never": every ask is rejected at once
    answerers = ["terminal", "scripted"]    # tried outermost first

    [[approval.scripted]]
    tool = "bash"
    arguments = { command = "git status*" }
    outcome = "allowed-once"

Answerer plugins implement the ``approval_answer`` hook (see ``harness_approval.hookspecs``).
"""

from .plugin import ApprovalPlugin, policy_context_text

__all__ = ["ApprovalPlugin", "policy_context_text"]
