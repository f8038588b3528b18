"""The ``@tool`` decorator: a ToolDefinition built from a typed async function.

The function's parameters become a pydantic model (the model-facing JSON Schema comes from it);
a parameter named ``ctx`` receives the :class:`~harness_core.types.RunContext`. The arguments are
checked inside the body stage, after every policy stage has seen them, so a violation is an
``INVALID_ARGS`` failure of the call, as in reference §2.7. The return annotation gives the output
schema; ``str`` values render as text and anything else as indented JSON.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable
from typing import Any, Literal, get_type_hints, overload

import pydantic

from .errors import ToolArgsError
from .registry import ToolDefinition, ToolOutput
from .schema import UnsupportedSchemaError, check_schema
from .types import ContentBlock, RunContext, TextBlock

__all__ = ["tool"]

_CONTEXT_PARAMETER = "ctx"


def render_value(_args: Any, value: Any) -> list[ContentBlock]:
    """Default rendering: strings as they are, other values as indented JSON."""
    if type(value) is str:
        return [TextBlock(text=value)]
    return [TextBlock(text=json.dumps(value, indent=2, ensure_ascii=False))]


def _violation(error: Any) -> str:
    location = ".".join(str(part) for part in error["loc"])
    if error["type"] == "missing":
        return f'missing required property "{location}"'
    message = str(error["msg"])
    message = message[:1].lower() + message[1:]
    if not location:
        return f"arguments: {message}"
    return f'"{location}": {message}'


def _strip_titles(schema: Any) -> Any:
    """pydantic adds a ``title`` to every property; the model does not need them."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("title"), str) and ("type" in node or "properties" in node or "$ref" in node or "anyOf" in node):
                del node["title"]
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return schema


@overload
def tool(function: Callable[..., Awaitable[Any]], /) -> ToolDefinition: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    render: Callable[[Any, Any], Any] | None = None,
    timeout_ms: int | float | None = None,
    is_concurrency_safe: Callable[[Any], bool] | None = None,
    finalize_content: Callable[..., Any] | None = None,
) -> Callable[[Callable[..., Awaitable[Any]]], ToolDefinition]: ...


def tool(
    function: Callable[..., Awaitable[Any]] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    render: Callable[[Any, Any], Any] | None = None,
    timeout_ms: int | float | None = None,
    is_concurrency_safe: Callable[[Any], bool] | None = None,
    finalize_content: Callable[..., Any] | None = None,
) -> ToolDefinition | Callable[[Callable[..., Awaitable[Any]]], ToolDefinition]:
    """Turn ``async def name(arg: T, ..., ctx: RunContext) -> R`` into a ToolDefinition.

    The name defaults to the function's, the description to its docstring. Use it bare
    (``@tool``) or with options (``@tool(name="shell", timeout_ms=60_000)``).
    """

    def build(fn: Callable[..., Awaitable[Any]]) -> ToolDefinition:
        return _build_definition(
            fn,
            name=name,
            description=description,
            render=render,
            timeout_ms=timeout_ms,
            is_concurrency_safe=is_concurrency_safe,
            finalize_content=finalize_content,
        )

    if function is not None:
        return build(function)
    return build


def _build_definition(
    fn: Callable[..., Awaitable[Any]],
    *,
    name: str | None,
    description: str | None,
    render: Callable[[Any, Any], Any] | None,
    timeout_ms: int | float | None,
    is_concurrency_safe: Callable[[Any], bool] | None,
    finalize_content: Callable[..., Any] | None,
) -> ToolDefinition:
    label = getattr(fn, "__qualname__", repr(fn))
    if not inspect.iscoroutinefunction(fn):
        raise TypeError(f"@tool needs an async def function; {label} is not one")
    signature = inspect.signature(fn)
    hints = get_type_hints(fn)
    fields: dict[str, Any] = {}
    takes_context = False
    extra: Literal["allow", "ignore"] = "ignore"
    for parameter in signature.parameters.values():
        if parameter.name == _CONTEXT_PARAMETER or hints.get(parameter.name) is RunContext:
            if parameter.name != _CONTEXT_PARAMETER:
                raise TypeError(f"@tool {label}: name the RunContext parameter 'ctx'")
            takes_context = True
            continue
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            extra = "allow"  # the argument root is open: undeclared keys reach **kwargs
            continue
        if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.POSITIONAL_ONLY):
            raise TypeError(f"@tool {label}: parameter {parameter.name!r} must be passable by keyword")
        annotation = hints.get(parameter.name, Any)
        default = ... if parameter.default is inspect.Parameter.empty else parameter.default
        fields[parameter.name] = (annotation, default)
    tool_name = name or fn.__name__
    model: type[pydantic.BaseModel] = pydantic.create_model(
        f"{tool_name}_arguments", __config__=pydantic.ConfigDict(extra=extra), **fields
    )
    parameters = _strip_titles(model.model_json_schema())
    parameters.pop("title", None)
    returns = hints.get("return", Any)
    output_schema: Any = {} if returns is Any else _strip_titles(pydantic.TypeAdapter(returns).json_schema())
    try:
        check_schema(output_schema)
    except UnsupportedSchemaError as exc:
        raise TypeError(
            f"@tool {label}: the return annotation {returns!r} gives an output schema outside the "
            f"supported subset ({exc}); return JSON types (str, int, float, bool, None, list, dict)"
        ) from None

    async def execute(args: Any, ctx: RunContext) -> Any:
        try:
            # Strict JSON-mode validation: exactly what the published schema accepts, with no
            # coercion ("5" is not an int), so the body never runs on a value policy did not see.
            parsed = model.model_validate_json(json.dumps(args), strict=True)
        except pydantic.ValidationError as exc:
            raise ToolArgsError([_violation(error) for error in exc.errors()]) from None
        keywords = {key: getattr(parsed, key) for key in fields}
        if parsed.model_extra:
            keywords.update(parsed.model_extra)
        if takes_context:
            keywords[_CONTEXT_PARAMETER] = ctx
        return await fn(**keywords)

    execute.__name__ = f"{tool_name}_execute"
    return ToolDefinition(
        name=tool_name,
        description=inspect.cleandoc(description or fn.__doc__ or ""),
        parameters=parameters,
        output=ToolOutput(schema=output_schema, render=render or render_value),
        execute=execute,
        finalize_content=finalize_content,
        timeout_ms=timeout_ms,
        is_concurrency_safe=is_concurrency_safe,
    )
