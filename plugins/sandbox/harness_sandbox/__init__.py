"""harness-sandbox: confine the commands tools spawn (read-only | workspace-write), failing closed.

Install it next to ``harness-core`` and choose the mode in ``harness.toml``::

    [sandbox]
    mode = "workspace-write"      # read-only | workspace-write | danger-full-access
    network = false
    writable_roots = []           # beside the workspace and temp, relative to the project
    backend = "auto"              # auto | bubblewrap | landlock | seatbelt

Tools call the ``sandbox_policy`` and ``sandbox_confine`` hooks (``harness_core.hookspecs``); the
``sandbox`` entry point names :class:`SandboxPlugin`. ``harness sandbox`` shows which backend works.
"""

from .plugin import SandboxPlugin

# Only the plugin class: the config model (harness_sandbox.config), the backends and the probe
# report (harness_sandbox.backends, .selection) are imported when the harness is configured, which
# keeps `harness plugins` and `harness --help` quick.
__all__ = ["SandboxPlugin"]
