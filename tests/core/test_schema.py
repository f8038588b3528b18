"""Output schema subset: registration-time checks and value validation messages."""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness_core.lossless import snapshot
from harness_core.schema import UnsupportedSchemaError, check_schema, describe_type, validate

DEEP = 3_000

TYPE_NAMES = ["string", "number", "integer", "boolean", "null", "object", "array"]


def kinds_of(value: object) -> set[str]:
    """The schema type names a value satisfies, worked out independently of the module."""
    if value is None:
        return {"null"}
    if isinstance(value, bool):
        return {"boolean"}
    if isinstance(value, int):
        return {"integer", "number"}
    if isinstance(value, float):
        return {"number"}
    if isinstance(value, str):
        return {"string"}
    if isinstance(value, list):
        return {"array"}
    if isinstance(value, dict):
        return {"object"}
    raise AssertionError(f"not JSON: {value!r}")


def checked(schema: Mapping[str, Any] | bool) -> Mapping[str, Any] | bool:
    check_schema(schema)
    return schema


def unsupported(schema: object) -> str:
    with pytest.raises(UnsupportedSchemaError) as caught:
        check_schema(schema)
    return str(caught.value)


# ---------------------------------------------------------------------------------------------
# Registration-time checks: accepted schemas
# ---------------------------------------------------------------------------------------------


def test_the_empty_schema_and_the_boolean_schemas_are_accepted() -> None:
    schemas: list[object] = [{}, True, False]
    for schema in schemas:
        check_schema(schema)


def test_every_supported_keyword_is_accepted_together() -> None:
    check_schema(
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Listing",
            "description": "A directory listing",
            "default": {},
            "examples": [{"path": "/"}],
            "type": "object",
            "required": ["path", "entries"],
            "additionalProperties": False,
            "properties": {
                "path": {"type": "string", "format": "path", "minLength": 1, "maxLength": 4096},
                "count": {"type": "integer", "minimum": 0, "maximum": 10_000},
                "ratio": {"type": "number", "minimum": 0.0, "maximum": 1.5},
                "entries": {
                    "type": "array",
                    "minItems": 0,
                    "maxItems": 100,
                    "items": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                },
                "kind": {"enum": ["file", "dir", None, 1, [1], {"a": 1}]},
                "version": {"const": {"major": 1}},
                "either": {"oneOf": [True, {"type": ["string", "null"]}]},
                "free": {"additionalProperties": {"type": "integer"}},
            },
        }
    )


def test_a_frozen_snapshot_of_a_schema_is_accepted() -> None:
    schema = snapshot({"type": "object", "properties": {"x": {"type": "array", "items": {"const": [1]}}}})
    check_schema(schema)
    assert validate({"x": [[1], [2]]}, schema) == ['"value.x[1]" must equal [1]']


def test_any_mapping_is_accepted_as_a_schema() -> None:
    check_schema(MappingProxyType({"type": "string"}))


def test_every_type_name_and_a_list_of_type_names_are_accepted() -> None:
    for name in TYPE_NAMES:
        check_schema({"type": name})
    check_schema({"type": TYPE_NAMES})


# ---------------------------------------------------------------------------------------------
# Registration-time checks: refused schemas
# ---------------------------------------------------------------------------------------------


def test_an_unsupported_keyword_is_refused_with_its_path_and_the_supported_list() -> None:
    assert unsupported({"type": "object", "properties": {"x": {"$ref": "#/defs/x"}}}) == (
        'schema at $.properties.x: keyword "$ref" is not supported (supported: type, properties, '
        "required, additionalProperties, items, enum, const, anyOf, oneOf, minimum, maximum, minLength, "
        "maxLength, minItems, maxItems; annotations title, description, default, examples, $schema, "
        "format are ignored)"
    )


@pytest.mark.parametrize(
    "keyword",
    ["$ref", "pattern", "allOf", "not", "if", "exclusiveMinimum", "multipleOf", "uniqueItems", "$defs", "prefixItems"],
)
def test_each_keyword_outside_the_subset_is_refused(keyword: str) -> None:
    assert f'keyword "{keyword}" is not supported' in unsupported({keyword: 1})


def test_the_error_carries_the_path_and_the_problem_separately() -> None:
    with pytest.raises(UnsupportedSchemaError) as caught:
        check_schema({"items": {"pattern": "x"}})
    assert caught.value.path == "$.items"
    assert caught.value.problem.startswith('keyword "pattern" is not supported')
    assert isinstance(caught.value, ValueError)


def test_paths_name_array_indices_and_quote_unusual_property_names() -> None:
    assert unsupported({"anyOf": [{}, {"not": {}}]}).startswith("schema at $.anyOf[1]: ")
    assert unsupported({"oneOf": [{"items": {"x": 1}}]}).startswith("schema at $.oneOf[0].items: ")
    assert unsupported({"properties": {"a b": {"x": 1}}}).startswith('schema at $.properties["a b"]: ')
    assert unsupported({"additionalProperties": {"x": 1}}).startswith("schema at $.additionalProperties: ")


def test_an_unknown_type_name_is_refused() -> None:
    assert unsupported({"properties": {"n": {"type": "int"}}}) == (
        'schema at $.properties.n: type "int" is not supported '
        "(supported: string, number, integer, boolean, null, object, array)"
    )
    assert 'type "float" is not supported' in unsupported({"type": ["string", "float"]})


def test_a_malformed_type_keyword_is_refused() -> None:
    assert 'keyword "type" must be a type name or a non-empty array of them' in unsupported({"type": []})
    assert 'keyword "type" must be a type name' in unsupported({"type": 3})
    assert 'keyword "type" must list type names (strings), not an integer' in unsupported({"type": ["string", 3]})
    assert 'keyword "type" must list type names (strings), not an array' in unsupported({"type": [["string"]]})
    assert "lists a type more than once" in unsupported({"type": ["string", "string"]})


def test_a_schema_that_is_neither_an_object_nor_a_boolean_is_refused() -> None:
    assert unsupported("string") == "schema at $: a schema must be an object or a boolean, not a string"
    assert unsupported(None) == "schema at $: a schema must be an object or a boolean, not null"
    assert unsupported({"properties": {"x": 1}}) == (
        "schema at $.properties.x: a schema must be an object or a boolean, not an integer"
    )
    assert "not a Python tuple" in unsupported({"anyOf": [()]})


@pytest.mark.parametrize(
    ("schema", "fragment"),
    [
        ({"properties": []}, 'keyword "properties" must be an object mapping property names to schemas, not an array'),
        ({"properties": {1: {}}}, 'keyword "properties" has a key that is not a string: 1'),
        ({"required": "path"}, 'keyword "required" must be an array of property names (strings)'),
        ({"required": ["a", 1]}, 'keyword "required" must be an array of property names (strings)'),
        ({"additionalProperties": "no"}, 'keyword "additionalProperties" must be a boolean or a schema, not a string'),
        ({"items": [{}, {}]}, "an array of schemas (tuple form) is not supported"),
        ({"items": 1}, 'keyword "items" must be a schema (an object or a boolean), not an integer'),
        ({"enum": []}, 'keyword "enum" must be a non-empty array of values'),
        ({"enum": "ab"}, 'keyword "enum" must be a non-empty array of values'),
        ({"enum": [(1, 2)]}, 'keyword "enum" holds a value that is not lossless JSON at $[0]'),
        ({"const": {1: "x"}}, 'keyword "const" holds a value that is not lossless JSON'),
        ({"const": math.nan}, 'keyword "const" holds a value that is not lossless JSON'),
        ({"anyOf": []}, 'keyword "anyOf" must be a non-empty array of schemas'),
        ({"oneOf": {}}, 'keyword "oneOf" must be a non-empty array of schemas'),
        ({"minimum": "0"}, 'keyword "minimum" must be a finite number, not "0"'),
        ({"maximum": True}, 'keyword "maximum" must be a finite number, not a boolean'),
        ({"maximum": math.inf}, 'keyword "maximum" must be a finite number, not inf'),
        ({"minLength": -1}, 'keyword "minLength" must be a non-negative integer, not -1'),
        ({"maxLength": 2.0}, 'keyword "maxLength" must be a non-negative integer, not 2.0'),
        ({"minItems": False}, 'keyword "minItems" must be a non-negative integer, not a boolean'),
        ({"maxItems": None}, 'keyword "maxItems" must be a non-negative integer, not null'),
    ],
)
def test_a_keyword_holding_the_wrong_kind_of_value_is_refused(schema: dict[Any, Any], fragment: str) -> None:
    message = unsupported(schema)
    assert message.startswith("schema at $: ")
    assert fragment in message


def test_a_non_string_schema_key_is_refused() -> None:
    assert unsupported({1: "x"}) == "schema at $: schema keys must be strings, not 1"


def test_annotations_are_ignored_whatever_they_hold() -> None:
    check_schema({"title": 1, "description": None, "default": object(), "examples": "x", "format": [], "$schema": {}})
    assert validate(3, {"type": "integer", "description": "a count", "format": "int32"}) == []


def test_the_first_problem_in_document_order_is_reported() -> None:
    schema = {"properties": {"a": {"x": 1}, "b": {"y": 1}}, "items": {"z": 1}}
    assert unsupported(schema).startswith("schema at $.properties.a: ")


# ---------------------------------------------------------------------------------------------
# Validation: types
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("type_name", "message"),
    [
        ("string", '"value" must be a string'),
        ("number", '"value" must be a number'),
        ("integer", '"value" must be an integer'),
        ("boolean", '"value" must be a boolean'),
        ("null", '"value" must be null'),
        ("object", '"value" must be an object'),
        ("array", '"value" must be an array'),
    ],
)
def test_a_value_of_the_wrong_type_gets_one_message_naming_the_type(type_name: str, message: str) -> None:
    wrong: object = [] if type_name != "array" else {}
    assert validate(wrong, checked({"type": type_name})) == [message]


def test_a_list_of_types_is_named_with_or() -> None:
    assert validate(3, checked({"type": ["string", "null"]})) == ['"value" must be a string or null']
    assert validate(3, checked({"type": ["string", "array", "null"]})) == [
        '"value" must be a string, an array or null'
    ]
    assert validate(None, checked({"type": ["string", "null"]})) == []


def test_a_boolean_is_neither_an_integer_nor_a_number() -> None:
    assert validate(True, checked({"type": "integer"})) == ['"value" must be an integer']
    assert validate(False, checked({"type": "number"})) == ['"value" must be a number']
    assert validate(True, checked({"type": ["integer", "number"]})) == ['"value" must be an integer or a number']
    assert validate(True, checked({"type": "boolean"})) == []


def test_an_integer_is_also_a_number_but_an_integral_float_is_not_an_integer() -> None:
    assert validate(3, checked({"type": "number"})) == []
    assert validate(3, checked({"type": ["number"]})) == []
    assert validate(3.0, checked({"type": "integer"})) == ['"value" must be an integer']
    assert validate(3.5, checked({"type": "number"})) == []


def test_frozen_containers_are_objects_and_arrays() -> None:
    assert validate(snapshot({"a": [1]}), checked({"type": "object"})) == []
    assert validate(snapshot([1, {"a": 1}]), checked({"type": "array"})) == []
    assert validate(snapshot([1]), checked({"type": "object"})) == ['"value" must be an object']


def test_a_type_mismatch_stops_the_descent_into_that_value() -> None:
    schema = checked(
        {"type": "object", "required": ["a"], "properties": {"a": {"type": "string"}}, "minLength": 3, "enum": [{}]}
    )
    assert validate("xy", schema) == ['"value" must be an object']


def test_a_type_with_annotations_only_still_validates() -> None:
    schema = checked({"type": "string", "title": "Output", "description": "The file contents"})
    assert validate("x", schema) == []
    assert validate(1, schema) == ['"value" must be a string']


# ---------------------------------------------------------------------------------------------
# Validation: the empty and boolean schemas
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [None, True, 0, 1.5, "", [], {}, [1, {"a": None}]])
def test_the_empty_schema_and_true_accept_anything(value: object) -> None:
    assert validate(value, {}) == []
    assert validate(value, True) == []


def test_false_accepts_nothing_and_says_so_at_the_location() -> None:
    assert validate(None, False) == ['"value" is not allowed']
    schema = checked({"properties": {"secret": False, "ok": True}})
    assert validate({"secret": 1, "ok": 2}, schema) == ['"value.secret" is not allowed']
    assert validate({"ok": 2}, schema) == []


# ---------------------------------------------------------------------------------------------
# Validation: objects
# ---------------------------------------------------------------------------------------------


def test_a_missing_required_property_is_named() -> None:
    schema = checked({"type": "object", "required": ["path", "size"]})
    assert validate({"size": 1}, schema) == ['"value" is missing required property "path"']
    assert validate({}, schema) == [
        '"value" is missing required property "path"',
        '"value" is missing required property "size"',
    ]


def test_an_unexpected_property_is_named_when_additional_properties_is_false() -> None:
    schema = checked({"type": "object", "properties": {"path": {}}, "additionalProperties": False})
    assert validate({"path": "/", "extra": 1}, schema) == ['"value" has unexpected property "extra"']
    assert validate({"path": "/"}, schema) == []


def test_additional_properties_as_a_schema_applies_to_undeclared_properties_only() -> None:
    schema = checked({"properties": {"name": {"type": "string"}}, "additionalProperties": {"type": "integer"}})
    assert validate({"name": "x", "a": 1, "b": "2"}, schema) == ['"value.b" must be an integer']
    assert validate({"name": 3}, schema) == ['"value.name" must be a string']


def test_additional_properties_true_or_absent_allows_extra_properties() -> None:
    assert validate({"x": 1}, checked({"properties": {}, "additionalProperties": True})) == []
    assert validate({"x": 1}, checked({"properties": {"y": {}}})) == []


def test_optional_properties_may_be_absent() -> None:
    assert validate({}, checked({"properties": {"a": {"type": "string"}}})) == []


def test_property_violations_name_the_property_path() -> None:
    schema = checked({"type": "object", "properties": {"count": {"type": "integer"}}})
    assert validate({"count": "3"}, schema) == ['"value.count" must be an integer']


def test_unusual_property_names_are_quoted_in_brackets() -> None:
    schema = checked({"properties": {"a b": {"type": "string"}, "": {"type": "string"}, "1x": {"type": "string"}}})
    assert validate({"a b": 1, "": 1, "1x": 1}, schema) == [
        '"value["a b"]" must be a string',
        '"value[""]" must be a string',
        '"value["1x"]" must be a string',
    ]


def test_object_keywords_do_not_apply_to_other_kinds() -> None:
    schema = checked({"required": ["a"], "properties": {"a": False}, "additionalProperties": False})
    for value in ("x", 1, None, [1]):
        assert validate(value, schema) == []


# ---------------------------------------------------------------------------------------------
# Validation: arrays and nested paths
# ---------------------------------------------------------------------------------------------


def test_items_are_validated_with_bracketed_indices() -> None:
    schema = checked({"type": "array", "items": {"type": "integer"}})
    assert validate([1, "2", 3, None], schema) == ['"value[1]" must be an integer', '"value[3]" must be an integer']


def test_a_nested_path_combines_properties_and_indices() -> None:
    schema = checked(
        {
            "type": "object",
            "properties": {
                "items": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
                }
            },
        }
    )
    value = {"items": [{"name": "a"}, {"name": "b"}, {"name": 3}, {}]}
    assert validate(value, schema) == [
        '"value.items[2].name" must be a string',
        '"value.items[3]" is missing required property "name"',
    ]


def test_min_items_and_max_items_count_elements() -> None:
    schema = checked({"type": "array", "minItems": 2, "maxItems": 3})
    assert validate([1], schema) == ['"value" must have at least 2 items']
    assert validate([1, 2, 3, 4], schema) == ['"value" must have at most 3 items']
    assert validate([1, 2], schema) == []
    assert validate([], checked({"minItems": 1})) == ['"value" must have at least 1 item']
    assert validate([1, 2], checked({"maxItems": 1})) == ['"value" must have at most 1 item']


def test_array_keywords_do_not_apply_to_other_kinds() -> None:
    schema = checked({"items": False, "minItems": 5})
    assert validate("abc", schema) == []
    assert validate({"a": 1}, schema) == []
    assert validate([1], schema) == ['"value" must have at least 5 items', '"value[0]" is not allowed']


# ---------------------------------------------------------------------------------------------
# Validation: strings and numbers
# ---------------------------------------------------------------------------------------------


def test_min_length_and_max_length_count_characters() -> None:
    schema = checked({"type": "string", "minLength": 2, "maxLength": 10})
    assert validate("a", schema) == ['"value" must be at least 2 characters']
    assert validate("a" * 11, schema) == ['"value" must be at most 10 characters']
    assert validate("é" * 10, schema) == []
    assert validate("", checked({"minLength": 1})) == ['"value" must be at least 1 character']
    assert validate("ab", checked({"maxLength": 1})) == ['"value" must be at most 1 character']


def test_minimum_and_maximum_are_inclusive() -> None:
    schema = checked({"type": "object", "properties": {"n": {"minimum": 0, "maximum": 2.5}}})
    assert validate({"n": -1}, schema) == ['"value.n" must be >= 0']
    assert validate({"n": 3}, schema) == ['"value.n" must be <= 2.5']
    assert validate({"n": 0}, schema) == []
    assert validate({"n": 2.5}, schema) == []


def test_number_and_string_keywords_do_not_apply_to_booleans_or_other_kinds() -> None:
    schema = checked({"minimum": 5, "maxLength": 0})
    assert validate(True, schema) == []
    assert validate([1, 2], schema) == []
    assert validate("x", schema) == ['"value" must be at most 0 characters']
    assert validate(1, schema) == ['"value" must be >= 5']


# ---------------------------------------------------------------------------------------------
# Validation: enum and const
# ---------------------------------------------------------------------------------------------


def test_enum_lists_the_allowed_values_as_json() -> None:
    assert validate("c", checked({"enum": ["a", "b"]})) == ['"value" must be one of: "a", "b"']
    assert validate(0, checked({"enum": [None, True, 1.5, [1], {"k": "v"}]})) == [
        '"value" must be one of: null, true, 1.5, [1], {"k": "v"}'
    ]
    assert validate("b", checked({"enum": ["a", "b"]})) == []


def test_const_shows_the_required_value_as_json() -> None:
    assert validate(4, checked({"const": 3})) == ['"value" must equal 3']
    assert validate("x", checked({"const": "y"})) == ['"value" must equal "y"']
    assert validate(1, checked({"const": None})) == ['"value" must equal null']
    assert validate(None, checked({"const": None})) == []


def test_enum_and_const_keep_booleans_apart_from_numbers() -> None:
    assert validate(1, checked({"const": True})) == ['"value" must equal true']
    assert validate(True, checked({"const": 1})) == ['"value" must equal 1']
    assert validate(0, checked({"enum": [False]})) == ['"value" must be one of: false']
    assert validate([True], checked({"const": [1]})) == ['"value" must equal [1]']
    assert validate({"a": False}, checked({"enum": [{"a": 0}]})) == ['"value" must be one of: {"a": 0}']


def test_enum_and_const_compare_numbers_by_value() -> None:
    assert validate(1.0, checked({"const": 1})) == []
    assert validate(1, checked({"enum": [1.0]})) == []
    assert validate({"a": [1, 2.0]}, checked({"const": {"a": [1.0, 2]}})) == []


def test_enum_and_const_compare_containers_structurally() -> None:
    schema = checked({"const": {"a": [1, {"b": None}]}})
    assert validate(snapshot({"a": [1, {"b": None}]}), schema) == []
    assert validate({"a": [1, {"b": None}, 2]}, schema) != []
    assert validate({"a": [1, {"c": None}]}, schema) != []
    assert validate({"a": [1, {"b": None}], "z": 1}, schema) != []
    assert validate(["a"], schema) == ['"value" must equal {"a": [1, {"b": null}]}']


def test_non_ascii_values_are_shown_as_they_are() -> None:
    assert validate("x", checked({"enum": ["é", "日本"]})) == ['"value" must be one of: "é", "日本"']


# ---------------------------------------------------------------------------------------------
# Validation: anyOf and oneOf
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("keyword", ["anyOf", "oneOf"])
def test_any_of_and_one_of_need_one_matching_branch(keyword: str) -> None:
    schema = checked({keyword: [{"type": "string"}, {"type": "null"}]})
    assert validate("x", schema) == []
    assert validate(None, schema) == []
    assert validate(1, schema) == ['"value" must match at least one allowed schema']


def test_one_of_is_treated_like_any_of_so_overlapping_branches_still_pass() -> None:
    schema = checked({"oneOf": [{"type": "number"}, {"type": "integer"}]})
    assert validate(3, schema) == []


def test_a_failing_branch_does_not_leak_its_own_messages() -> None:
    schema = checked(
        {
            "type": "object",
            "properties": {
                "result": {
                    "anyOf": [
                        {"type": "object", "required": ["ok"], "properties": {"ok": {"const": True}}},
                        {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"}}},
                    ]
                }
            },
        }
    )
    assert validate({"result": {"ok": True}}, schema) == []
    assert validate({"result": {"error": "boom"}}, schema) == []
    assert validate({"result": {"ok": False}}, schema) == ['"value.result" must match at least one allowed schema']
    assert validate({"result": {"error": 1}}, schema) == ['"value.result" must match at least one allowed schema']


def test_any_of_combines_with_sibling_keywords() -> None:
    schema = checked({"type": "array", "maxItems": 1, "anyOf": [{"items": {"type": "string"}}, {"minItems": 5}]})
    assert validate(["a"], schema) == []
    assert validate([1, 2], schema) == [
        '"value" must have at most 1 item',
        '"value" must match at least one allowed schema',
    ]


def test_nested_any_of_inside_a_branch_is_resolved() -> None:
    schema = checked({"anyOf": [{"anyOf": [{"type": "string"}, {"type": "null"}]}, {"anyOf": [False, {"const": 7}]}]})
    assert validate("x", schema) == []
    assert validate(None, schema) == []
    assert validate(7, schema) == []
    assert validate(8, schema) == ['"value" must match at least one allowed schema']


def test_any_of_and_one_of_together_each_report_once() -> None:
    schema = checked({"anyOf": [{"type": "string"}], "oneOf": [{"type": "null"}]})
    assert validate(1, schema) == [
        '"value" must match at least one allowed schema',
        '"value" must match at least one allowed schema',
    ]
    assert validate("x", schema) == ['"value" must match at least one allowed schema']


def test_a_branch_inside_an_array_item_reports_at_the_item() -> None:
    schema = checked({"items": {"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 1}]}})
    assert validate([1, "a", "ab", None], schema) == [
        '"value[2]" must match at least one allowed schema',
        '"value[3]" must match at least one allowed schema',
    ]


# ---------------------------------------------------------------------------------------------
# Depth
# ---------------------------------------------------------------------------------------------


def test_a_deeply_nested_object_schema_is_checked_and_validated_without_recursion() -> None:
    assert DEEP > sys.getrecursionlimit()
    schema: dict[str, Any] = {"type": "integer"}
    value: Any = "leaf"
    for _ in range(DEEP):
        schema = {"type": "object", "required": ["a"], "properties": {"a": schema}}
        value = {"a": value}
    check_schema(schema)
    assert validate(value, schema) == ['"value' + ".a" * DEEP + '" must be an integer']


def test_a_deeply_nested_array_schema_is_checked_and_validated_without_recursion() -> None:
    schema: dict[str, Any] = {"type": "string"}
    value: Any = "ok"
    for _ in range(DEEP):
        schema = {"type": "array", "items": schema}
        value = [value]
    check_schema(schema)
    assert validate(value, schema) == []
    assert validate(snapshot(value), schema) == []


def test_deeply_nested_any_of_is_checked_and_validated_without_recursion() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(DEEP):
        schema = {"anyOf": [{"type": "null"}, schema]}
    check_schema(schema)
    assert validate("x", schema) == []
    assert validate(None, schema) == []
    assert validate(1, schema) == ['"value" must match at least one allowed schema']


def test_a_deeply_nested_unsupported_keyword_is_found_with_its_full_path() -> None:
    schema: dict[str, Any] = {"pattern": "x"}
    for _ in range(DEEP):
        schema = {"items": schema}
    assert unsupported(schema).startswith("schema at $" + ".items" * DEEP + ': keyword "pattern"')


def test_a_deeply_nested_const_is_accepted_and_a_mismatch_still_yields_a_message() -> None:
    const: Any = 1
    for _ in range(DEEP):
        const = [const]
    schema = checked({"const": const})
    assert validate(snapshot(const), schema) == []
    [message] = validate([2], schema)
    assert message.startswith('"value" must equal ')


# ---------------------------------------------------------------------------------------------
# describe_type
# ---------------------------------------------------------------------------------------------


def test_describe_type_names_json_kinds_and_python_types_otherwise() -> None:
    values: list[object] = [None, True, 1, 1.5, "s", [], {}, snapshot([1]), snapshot({"a": 1})]
    assert [describe_type(value) for value in values] == [
        "null",
        "boolean",
        "integer",
        "number",
        "string",
        "array",
        "object",
        "array",
        "object",
    ]
    assert describe_type((1,)) == "tuple"


# ---------------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------------

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False).map(lambda f: 0.0 if f == 0 else f)
    | st.text(max_size=8)
)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4),
    max_leaves=20,
)
maybe_frozen_values = json_values | json_values.map(snapshot)

type_specs = st.sampled_from(TYPE_NAMES) | st.lists(st.sampled_from(TYPE_NAMES), min_size=1, max_size=3, unique=True)


def _schema_for(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    keywords: dict[str, st.SearchStrategy[Any]] = {
        "type": type_specs,
        "properties": st.dictionaries(st.text(max_size=3), children, max_size=3),
        "required": st.lists(st.text(max_size=3), max_size=3),
        "additionalProperties": children,
        "items": children,
        "enum": st.lists(json_values, min_size=1, max_size=3),
        "const": json_values,
        "anyOf": st.lists(children, min_size=1, max_size=3),
        "oneOf": st.lists(children, min_size=1, max_size=3),
        "minimum": st.integers(-10, 10) | st.floats(-10, 10),
        "maximum": st.integers(-10, 10) | st.floats(-10, 10),
        "minLength": st.integers(0, 5),
        "maxLength": st.integers(0, 5),
        "minItems": st.integers(0, 5),
        "maxItems": st.integers(0, 5),
        "description": st.text(max_size=5),
    }
    return st.fixed_dictionaries({}, optional=keywords)


schemas: st.SearchStrategy[Any] = st.recursive(st.booleans() | st.just({}) | st.builds(dict, type=type_specs), _schema_for, max_leaves=10)


@given(maybe_frozen_values)
def test_any_lossless_json_value_validates_against_the_empty_schema(value: object) -> None:
    assert validate(value, {}) == []
    assert validate(value, True) == []
    assert validate(value, False) == ['"value" is not allowed']


@given(maybe_frozen_values, type_specs)
def test_a_value_validates_against_a_type_exactly_when_its_kind_is_that_type(value: object, spec: Any) -> None:
    names = {spec} if isinstance(spec, str) else set(spec)
    messages = validate(value, checked({"type": spec}))
    if kinds_of(value) & names:
        assert messages == []
    else:
        assert len(messages) == 1
        assert messages[0].startswith('"value" must be ')
    # The full machine (reached through a non-annotation keyword) agrees with the fast path.
    assert validate(value, checked({"type": spec, "anyOf": [True]})) == messages


@given(maybe_frozen_values)
def test_a_value_equals_itself_under_const_and_enum(value: object) -> None:
    plain = snapshot(value)
    assert validate(value, checked({"const": plain})) == []
    assert validate(value, checked({"enum": ["sentinel-not-generated-because-too-long", plain]})) == []


@settings(max_examples=300)
@given(schemas, maybe_frozen_values)
def test_every_generated_schema_is_accepted_and_validation_returns_stable_messages(schema: Any, value: object) -> None:
    check_schema(schema)
    messages = validate(value, schema)
    assert all(isinstance(message, str) and message.startswith('"value') for message in messages)
    assert validate(value, schema) == messages
    assert validate(snapshot(value), schema) == messages
