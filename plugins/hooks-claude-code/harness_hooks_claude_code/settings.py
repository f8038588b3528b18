"""Claude Code settings files: the hooks they define, matchers (A.3), and what was skipped and why.

reference/hook-bridges.md A.1–A.3 and C.5. Files add up in order; a file that is missing is
skipped quietly, one that cannot be read or parsed is skipped with a warning. Unknown keys,
events and handler types are tolerated and reported, never a reason to reject the file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # The runner package spawns processes (anyio subprocess support): imported only when settings
    # are actually read, so loading the plugin's entry point stays quick.
    from harness_hook_runner import HookHandler

__all__ = ["BRIDGED_EVENTS", "KNOWN_EVENTS", "HookSettings", "Matcher", "load_settings"]

#: The events this bridge runs.
BRIDGED_EVENTS = ("PreToolUse", "PostToolUse")

#: Every documented event (A.10); the others are accepted and reported as not bridged.
KNOWN_EVENTS = frozenset(
    {
        "SessionStart", "Setup", "UserPromptSubmit", "UserPromptExpansion", "PreToolUse", "PermissionRequest",
        "PermissionDenied", "PostToolUse", "PostToolUseFailure", "PostToolBatch", "Notification",
        "MessageDisplay", "SubagentStart", "SubagentStop", "TaskCreated", "TaskCompleted", "Stop",
        "StopFailure", "TeammateIdle", "InstructionsLoaded", "ConfigChange", "CwdChanged", "DirectoryAdded",
        "FileChanged", "WorktreeCreate", "WorktreeRemove", "PreCompact", "PostCompact", "Elicitation",
        "ElicitationResult", "SessionEnd",
    }
)  # fmt: skip

_GROUP_KEYS = frozenset({"matcher", "hooks"})
_HANDLER_KEYS = frozenset(
    {"type", "command", "timeout", "if", "statusMessage", "once", "args", "async", "asyncRewake", "shell"}
)
_EXACT = re.compile(r"[A-Za-z0-9_\- ,|]+")


@dataclass(frozen=True, slots=True)
class Matcher:
    """A matcher of A.3: everything, a set of exact names, or an unanchored regular expression."""

    text: str | None
    names: frozenset[str] | None = None
    pattern: re.Pattern[str] | None = None

    @classmethod
    def parse(cls, text: str | None) -> Matcher:
        """Parse a matcher string; raises ``re.error`` for a bad regular expression."""
        if text is None or text in ("", "*"):
            return cls(text=None)
        if _EXACT.fullmatch(text):
            names = frozenset(part.strip() for part in re.split(r"[|,]", text) if part.strip())
            return cls(text=text, names=names)
        return cls(text=text, pattern=re.compile(text))

    def matches(self, name: str) -> bool:
        """True when the tool ``name`` (a Claude Code name such as ``Bash``) is matched."""
        if self.names is not None:
            return name in self.names
        if self.pattern is not None:
            return self.pattern.search(name) is not None
        return True


@dataclass(frozen=True, slots=True)
class Entry:
    """One command handler under its matcher."""

    matcher: Matcher
    handler: HookHandler


@dataclass
class HookSettings:
    """The bridged hooks by event, plus ``(level, message)`` notes for ``harness doctor``."""

    entries: dict[str, list[Entry]] = field(default_factory=lambda: {event: [] for event in BRIDGED_EVENTS})
    notes: list[tuple[str, str]] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    def handlers(self, event: str, tool_name: str) -> list[HookHandler]:
        """The handlers of ``event`` whose matcher matches ``tool_name``, in file order."""
        return [entry.handler for entry in self.entries.get(event, []) if entry.matcher.matches(tool_name)]


def load_settings(paths: Sequence[Path], project_dir: Path) -> HookSettings:
    """Read every file in ``paths`` in order; their hooks add up (A.1)."""
    settings = HookSettings()
    for path in paths:
        if not path.is_file():
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            settings.notes.append(("warning", f"could not read {path}: {exc}; its hooks are not run"))
            continue
        settings.files.append(str(path))
        if not isinstance(data, dict):
            settings.notes.append(("warning", f"{path} is not a JSON object; its hooks are not run"))
            continue
        if data.get("disableAllHooks") is True:
            settings.notes.append(("info", f"{path} sets disableAllHooks; no hooks run"))
            return HookSettings(notes=settings.notes, files=settings.files)
        hooks = data.get("hooks")
        if hooks is None:
            continue
        if not isinstance(hooks, dict):
            settings.notes.append(("warning", f"{path}: hooks is not an object; ignored"))
            continue
        _load_events(settings, hooks, path, project_dir)
    return settings


def _load_events(settings: HookSettings, hooks: dict[str, Any], path: Path, project_dir: Path) -> None:
    for event, groups in hooks.items():
        if event not in KNOWN_EVENTS:
            settings.notes.append(("warning", f"{path}: unknown hook event {event!r} ignored"))
            continue
        if event not in BRIDGED_EVENTS:
            settings.notes.append(("info", f"{path}: {event} hooks are not run by the harness"))
            continue
        if not isinstance(groups, list):
            settings.notes.append(("warning", f"{path}: {event} must be a list of matcher groups"))
            continue
        for group in groups:
            _load_group(settings, event, group, path, project_dir)


def _load_group(settings: HookSettings, event: str, group: object, path: Path, project_dir: Path) -> None:
    where = f"{path}: {event}"
    if not isinstance(group, dict):
        settings.notes.append(("warning", f"{where}: a matcher group is not an object; ignored"))
        return
    for key in sorted(set(group) - _GROUP_KEYS):
        settings.notes.append(("info", f"{where}: unknown key {key!r} in a matcher group ignored"))
    raw_matcher = group.get("matcher")
    if raw_matcher is not None and not isinstance(raw_matcher, str):
        settings.notes.append(("warning", f"{where}: matcher {raw_matcher!r} is not a string; group ignored"))
        return
    try:
        matcher = Matcher.parse(raw_matcher)
    except re.error as exc:
        settings.notes.append(("warning", f"{where}: invalid regex matcher {raw_matcher!r} ({exc}); group ignored"))
        return
    handlers = group.get("hooks")
    if not isinstance(handlers, list):
        settings.notes.append(("warning", f"{where}: hooks of a matcher group must be a list; group ignored"))
        return
    for raw in handlers:
        handler = _handler(settings, where, raw, path, project_dir, raw_matcher)
        if handler is not None:
            settings.entries[event].append(Entry(matcher=matcher, handler=handler))


def _handler(
    settings: HookSettings, where: str, raw: object, path: Path, project_dir: Path, matcher: str | None
) -> HookHandler | None:
    if not isinstance(raw, dict):
        settings.notes.append(("warning", f"{where}: a handler is not an object; ignored"))
        return None
    kind = raw.get("type", "command")
    if kind != "command":
        settings.notes.append(("warning", f"{where}: skipping {kind!r} hook (only command hooks run)"))
        return None
    command = raw.get("command")
    if not isinstance(command, str) or not command.strip():
        settings.notes.append(("warning", f"{where}: a command hook without a command string; ignored"))
        return None
    for key in sorted(set(raw) - _HANDLER_KEYS):
        settings.notes.append(("info", f"{where}: unknown handler key {key!r} ignored"))
    for key in ("async", "asyncRewake", "args", "if"):
        if key in raw:
            # Running these without their meaning would change what the hook decides; skip loudly.
            settings.notes.append(("warning", f"{where}: skipping hook {command!r}: {key!r} is not supported"))
            return None
    timeout = raw.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0):
        settings.notes.append(("warning", f"{where}: hook {command!r} has a bad timeout {timeout!r}; default used"))
        timeout = None
    command = command.replace("${CLAUDE_PROJECT_DIR}", str(project_dir))
    from harness_hook_runner import HookHandler

    return HookHandler(command=command, timeout_s=float(timeout) if timeout is not None else None, source=str(path), matcher=matcher)
