"""Session events: the small sink interface the pipeline reports to, and an in-memory sink.

reference/core-pipeline.md §7. The pipeline appends ``tool/call`` and ``tool/result`` (and
``approval/asked`` / ``approval/decided`` around the approval service); tools and plugins append
their own through ``execution.record_event``. Events are log-only: none is model-visible, and the
canonical ``value`` of a result is never put in one. Persisting them is the host's job.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = ["Event", "EventSink", "MemoryEventSink"]


@runtime_checkable
class EventSink(Protocol):
    """Where session events go. ``append`` is synchronous and must not block for long.

    ``data`` holds JSON values plus, for ``tool/result``, the result's content blocks (each has
    ``to_json()``); a persisting sink serializes them.
    """

    def append(self, kind: str, data: Mapping[str, Any]) -> None:
        """Record one event of ``kind`` (``tool/call``, ``approval/asked``, ...)."""


@dataclass(frozen=True, slots=True)
class Event:
    """One recorded event: its position in the session, its kind and its data."""

    seq: int
    kind: str
    data: Mapping[str, Any]


class MemoryEventSink:
    """Keeps events in a list, in the order they were appended (tests, demos, short sessions)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def append(self, kind: str, data: Mapping[str, Any]) -> None:
        """Record one event, numbered in arrival order."""
        self.events.append(Event(len(self.events), kind, data))

    def kinds(self) -> list[str]:
        """The kinds of the recorded events, in order."""
        return [event.kind for event in self.events]

    def of_kind(self, kind: str) -> list[Mapping[str, Any]]:
        """The data of every event of ``kind``, in order."""
        return [event.data for event in self.events if event.kind == kind]
