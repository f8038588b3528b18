"""harness-permission-presets: named bundles of the sandbox mode and the approval policy.

Three presets ship: ``read-only``, ``workspace-write`` (the default) and ``danger-full-access``.
Each sets the two permission knobs (``sandbox.mode``, ``approval.policy``), turns the timeout
policy on and sets the rules defaults. At run time the plugin derives the current preset from the
knobs and switches them through their owners (reference/plugins.md §9).
"""

from .plugin import CUSTOM, PRESET_EVENT, PermissionPresets, UnknownPresetError

__all__ = ["CUSTOM", "PRESET_EVENT", "PermissionPresets", "UnknownPresetError"]
