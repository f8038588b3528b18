"""Plugin discovery: entry points in group ``harness`` and ``[plugins] modules``, in a fixed order.

The order never depends on install order: names pinned in ``[plugins] order`` come first, in that
order, then every other entry point sorted by name. A blocked name (``[plugins] block``) is never
imported, nor is a name left out of ``HARNESS_LOAD_PLUGINS`` when that variable is set (a comma
list; empty means none). A plugin that fails to import is reported with its distribution, version
and the exception; if ``[plugins] require`` names it, start-up fails, otherwise it is skipped with
a warning. An entry point may name a module, an object, or a class (instantiated with no
arguments, so each Harness gets its own plugin state).
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .config import PluginSettings
from .entrypoints import FoundEntryPoint, find_entry_points
from .errors import HarnessError
from .hookspecs import PROJECT_NAME
from .log import get_logger

__all__ = ["LOAD_PLUGINS_ENV", "PluginLoadError", "PluginRecord", "discover_plugins", "load_module_plugins"]


#: Restricts entry-point loading to these names when set (comma list; empty = none).
LOAD_PLUGINS_ENV = "HARNESS_LOAD_PLUGINS"

Status = Literal["loaded", "blocked", "not-allowed", "failed"]


class PluginLoadError(HarnessError):
    """Raised when a required plugin is missing, blocked or fails to load: the harness refuses to start."""

    code = "PLUGIN_LOAD_FAILED"


@dataclass(frozen=True, slots=True, kw_only=True)
class PluginRecord:
    """What discovery did with one plugin: where it comes from and whether it loaded."""

    name: str
    value: str
    distribution: str | None
    version: str | None
    status: Status
    error: str | None = None

    @property
    def origin(self) -> str:
        """``distribution version`` (or the import path for ``[plugins] modules``)."""
        if self.distribution is None:
            return self.value
        return f"{self.distribution} {self.version or '?'}"


def _allow_list() -> set[str] | None:
    raw = os.environ.get(LOAD_PLUGINS_ENV)
    if raw is None:
        return None
    return {name.strip() for name in raw.split(",") if name.strip()}


def _instantiate(obj: Any) -> Any:
    # A class is a factory: each Harness gets a fresh instance with its own state.
    return obj() if inspect.isclass(obj) else obj


def _ordered(found: list[FoundEntryPoint], pinned: Sequence[str]) -> list[FoundEntryPoint]:
    rank = {name: index for index, name in enumerate(pinned)}
    return sorted(found, key=lambda ep: (rank.get(ep.name, len(rank)), ep.name, ep.distribution or ""))


def discover_plugins(settings: PluginSettings, register: Callable[[object, str], object]) -> list[PluginRecord]:
    """Load the ``harness`` entry points allowed by ``settings`` and the environment.

    ``register(plugin, name)`` is called for each plugin that loads, in order. Returns a record per
    entry point, loaded or not; raises :class:`PluginLoadError` when a required plugin did not load.
    """
    allowed = _allow_list()
    blocked = set(settings.block)
    records: list[PluginRecord] = []
    seen: dict[str, PluginRecord] = {}
    for entry_point in _ordered(find_entry_points(PROJECT_NAME), settings.order):
        common: dict[str, Any] = {
            "name": entry_point.name,
            "value": entry_point.value,
            "distribution": entry_point.distribution,
            "version": entry_point.version,
        }
        if entry_point.name in seen:
            other = seen[entry_point.name]
            record = PluginRecord(
                **common,
                status="failed",
                error=f"entry point name {entry_point.name!r} is also provided by {other.origin}; uninstall one of them",
            )
        elif entry_point.name in blocked:
            record = PluginRecord(**common, status="blocked")
        elif allowed is not None and entry_point.name not in allowed:
            record = PluginRecord(**common, status="not-allowed")
        else:
            try:
                plugin = _instantiate(entry_point.load())
                register(plugin, entry_point.name)
            except HarnessError as exc:
                record = PluginRecord(**common, status="failed", error=str(exc))
            except Exception as exc:  # an import error of any kind: report it, never crash discovery
                record = PluginRecord(**common, status="failed", error=f"{type(exc).__name__}: {exc}")
            else:
                record = PluginRecord(**common, status="loaded")
        seen.setdefault(entry_point.name, record)
        records.append(record)
        if record.status == "failed" and entry_point.name not in settings.require:
            get_logger().warning("plugin %r (%s) failed to load and was skipped: %s", record.name, record.origin, record.error)
    _check_required(settings, records)
    return records


def _check_required(settings: PluginSettings, records: list[PluginRecord]) -> None:
    by_name = {record.name: record for record in records}
    problems: list[str] = []
    for name in settings.require:
        record = by_name.get(name)
        if record is None:
            problems.append(
                f'required plugin "{name}" is not installed (no entry point "{name}" in group "{PROJECT_NAME}"); '
                "pip install it, or remove it from [plugins] require"
            )
        elif record.status == "failed":
            problems.append(f'required plugin "{name}" ({record.origin}) failed to load: {record.error}')
        elif record.status == "blocked":
            problems.append(f'required plugin "{name}" is also blocked in [plugins] block; remove one of the two')
        elif record.status == "not-allowed":
            problems.append(f'required plugin "{name}" is left out by {LOAD_PLUGINS_ENV}; add it there or unset it')
    if problems:
        raise PluginLoadError("\n".join(problems))


def load_module_plugins(
    settings: PluginSettings, register: Callable[[object, str], object], project_dir: Path | None = None
) -> list[PluginRecord]:
    """Load ``[plugins] modules`` (``package.module`` or ``package.module:attribute``); any failure is fatal.

    Modules are looked up in the project folder first (like a ``conftest.py``), so a project can
    keep its own small plugins next to its ``harness.toml`` without packaging them.
    """
    records: list[PluginRecord] = []
    if settings.modules and project_dir is not None:
        folder = str(project_dir.resolve())
        if folder not in sys.path:
            sys.path.insert(0, folder)
    for path in settings.modules:
        module_name, _, attribute = path.partition(":")
        try:
            obj: Any = importlib.import_module(module_name)
            for part in filter(None, attribute.split(".")):
                obj = getattr(obj, part)
            register(_instantiate(obj), path)
        except HarnessError:
            raise
        except Exception as exc:
            raise PluginLoadError(
                f'plugin module "{path}" from [plugins] modules failed to load: {type(exc).__name__}: {exc}'
            ) from exc
        records.append(PluginRecord(name=path, value=path, distribution=None, version=None, status="loaded"))
    return records
