"""Chain runner: ordered hook implementations and the async waterfall that walks them.

pluggy owns registration, validation and blocking but cannot await, so the core walks
``get_hookimpls()`` itself (DESIGN §2). A chain is built once per registration change: the links
are taken in pluggy's call order (``tryfirst`` first, then the last registered), so the first link
is the outermost. A waterfall link receives ``call_next``, a zero-argument async callable running
the rest of the chain; calling it again re-runs the rest (Starlette's semantics, not the modelled
system's shared cursor, reference §1.3), so a retry wrapper outside a deadline wrapper gets a fresh
deadline per attempt.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from types import CoroutineType
from typing import Any, Generic, TypeVar

import pluggy

__all__ = ["Link", "Waterfall", "call_waterfall", "links_of"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Link:
    """One hook implementation, ready to call: who registered it, the function and its arguments."""

    plugin_name: str
    function: Callable[..., Any]
    is_async: bool
    argnames: tuple[str, ...]

    def call(self, arguments: Mapping[str, Any]) -> Any:
        """Call the implementation with the arguments it asked for (pluggy's subset rule)."""
        return self.function(*[arguments[name] for name in self.argnames])


def links_of(hook_caller: pluggy.HookCaller) -> tuple[Link, ...]:
    """The implementations of one hook in call order (the outermost first)."""
    return tuple(
        Link(
            plugin_name=impl.plugin_name,
            function=impl.function,
            is_async=inspect.iscoroutinefunction(impl.function),
            argnames=tuple(impl.argnames),
        )
        for impl in reversed(hook_caller.get_hookimpls())
    )


#: Checks (and may replace) what a link returned; raising fails the stage.
Check = Callable[[Any, Link], T]


class Waterfall(Generic[T]):
    """An async waterfall over fixed links around a terminal (the core's default for the hook).

    ``parameters`` are the spec's argument names in order, ending with ``call_next``. ``check``
    sees every link's return value, so a wrong-type answer is caught at the link that gave it and
    the error can name that plugin.
    """

    __slots__ = ("hook_name", "links", "_check", "_size", "_parameters", "_steps")

    def __init__(self, hook_name: str, parameters: tuple[str, ...], links: tuple[Link, ...], check: Check[T]) -> None:
        self.hook_name = hook_name
        self.links = links
        self._check = check
        self._size = len(links)
        self._parameters = parameters
        # Per link: (function, awaits, takes every argument in spec order, the link). The common
        # case, an impl taking all arguments, is called positionally without building a list.
        self._steps = tuple((link.function, link.is_async, link.argnames == parameters, link) for link in links)

    def __len__(self) -> int:
        return self._size

    async def run(self, values: tuple[Any, ...], terminal: Callable[[], Awaitable[T]]) -> T:
        """Run the chain; ``values`` are the spec's arguments in order, without ``call_next``."""
        if self._size == 0:
            return await terminal()
        return await self._step(values, terminal, 0)

    async def _step(self, values: tuple[Any, ...], terminal: Callable[[], Awaitable[T]], index: int) -> T:
        if index == self._size:
            return await terminal()
        function, awaits, takes_all, link = self._steps[index]
        call_next = partial(self._step, values, terminal, index + 1)
        if takes_all:
            result = function(*values, call_next)
        else:
            named = dict(zip(self._parameters, (*values, call_next), strict=True))
            result = function(*[named[name] for name in link.argnames])
        if awaits or type(result) is CoroutineType:
            # A plain ``def`` impl may ``return call_next()``: the coroutine is awaited here.
            result = await result
        return self._check(result, link)


def _any(result: Any, link: Link) -> Any:
    return result


async def call_waterfall(
    hook_caller: pluggy.HookCaller, terminal: Callable[[], Awaitable[T]], **arguments: Any
) -> T:
    """Run a plugin's own waterfall hook, the core's way: outermost impl first, ``call_next``.

    For hooks a plugin adds with its own hookspecs (an approval answerer chain, say). The chain is
    built on each call, which suits hooks that fire rarely; ``arguments`` are the spec's
    arguments except ``call_next``, in the spec's order.
    """
    parameters = (*arguments, "call_next")
    waterfall: Waterfall[T] = Waterfall(hook_caller.name, parameters, links_of(hook_caller), _any)
    return await waterfall.run(tuple(arguments.values()), terminal)
