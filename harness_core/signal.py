"""Cancellation signals: cooperative abort with a reason, fusion, and the bridge to anyio scopes.

reference/core-pipeline.md §5.3. A :class:`Signal` is a flag that flips once, carries a reason and
tells its listeners. Cancellation is cooperative: the core checks signals at fixed points and
hands the body a signal to watch; it never races or abandons a body that has started. A body that
wants hard interruption of its own awaits can use :meth:`Signal.cancel_scope`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import anyio

from .log import get_logger

__all__ = ["Dispose", "Signal", "fuse"]


#: Undo a registration (a listener, a tool, a plugin). Calling it twice is harmless.
Dispose = Callable[[], None]


def _noop() -> None:
    return None


class Signal:
    """A one-shot cancellation flag with a reason, shared between a caller and the work it started.

    ``abort(reason)`` flips it (later calls are ignored), ``aborted`` and ``reason`` read it,
    ``on_abort(callback)`` subscribes, ``await wait()`` sleeps until it flips. Signals are used
    from the event loop's thread; abort from another thread through ``anyio.from_thread.run_sync``.
    """

    __slots__ = ("_aborted", "_reason", "_listeners", "_event")

    def __init__(self) -> None:
        self._aborted = False
        self._reason: object = None
        self._listeners: list[Callable[[object], None]] | None = None
        self._event: anyio.Event | None = None

    def __repr__(self) -> str:
        return f"Signal(aborted, reason={self._reason!r})" if self._aborted else "Signal()"

    @property
    def aborted(self) -> bool:
        """True once :meth:`abort` has been called."""
        return self._aborted

    @property
    def reason(self) -> object:
        """What the aborting party gave as the reason (``None`` while not aborted)."""
        return self._reason

    def abort(self, reason: object = "aborted") -> None:
        """Flip the signal and tell every listener; a second abort keeps the first reason."""
        if self._aborted:
            return
        self._aborted = True
        self._reason = reason
        listeners, self._listeners = self._listeners, None
        if self._event is not None:
            self._event.set()
        for listener in listeners or ():
            try:
                listener(reason)
            except Exception:
                # One broken listener must not keep the others from hearing the abort.
                get_logger().exception("signal listener %r failed", listener)

    def on_abort(self, callback: Callable[[object], None]) -> Dispose:
        """Call ``callback(reason)`` when the signal aborts (at once if it already has)."""
        if self._aborted:
            callback(self._reason)
            return _noop
        if self._listeners is None:
            self._listeners = []
        # Each registration gets its own entry, removed by identity: disposing one registration
        # of a callback (even twice) never removes another registration of an equal callback.
        def entry(reason: object) -> None:
            callback(reason)

        self._listeners.append(entry)

        def dispose() -> None:
            listeners = self._listeners
            if listeners is not None:
                for index, registered in enumerate(listeners):
                    if registered is entry:
                        del listeners[index]
                        break

        return dispose

    async def wait(self) -> object:
        """Sleep until the signal aborts; return the reason."""
        if not self._aborted:
            if self._event is None:
                self._event = anyio.Event()
            await self._event.wait()
        return self._reason

    @contextmanager
    def cancel_scope(self) -> Iterator[anyio.CancelScope]:
        """Cancel the enclosed awaits when the signal aborts (for bodies that want hard stops).

        The block is cancelled, not the task: code after the ``with`` runs, and
        ``scope.cancelled_caught`` tells whether the signal cut it short.
        """
        with anyio.CancelScope() as scope:
            dispose = self.on_abort(lambda _reason: scope.cancel())
            try:
                yield scope
            finally:
                dispose()


def fuse(first: Signal, second: Signal) -> tuple[Signal, Dispose]:
    """A signal that aborts when either source does, with that source's reason.

    Returns the fused signal and a ``dispose`` that detaches it from its sources. When both are the
    same object it is returned as is. An already-aborted ``first`` wins over ``second`` (a wrapper's
    deadline that has fired takes priority over the caller, reference §5.3).
    """
    if first is second:
        return first, _noop
    fused = Signal()
    if first._aborted:
        fused.abort(first._reason)
        return fused, _noop
    if second._aborted:
        fused.abort(second._reason)
        return fused, _noop
    dispose_first = first.on_abort(fused.abort)
    dispose_second = second.on_abort(fused.abort)

    def dispose() -> None:
        dispose_first()
        dispose_second()

    return fused, dispose
