"""The SDK prompt text: how the model writes Python programs and which tools it may call from them."""

from __future__ import annotations

import json
import keyword
from collections.abc import Mapping
from typing import Any

from harness_core.code_mode import CodeBinding

__all__ = ["SDK_PREAMBLE", "binding_line", "parameter_summary", "render_sdk"]

SDK_PREAMBLE = """\
run_code programs are Python: the code is the body of an async function (top-level `await` and `return` work).
- Call a tool with `await tools.NAME({...})`, passing its arguments as a dict (`tools["NAME"]({...})` for a name \
that is not an identifier). It returns the tool's value: JSON (dict, list, str, int, float, bool or None).
- A call that fails (denied, blocked, unknown tool, bad arguments, the tool raised) raises `ToolCallError`: \
`e.tool_name` names the tool and `str(e)` says why. Catch it to carry on.
- Run independent calls at the same time with `import asyncio` and `await asyncio.gather(...)`.
- `print(...)` output comes back as log lines. `return VALUE` sends back a JSON value; without `return` there is \
no result.
- Every run starts fresh: nothing is kept between runs. Call tools only through `tools`."""

#: The longest tool description shown on a binding's line (the model sees the full schema elsewhere).
MAX_DESCRIPTION = 200


def _type_of(schema: Any) -> str:
    """A compact JSON type: ``string``, ``integer[]``, ``"a"|"b"``, ``string|null``, ``any``."""
    if not isinstance(schema, Mapping):
        return "any"
    if "enum" in schema and isinstance(schema["enum"], list) and schema["enum"]:
        return "|".join(json.dumps(item) for item in schema["enum"][:8]) + ("|…" if len(schema["enum"]) > 8 else "")
    if "const" in schema:
        return json.dumps(schema["const"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return "|".join(str(item) for item in kind) or "any"
    if kind == "array":
        item = _type_of(schema.get("items"))
        return f"({item})[]" if "|" in item else f"{item}[]"
    if isinstance(kind, str):
        return kind
    for combinator in ("anyOf", "oneOf"):
        options = schema.get(combinator)
        if isinstance(options, list) and options:
            return "|".join(_type_of(option) for option in options)
    return "any"


def parameter_summary(parameters: Mapping[str, Any]) -> str:
    """``{path: string, limit?: integer}``: required names plain, optional ones with ``?``."""
    properties = parameters.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        return "{}"
    required = parameters.get("required")
    needed = {name for name in required if isinstance(name, str)} if isinstance(required, list) else set()
    fields = [f"{name}{'' if name in needed else '?'}: {_type_of(schema)}" for name, schema in properties.items()]
    return "{" + ", ".join(fields) + "}"


def _accessor(name: str) -> str:
    if name.isidentifier() and not keyword.iskeyword(name) and not (name.startswith("__") and name.endswith("__")):
        return f"tools.{name}"
    return f"tools[{json.dumps(name)}]"


def binding_line(binding: CodeBinding) -> str:
    """One tool: how to call it, its parameters and the first line of its description."""
    lines = binding.description.strip().splitlines()
    description = lines[0].strip() if lines else ""
    if len(description) > MAX_DESCRIPTION:
        description = description[: MAX_DESCRIPTION - 1] + "…"
    line = f"- await {_accessor(binding.name)}({parameter_summary(binding.parameters)})"
    return f"{line}: {description}" if description else line


def render_sdk(bindings: tuple[CodeBinding, ...]) -> str:
    """The whole SDK text for ``bindings`` (the calling agent's tools)."""
    if not bindings:
        return SDK_PREAMBLE + "\nNo tools are available to programs."
    return SDK_PREAMBLE + "\nTools:\n" + "\n".join(binding_line(binding) for binding in bindings)
