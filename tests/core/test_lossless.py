"""reference/core-pipeline.md §5.4: the lossless JSON snapshot and deep freeze."""

from __future__ import annotations

import copy
import dataclasses
import datetime
import json
import math
import pickle
from collections import OrderedDict, defaultdict
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness_core.lossless import FrozenDict, FrozenList, LosslessJSONError, snapshot, thaw

DEEP = 5_000
LIMIT = 2**53


# --------------------------------------------------------------------------- helpers


def same_types(left: Any, right: Any) -> bool:
    """Equal values with exactly matching leaf types (catches True versus 1 and 1 versus 1.0).

    Frozen containers count as their plain counterparts, so a snapshot can be compared with its input.
    """

    def kind(value: Any) -> type:
        if isinstance(value, dict):
            return dict
        if isinstance(value, list):
            return list
        return type(value)

    stack = [(left, right)]
    while stack:
        a, b = stack.pop()
        if kind(a) is not kind(b):
            return False
        if isinstance(a, dict):
            if list(a.keys()) != list(b.keys()):
                return False
            if not all(type(key) is str for key in a):
                return False
            stack.extend((a[key], b[key]) for key in a)
        elif isinstance(a, list):
            if len(a) != len(b):
                return False
            stack.extend(zip(a, b))
        elif a != b:
            return False
    return True


def assert_frozen_throughout(value: Any) -> None:
    """Every container reachable from ``value`` is a FrozenDict or FrozenList (iteratively)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            assert type(item) is FrozenDict
            stack.extend(item.values())
        elif isinstance(item, list):
            assert type(item) is FrozenList
            stack.extend(item)


def nested_list(depth: int) -> list[Any]:
    root: list[Any] = []
    current = root
    for _ in range(depth - 1):
        child: list[Any] = []
        current.append(child)
        current = child
    current.append("bottom")
    return root


def nested_dict(depth: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    current = root
    for _ in range(depth - 1):
        child: dict[str, Any] = {}
        current["k"] = child
        current = child
    current["k"] = "bottom"
    return root


def walk_nested_list(value: Any, container: type) -> int:
    """Depth of a chain of single-child lists ending in "bottom", checking each level's type."""
    depth = 0
    while type(value) is not str:
        assert type(value) is container
        assert len(value) == 1
        value = value[0]
        depth += 1
    assert value == "bottom"
    return depth


def walk_nested_dict(value: Any, container: type) -> int:
    depth = 0
    while type(value) is not str:
        assert type(value) is container
        assert list(value) == ["k"]
        value = value["k"]
        depth += 1
    assert value == "bottom"
    return depth


def frozen_dict() -> FrozenDict:
    value = snapshot({"a": 1, "b": [1, 2], "c": {"d": 3}})
    assert type(value) is FrozenDict
    return value


def frozen_list() -> FrozenList:
    value = snapshot([3, 1, 2, {"a": 1}, [4]])
    assert type(value) is FrozenList
    return value


# --------------------------------------------------------------------------- accepted values


ACCEPTED_SCALARS = [
    None,
    True,
    False,
    "",
    "text with ünïcode and \x00 control",
    0,
    1,
    -1,
    LIMIT,
    -LIMIT,
    LIMIT - 1,
    0.0,
    1.5,
    -2.25,
    1e300,
    -1e-300,
    5e-324,
    float(LIMIT * 4),
]


@pytest.mark.parametrize("value", ACCEPTED_SCALARS, ids=repr)
def test_a_lossless_scalar_comes_back_as_itself_with_its_exact_type(value: Any) -> None:
    result = snapshot(value)
    assert result == value
    assert type(result) is type(value)


def test_integers_up_to_two_to_the_53_inclusive_are_accepted_in_both_directions() -> None:
    assert snapshot(2**53) == 2**53
    assert snapshot(-(2**53)) == -(2**53)
    assert snapshot([2**53, -(2**53)]) == [2**53, -(2**53)]


def test_positive_zero_is_accepted_as_a_float() -> None:
    result = snapshot({"z": 0.0})
    assert type(result["z"]) is float
    assert math.copysign(1.0, result["z"]) == 1.0


def test_nested_lists_and_dicts_come_back_equal_and_frozen() -> None:
    value = {
        "none": None,
        "flag": True,
        "text": "hi",
        "int": 3,
        "float": 2.5,
        "list": [1, [2, [3, {"deep": [None, False]}]], {}],
        "dict": {"inner": {"empty_list": [], "empty_dict": {}}},
    }
    result = snapshot(value)
    assert thaw(result) == value
    assert same_types(result, value)
    assert_frozen_throughout(result)
    assert type(result["list"][1][1][1]) is FrozenDict
    assert type(result["dict"]["inner"]["empty_list"]) is FrozenList


def test_a_list_root_comes_back_as_a_frozen_list() -> None:
    value = [1, "two", {"three": [3.0]}]
    result = snapshot(value)
    assert type(result) is FrozenList
    assert thaw(result) == value
    assert_frozen_throughout(result)


def test_dict_key_order_is_preserved() -> None:
    value = {"z": 1, "a": 2, "m": {"y": 1, "b": 2}}
    result = snapshot(value)
    assert list(result) == ["z", "a", "m"]
    assert list(result["m"]) == ["y", "b"]
    assert list(thaw(result)) == ["z", "a", "m"]


def test_the_snapshot_is_a_detached_copy_of_the_input() -> None:
    inner = [1, 2]
    value = {"a": inner, "b": {"c": "d"}}
    result = snapshot(value)
    assert result is not value
    assert result["a"] is not inner

    inner.append(3)
    value["b"]["c"] = "changed"
    value["new"] = True
    del value["a"]

    assert thaw(result) == {"a": [1, 2], "b": {"c": "d"}}


def test_the_caller_object_is_not_frozen_in_place() -> None:
    value = {"a": [1]}
    snapshot(value)
    assert type(value) is dict
    assert type(value["a"]) is list
    value["a"].append(2)
    value["b"] = 3
    assert value == {"a": [1, 2], "b": 3}


def test_thaw_returns_plain_mutable_containers_detached_from_the_snapshot() -> None:
    result = snapshot({"a": [1, {"b": 2}]})
    thawed = thaw(result)
    assert type(thawed) is dict
    assert type(thawed["a"]) is list
    assert type(thawed["a"][1]) is dict
    thawed["a"][1]["b"] = 99
    thawed["a"].append("x")
    assert result == {"a": [1, {"b": 2}]}


def test_bool_stays_bool_and_is_not_turned_into_an_int() -> None:
    result = snapshot({"t": True, "f": False, "list": [True, 1, False, 0]})
    assert type(result["t"]) is bool
    assert result["t"] is True
    assert type(result["f"]) is bool
    assert [type(item) for item in result["list"]] == [bool, int, bool, int]
    assert same_types(result, {"t": True, "f": False, "list": [True, 1, False, 0]})
    assert not same_types(result, {"t": 1, "f": 0, "list": [1, 1, 0, 0]})


def test_ints_stay_ints_and_floats_stay_floats() -> None:
    result = snapshot([1, 1.0, 0, 0.0, -3, -3.0])
    assert [type(item) for item in result] == [int, float, int, float, int, float]


def test_shared_acyclic_references_are_allowed_and_copied() -> None:
    shared = [1, {"x": 2}]
    value = {"first": shared, "second": shared, "nested": [shared, [shared]]}
    result = snapshot(value)
    assert thaw(result) == value
    assert result["first"] == result["second"] == [1, {"x": 2}]
    assert_frozen_throughout(result)


def test_the_same_dict_shared_by_siblings_in_a_list_is_allowed() -> None:
    shared = {"k": [1]}
    result = snapshot([shared, shared, shared])
    assert thaw(result) == [shared, shared, shared]


# --------------------------------------------------------------------------- deep values


def test_a_5000_deep_nested_list_snapshots_and_thaws_without_recursion_error() -> None:
    value = nested_list(DEEP)
    result = snapshot(value)
    assert walk_nested_list(result, FrozenList) == DEEP
    thawed = thaw(result)
    assert walk_nested_list(thawed, list) == DEEP


def test_a_5000_deep_nested_dict_snapshots_and_thaws_without_recursion_error() -> None:
    value = nested_dict(DEEP)
    result = snapshot(value)
    assert walk_nested_dict(result, FrozenDict) == DEEP
    thawed = thaw(result)
    assert walk_nested_dict(thawed, dict) == DEEP


def test_a_bad_leaf_at_the_bottom_of_a_5000_deep_list_is_reported_with_its_full_path() -> None:
    value = nested_list(DEEP)
    bottom = value
    while bottom != ["bottom"]:
        bottom = bottom[0]
    bottom[0] = float("nan")
    with pytest.raises(LosslessJSONError) as caught:
        snapshot(value)
    assert caught.value.path == "$" + "[0]" * DEEP


# --------------------------------------------------------------------------- rejected values


@dataclasses.dataclass
class Point:
    x: int
    y: int


class DictSubclass(dict):  # type: ignore[type-arg]
    pass


class ListSubclass(list):  # type: ignore[type-arg]
    pass


class StrSubclass(str):
    pass


class IntSubclass(int):
    pass


REJECTED_LEAVES: list[tuple[str, Callable[[], Any]]] = [
    ("nan", lambda: float("nan")),
    ("inf", lambda: float("inf")),
    ("-inf", lambda: float("-inf")),
    ("negative zero", lambda: -0.0),
    ("2**53+1", lambda: 2**53 + 1),
    ("-(2**53+1)", lambda: -(2**53 + 1)),
    ("2**60", lambda: 2**60),
    ("tuple", lambda: (1, 2)),
    ("empty tuple", lambda: ()),
    ("set", lambda: {1}),
    ("frozenset", lambda: frozenset({1})),
    ("bytes", lambda: b"x"),
    ("bytearray", lambda: bytearray(b"x")),
    ("Decimal", lambda: Decimal("1.5")),
    ("datetime", lambda: datetime.datetime(2024, 1, 1)),
    ("date", lambda: datetime.date(2024, 1, 1)),
    ("dataclass instance", lambda: Point(1, 2)),
    ("object", lambda: object()),
    ("dict subclass", lambda: DictSubclass(a=1)),
    ("list subclass", lambda: ListSubclass([1])),
    ("OrderedDict", lambda: OrderedDict(a=1)),
    ("defaultdict", lambda: defaultdict(list)),
    ("str subclass", lambda: StrSubclass("s")),
    ("int subclass", lambda: IntSubclass(1)),
    ("complex", lambda: 1j),
    ("function", lambda: len),
]


@pytest.mark.parametrize(("name", "make"), REJECTED_LEAVES, ids=[name for name, _ in REJECTED_LEAVES])
def test_a_non_lossless_value_at_the_root_is_rejected_with_the_root_path(
    name: str, make: Callable[[], Any]
) -> None:
    with pytest.raises(LosslessJSONError) as caught:
        snapshot(make())
    assert caught.value.path == "$"
    assert "$" in str(caught.value)


@pytest.mark.parametrize(("name", "make"), REJECTED_LEAVES, ids=[name for name, _ in REJECTED_LEAVES])
def test_a_non_lossless_value_nested_in_a_dict_and_list_is_rejected_with_its_path(
    name: str, make: Callable[[], Any]
) -> None:
    value = {"ok": [1, 2], "a": [0, make()]}
    with pytest.raises(LosslessJSONError) as caught:
        snapshot(value)
    assert caught.value.path == "$['a'][1]"
    assert "$['a'][1]" in str(caught.value)


@pytest.mark.parametrize(("name", "make"), REJECTED_LEAVES, ids=[name for name, _ in REJECTED_LEAVES])
def test_a_non_lossless_list_element_is_rejected_with_its_index_path(name: str, make: Callable[[], Any]) -> None:
    with pytest.raises(LosslessJSONError) as caught:
        snapshot([None, [True, {"k": make()}]])
    assert caught.value.path == "$[1][1]['k']"


def test_lossless_json_error_is_a_type_error_with_path_and_problem() -> None:
    with pytest.raises(TypeError) as caught:
        snapshot({"x": float("nan")})
    error = caught.value
    assert isinstance(error, LosslessJSONError)
    assert issubclass(LosslessJSONError, TypeError)
    assert error.path == "$['x']"
    assert isinstance(error.problem, str) and error.problem
    assert error.path in str(error)


def test_negative_zero_is_rejected_but_positive_zero_is_accepted() -> None:
    assert snapshot([0.0]) == [0.0]
    with pytest.raises(LosslessJSONError) as caught:
        snapshot([0.0, -0.0])
    assert caught.value.path == "$[1]"


def test_integers_one_beyond_two_to_the_53_are_rejected_in_both_directions() -> None:
    for bad in (2**53 + 1, -(2**53 + 1)):
        with pytest.raises(LosslessJSONError) as caught:
            snapshot({"n": bad})
        assert caught.value.path == "$['n']"


@pytest.mark.parametrize("key", [1, (1, 2), None, True, False, 1.5, b"k"], ids=repr)
def test_a_non_str_dict_key_is_rejected_with_the_key_in_the_path(key: Any) -> None:
    with pytest.raises(LosslessJSONError) as caught:
        snapshot({"outer": {key: "value"}})
    assert caught.value.path == f"$['outer'][{key!r}]"


def test_a_str_subclass_dict_key_is_rejected() -> None:
    with pytest.raises(LosslessJSONError):
        snapshot({StrSubclass("k"): 1})


def test_a_cycle_through_a_list_is_rejected() -> None:
    value: list[Any] = [1]
    value.append(value)
    with pytest.raises(LosslessJSONError) as caught:
        snapshot(value)
    assert caught.value.path == "$[1]"
    assert "cycle" in str(caught.value)


def test_a_cycle_through_a_dict_is_rejected() -> None:
    value: dict[str, Any] = {"a": 1}
    value["self"] = value
    with pytest.raises(LosslessJSONError) as caught:
        snapshot(value)
    assert caught.value.path == "$['self']"


def test_a_deep_cycle_through_mixed_containers_is_rejected_at_the_back_edge() -> None:
    top: dict[str, Any] = {}
    middle: list[Any] = [0, {"inner": []}]
    top["m"] = middle
    middle[1]["inner"].append(top)
    with pytest.raises(LosslessJSONError) as caught:
        snapshot({"root": top})
    assert caught.value.path == "$['root']['m'][1]['inner'][0]"


def test_a_cycle_at_the_bottom_of_a_long_chain_is_rejected() -> None:
    root = nested_list(200)
    bottom = root
    while bottom != ["bottom"]:
        bottom = bottom[0]
    middle = root
    for _ in range(100):
        middle = middle[0]
    bottom[0] = middle
    with pytest.raises(LosslessJSONError) as caught:
        snapshot(root)
    assert caught.value.path == "$" + "[0]" * 200


def test_the_same_frozen_child_twice_is_shared_rather_than_copied() -> None:
    frozen = snapshot({"a": [1]})
    value = {"x": frozen, "y": frozen}
    result = snapshot(value)
    assert result["x"] is frozen
    assert result["y"] is frozen


# --------------------------------------------------------------------------- immutability


DICT_MUTATIONS: list[tuple[str, Callable[[Any], Any]]] = [
    ("setitem new key", lambda d: d.__setitem__("x", 1)),
    ("setitem existing key", lambda d: d.__setitem__("a", 2)),
    ("delitem", lambda d: d.__delitem__("a")),
    ("clear", lambda d: d.clear()),
    ("pop", lambda d: d.pop("a")),
    ("pop with default", lambda d: d.pop("missing", None)),
    ("popitem", lambda d: d.popitem()),
    ("setdefault", lambda d: d.setdefault("x", 1)),
    ("setdefault existing", lambda d: d.setdefault("a", 1)),
    ("update", lambda d: d.update({"x": 1})),
    ("update kwargs", lambda d: d.update(x=1)),
    ("update empty", lambda d: d.update()),
    ("set attribute", lambda d: setattr(d, "attr", 1)),
]


@pytest.mark.parametrize(("name", "mutate"), DICT_MUTATIONS, ids=[name for name, _ in DICT_MUTATIONS])
def test_every_mutation_of_a_frozen_dict_raises_type_error(name: str, mutate: Callable[[Any], Any]) -> None:
    d = frozen_dict()
    before = thaw(d)
    with pytest.raises(TypeError):
        mutate(d)
    assert thaw(d) == before


def test_item_assignment_and_deletion_syntax_on_a_frozen_dict_raise_type_error() -> None:
    d = frozen_dict()
    with pytest.raises(TypeError):
        d["x"] = 1
    with pytest.raises(TypeError):
        del d["a"]
    with pytest.raises(TypeError):
        d |= {"x": 1}
    with pytest.raises(TypeError):
        d.attr = 1  # type: ignore[attr-defined]
    assert thaw(d) == {"a": 1, "b": [1, 2], "c": {"d": 3}}
    assert type(d) is FrozenDict


def test_or_on_a_frozen_dict_makes_a_new_plain_dict_and_leaves_the_original() -> None:
    d = frozen_dict()
    merged = d | {"x": 1}
    assert merged == {"a": 1, "b": [1, 2], "c": {"d": 3}, "x": 1}
    assert "x" not in d


LIST_MUTATIONS: list[tuple[str, Callable[[Any], Any]]] = [
    ("setitem", lambda xs: xs.__setitem__(0, 9)),
    ("setitem slice", lambda xs: xs.__setitem__(slice(0, 2), [9])),
    ("delitem", lambda xs: xs.__delitem__(0)),
    ("delitem slice", lambda xs: xs.__delitem__(slice(0, 2))),
    ("append", lambda xs: xs.append(9)),
    ("extend", lambda xs: xs.extend([9])),
    ("extend empty", lambda xs: xs.extend([])),
    ("insert", lambda xs: xs.insert(0, 9)),
    ("pop", lambda xs: xs.pop()),
    ("pop index", lambda xs: xs.pop(0)),
    ("remove", lambda xs: xs.remove(3)),
    ("clear", lambda xs: xs.clear()),
    ("sort", lambda xs: xs.sort()),
    ("sort with key", lambda xs: xs.sort(key=str)),
    ("reverse", lambda xs: xs.reverse()),
    ("iadd", lambda xs: xs.__iadd__([9])),
    ("imul", lambda xs: xs.__imul__(2)),
    ("set attribute", lambda xs: setattr(xs, "attr", 1)),
]


@pytest.mark.parametrize(("name", "mutate"), LIST_MUTATIONS, ids=[name for name, _ in LIST_MUTATIONS])
def test_every_mutation_of_a_frozen_list_raises_type_error(name: str, mutate: Callable[[Any], Any]) -> None:
    xs = frozen_list()
    before = thaw(xs)
    with pytest.raises(TypeError):
        mutate(xs)
    assert thaw(xs) == before


def test_item_slice_and_augmented_assignment_syntax_on_a_frozen_list_raise_type_error() -> None:
    xs = frozen_list()
    with pytest.raises(TypeError):
        xs[0] = 9
    with pytest.raises(TypeError):
        xs[0:2] = [9]
    with pytest.raises(TypeError):
        del xs[0]
    with pytest.raises(TypeError):
        del xs[:]
    with pytest.raises(TypeError):
        xs += [9]
    with pytest.raises(TypeError):
        xs *= 2
    with pytest.raises(TypeError):
        xs.sort()
    assert type(xs) is FrozenList
    assert thaw(xs) == [3, 1, 2, {"a": 1}, [4]]


def test_non_mutating_list_operations_on_a_frozen_list_still_work() -> None:
    xs = snapshot([3, 1, 2])
    assert xs + [4] == [3, 1, 2, 4]
    assert xs * 2 == [3, 1, 2, 3, 1, 2]
    assert sorted(xs) == [1, 2, 3]
    assert xs[1:] == [1, 2]
    assert xs.index(2) == 2
    assert xs.count(1) == 1
    assert list(reversed(xs)) == [2, 1, 3]
    assert xs == [3, 1, 2]


def test_nested_containers_are_frozen_too() -> None:
    result = snapshot({"outer": {"inner": [1, {"deep": [2]}]}})
    with pytest.raises(TypeError):
        result["outer"]["x"] = 1
    with pytest.raises(TypeError):
        result["outer"]["inner"].append(3)
    with pytest.raises(TypeError):
        result["outer"]["inner"][1]["deep"][0] = 5
    with pytest.raises(TypeError):
        result["outer"]["inner"][1].pop("deep")
    assert thaw(result) == {"outer": {"inner": [1, {"deep": [2]}]}}


def test_empty_frozen_containers_are_frozen_too() -> None:
    empty_dict = snapshot({})
    empty_list = snapshot([])
    assert type(empty_dict) is FrozenDict
    assert type(empty_list) is FrozenList
    with pytest.raises(TypeError):
        empty_dict["x"] = 1
    with pytest.raises(TypeError):
        empty_list.append(1)
    assert empty_dict == {}
    assert empty_list == []


@pytest.mark.parametrize(
    "construct",
    [
        lambda: FrozenDict(),
        lambda: FrozenDict({"a": 1}),
        lambda: FrozenDict(a=1),
        lambda: FrozenList(),
        lambda: FrozenList([1, 2]),
    ],
    ids=["FrozenDict()", "FrozenDict(mapping)", "FrozenDict(kwargs)", "FrozenList()", "FrozenList(iterable)"],
)
def test_direct_construction_of_frozen_containers_is_refused(construct: Callable[[], Any]) -> None:
    with pytest.raises(TypeError):
        construct()


# --------------------------------------------------------------------------- frozen values as input


def test_a_frozen_value_is_accepted_as_input_and_returned_as_the_same_object() -> None:
    frozen_d = frozen_dict()
    frozen_l = frozen_list()
    assert snapshot(frozen_d) is frozen_d
    assert snapshot(frozen_l) is frozen_l


def test_a_frozen_value_nested_in_a_plain_dict_is_shared_as_the_same_object() -> None:
    frozen_d = frozen_dict()
    frozen_l = frozen_list()
    result = snapshot({"d": frozen_d, "plain": [frozen_l, 1]})
    assert result["d"] is frozen_d
    assert result["plain"][0] is frozen_l
    assert type(result["plain"]) is FrozenList
    assert thaw(result) == {"d": thaw(frozen_d), "plain": [thaw(frozen_l), 1]}


def test_snapshot_is_idempotent() -> None:
    value = {"a": [1, {"b": None}]}
    once = snapshot(value)
    assert snapshot(once) is once
    assert snapshot(thaw(once)) == once


# --------------------------------------------------------------------------- copy, pickle, json


@pytest.mark.parametrize("make", [frozen_dict, frozen_list], ids=["FrozenDict", "FrozenList"])
def test_copy_and_deepcopy_of_a_frozen_value_return_the_same_object(make: Callable[[], Any]) -> None:
    value = make()
    assert copy.copy(value) is value
    assert copy.deepcopy(value) is value


def test_deepcopy_of_a_plain_container_shares_the_frozen_values_inside() -> None:
    frozen = frozen_dict()
    plain = {"f": frozen, "xs": [frozen]}
    copied = copy.deepcopy(plain)
    assert copied["f"] is frozen
    assert copied["xs"][0] is frozen


@pytest.mark.parametrize("make", [frozen_dict, frozen_list], ids=["FrozenDict", "FrozenList"])
@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_pickle_round_trips_a_frozen_value_to_an_equal_frozen_value(
    make: Callable[[], Any], protocol: int
) -> None:
    value = make()
    restored = pickle.loads(pickle.dumps(value, protocol=protocol))
    assert type(restored) is type(value)
    assert restored == value
    assert same_types(restored, value)
    assert_frozen_throughout(restored)
    with pytest.raises(TypeError):
        restored.clear()


def test_pickle_round_trips_empty_frozen_values() -> None:
    for value in (snapshot({}), snapshot([])):
        restored = pickle.loads(pickle.dumps(value))
        assert type(restored) is type(value)
        assert restored == value


def test_json_dumps_of_a_frozen_value_matches_json_dumps_of_the_plain_value() -> None:
    value = {"a": [1, 2.5, True, None, "s"], "b": {"c": {}, "d": []}, "e": 2**53}
    frozen = snapshot(value)
    assert json.dumps(frozen) == json.dumps(value)
    assert json.dumps(frozen, sort_keys=True, indent=2) == json.dumps(value, sort_keys=True, indent=2)
    assert json.loads(json.dumps(frozen)) == value


def test_repr_names_the_frozen_types() -> None:
    assert repr(snapshot({"a": [1]})) == "FrozenDict({'a': FrozenList([1])})"
    assert repr(snapshot([])) == "FrozenList([])"


# --------------------------------------------------------------------------- properties


def lossless_json() -> st.SearchStrategy[Any]:
    leaves = (
        st.none()
        | st.booleans()
        | st.text()
        | st.integers(min_value=-LIMIT, max_value=LIMIT)
        | st.floats(allow_nan=False, allow_infinity=False).filter(
            lambda x: not (x == 0.0 and math.copysign(1.0, x) < 0)
        )
    )
    return st.recursive(
        leaves,
        lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5),
        max_leaves=30,
    )


@given(lossless_json())
def test_any_lossless_json_value_round_trips_through_snapshot_thaw_and_json(value: Any) -> None:
    result = snapshot(value)
    assert thaw(result) == value
    assert same_types(thaw(result), value)
    assert same_types(result, value)
    assert_frozen_throughout(result)
    reloaded = json.loads(json.dumps(result))
    assert reloaded == value
    assert same_types(reloaded, value)


BAD_LEAVES: list[Callable[[], Any]] = [
    lambda: float("nan"),
    lambda: float("inf"),
    lambda: -0.0,
    lambda: 2**60,
    lambda: (1, 2),
    lambda: {1},
    lambda: b"x",
]


def containers_with_paths(value: Any) -> list[tuple[Any, str]]:
    """Every list and dict inside ``value`` (the root included) with the path the module reports."""
    found: list[tuple[Any, str]] = []
    stack = [(value, "$")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, dict):
            found.append((item, path))
            stack.extend((child, f"{path}[{key!r}]") for key, child in item.items())
        elif isinstance(item, list):
            found.append((item, path))
            stack.extend((child, f"{path}[{index}]") for index, child in enumerate(item))
    return found


@given(lossless_json(), st.sampled_from(BAD_LEAVES), st.data())
def test_one_bad_leaf_anywhere_in_a_lossless_value_makes_snapshot_raise_at_its_path(
    value: Any, make_bad: Callable[[], Any], data: st.DataObject
) -> None:
    bad = make_bad()
    places = containers_with_paths(value)
    if not places:
        value, expected_path = bad, "$"
    else:
        container, path = data.draw(st.sampled_from(places), label="container")
        if isinstance(container, list):
            index = data.draw(st.integers(min_value=0, max_value=len(container)), label="index")
            container.insert(index, bad)
            # Elements after the insertion point shift, but only the bad leaf is reported.
            expected_path = f"{path}[{index}]"
        else:
            key = data.draw(st.text(max_size=8), label="key")
            container[key] = bad
            expected_path = f"{path}[{key!r}]"
    with pytest.raises(LosslessJSONError) as caught:
        snapshot(value)
    assert caught.value.path == expected_path
