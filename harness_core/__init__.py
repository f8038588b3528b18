"""Harness core: a pluggy host that runs every tool call of an AI agent through a policy pipeline.

Quick start for plugin authors::

    from harness_core import Deny, hookimpl

    class NoSecrets:
        @hookimpl
        async def tools_pre_execute(self, execution, call_next):
            if ".env" in str(execution.arguments.get("file_path", "")):
                return Deny(reason="reading .env files is not allowed here")
            return await call_next()

The hook specifications, with what each stage may and must not do, are in
``harness_core.hookspecs``; docs/pipeline.md walks through them with an example per hook.
"""

from .chain import call_waterfall
from .config import ConfigError, ConfigSource, DenyList, HarnessConfig
from .discovery import PluginLoadError
from .errors import (
    AbortError,
    HarnessError,
    PluginRefusedError,
    ToolArgsError,
    ToolDefinitionError,
    ToolNotFoundError,
    ToolOutputError,
)
from .events import Event, EventSink, MemoryEventSink
from .hookspecs import CallNext, hookimpl, hookspec
from .host import CloseError, Harness
from .lossless import FrozenDict, FrozenList, LosslessJSONError
from .pipeline import DryRun
from .registry import ToolDefinition, ToolOutput, ToolRegistry
from .signal import Dispose, Signal
from .typed_tool import tool
from .types import (
    UNSET,
    Accept,
    Allow,
    ApprovalRequest,
    Ask,
    Block,
    ContentBlock,
    ContextMessage,
    Deny,
    DispatchExecution,
    ErrorInfo,
    Execution,
    ExecutionToken,
    ImageBlock,
    ReasoningBlock,
    RunContext,
    TextBlock,
    ToolCall,
    ToolError,
    ToolResult,
)

__all__ = [
    "AbortError",
    "Accept",
    "Allow",
    "ApprovalRequest",
    "Ask",
    "Block",
    "CallNext",
    "CloseError",
    "ConfigError",
    "ConfigSource",
    "ContentBlock",
    "ContextMessage",
    "Deny",
    "DenyList",
    "DispatchExecution",
    "Dispose",
    "DryRun",
    "ErrorInfo",
    "Event",
    "EventSink",
    "Execution",
    "ExecutionToken",
    "FrozenDict",
    "FrozenList",
    "Harness",
    "HarnessConfig",
    "HarnessError",
    "ImageBlock",
    "LosslessJSONError",
    "MemoryEventSink",
    "PluginLoadError",
    "PluginRefusedError",
    "ReasoningBlock",
    "RunContext",
    "Signal",
    "TextBlock",
    "ToolArgsError",
    "ToolCall",
    "ToolDefinition",
    "ToolDefinitionError",
    "ToolError",
    "ToolNotFoundError",
    "ToolOutput",
    "ToolOutputError",
    "ToolRegistry",
    "ToolResult",
    "UNSET",
    "call_waterfall",
    "hookimpl",
    "hookspec",
    "tool",
]
