"""Session log: append-only JSONL files of session events, and the reader and cards for them.

DESIGN §4 and reference/core-pipeline.md §7. A session is one file, ``<session_id>.jsonl``; each
line is one event ``{"seq", "time", "type", "data"}``. :class:`SessionLog` is the host's
``EventSink``; :func:`read_session`, :func:`find_session`, :func:`follow_session` and
:func:`render_card` serve ``harness log``.

Lines never interleave: each is built in full and written with one ``os.write`` on an
``O_APPEND`` descriptor, under a lock within a process and by the kernel's append semantics across
processes. A crash can still leave the last line torn; readers skip it with a warning.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from .errors import HarnessError
from .types import ContentBlock

__all__ = [
    "LoggedEvent",
    "SessionLog",
    "SessionLogError",
    "SessionRead",
    "find_session",
    "follow_session",
    "list_sessions",
    "new_session_id",
    "read_session",
    "render_card",
]

SESSION_SUFFIX = ".jsonl"
CARD_TEXT_LIMIT = 2_000
CANDIDATES_SHOWN = 10


class SessionLogError(HarnessError):
    """Raised when a session file cannot be read as a session log, or a named session is not found."""

    code = "SESSION_LOG_CORRUPT"


def new_session_id() -> str:
    """A new session id that sorts by creation time: ``20261129T204512Z-3f9a1c``."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(3)


def _utc_timestamp() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _encode_block(value: object) -> Any:
    if isinstance(value, ContentBlock):
        return value.to_json()
    raise TypeError(f"{type(value).__name__} is not JSON (only JSON values and content blocks can be logged)")


# --- Writing ----------------------------------------------------------------------------------


class SessionLog:
    """An ``EventSink`` that appends each event as one JSON line to ``<directory>/<session_id>.jsonl``.

    The directory and file are created on the first append. ``seq`` counts from 0; if the file
    already holds events (the same ``session_id`` reused), numbering continues after them. Two
    writers on one file still write whole lines, but each numbers its own events.
    """

    def __init__(self, directory: Path, session_id: str | None = None) -> None:
        self._directory = Path(directory)
        self._session_id = session_id if session_id is not None else new_session_id()
        self._path = self._directory / f"{self._session_id}{SESSION_SUFFIX}"
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._closed = False
        self._next_seq = 0

    @property
    def path(self) -> Path:
        """The session file (it exists once the first event is appended)."""
        return self._path

    @property
    def session_id(self) -> str:
        """The session's id: the file name without ``.jsonl``."""
        return self._session_id

    def append(self, kind: str, data: Mapping[str, Any]) -> None:
        """Write one event as one line; raise ``TypeError`` (writing nothing) if it is not JSON."""
        if not isinstance(kind, str):
            raise TypeError(f"session event kind must be a str, got {type(kind).__name__}")
        if not isinstance(data, Mapping):
            raise TypeError(f'cannot log event "{kind}": data must be a mapping, got {type(data).__name__}')
        payload = dict(data)
        if kind == "tool/result":
            # reference/core-pipeline.md §7: the canonical value is never persisted. The pipeline
            # already leaves it out; dropping it here keeps that true for any other producer too.
            payload.pop("value", None)
        with self._lock:
            if self._closed:
                raise ValueError(f"session log {self._path} is closed; cannot log event {kind!r}")
            fd = self._open()
            line = self._encode_line(self._next_seq, kind, payload)
            written = os.write(fd, line)
            if written != len(line):
                # A short write leaves a torn line; readers tolerate it only as the last line.
                raise OSError(f"{self._path}: wrote only {written} of {len(line)} bytes of event {kind!r}")
            self._next_seq += 1

    def _encode_line(self, seq: int, kind: str, payload: dict[str, Any]) -> bytes:
        event = {"seq": seq, "time": _utc_timestamp(), "type": kind, "data": payload}
        try:
            text = json.dumps(event, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_encode_block)
            # Lone surrogates (undecodable file names, say) survive dumps but not UTF-8.
            return (text + "\n").encode("utf-8")
        except (TypeError, ValueError, RecursionError) as exc:
            raise TypeError(f'cannot log event "{kind}": {exc}') from exc

    def _open(self) -> int:
        if self._fd is None:
            self._directory.mkdir(parents=True, exist_ok=True)
            self._next_seq = _next_seq_in(self._path)
            # 0o600: tool arguments and results may hold secrets; O_CLOEXEC keeps the descriptor
            # out of subprocesses that tools start.
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
            self._fd = os.open(self._path, flags, 0o600)
        return self._fd

    def close(self) -> None:
        """Close the file; later appends raise. Calling it again does nothing."""
        with self._lock:
            self._closed = True
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def __enter__(self) -> SessionLog:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SessionLog({str(self._path)!r})"


def _next_seq_in(path: Path) -> int:
    """One past the highest seq among the file's readable lines (0 for a missing or empty file)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return 0
    highest = -1
    for line in raw.split(b"\n"):
        try:
            highest = max(highest, _decode_line(line).seq)
        except _BadLine:
            continue  # continuing a session is best effort; the reader reports bad lines
    return highest + 1


# --- Reading ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LoggedEvent:
    """One event as read back from a session file."""

    seq: int
    time: str
    type: str
    data: dict[str, Any]


@dataclass(frozen=True, slots=True)
class SessionRead:
    """The events of a session file, in file order, and warnings about lines that were skipped."""

    events: list[LoggedEvent]
    warnings: list[str]


class _BadLine(ValueError):
    """A line that is not a session event; the message says why."""


class _UnreadableLine(_BadLine):
    """A line that is not JSON at all: what a write cut short by a crash leaves behind."""


_FIELD_TYPES: tuple[tuple[str, type, str], ...] = (
    ("seq", int, "an integer"),
    ("time", str, "a string"),
    ("type", str, "a string"),
    ("data", dict, "an object"),
)


def _decode_line(raw: bytes) -> LoggedEvent:
    if not raw.strip():
        raise _UnreadableLine("it is empty")
    try:
        value = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise _UnreadableLine(f"it is not UTF-8 ({exc.reason} at byte {exc.start})") from exc
    except ValueError as exc:
        raise _UnreadableLine(f"it is not valid JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise _BadLine(f"it is a JSON {type(value).__name__}, not an object")
    missing = [name for name, _, _ in _FIELD_TYPES if name not in value]
    if missing:
        raise _BadLine("it has no " + ", ".join(f'"{name}"' for name in missing))
    for name, expected, described in _FIELD_TYPES:
        field_value = value[name]
        if not isinstance(field_value, expected) or isinstance(field_value, bool):
            raise _BadLine(f'its "{name}" is {json.dumps(field_value)[:40]}, expected {described}')
    return LoggedEvent(seq=value["seq"], time=value["time"], type=value["type"], data=value["data"])


def _torn_warning(path: Path, line_number: int) -> str:
    return f"{path}: line {line_number} is incomplete (the session was probably interrupted while writing); ignored"


def read_session(path: Path) -> SessionRead:
    """Read every event of a session file.

    The last line may be torn (no newline, or not JSON: a crash mid-write); it is skipped with a
    warning. Any other bad line raises :class:`SessionLogError` naming the file and line.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SessionLogError(
            f"cannot read session file {path}: {exc.strerror or exc}", code="SESSION_NOT_FOUND"
        ) from exc
    lines = raw.split(b"\n")
    # A newline-terminated file splits into a trailing b""; an unterminated tail is a torn line.
    terminated = lines[-1] == b""
    if terminated:
        lines.pop()
    events: list[LoggedEvent] = []
    warnings: list[str] = []
    for index, line in enumerate(lines):
        line_number = index + 1
        is_last = index == len(lines) - 1
        if is_last and not terminated:
            warnings.append(_torn_warning(path, line_number))
            break
        try:
            events.append(_decode_line(line))
        except _BadLine as exc:
            # Only unparseable text can be a write cut short; a parsed line with bad fields is corrupt.
            if is_last and isinstance(exc, _UnreadableLine):
                warnings.append(_torn_warning(path, line_number))
                break
            raise SessionLogError(f"{path}: line {line_number} is not a session event: {exc}") from None
    return SessionRead(events=events, warnings=warnings)


def follow_session(
    path: Path,
    *,
    poll_interval: float = 0.2,
    stop: Callable[[], bool] | None = None,
) -> Iterator[LoggedEvent]:
    """Yield the events already in a session file, then each new one as its line is completed.

    A line is yielded only once its newline is written. Waits for the file if it does not exist
    yet. Ends when ``stop()`` returns True (checked after each read) or the caller stops
    iterating; a bad complete line raises :class:`SessionLogError`.
    """
    path = Path(path)
    handle = None
    try:
        while handle is None:
            try:
                handle = path.open("rb")
            except FileNotFoundError:
                if stop is not None and stop():
                    return
                time.sleep(poll_interval)
        pending = b""
        line_number = 0
        while True:
            chunk = handle.read()
            if chunk:
                pending += chunk
                *complete, pending = pending.split(b"\n")
                for line in complete:
                    line_number += 1
                    try:
                        event = _decode_line(line)
                    except _BadLine as exc:
                        raise SessionLogError(f"{path}: line {line_number} is not a session event: {exc}") from None
                    yield event
            if stop is not None and stop():
                return
            if not chunk:
                time.sleep(poll_interval)
    finally:
        if handle is not None:
            handle.close()


# --- Finding sessions -------------------------------------------------------------------------


def list_sessions(directory: Path) -> list[Path]:
    """The session files in ``directory``, oldest first (ids sort by time); [] if it does not exist."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    return sorted(
        (entry for entry in directory.glob("*" + SESSION_SUFFIX) if entry.is_file()), key=lambda entry: entry.name
    )


def _listing(paths: list[Path]) -> str:
    names = [path.stem for path in paths[:CANDIDATES_SHOWN]]
    more = len(paths) - len(names)
    return ", ".join(names) + (f" and {more} more" if more > 0 else "")


def find_session(directory: Path, session: str | None) -> Path:
    """The session file for ``session``: None for the newest, an id, a unique id prefix, or a path.

    Raises :class:`SessionLogError` when nothing matches or a prefix matches several sessions.
    """
    directory = Path(directory)
    sessions = list_sessions(directory)
    if session is None:
        if not sessions:
            raise SessionLogError(f"no sessions in {directory}", code="SESSION_NOT_FOUND")
        return sessions[-1]
    if session.endswith(SESSION_SUFFIX) or os.sep in session or (os.altsep is not None and os.altsep in session):
        candidate = Path(session)
        for path in (candidate, directory / candidate.name):
            if path.is_file():
                return path
        raise SessionLogError(f"no session file {session}", code="SESSION_NOT_FOUND")
    by_id = {path.stem: path for path in sessions}
    if session in by_id:
        return by_id[session]
    matches = [path for path in sessions if path.stem.startswith(session)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise SessionLogError(
            f'session "{session}" is ambiguous in {directory}; it starts {len(matches)} sessions: '
            f"{_listing(matches)}; give more of the id",
            code="SESSION_NOT_FOUND",
        )
    known = f"sessions: {_listing(sessions[::-1])}" if sessions else "there are no sessions"
    raise SessionLogError(f'no session "{session}" in {directory}; {known}', code="SESSION_NOT_FOUND")


# --- Cards ------------------------------------------------------------------------------------


def _clock(timestamp: str) -> str:
    try:
        moment = datetime.fromisoformat(timestamp)
    except ValueError:
        return timestamp
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%H:%M:%S")


def _truncated(text: str) -> str:
    if len(text) <= CARD_TEXT_LIMIT:
        return text
    return text[:CARD_TEXT_LIMIT] + f"… ({len(text) - CARD_TEXT_LIMIT} more characters)"


def _json_text(value: object) -> str:
    return _truncated(json.dumps(value, ensure_ascii=False))


def _indented(text: str) -> list[str]:
    return ["    " + line for line in text.split("\n")]


def _block_lines(block: object) -> list[str]:
    if not isinstance(block, dict):
        return _indented(f"[{type(block).__name__} content]")
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return _indented(_truncated(block["text"]))
    if kind == "image":
        attachment = block.get("attachment")
        info = attachment if isinstance(attachment, dict) else {}
        return _indented(f"[image {info.get('mediaType', '?')} {info.get('width', '?')}x{info.get('height', '?')}]")
    return _indented(f"[{kind if isinstance(kind, str) else 'unknown'} content]")


def _field(data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    return value if isinstance(value, str) else "?"


def render_card(event: LoggedEvent) -> str:
    """A plain-text card for one event (``harness log``): a header line, then indented content."""
    head = f"[{event.seq}] {_clock(event.time)}"
    data = event.data
    if event.type == "tool/call":
        return f"{head} ▶ call {_field(data, 'call_id')} {_field(data, 'name')} {_json_text(data.get('arguments'))}"
    if event.type == "tool/code-dispatch-start":
        # A Code Mode sub-call: indented under its run_code call, named by its own id.
        return f"{head}   ▷ sub-call {_field(data, 'sub_call_id')} {_field(data, 'name')} {_json_text(data.get('arguments'))}"
    if event.type == "tool/code-dispatch":
        mark = "✖" if data.get("is_error") else "✔"
        lines = [f"{head}   {mark} sub-call {_field(data, 'sub_call_id')} {_field(data, 'name')}"]
        content = data.get("content")
        for block in content if isinstance(content, list) else []:
            lines.extend("  " + line for line in _block_lines(block))
        return "\n".join(lines)
    if event.type == "tool/result":
        if data.get("is_error"):
            error = data.get("error")
            code = f" [{error['code']}]" if isinstance(error, dict) and isinstance(error.get("code"), str) else ""
            header = f"{head} ✖ result {_field(data, 'call_id')} {_field(data, 'name')}{code}"
        else:
            header = f"{head} ✔ result {_field(data, 'call_id')} {_field(data, 'name')}"
        content = data.get("content")
        blocks = content if isinstance(content, list) else []
        lines = [header]
        for block in blocks:
            lines.extend(_block_lines(block))
        return "\n".join(lines)
    if event.type == "approval/asked":
        call_id = f" call {data['call_id']}" if isinstance(data.get("call_id"), str) else ""
        reason = f": {_truncated(data['reason'])}" if isinstance(data.get("reason"), str) else ""
        return f"{head} ? approval asked {_field(data, 'id')} {_field(data, 'tool_name')}{call_id}{reason}"
    if event.type == "approval/decided":
        outcome = data.get("outcome")
        shown = outcome if isinstance(outcome, str) else "no answer"
        return f"{head} ⚑ approval decided {_field(data, 'id')} {shown}"
    return f"{head} • {event.type} {_truncated(json.dumps(data, ensure_ascii=False, separators=(',', ':')))}"
