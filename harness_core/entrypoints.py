"""Entry points of one group, read straight from installed metadata (no ``importlib.metadata``).

``import importlib.metadata`` pulls in the ``email`` package to parse metadata headers; on a
command that only lists plugins that import is a large share of the start-up time. Installed
distributions are plain folders (``*.dist-info``, ``*.egg-info``) on ``sys.path`` with an
``entry_points.txt`` (INI) and a header file whose first lines give ``Name`` and ``Version``, so
reading them directly is simple. Wherever the environment could hold distributions this reader
does not understand (a zip file on ``sys.path``, a custom finder that lists distributions), it
defers to ``importlib.metadata`` so that nothing installed is ever missed.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from typing import Any

__all__ = ["FoundEntryPoint", "find_entry_points"]

_SUFFIXES = (".dist-info", ".egg-info")


@dataclass(frozen=True, slots=True)
class FoundEntryPoint:
    """One entry point: its ``name``, its ``value`` (``module:attr``) and the distribution providing it."""

    name: str
    value: str
    distribution: str | None
    version: str | None

    def load(self) -> Any:
        """Import the module and follow the attribute path, as ``EntryPoint.load`` does."""
        target = self.value.split("[", 1)[0].strip()  # extras (``mod:obj [extra]``) do not change what loads
        module_name, _, attributes = target.partition(":")
        obj: Any = importlib.import_module(module_name.strip())
        for attribute in filter(None, attributes.strip().split(".")):
            obj = getattr(obj, attribute)
        return obj


def find_entry_points(group: str) -> list[FoundEntryPoint]:
    """Every entry point of ``group``, one distribution per normalized name (first on ``sys.path`` wins)."""
    if not _plain_environment():
        return _from_importlib(group)
    found: list[FoundEntryPoint] = []
    seen: set[str] = set()
    for entry in sys.path:
        folder = entry or "."
        try:
            children = os.listdir(folder)
        except OSError:  # a missing folder or a file: nothing to scan (files were ruled out above)
            continue
        for child in children:
            if not child.lower().endswith(_SUFFIXES):
                continue
            key = _normalized(child)
            if key in seen:
                continue
            seen.add(key)
            path = os.path.join(folder, child)
            found += _read_group(path, group)
    return found


def _plain_environment() -> bool:
    """True when every distribution lives in a folder this reader can scan."""
    from importlib.machinery import PathFinder

    for finder in sys.meta_path:
        if finder is not PathFinder and hasattr(finder, "find_distributions"):
            return False
    return not any(entry and os.path.isfile(entry) for entry in sys.path)


def _normalized(folder_name: str) -> str:
    """The distribution key of a metadata folder: ``Foo_Bar-1.0.dist-info`` → ``foo_bar``."""
    stem = folder_name.rsplit(".", 1)[0].split("-", 1)[0]
    return stem.lower().replace("-", "_").replace(".", "_")


def _read_group(path: str, group: str) -> list[FoundEntryPoint]:
    try:
        with open(os.path.join(path, "entry_points.txt"), encoding="utf-8") as file:
            text = file.read()
    except OSError:
        return []
    pairs = _parse_group(text, group)
    if not pairs:
        return []
    distribution, version = _name_and_version(path)
    return [FoundEntryPoint(name, value, distribution, version) for name, value in pairs]


def _parse_group(text: str, group: str) -> list[tuple[str, str]]:
    """The ``name = value`` lines of section ``[group]`` of an entry_points.txt."""
    pairs: list[tuple[str, str]] = []
    inside = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            inside = line[1:-1].strip() == group
            continue
        if inside and "=" in line:
            name, _, value = line.partition("=")
            pairs.append((name.strip(), value.strip()))
    return pairs


def _name_and_version(path: str) -> tuple[str | None, str | None]:
    """``Name`` and ``Version`` from the header block of METADATA (dist-info) or PKG-INFO (egg-info)."""
    headers: dict[str, str] = {}
    for file_name in ("METADATA", "PKG-INFO"):
        try:
            with open(os.path.join(path, file_name), encoding="utf-8") as file:
                for line in file:
                    if not line.strip():
                        break  # the headers end at the first blank line
                    key, separator, value = line.partition(":")
                    if separator and key in ("Name", "Version"):
                        headers.setdefault(key, value.strip())
                    if len(headers) == 2:
                        break
        except OSError:
            continue
        break
    return headers.get("Name"), headers.get("Version")


def _from_importlib(group: str) -> list[FoundEntryPoint]:
    from importlib.metadata import entry_points

    return [
        FoundEntryPoint(
            ep.name, ep.value, ep.dist.name if ep.dist else None, ep.dist.version if ep.dist else None
        )
        for ep in entry_points(group=group)
    ]
