"""Output schemas: the supported JSON Schema subset, checked at registration and applied to values.

A tool declares the shape of what it returns as a JSON Schema. Only a small, well-understood subset
is supported, so that every schema a tool registers means exactly what it says here:

* ``type``: one of ``string``, ``number``, ``integer``, ``boolean``, ``null``, ``object``, ``array``,
  or a non-empty list of them;
* ``properties`` (names to schemas), ``required`` (names), ``additionalProperties`` (a boolean or
  a schema), ``items`` (one schema for every element);
* ``enum`` (a non-empty list of values), ``const`` (a value);
* ``anyOf`` and ``oneOf`` (non-empty lists of schemas). ``oneOf`` is treated exactly like ``anyOf``:
  a value passes when at least one branch matches. Exclusivity is deliberately not enforced, since
  overlapping branches (``{"type": "number"}`` next to ``{"type": "integer"}``) are a common authoring
  slip that should not make a correct value fail;
* ``minimum`` / ``maximum`` (inclusive bounds), ``minLength`` / ``maxLength`` (in code points),
  ``minItems`` / ``maxItems``;
* annotations that are accepted and ignored: ``title``, ``description``, ``default``, ``examples``,
  ``$schema``, ``format``.

``True`` and ``{}`` accept any value; ``False`` accepts none. Anything else (``$ref``, ``pattern``,
a tuple-form ``items``, an unknown type name, a keyword holding the wrong kind of value) is refused
by :func:`check_schema` with :class:`UnsupportedSchemaError`, whose message gives the JSON path of
the offending schema. Keywords apply to their own kind of value only, as in JSON Schema: ``minLength``
says nothing about a number and ``properties`` nothing about an array.

Kinds follow lossless JSON (:mod:`harness_core.lossless`): ``bool`` is a boolean and never an
integer or number; an ``int`` is an integer and a number; a ``float`` is a number only, even when
its value is integral. ``enum`` and ``const`` compare by JSON equality (``1`` equals ``1.0``,
``True`` does not equal ``1``).

:func:`validate` returns short, stable messages meant to be shown to a model, one per violation,
with the value's location written as ``value``, ``value.items[2].name`` or ``value["a b"]``. Both
functions walk schemas and values with explicit stacks, so nesting depth is bounded by memory, not
by Python's recursion limit.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeAlias

from harness_core.lossless import FrozenDict, FrozenList, LosslessJSONError, snapshot

__all__ = [
    "UnsupportedSchemaError",
    "check_schema",
    "describe_type",
    "validate",
]

#: A location as a linked list of (parent, key), rendered only when a message needs it, so that
#: walking a valid value allocates no strings.
_Path: TypeAlias = "tuple[_Path, str | int] | None"

_Report: TypeAlias = "Callable[[_Branch | None, _Path, str], None]"
_Task: TypeAlias = tuple[int, Any, Any, Any, Any]

_TYPE_NAMES: Final = ("string", "number", "integer", "boolean", "null", "object", "array")

_TYPE_PHRASES: Final[dict[str, str]] = {
    "string": "a string",
    "number": "a number",
    "integer": "an integer",
    "boolean": "a boolean",
    "null": "null",
    "object": "an object",
    "array": "an array",
}

_KIND_BY_TYPE: Final[dict[type, str]] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    type(None): "null",
    dict: "object",
    list: "array",
    FrozenDict: "object",
    FrozenList: "array",
}

_SUPPORTED_TEXT: Final = (
    "supported: type, properties, required, additionalProperties, items, enum, const, anyOf, oneOf, "
    "minimum, maximum, minLength, maxLength, minItems, maxItems; "
    "annotations title, description, default, examples, $schema, format are ignored"
)

_ANNOTATIONS: Final = frozenset({"title", "description", "default", "examples", "$schema", "format"})


class UnsupportedSchemaError(ValueError):
    """Raised by :func:`check_schema` for a schema outside the supported subset.

    ``path`` is the JSON path of the offending (sub)schema inside the registered schema, ``$``
    being its root; ``problem`` says what is wrong there.
    """

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"schema at {path}: {problem}")


def _kind(value: object) -> str | None:
    """The JSON kind of ``value``, or ``None`` for something that is not JSON at all."""
    kind = _KIND_BY_TYPE.get(type(value))
    if kind is not None:
        return kind
    # Only reached for subclasses; bool must be tested before int, which it subclasses.
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return None


def describe_type(value: object) -> str:
    """Name the JSON kind of ``value`` (``string``, ``integer``, ``number``, ``boolean``, ``null``,
    ``object``, ``array``), or its Python type name when it is not JSON."""
    kind = _kind(value)
    return kind if kind is not None else type(value).__name__


def _a(value: object) -> str:
    """``describe_type`` with an article, for messages ("not a string", "not an array")."""
    kind = _kind(value)
    if kind is not None:
        return _TYPE_PHRASES[kind]
    return f"a Python {type(value).__name__}"


def _render_path(path: _Path, root: str) -> str:
    parts: list[str] = []
    while path is not None:
        path, key = path
        if isinstance(key, int):
            parts.append(f"[{key}]")
        elif key.isidentifier():
            parts.append("." + key)
        else:
            parts.append("[" + json.dumps(key, ensure_ascii=False) + "]")
    parts.append(root)
    parts.reverse()
    return "".join(parts)


def _render_value(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except RecursionError:
        # json's encoder recurses; a const nested past the recursion limit is still a valid schema.
        return "(a value too deeply nested to show)"


# ---------------------------------------------------------------------------------------------
# Registration-time check
# ---------------------------------------------------------------------------------------------


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_schema_shaped(value: object) -> bool:
    return isinstance(value, bool | Mapping)


def check_schema(schema: object) -> None:
    """Raise :class:`UnsupportedSchemaError` unless ``schema`` lies in the supported subset.

    ``schema`` is a mapping (normally a ``dict``) or a boolean. The whole schema is checked, every
    subschema included, and the first problem in document order is reported.
    """
    stack: list[tuple[object, _Path]] = [(schema, None)]
    while stack:
        node, path = stack.pop()
        if isinstance(node, bool):
            continue
        if not isinstance(node, Mapping):
            raise UnsupportedSchemaError(
                _render_path(path, "$"), f"a schema must be an object or a boolean, not {_a(node)}"
            )
        children: list[tuple[object, _Path]] = []
        for keyword, argument in node.items():
            if not isinstance(keyword, str):
                raise UnsupportedSchemaError(
                    _render_path(path, "$"), f"schema keys must be strings, not {keyword!r}"
                )
            problem = _keyword_problem(keyword, argument, path, children)
            if problem is not None:
                raise UnsupportedSchemaError(_render_path(path, "$"), problem)
        # Reversed so that subschemas are checked, and fail, in document order.
        stack.extend(reversed(children))


def _keyword_problem(
    keyword: str, argument: object, path: _Path, children: list[tuple[object, _Path]]
) -> str | None:
    """What is wrong with one keyword of a schema, or ``None``; subschemas go to ``children``."""
    if keyword == "type":
        if isinstance(argument, str):
            names: list[object] = [argument]
        elif isinstance(argument, list) and argument:
            names = argument
        else:
            return f'keyword "type" must be a type name or a non-empty array of them, not {_render_or_a(argument)}'
        for name in names:
            if not isinstance(name, str):
                return f'keyword "type" must list type names (strings), not {_a(name)}'
            if name not in _TYPE_NAMES:
                shown = json.dumps(name, ensure_ascii=False)
                return f"type {shown} is not supported (supported: {', '.join(_TYPE_NAMES)})"
        if len(set(names)) != len(names):
            return 'keyword "type" lists a type more than once'
        return None
    if keyword == "properties":
        if not isinstance(argument, Mapping):
            return f'keyword "properties" must be an object mapping property names to schemas, not {_a(argument)}'
        here: _Path = (path, "properties")
        for name, subschema in argument.items():
            if not isinstance(name, str):
                return f'keyword "properties" has a key that is not a string: {name!r}'
            children.append((subschema, (here, name)))
        return None
    if keyword == "required":
        if not isinstance(argument, list) or not all(isinstance(name, str) for name in argument):
            return 'keyword "required" must be an array of property names (strings)'
        return None
    if keyword == "additionalProperties":
        if not _is_schema_shaped(argument):
            return f'keyword "additionalProperties" must be a boolean or a schema, not {_a(argument)}'
        children.append((argument, (path, "additionalProperties")))
        return None
    if keyword == "items":
        if isinstance(argument, list):
            return 'keyword "items" must be one schema for every element; an array of schemas (tuple form) is not supported'
        if not _is_schema_shaped(argument):
            return f'keyword "items" must be a schema (an object or a boolean), not {_a(argument)}'
        children.append((argument, (path, "items")))
        return None
    if keyword == "enum":
        if not isinstance(argument, list) or not argument:
            return 'keyword "enum" must be a non-empty array of values'
        return _json_problem(keyword, argument)
    if keyword == "const":
        return _json_problem(keyword, argument)
    if keyword == "anyOf" or keyword == "oneOf":
        if not isinstance(argument, list) or not argument:
            return f'keyword "{keyword}" must be a non-empty array of schemas'
        here = (path, keyword)
        for index, subschema in enumerate(argument):
            children.append((subschema, (here, index)))
        return None
    if keyword == "minimum" or keyword == "maximum":
        if not _is_number(argument):
            return f'keyword "{keyword}" must be a finite number, not {_render_or_a(argument)}'
        return None
    if keyword in ("minLength", "maxLength", "minItems", "maxItems"):
        if not _is_count(argument):
            return f'keyword "{keyword}" must be a non-negative integer, not {_render_or_a(argument)}'
        return None
    if keyword in _ANNOTATIONS:
        return None
    return f"keyword {json.dumps(keyword, ensure_ascii=False)} is not supported ({_SUPPORTED_TEXT})"


def _render_or_a(value: object) -> str:
    """Show a scalar as JSON (``-1``, ``"x"``); describe anything bigger by its kind."""
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        try:
            return json.dumps(value, ensure_ascii=False, allow_nan=False)
        except ValueError:  # nan and infinities are not JSON
            return repr(value)
    return _a(value)


def _json_problem(keyword: str, argument: object) -> str | None:
    try:
        snapshot(argument)
    except LosslessJSONError as error:
        return f'keyword "{keyword}" holds a value that is not lossless JSON at {error.path}: {error.problem}'
    return None


# ---------------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------------


def _json_equal(left: object, right: object) -> bool:
    """JSON equality: numbers by value (``1 == 1.0``), booleans never equal to numbers."""
    left_type = type(left)
    if left_type is type(right) and (left_type is str or left_type is int or left is None):
        return left == right
    pairs: list[tuple[Any, Any]] = [(left, right)]
    while pairs:
        a, b = pairs.pop()
        kind_a, kind_b = _kind(a), _kind(b)
        if kind_a in ("integer", "number") and kind_b in ("integer", "number"):
            if a != b:
                return False
            continue
        if kind_a != kind_b or kind_a is None:
            return False
        if kind_a == "array":
            if len(a) != len(b):
                return False
            pairs.extend(zip(a, b, strict=True))
        elif kind_a == "object":
            if a.keys() != b.keys():
                return False
            pairs.extend((a[key], b[key]) for key in a)
        elif a != b:
            return False
    return True


def _type_matches(kind: str | None, expected: Any) -> bool:
    if isinstance(expected, str):
        return kind == expected or (expected == "number" and kind == "integer")
    return kind in expected or (kind == "integer" and "number" in expected)


def _type_message(expected: Any) -> str:
    names: list[str] = [expected] if isinstance(expected, str) else list(expected)
    phrases = [_TYPE_PHRASES[name] for name in names]
    if len(phrases) == 1:
        return f"must be {phrases[0]}"
    return f"must be {', '.join(phrases[:-1])} or {phrases[-1]}"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


class _Branch:
    """One branch of an ``anyOf`` / ``oneOf`` being tried: violations only flip ``failed``."""

    __slots__ = ("failed", "group")

    def __init__(self, group: _Group) -> None:
        self.failed = False
        self.group = group


class _Group:
    """An ``anyOf`` / ``oneOf`` in progress; ``context`` is where its own failure is reported."""

    __slots__ = ("context", "path", "satisfied")

    def __init__(self, context: _Branch | None, path: _Path) -> None:
        self.context = context
        self.path = path
        self.satisfied = False


# Stack entries are (operation, a, b, c, d); the meaning of a..d depends on the operation.
_NODE: Final = 0  # (value, schema, path, context): check one value against one schema
_BRANCH_END: Final = 1  # (branch, -, -, -): a branch finished; it satisfies its group if it never failed
_GROUP_END: Final = 2  # (group, -, -, -): every branch has been tried

_ANY_ALLOWED: Final = "must match at least one allowed schema"
_TYPE_AND_ANNOTATIONS: Final = _ANNOTATIONS | {"type"}


def validate(value: object, schema: Mapping[str, Any] | bool) -> list[str]:
    """Return the violations of ``schema`` by ``value``, one message each; empty when ``value`` fits.

    ``schema`` must have passed :func:`check_schema`. A node whose type is wrong gets exactly one
    message and is not looked into further. Branches of ``anyOf`` / ``oneOf`` are tried in order
    and stop at the first match; when none matches, the single message is
    ``"<path>" must match at least one allowed schema``.
    """
    # The common output schemas are "anything" and a lone type: answer those without the machine.
    if schema is True:
        return []
    if schema is False:
        return ['"value" is not allowed']
    if not schema:
        return []
    expected = schema.get("type")
    if expected is not None and (len(schema) == 1 or schema.keys() <= _TYPE_AND_ANNOTATIONS):
        kind = _KIND_BY_TYPE.get(type(value)) or _kind(value)
        if _type_matches(kind, expected):
            return []
        return [f'"value" {_type_message(expected)}']
    return _validate(value, schema)


def _validate(root_value: object, root_schema: Mapping[str, Any]) -> list[str]:
    messages: list[str] = []
    stack: list[_Task] = [(_NODE, root_value, root_schema, None, None)]

    def report(context: _Branch | None, path: _Path, text: str) -> None:
        if context is None:
            messages.append(f'"{_render_path(path, "value")}" {text}')
        else:
            context.failed = True

    while stack:
        operation, value, schema, path, context = stack.pop()

        if operation == _BRANCH_END:
            if not value.failed:
                value.group.satisfied = True
            continue
        if operation == _GROUP_END:
            if not value.satisfied:
                report(value.context, value.path, _ANY_ALLOWED)
            continue

        # Inside a branch, one violation settles it, an earlier sibling may already have matched, and
        # a nested group is moot once the branch enclosing it has failed.
        if context is not None and (
            context.failed
            or context.group.satisfied
            or (context.group.context is not None and context.group.context.failed)
        ):
            continue
        if schema is True:
            continue
        if schema is False:
            report(context, path, "is not allowed")
            continue
        if not schema:
            continue

        kind = _kind(value)
        expected = schema.get("type")
        if expected is not None and not _type_matches(kind, expected):
            report(context, path, _type_message(expected))
            continue

        allowed = schema.get("enum")
        if allowed is not None and not any(_json_equal(value, option) for option in allowed):
            report(context, path, "must be one of: " + ", ".join(_render_value(option) for option in allowed))
        if "const" in schema and not _json_equal(value, schema["const"]):
            report(context, path, "must equal " + _render_value(schema["const"]))

        children: list[_Task] = []
        if kind == "string":
            _check_length(value, schema, path, context, report)
        elif kind == "integer" or kind == "number":
            minimum = schema.get("minimum")
            if minimum is not None and value < minimum:
                report(context, path, f"must be >= {_render_value(minimum)}")
            maximum = schema.get("maximum")
            if maximum is not None and value > maximum:
                report(context, path, f"must be <= {_render_value(maximum)}")
        elif kind == "object":
            _check_object(value, schema, path, context, report, children)
        elif kind == "array":
            _check_array(value, schema, path, context, report, children)

        if context is not None and context.failed:
            continue
        # Pushed children run after the groups below, so a node's own messages precede its children's.
        stack.extend(reversed(children))
        for keyword in ("oneOf", "anyOf"):
            branches = schema.get(keyword)
            if branches is None:
                continue
            group = _Group(context, path)
            stack.append((_GROUP_END, group, None, None, None))
            for branch_schema in reversed(branches):
                branch = _Branch(group)
                stack.append((_BRANCH_END, branch, None, None, None))
                stack.append((_NODE, value, branch_schema, path, branch))
    return messages


def _check_length(value: str, schema: Mapping[str, Any], path: _Path, context: _Branch | None, report: _Report) -> None:
    min_length = schema.get("minLength")
    if min_length is not None and len(value) < min_length:
        report(context, path, f"must be at least {_plural(min_length, 'character')}")
    max_length = schema.get("maxLength")
    if max_length is not None and len(value) > max_length:
        report(context, path, f"must be at most {_plural(max_length, 'character')}")


def _check_object(
    value: dict[str, Any],
    schema: Mapping[str, Any],
    path: _Path,
    context: _Branch | None,
    report: _Report,
    children: list[_Task],
) -> None:
    required = schema.get("required")
    if required:
        for name in required:
            if name not in value:
                report(context, path, f"is missing required property {json.dumps(name, ensure_ascii=False)}")
    properties = schema.get("properties") or {}
    additional = schema.get("additionalProperties", True)
    if not properties and (additional is True or (additional is not False and not additional)):
        return
    for name, item in value.items():
        subschema = properties.get(name)
        if subschema is not None:
            children.append((_NODE, item, subschema, (path, name), context))
        elif additional is False:
            report(context, path, f"has unexpected property {json.dumps(name, ensure_ascii=False)}")
        elif additional is not True and additional:
            children.append((_NODE, item, additional, (path, name), context))


def _check_array(
    value: list[Any],
    schema: Mapping[str, Any],
    path: _Path,
    context: _Branch | None,
    report: _Report,
    children: list[_Task],
) -> None:
    min_items = schema.get("minItems")
    if min_items is not None and len(value) < min_items:
        report(context, path, f"must have at least {_plural(min_items, 'item')}")
    max_items = schema.get("maxItems")
    if max_items is not None and len(value) > max_items:
        report(context, path, f"must have at most {_plural(max_items, 'item')}")
    items = schema.get("items")
    if items is None or items is True or (items is not False and not items):
        return
    for index, item in enumerate(value):
        children.append((_NODE, item, items, (path, index), context))
