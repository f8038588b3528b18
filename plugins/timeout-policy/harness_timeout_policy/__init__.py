"""harness-timeout-policy: enforce ToolDefinition.timeout_ms (and [timeout] overrides) around each call.

The wrapper gives the body a deadline signal; when its own deadline fires first, the result is
``TOOL_TIMEOUT``: ``Error: tool call timed out after <ms>ms``. Cancellation stays cooperative: a
body that ignores its signal is still awaited to the end.
"""

from .plugin import TOOL_TIMEOUT, TimeoutPolicy, ToolTimeoutError

__all__ = ["TOOL_TIMEOUT", "TimeoutPolicy", "ToolTimeoutError"]
