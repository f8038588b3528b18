"""Codex hook files: hooks.json and config.toml ``[hooks]`` tables, matchers (B.3), and notes.

reference/hook-bridges.md B.1–B.3. Files add up in order (none replaces another); a missing file is
skipped quietly, one that cannot be read or parsed is skipped with a warning. Unknown keys, events
and handler types are tolerated and reported, never a reason to reject a file.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness_hook_runner import HookHandler

__all__ = ["APPLY_PATCH_ALIASES", "BRIDGED_EVENTS", "KNOWN_EVENTS", "CodexHookFiles", "Matcher", "load_files"]

#: The events this bridge runs.
BRIDGED_EVENTS = ("PreToolUse", "PostToolUse")
#: Every Codex event (B.3, B.6); the others are accepted and reported as not bridged.
KNOWN_EVENTS = frozenset(
    {
        "PreToolUse", "PostToolUse", "PermissionRequest", "UserPromptSubmit", "Stop", "SessionStart",
        "PreCompact", "PostCompact", "SubagentStart", "SubagentStop",
    }
)  # fmt: skip
#: B.3: a matcher may name ``apply_patch`` by any of these.
APPLY_PATCH_ALIASES = ("apply_patch", "Edit", "Write")

_GROUP_KEYS = frozenset({"matcher", "hooks"})
_HANDLER_KEYS = frozenset(
    {"type", "command", "timeout", "timeoutSec", "statusMessage", "status_message", "commandWindows", "command_windows", "async"}
)


@dataclass(frozen=True, slots=True)
class Matcher:
    """A Codex matcher (B.3): always an unanchored regular expression; ``*``, ``""`` or none match all."""

    text: str | None
    pattern: re.Pattern[str] | None = None

    @classmethod
    def parse(cls, text: str | None) -> Matcher:
        """Parse a matcher string; raises ``re.error`` for a bad regular expression."""
        if text is None or text in ("", "*"):
            return cls(text=None)
        return cls(text=text, pattern=re.compile(text))

    def matches(self, name: str) -> bool:
        """True when the Codex tool ``name`` is matched; ``apply_patch`` also answers to Edit and Write."""
        if self.pattern is None:
            return True
        subjects = APPLY_PATCH_ALIASES if name == "apply_patch" else (name,)
        return any(self.pattern.search(subject) is not None for subject in subjects)


@dataclass(frozen=True, slots=True)
class Entry:
    """One command handler under its matcher."""

    matcher: Matcher
    handler: HookHandler


@dataclass
class CodexHookFiles:
    """The bridged hooks by event, plus ``(level, message)`` notes for ``harness doctor``."""

    entries: dict[str, list[Entry]] = field(default_factory=lambda: {event: [] for event in BRIDGED_EVENTS})
    notes: list[tuple[str, str]] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    def handlers(self, event: str, tool_name: str) -> list[HookHandler]:
        """The handlers of ``event`` whose matcher matches ``tool_name``, in file order (no deduplication)."""
        return [entry.handler for entry in self.entries.get(event, []) if entry.matcher.matches(tool_name)]


def _read(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".toml":
        return tomllib.loads(text).get("hooks")
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    if "hooks" in data:
        return data["hooks"]
    if data and set(data) <= KNOWN_EVENTS:
        return data  # a bare event map
    return None


def load_files(paths: Sequence[Path]) -> CodexHookFiles:
    """Read every file in ``paths`` in order; their hooks add up (B.1)."""
    found = CodexHookFiles()
    with_hooks: dict[Path, list[Path]] = {}
    for path in paths:
        if not path.is_file():
            continue
        try:
            hooks = _read(path)
        except (OSError, UnicodeDecodeError, ValueError, tomllib.TOMLDecodeError) as exc:
            found.notes.append(("warning", f"could not read {path}: {exc}; its hooks are not run"))
            continue
        found.files.append(str(path))
        if hooks is None:
            if path.suffix != ".toml":
                found.notes.append(("info", f"{path}: no hooks object"))
            continue
        if not isinstance(hooks, dict):
            found.notes.append(("warning", f"{path}: hooks is not an object; ignored"))
            continue
        with_hooks.setdefault(path.parent, []).append(path)
        _load_events(found, hooks, path)
    for folder, files in with_hooks.items():
        if len(files) > 1:
            names = " and ".join(file.name for file in files)
            found.notes.append(("warning", f"{folder} defines hooks in both {names}; they are merged (as Codex does)"))
    return found


def _load_events(found: CodexHookFiles, hooks: dict[str, Any], path: Path) -> None:
    for event, groups in hooks.items():
        if event not in KNOWN_EVENTS:
            found.notes.append(("warning", f"{path}: unknown hook event {event!r} ignored"))
            continue
        if event not in BRIDGED_EVENTS:
            found.notes.append(("info", f"{path}: {event} hooks are not run by the harness"))
            continue
        if not isinstance(groups, list):
            found.notes.append(("warning", f"{path}: {event} must be a list of matcher groups"))
            continue
        for group in groups:
            _load_group(found, event, group, path)


def _load_group(found: CodexHookFiles, event: str, group: object, path: Path) -> None:
    where = f"{path}: {event}"
    if not isinstance(group, dict):
        found.notes.append(("warning", f"{where}: a matcher group is not an object; ignored"))
        return
    for key in sorted(set(group) - _GROUP_KEYS):
        found.notes.append(("info", f"{where}: unknown key {key!r} in a matcher group ignored"))
    raw_matcher = group.get("matcher")
    if raw_matcher is not None and not isinstance(raw_matcher, str):
        found.notes.append(("warning", f"{where}: matcher {raw_matcher!r} is not a string; group ignored"))
        return
    try:
        matcher = Matcher.parse(raw_matcher)
    except re.error as exc:
        found.notes.append(("warning", f"{where}: invalid regex matcher {raw_matcher!r} ({exc}); group ignored"))
        return
    handlers = group.get("hooks")
    if not isinstance(handlers, list):
        found.notes.append(("warning", f"{where}: hooks of a matcher group must be a list; group ignored"))
        return
    for raw in handlers:
        handler = _handler(found, where, raw, path, raw_matcher)
        if handler is not None:
            found.entries[event].append(Entry(matcher=matcher, handler=handler))


def _handler(found: CodexHookFiles, where: str, raw: object, path: Path, matcher: str | None) -> HookHandler | None:
    if not isinstance(raw, dict):
        found.notes.append(("warning", f"{where}: a handler is not an object; ignored"))
        return None
    kind = raw.get("type", "command")
    if kind != "command":
        found.notes.append(("warning", f"{where}: skipping {kind!r} hook (only command hooks run, as in Codex)"))
        return None
    command = raw.get("command")
    if not isinstance(command, str) or not command.strip():
        found.notes.append(("warning", f"{where}: a command hook without a command string; ignored"))
        return None
    for key in sorted(set(raw) - _HANDLER_KEYS):
        found.notes.append(("info", f"{where}: unknown handler key {key!r} ignored"))
    if raw.get("async") is True:
        found.notes.append(("warning", f"{where}: skipping async hook {command!r} (only sync command hooks run)"))
        return None
    timeout = raw.get("timeout", raw.get("timeoutSec"))
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0):
        found.notes.append(("warning", f"{where}: hook {command!r} has a bad timeout {timeout!r}; default used"))
        timeout = None
    from harness_hook_runner import HookHandler

    return HookHandler(command=command, timeout_s=float(timeout) if timeout is not None else None, source=str(path), matcher=matcher)
