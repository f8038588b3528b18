"""Permission knobs seam: the names of the session knobs a permission selector switches.

A knob is one piece of session permission state that a plugin owns and enforces: the sandbox
plugin owns ``sandbox.mode``, the approval plugin ``approval.policy``. A selector such as the
permission-presets plugin reads them with the ``permission_knob`` hook and switches them with
``permission_knob_set`` (specs in :mod:`harness_core.hookspecs`), so it never imports the owners.
Each owner switches through its own canonical setter, which records its own session event
(``sandbox/mode``, ``approval/policy``); reference/plugins.md §9 and §16.2.
"""

from __future__ import annotations

__all__ = ["APPROVAL_POLICY_KNOB", "KNOBS", "SANDBOX_MODE_KNOB"]

#: The sandbox mode of the session: ``read-only``, ``workspace-write`` or ``danger-full-access``.
SANDBOX_MODE_KNOB = "sandbox.mode"
#: The approval policy of the session: ``ask`` or ``never``.
APPROVAL_POLICY_KNOB = "approval.policy"
#: Every knob the core names, in the order a selector switches them (sandbox first).
KNOBS: tuple[str, ...] = (SANDBOX_MODE_KNOB, APPROVAL_POLICY_KNOB)
