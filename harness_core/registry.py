"""Tool registry: ToolDefinitions by name, registration checks, model-visible schemas, tools_change."""

from __future__ import annotations

import inspect
import math
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .errors import ToolDefinitionError
from .lossless import LosslessJSONError, snapshot, thaw
from .schema import UnsupportedSchemaError, check_schema
from .signal import Dispose
from .types import ContentBlock, Execution, RunContext, ToolResult

__all__ = ["RESERVED_TOOL_NAMES", "ToolDefinition", "ToolOutput", "ToolRegistry"]

#: Names no plugin may register: ``run_code`` is the Code Mode transport (reference §6.1).
RESERVED_TOOL_NAMES = frozenset({"run_code"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolOutput:
    """A tool's output declaration: the value's schema and how to show the value to the model.

    ``render(args, value)`` returns the model-facing content blocks; the optional
    ``presentation_meta(args, value)`` returns JSON for user interfaces (top-level calls only).
    """

    schema: Any
    render: Callable[[Any, Any], list[ContentBlock] | tuple[ContentBlock, ...]]
    presentation_meta: Callable[[Any, Any], Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolDefinition:
    """Everything the core needs to offer and run one tool.

    ``name``, ``description`` and ``parameters`` (a JSON Schema object) are what the model sees.
    ``execute(args, ctx)`` is the async body returning the canonical value. The rest is optional:
    ``finalize_content(execution, result)`` may rewrite the final content once on every path;
    ``timeout_ms`` declares a deadline (enforced by a timeout plugin, not the core);
    ``is_concurrency_safe(args)`` lets a batch overlap this call with others;
    ``present_call(args)`` / ``present_result(args, result)`` feed user interfaces.
    """

    name: str
    description: str
    parameters: Any
    output: ToolOutput
    execute: Callable[[Any, RunContext], Awaitable[Any]]
    finalize_content: Callable[[Execution, ToolResult], Any] | None = None
    timeout_ms: int | float | None = None
    is_concurrency_safe: Callable[[Any], bool] | None = None
    present_call: Callable[[Any], Any] | None = None
    present_result: Callable[[Any, ToolResult], Any] | None = None

    def schema(self) -> dict[str, Any]:
        """The model-facing projection: a fresh ``{name, description, parameters}`` dict."""
        return {"name": self.name, "description": self.description, "parameters": thaw(self.parameters)}


def validate_definition(definition: object) -> ToolDefinition:
    """Check a definition the way ``register`` does; return it with frozen parameters."""
    if not isinstance(definition, ToolDefinition):
        raise ToolDefinitionError(
            f"register() needs a ToolDefinition (or a @tool function), got {type(definition).__name__}"
        )
    name = definition.name
    if type(name) is not str or not name:
        raise ToolDefinitionError(f"a tool name must be a non-empty str, got {name!r}")
    if name in RESERVED_TOOL_NAMES:
        raise ToolDefinitionError(
            f'tool name "{name}" is reserved for the Code Mode presentation transport; choose another name'
        )
    if type(definition.description) is not str:
        raise ToolDefinitionError(f'tool "{name}" description must be a str')
    try:
        parameters = snapshot(definition.parameters)
    except LosslessJSONError as exc:
        raise ToolDefinitionError(f'tool "{name}" parameters must be a lossless JSON Schema object: {exc}') from None
    if not isinstance(parameters, dict):
        raise ToolDefinitionError(f'tool "{name}" parameters must be a JSON Schema object (a dict)')
    output = definition.output
    if (
        not isinstance(output, ToolOutput)
        or not callable(output.render)
        or (output.presentation_meta is not None and not callable(output.presentation_meta))
    ):
        raise ToolDefinitionError(
            f'tool "{name}" must declare output=ToolOutput(schema=..., render=..., presentation_meta=None)'
        )
    try:
        check_schema(output.schema)
    except UnsupportedSchemaError as exc:
        raise ToolDefinitionError(f'tool "{name}" output schema is not supported: {exc}') from None
    if not inspect.iscoroutinefunction(definition.execute):
        raise ToolDefinitionError(f'tool "{name}" execute must be an async function: async def execute(args, ctx)')
    timeout = definition.timeout_ms
    if timeout is not None and (
        type(timeout) not in (int, float) or not math.isfinite(timeout) or timeout <= 0
    ):
        raise ToolDefinitionError(f'tool "{name}" timeout_ms must be a positive finite number')
    for optional in ("finalize_content", "is_concurrency_safe", "present_call", "present_result"):
        hook = getattr(definition, optional)
        if hook is not None and not callable(hook):
            raise ToolDefinitionError(f'tool "{name}" {optional} must be callable or None')
    if parameters is definition.parameters:
        return definition
    frozen = object.__new__(ToolDefinition)
    for slot in ToolDefinition.__slots__:
        object.__setattr__(frozen, slot, getattr(definition, slot))
    object.__setattr__(frozen, "parameters", parameters)
    return frozen


class ToolRegistry:
    """The tools a Harness can run, by name.

    ``register(definition)`` validates and adds a tool and returns a ``dispose`` that removes it;
    both fire ``tools_change``, and a listener that raises rolls the change back.
    """

    def __init__(self, notify_change: Callable[[], None]) -> None:
        self._tools: dict[str, ToolDefinition] = {}
        self._tokens: dict[str, object] = {}
        self._notify_change = notify_change

    def register(self, definition: ToolDefinition | Any) -> Dispose:
        """Add a tool; return the ``dispose`` that removes exactly this registration."""
        checked = validate_definition(definition)
        name = checked.name
        if name in self._tools:
            raise ToolDefinitionError(
                f'tool "{name}" is already registered; dispose the earlier registration first '
                "(register() returns its dispose)"
            )
        # Each registration has its own token, so a stale dispose can never remove a later
        # registration of the same name (or even of the same definition object).
        token = object()
        self._tools[name] = checked
        self._tokens[name] = token
        try:
            self._notify_change()
        except BaseException:
            del self._tools[name], self._tokens[name]
            raise

        def dispose() -> None:
            if self._tokens.get(name) is not token:
                return
            del self._tools[name], self._tokens[name]
            try:
                self._notify_change()
            except BaseException:
                self._tools[name] = checked
                self._tokens[name] = token
                raise

        return dispose

    def get(self, name: str) -> ToolDefinition | None:
        """The definition registered under ``name``, or ``None``."""
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[ToolDefinition]:
        return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    def names(self) -> list[str]:
        """Registered tool names, in registration order."""
        return list(self._tools)

    def schemas(self) -> list[dict[str, Any]]:
        """What the model is shown: ``[{name, description, parameters}]`` as fresh copies."""
        return [definition.schema() for definition in self._tools.values()]
