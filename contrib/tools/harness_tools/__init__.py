"""harness-tools: the model-facing ``bash``, ``read``, ``write`` and ``edit`` tools as a harness plugin.

Install it next to ``harness-core``; the ``tools`` entry point (group ``harness``) names
:class:`ToolsPlugin`. Limits live in ``[tools]`` of ``harness.toml`` (see docs/tools.md). A policy
plugin can veto file mutations by implementing the ``fs_write_intent`` hook this plugin adds.
"""

from .errors import BackgroundUnavailableError, FsError, ToolInputError
from .plugin import ToolsPlugin

# The config model lives in harness_tools.config and is imported only when the host composes the
# configuration, which keeps `harness plugins` and `harness --help` quick.
__all__ = ["BackgroundUnavailableError", "FsError", "ToolInputError", "ToolsPlugin"]
