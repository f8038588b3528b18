"""harness-path-guard: deny file-tool calls on protected paths (an example third-party harness plugin).

Install it next to ``harness-core`` and list the protected paths in ``harness.toml``::

    [path_guard]
    deny = ["**/.env", "secrets/**", "**/*.pem"]

The ``path-guard`` entry point (group ``harness``) names :class:`PathGuard`; its guard denies a
``write``, ``edit`` or ``read`` call whose ``file_path`` matches a deny glob. docs/writing-a-plugin.md
in the harness repository walks through this package as the model for plugin authors.
"""

from .matching import DenyMatcher, PatternError
from .plugin import PathGuard

# The config model lives in harness_path_guard.config and is imported only when the host composes
# the configuration, which keeps `harness plugins` and `harness --help` quick.
__all__ = ["DenyMatcher", "PathGuard", "PatternError"]
