"""Lossless JSON: the one-pass snapshot that detaches and deep-freezes arguments and values.

reference/core-pipeline.md §5.4. A value is lossless JSON when a JSON round trip (read by a
JavaScript consumer, since session logs are shared) gives back exactly the same value: ``None``,
``bool``, ``str``, ``int`` within ±2**53, finite ``float`` other than ``-0.0``, ``list`` and ``dict``
with ``str`` keys, and nothing else. Exact types only: ``bool`` stays distinct from ``int``, and
subclasses of ``dict`` / ``list``, tuples, sets, bytes and every other object are refused.

The snapshot is iterative (a value nested thousands of levels deep works), reads every element
exactly once, detects cycles on the ancestor path (shared, acyclic references are simply copied
twice), and returns :class:`FrozenDict` / :class:`FrozenList` copies that raise on mutation. The
caller's object is never retained or frozen in place. Frozen containers are themselves accepted
as input and shared as they are, because only this module builds them.
"""

from __future__ import annotations

import math
from typing import Any, NoReturn, TypeAlias

__all__ = [
    "FrozenDict",
    "FrozenList",
    "JsonValue",
    "LosslessJSONError",
    "MAX_SAFE_INTEGER",
    "snapshot",
    "thaw",
]

#: The largest integer magnitude a float64 (JavaScript number) holds exactly.
MAX_SAFE_INTEGER = 2**53

JsonValue: TypeAlias = "None | bool | int | float | str | FrozenList | FrozenDict"


class LosslessJSONError(TypeError):
    """Raised when a value is not lossless JSON; ``path`` locates the offending part."""

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"value is not lossless JSON at {path}: {problem}")


def _refuse_mutation(self: object, *args: object, **kwargs: object) -> NoReturn:
    raise TypeError(f"{type(self).__name__} is immutable: arguments and values are frozen snapshots")


class FrozenDict(dict):  # type: ignore[type-arg]
    """A deep-frozen JSON object: reads like a ``dict``; every mutation raises ``TypeError``.

    Only :func:`snapshot` builds these (the constructor is refused), so a ``FrozenDict`` is known
    to hold lossless JSON all the way down. ``dict(frozen)`` or :func:`thaw` give a mutable copy.
    """

    __slots__ = ()

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise TypeError("FrozenDict is built by harness_core.lossless.snapshot(value), not directly")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _refuse_mutation
    __ior__ = _refuse_mutation

    def __setattr__(self, name: str, value: object) -> NoReturn:
        _refuse_mutation(self)

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: object) -> FrozenDict:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (snapshot, (thaw(self),))

    def __repr__(self) -> str:
        return f"FrozenDict({dict.__repr__(self)})"


class FrozenList(list):  # type: ignore[type-arg]
    """A deep-frozen JSON array: reads like a ``list``; every mutation raises ``TypeError``."""

    __slots__ = ()

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise TypeError("FrozenList is built by harness_core.lossless.snapshot(value), not directly")

    __setitem__ = __delitem__ = append = extend = insert = pop = remove = clear = _refuse_mutation
    sort = reverse = __iadd__ = __imul__ = _refuse_mutation

    def __setattr__(self, name: str, value: object) -> NoReturn:
        _refuse_mutation(self)

    def __copy__(self) -> FrozenList:
        return self

    def __deepcopy__(self, memo: object) -> FrozenList:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (snapshot, (thaw(self),))

    def __repr__(self) -> str:
        return f"FrozenList({list.__repr__(self)})"


_new_dict = dict.__new__
_fill_dict = dict.update
_new_list = list.__new__
_fill_list = list.extend

EMPTY_DICT: FrozenDict = _new_dict(FrozenDict)
EMPTY_LIST: FrozenList = _new_list(FrozenList)


def _build(items: list[Any], is_dict: bool) -> FrozenDict | FrozenList:
    if is_dict:
        if not items:
            return EMPTY_DICT
        built_dict: FrozenDict = _new_dict(FrozenDict)
        _fill_dict(built_dict, items)
        return built_dict
    if not items:
        return EMPTY_LIST
    built_list: FrozenList = _new_list(FrozenList)
    _fill_list(built_list, items)
    return built_list


def _scalar_problem(value: Any, kind: type) -> str | None:
    """Why a non-container leaf is refused, or ``None`` when it is lossless."""
    if kind is int:
        if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            return None
        return f"integer {value} is beyond ±2**53 and would lose precision in a JSON reader"
    if kind is float:
        if math.isfinite(value):
            if value == 0.0 and math.copysign(1.0, value) < 0:
                return "-0.0 does not survive a JSON round trip"
            return None
        return f"{value!r} is not a JSON number"
    if kind is dict or kind is list:
        return None
    if isinstance(value, dict | list):
        return f"{kind.__name__} is a subclass of {'dict' if isinstance(value, dict) else 'list'}; only plain dict and list are JSON"
    return f"{kind.__name__} is not a JSON type"


def _path(frames: list[list[Any]], key: object) -> str:
    parts = ["$"]
    for frame in frames[:-1]:
        parts.append(f"[{frame[3]!r}]" if frame[2] else f"[{frame[3]}]")
    if frames:
        parts.append(f"[{key!r}]" if frames[-1][2] else f"[{key}]")
    return "".join(parts)


def snapshot(value: Any) -> Any:
    """Return a detached, deep-frozen copy of ``value``, or raise :class:`LosslessJSONError`.

    Scalars come back as they are; ``dict`` / ``list`` come back as :class:`FrozenDict` /
    :class:`FrozenList`; frozen containers are returned unchanged (they are already snapshots).
    """
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return value
    if kind is FrozenDict or kind is FrozenList:
        return value
    if kind is dict or kind is list:
        return _snapshot_container(value, kind is dict)
    problem = _scalar_problem(value, kind)
    if problem is not None:
        raise LosslessJSONError("$", problem)
    return value


def _snapshot_container(root: dict[Any, Any] | list[Any], root_is_dict: bool) -> FrozenDict | FrozenList:
    # A frame is [iterator, collected items, is_dict, key of the child being built, source].
    frames: list[list[Any]] = [
        [iter(root.items()) if root_is_dict else iter(root), [], root_is_dict, None, root]  # type: ignore[union-attr]
    ]
    on_path = {id(root)}
    while True:
        frame = frames[-1]
        items, is_dict = frame[1], frame[2]
        descended = False
        for entry in frame[0]:
            if is_dict:
                key, item = entry
                if type(key) is not str:
                    raise LosslessJSONError(_path(frames, key), f"key {key!r} is of type {type(key).__name__}, not str")
            else:
                key, item = len(items), entry
            kind = type(item)
            if kind is str or kind is bool or item is None or kind is FrozenDict or kind is FrozenList:
                pass
            elif kind is dict or kind is list:
                if id(item) in on_path:
                    raise LosslessJSONError(_path(frames, key), "the value contains itself (a cycle)")
                on_path.add(id(item))
                frame[3] = key
                frames.append([iter(item.items()) if kind is dict else iter(item), [], kind is dict, None, item])
                descended = True
                break
            else:
                problem = _scalar_problem(item, kind)
                if problem is not None:
                    raise LosslessJSONError(_path(frames, key), problem)
            items.append((key, item) if is_dict else item)
        if descended:
            continue
        frames.pop()
        on_path.discard(id(frame[4]))
        built = _build(items, is_dict)
        if not frames:
            return built
        parent = frames[-1]
        parent[1].append((parent[3], built) if parent[2] else built)


def thaw(value: Any) -> Any:
    """Return a mutable deep copy of a (frozen) JSON value: plain ``dict`` and ``list`` throughout."""
    if not isinstance(value, dict | list):
        return value
    root: Any = {} if isinstance(value, dict) else []
    stack: list[tuple[Any, Any]] = [(value, root)]
    while stack:
        source, target = stack.pop()
        entries = source.items() if isinstance(source, dict) else enumerate(source)
        for key, item in entries:
            if isinstance(item, dict | list):
                copy: Any = {} if isinstance(item, dict) else []
                stack.append((item, copy))
                item = copy
            if isinstance(target, dict):
                target[key] = item
            else:
                target.append(item)
    return root
