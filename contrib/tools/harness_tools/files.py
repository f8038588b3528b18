"""The ``read``, ``write`` and ``edit`` tools: windows, read-before-edit, atomic writes, the fence.

reference/plugins.md §13–§15. ``read`` streams a file once (bounded memory), renders a numbered
window and records what it saw (a SHA-256 of the whole file and its mtime) per agent and
canonical path. ``write`` and ``edit`` resolve the path (symlinks included), pass the sandbox fence
and the ``fs_write_intent`` vetoes, then compare the file with what was read (a file that exists
must have been read, and must not have changed since) and publish the new content atomically:
a temporary file in the same folder, fsync, then ``os.replace`` (or a hard link, which never
replaces, for a new file).
"""

from __future__ import annotations

import hashlib
import inspect
import os
import secrets
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio

from harness_core import ContentBlock, Harness, RunContext, TextBlock, ToolDefinition, ToolOutput
from harness_core.sandbox import SandboxPolicy

from .errors import FsError, ToolInputError, with_remedy
from .sandboxing import SandboxAccess, escalation_parameters

if TYPE_CHECKING:
    from .config import ToolsConfig

__all__ = ["ABSENT", "FileTools", "Observations", "Version", "read_window"]

#: How much of a file's start is checked for NUL bytes (the mark of a binary file).
BINARY_SNIFF = 8192
CHUNK = 1 << 20
LINE_CUT_SUFFIX = "... (line truncated to {max} chars)"
Operation = Literal["write", "edit"]


@dataclass(frozen=True, slots=True)
class Version:
    """What a tool saw of a file: the SHA-256 of its bytes, its mtime and its size."""

    sha256: str
    mtime: float
    size: int


#: The observation "this path did not exist when it was read".
ABSENT: Literal["absent"] = "absent"
Observation = Version | Literal["absent"]


class Observations:
    """What each agent of this Harness (a session) has seen, by canonical path.

    A call without an agent shares the ``None`` bucket, so a ``harness run`` batch can read and
    then edit. The record lives in memory for the Harness's life and is not persisted.
    """

    def __init__(self) -> None:
        self._seen: dict[tuple[str | None, str], Observation] = {}

    def get(self, agent: str | None, path: str) -> Observation | None:
        """The last observation of ``path`` by ``agent``, or ``None`` if it never looked."""
        return self._seen.get((agent, path))

    def record(self, agent: str | None, path: str, observation: Observation) -> None:
        """Remember the newest observation (a read, or this agent's own write or edit)."""
        self._seen[(agent, path)] = observation

    def clear(self) -> None:
        """Forget everything (the Harness closes)."""
        self._seen.clear()


# --- argument checks (reference §15 (e) texts) ------------------------------------------------


def _mapping(args: Any) -> Mapping[str, Any]:
    if not isinstance(args, Mapping):
        raise ToolInputError("invalid arguments: expected an object")
    return args


def _file_path(args: Mapping[str, Any]) -> str:
    path = args.get("file_path")
    if not isinstance(path, str) or not path.strip():
        raise ToolInputError("file_path must be a non-empty string")
    if "\x00" in path:
        raise ToolInputError("file_path must not contain a NUL character")
    return path


def _positive_int(args: Mapping[str, Any], name: str, default: int) -> int:
    value = args.get(name)
    if value is None:
        return default
    if type(value) is float and value.is_integer():
        value = int(value)
    if type(value) is not int or value < 1:
        raise ToolInputError(f"{name} must be a positive integer")
    return value


# --- reading: one pass over the file, bounded memory -----------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Window:
    """A rendered window of numbered lines and the facts its footer needs."""

    text: str
    first: int
    last: int
    total: int
    capped: bool
    version: Version


class _WindowBuilder:
    """Collects lines ``offset .. offset+limit-1`` from chunks; counts every newline of the file."""

    def __init__(self, *, offset: int, limit: int, max_line_chars: int, max_bytes: int) -> None:
        self.offset = offset
        self.limit = limit
        self.max_line_chars = max_line_chars
        self.max_bytes = max_bytes
        self._keep = max_line_chars * 4 + 4  # bytes kept of one line: enough for max_line_chars
        self.line = 1  # the number of the line the next byte belongs to
        self.newlines = 0
        self.rendered: list[str] = []
        self.rendered_bytes = 0
        self.capped = False
        self.done = False
        self._current = bytearray()
        self._current_open = False

    def feed(self, chunk: bytes) -> None:
        start, size = 0, len(chunk)
        while start < size:
            if self.done:
                self.newlines += chunk.count(b"\n", start)
                return
            if self.line < self.offset:
                newlines = chunk.count(b"\n", start)
                if self.line + newlines < self.offset:
                    self.line += newlines
                    self.newlines += newlines
                    return
                while self.line < self.offset:
                    start = chunk.index(b"\n", start) + 1
                    self.line += 1
                    self.newlines += 1
                continue
            end = chunk.find(b"\n", start)
            piece_end = size if end < 0 else end
            room = self._keep - len(self._current)
            if room > 0:
                self._current += chunk[start : min(piece_end, start + room)]
            self._current_open = True
            if end < 0:
                return
            self.newlines += 1
            self._complete_line()
            start = end + 1

    def _complete_line(self) -> None:
        text = self._current.decode("utf-8", "replace")
        if text.endswith("\r"):
            text = text[:-1]
        if len(text) > self.max_line_chars:
            text = text[: self.max_line_chars] + LINE_CUT_SUFFIX.format(max=self.max_line_chars)
        line = f"{self.line}: {text}\n"
        size = len(line.encode("utf-8"))
        if self.rendered and self.rendered_bytes + size > self.max_bytes:
            self.capped = True
            self.done = True
        else:
            self.rendered.append(line)
            self.rendered_bytes += size
            if len(self.rendered) >= self.limit:
                self.done = True
        self._current = bytearray()
        self._current_open = False
        self.line += 1

    def end(self, ends_with_newline: bool, size: int) -> int:
        """Close the last line (one without a newline); return the file's line count."""
        if self._current_open and not self.done:
            self._complete_line()
        return self.newlines + (1 if size > 0 and not ends_with_newline else 0)


def read_window(
    path: str, display: str, *, offset: int, limit: int, max_line_chars: int, max_bytes: int, max_file_bytes: int
) -> Window | None:
    """Read ``path`` once (in a worker thread); ``None`` when it does not exist."""
    not_regular = FsError("FS_NOT_REGULAR_FILE", f'cannot read "{display}": not a regular file')
    try:
        # Stat before opening: opening a FIFO for reading would block until a writer comes.
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise not_regular
        handle = open(path, "rb")  # noqa: SIM115 - closed by the with block below
    except (FileNotFoundError, NotADirectoryError):
        return None
    except PermissionError as exc:
        raise FsError("FS_PERMISSION_DENIED", f'cannot read "{display}": {exc.strerror}') from None
    with handle:
        status = os.fstat(handle.fileno())
        if not stat.S_ISREG(status.st_mode):
            raise FsError("FS_NOT_REGULAR_FILE", f'cannot read "{display}": not a regular file')
        if status.st_size > max_file_bytes:
            raise FsError(
                "FS_TOO_LARGE",
                f'cannot read "{display}": the file is {status.st_size} bytes, over the {max_file_bytes}-byte limit '
                "of read ([tools] read_max_file_bytes); look at parts of it with bash (head, tail, sed -n "
                "'FROM,TOp', grep -n)",
            )
        builder = _WindowBuilder(offset=offset, limit=limit, max_line_chars=max_line_chars, max_bytes=max_bytes)
        digest = hashlib.sha256()
        size = 0
        last = b""
        first = True
        while chunk := handle.read(CHUNK):
            if first and b"\x00" in chunk[:BINARY_SNIFF]:
                raise FsError(
                    "FS_NOT_TEXT",
                    f'cannot read "{display}": it is a binary file ({status.st_size} bytes); read shows text only — '
                    "inspect it with bash (file, xxd | head, strings | head)",
                )
            first = False
            digest.update(chunk)
            builder.feed(chunk)
            size += len(chunk)
            last = chunk[-1:]
        total = builder.end(last == b"\n", size)
    version = Version(sha256=digest.hexdigest(), mtime=status.st_mtime, size=size)
    if offset > total and not (offset == 1 and total == 0):
        raise FsError("FS_OUT_OF_RANGE", f'offset {offset} is out of range for "{display}" ({total} lines)')
    shown = len(builder.rendered)
    return Window(
        text="".join(builder.rendered),
        first=offset,
        last=offset + shown - 1,
        total=total,
        capped=builder.capped,
        version=version,
    )


def footer(window: Mapping[str, Any]) -> str:
    """reference §15: the line after the window saying how to go on."""
    first, last, total = window["start_line"], window["end_line"], window["total_lines"]
    if window["capped"]:
        return f"(Output capped. Showing lines {first}-{last}. Use offset={last + 1} to continue.)"
    if last < total:
        return f"(Showing lines {first}-{last} of {total}. Use offset={last + 1} to continue.)"
    return f"(End of file - total {total} lines)"


def render_read(_args: Any, value: Any) -> list[ContentBlock]:
    """``<path>…</path> <type>file</type> <content>`` numbered lines, a blank line and the footer."""
    return [
        TextBlock(
            text=f"<path>{value['path']}</path>\n<type>file</type>\n<content>\n{value['text']}\n{footer(value)}\n</content>"
        )
    ]


def render_write(_args: Any, value: Any) -> list[ContentBlock]:
    action = "Created file" if value["operation"] == "create" else "Updated file"
    return [TextBlock(text=f"<path>{value['path']}</path>\n<type>file</type>\n<content>\n{action}\n</content>")]


def render_edit(args: Any, value: Any) -> list[ContentBlock]:
    if value["replace_all"]:
        return [TextBlock(text=f"The file {value['path']} has been updated. All occurrences were successfully replaced.")]
    return [TextBlock(text=f"The file {value['path']} has been updated successfully.")]


READ_OUTPUT = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "text": {"type": "string"},
        "start_line": {"type": "integer"},
        "end_line": {"type": "integer"},
        "total_lines": {"type": "integer", "minimum": 0},
        "capped": {"type": "boolean"},
    },
    "required": ["path", "text", "start_line", "end_line", "total_lines", "capped"],
}
WRITE_OUTPUT = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "operation": {"enum": ["create", "update"]}},
    "required": ["path", "operation"],
}
EDIT_OUTPUT = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "replacements": {"type": "integer", "minimum": 1},
        "replace_all": {"type": "boolean"},
    },
    "required": ["path", "replacements", "replace_all"],
}


# --- writing: compare with what was read, publish atomically -----------------------------------


def _hash_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _temp_beside(target: str) -> tuple[int, str]:
    folder, name = os.path.split(target)
    for _ in range(100):
        temp = os.path.join(folder, f".{name}.{secrets.token_hex(4)}.tmp")
        try:
            # 0o666 less the umask, as for any new file; an update copies the old mode below.
            return os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666), temp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {target}")


def _fsync_folder(folder: str) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def publish(target: str, data: bytes, *, mode: int | None, replace: bool) -> None:
    """Put ``data`` at ``target`` all at once: readers see the old file or the new one, never a part.

    ``replace=False`` never replaces an existing file (a racing creator wins: FileExistsError).
    On any failure the temporary file is removed and ``target`` is untouched.
    """
    fd, temp = _temp_beside(target)
    try:
        try:
            _write_all(fd, data)
            if mode is not None:
                os.fchmod(fd, stat.S_IMODE(mode))
            os.fsync(fd)
        finally:
            os.close(fd)
        if replace:
            os.replace(temp, target)
        else:
            try:
                os.link(temp, target)
            except FileExistsError:
                raise
            except OSError:
                # A file system without hard links: check, then rename (a narrow race remains).
                if os.path.lexists(target):
                    raise FileExistsError(target) from None
                os.replace(temp, target)
            else:
                os.unlink(temp)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
    _fsync_folder(os.path.dirname(target))


def _version_of(path: str, data: bytes) -> Version:
    return Version(sha256=hashlib.sha256(data).hexdigest(), mtime=os.stat(path).st_mtime, size=len(data))


def _check_folder(target: str, display: str, verb: str) -> None:
    folder = os.path.dirname(target)
    if not os.path.isdir(folder):
        raise FsError(
            "FS_NOT_FOUND",
            f'cannot {verb} "{display}": the folder "{os.path.dirname(display)}" does not exist; create it first '
            "(for example with mkdir -p), then retry",
        )


def write_checked(target: str, display: str, data: bytes, observed: Observation | None) -> tuple[Version, str]:
    """The write compare-and-swap (reference §13), run in a worker thread under the plugin's lock."""
    _check_folder(target, display, "write")
    try:
        status: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        status = None
    if status is None:
        if isinstance(observed, Version):
            raise with_remedy("FS_STALE_VERSION", f'cannot write "{display}": file no longer exists')
        try:
            publish(target, data, mode=None, replace=False)
        except FileExistsError:
            raise with_remedy("FS_NOT_OBSERVED", f'cannot overwrite existing "{display}" without reading it first') from None
        return _version_of(target, data), "create"
    if not stat.S_ISREG(status.st_mode):
        raise FsError("FS_NOT_REGULAR_FILE", f'cannot write "{display}": not a regular file')
    if not isinstance(observed, Version):
        raise with_remedy("FS_NOT_OBSERVED", f'cannot overwrite existing "{display}" without reading it first')
    if _hash_file(target) != observed.sha256:
        raise with_remedy("FS_STALE_VERSION", f'cannot write "{display}": file changed since it was read')
    publish(target, data, mode=status.st_mode, replace=True)
    return _version_of(target, data), "update"


def edit_checked(
    target: str,
    display: str,
    old: str,
    new: str,
    replace_all: bool,
    observed: Observation | None,
    max_bytes: int,
) -> tuple[Version, int]:
    """The edit compare-and-swap and literal replacement (reference §13), in a worker thread."""
    if observed is None:
        raise with_remedy("FS_NOT_OBSERVED", f'edit requires reading "{display}" first')
    if observed == ABSENT:
        raise FsError("FS_NOT_FOUND", f'cannot edit "{display}": not found')
    stale = with_remedy("FS_STALE_VERSION", f'cannot edit "{display}": file changed since it was read')
    try:
        status = os.stat(target)
    except (FileNotFoundError, NotADirectoryError):
        raise stale from None
    if not stat.S_ISREG(status.st_mode):
        raise FsError("FS_NOT_REGULAR_FILE", f'cannot edit "{display}": not a regular file')
    if status.st_size > max_bytes:
        raise FsError(
            "FS_TOO_LARGE",
            f'cannot edit "{display}": the file is {status.st_size} bytes, over the {max_bytes}-byte limit of edit '
            "([tools] edit_max_file_bytes)",
        )
    with open(target, "rb") as handle:
        raw = handle.read()
    if not isinstance(observed, Version) or hashlib.sha256(raw).hexdigest() != observed.sha256:
        raise stale
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise FsError("FS_NOT_TEXT", f'cannot edit "{display}": it is not UTF-8 text') from None
    count = text.count(old)
    if count == 0:
        raise FsError("FS_EDIT_NOT_FOUND", f'old_string was not found in "{display}"')
    if count > 1 and not replace_all:
        raise FsError(
            "FS_AMBIGUOUS_EDIT",
            f'old_string matched {count} times in "{display}"; provide a more specific old_string or set '
            "replace_all to true",
        )
    data = (text.replace(old, new) if replace_all else text.replace(old, new, 1)).encode("utf-8")
    publish(target, data, mode=status.st_mode, replace=True)
    return _version_of(target, data), count if replace_all else 1


def _encode(text: str, name: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolInputError(f"{name} must be valid Unicode text (it holds a lone surrogate)") from None


# --- the tools ---------------------------------------------------------------------------------


class FileTools:
    """``read``, ``write`` and ``edit`` of one Harness, sharing its observations and mutation lock."""

    def __init__(self, settings: ToolsConfig, harness: Harness, project_dir: Path, sandbox: SandboxAccess) -> None:
        self.settings = settings
        self.harness = harness
        self.project_dir = project_dir
        self.sandbox = sandbox
        self.observations = Observations()
        # Created on first use, inside the event loop that runs the calls.
        self._lock: anyio.Lock | None = None

    def _mutation_lock(self) -> anyio.Lock:
        if self._lock is None:
            self._lock = anyio.Lock()
        return self._lock

    # --- definitions ------------------------------------------------------------------------

    def definitions(self) -> list[ToolDefinition]:
        """The three tools, with the escalation parameters on write and edit while a sandbox confines."""
        settings = self.settings
        escalation = escalation_parameters("operation") if self.sandbox.advertised else {}
        read = ToolDefinition(
            name="read",
            description=(
                "Read a text file and return its lines numbered as `<n>: <line>`. Use it, not cat, to look at "
                f"files. Returns at most {settings.read_limit} lines (limit) from line offset (1-based), cuts lines "
                f"longer than {settings.read_max_line_length} characters and stops at {settings.read_max_bytes} "
                "bytes; the last line says how to continue. Binary files are refused. Reading a file is what "
                "lets write and edit change it later."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "file_path": {
                        "type": "string",
                        "description": "The file, absolute or relative to the workspace root.",
                    },
                    "offset": {"type": "integer", "description": "The first line to show (1-based). Default 1."},
                    "limit": {
                        "type": "integer",
                        "description": f"How many lines to show. Default and maximum {settings.read_limit}.",
                    },
                },
                "required": ["file_path"],
            },
            output=ToolOutput(schema=READ_OUTPUT, render=render_read),
            execute=self.read,
            is_concurrency_safe=lambda args: True,
        )
        write = ToolDefinition(
            name="write",
            description=(
                "Create a file, or replace the whole content of an existing one. An existing file must have "
                "been read (with read) in this session and not changed since; prefer edit for targeted changes. "
                "The folder must exist. The file is replaced atomically."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "file_path": {
                        "type": "string",
                        "description": "The file, absolute or relative to the workspace root.",
                    },
                    "content": {"type": "string", "description": "The complete new content of the file."},
                    **escalation,
                },
                "required": ["file_path", "content"],
            },
            output=ToolOutput(schema=WRITE_OUTPUT, render=render_write),
            execute=self.write,
        )
        edit = ToolDefinition(
            name="edit",
            description=(
                "Replace the literal text old_string with new_string in a UTF-8 text file. By default old_string "
                "must occur exactly once: give more surrounding text to make it unique, or set replace_all to "
                "replace every occurrence. Read the file first (unless you just wrote or edited it in this "
                "session); an edit of a file changed since it was read is refused."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "file_path": {
                        "type": "string",
                        "description": "The file, absolute or relative to the workspace root.",
                    },
                    "old_string": {"type": "string", "description": "The exact text to replace."},
                    "new_string": {"type": "string", "description": "The text to put in its place."},
                    "replace_all": {
                        "type": "boolean",
                        "description": "Replace every occurrence of old_string. Default false.",
                    },
                    **escalation,
                },
                "required": ["file_path", "old_string", "new_string"],
            },
            output=ToolOutput(schema=EDIT_OUTPUT, render=render_edit),
            execute=self.edit,
        )
        return [read, write, edit]

    # --- paths --------------------------------------------------------------------------------

    def _locate(self, file_path: str, policy: SandboxPolicy | None) -> tuple[str, str]:
        """``(display, canonical)``: the path as the model should read it, and where it really leads."""
        base = policy.workspace_root if policy is not None else str(self.project_dir)
        joined = os.path.join(base, file_path)
        # realpath resolves each existing component, links first, then ".." (so "<link>/.." is right).
        return os.path.normpath(joined), os.path.realpath(joined)

    def _observe(self, ctx: RunContext, tool: str, path: str, observation: Observation) -> None:
        self.observations.record(ctx.agent, path, observation)
        data: dict[str, Any] = {"tool": tool, "path": path, "state": "absent" if observation == ABSENT else "present"}
        if isinstance(observation, Version):
            data.update(sha256=observation.sha256, mtime=observation.mtime, size=observation.size)
        ctx.record_event("fs/observed", data)

    def _check_intent(self, ctx: RunContext, path: str, display: str, operation: Operation) -> None:
        """Ask every ``fs_write_intent`` veto, in call order; the first denial wins (fail closed)."""
        caller = self.harness.plugin_manager.hook.fs_write_intent
        arguments = {"execution": ctx.execution, "path": path, "operation": operation}
        for impl in reversed(caller.get_hookimpls()):
            reason: object = None
            if impl.wrapper or impl.hookwrapper or inspect.iscoroutinefunction(impl.function):
                reason = (
                    f'plugin "{impl.plugin_name}" implements fs_write_intent as a wrapper or async def, which '
                    "cannot veto reliably; every mutation is denied until it is a plain def"
                )
            else:
                try:
                    reason = impl.function(*[arguments[name] for name in impl.argnames])
                except Exception as exc:
                    reason = f'fs_write_intent of plugin "{impl.plugin_name}" failed: {type(exc).__name__}: {exc}'
            if reason is not None:
                raise FsError("FS_INTENT_DENIED", f'cannot {operation} "{display}": {reason}')

    # --- bodies -------------------------------------------------------------------------------

    async def read(self, args: Any, ctx: RunContext) -> dict[str, Any]:
        """The ``read`` body: one streamed pass, a numbered window, an observation."""
        args = _mapping(args)
        file_path = _file_path(args)
        settings = self.settings
        offset = _positive_int(args, "offset", 1)
        limit = _positive_int(args, "limit", settings.read_limit)
        if limit > settings.read_limit:
            raise ToolInputError(f"limit must be less than or equal to {settings.read_limit}")
        display, path = self._locate(file_path, self.sandbox.standing(ctx))
        window = await anyio.to_thread.run_sync(
            lambda: read_window(
                path,
                display,
                offset=offset,
                limit=limit,
                max_line_chars=settings.read_max_line_length,
                max_bytes=settings.read_max_bytes,
                max_file_bytes=settings.read_max_file_bytes,
            )
        )
        if window is None:
            self._observe(ctx, "read", path, ABSENT)
            raise FsError("FS_NOT_FOUND", f'cannot read "{display}": not found')
        self._observe(ctx, "read", path, window.version)
        return {
            "path": display,
            "text": window.text,
            "start_line": window.first,
            "end_line": window.last,
            "total_lines": window.total,
            "capped": window.capped,
        }

    async def write(self, args: Any, ctx: RunContext) -> dict[str, Any]:
        """The ``write`` body: policy, fence, vetoes, then the compare-and-swap and atomic publish."""
        args = _mapping(args)
        file_path = _file_path(args)
        content = args.get("content")
        if not isinstance(content, str):
            raise ToolInputError("content must be a string")
        data = _encode(content, "content")
        policy = await self.sandbox.policy_for(ctx, args)
        display, path = self._locate(file_path, policy)
        self.sandbox.fence(ctx, policy, path)
        self._check_intent(ctx, path, display, "write")
        async with self._mutation_lock():
            observed = self.observations.get(ctx.agent, path)
            version, operation = await anyio.to_thread.run_sync(write_checked, path, display, data, observed)
            self._observe(ctx, "write", path, version)
        return {"path": display, "operation": operation}

    async def edit(self, args: Any, ctx: RunContext) -> dict[str, Any]:
        """The ``edit`` body: like write, with read-before-edit and the literal replacement."""
        args = _mapping(args)
        file_path = _file_path(args)
        old = args.get("old_string")
        if not isinstance(old, str) or not old:
            raise ToolInputError("old_string must be a non-empty string")
        new = args.get("new_string")
        if not isinstance(new, str):
            raise ToolInputError("new_string must be a string")
        if old == new:
            raise ToolInputError("old_string and new_string must differ")
        replace_all = args.get("replace_all", False)
        if type(replace_all) is not bool:
            raise ToolInputError("replace_all must be a boolean")
        _encode(new, "new_string")
        policy = await self.sandbox.policy_for(ctx, args)
        display, path = self._locate(file_path, policy)
        self.sandbox.fence(ctx, policy, path)
        self._check_intent(ctx, path, display, "edit")
        async with self._mutation_lock():
            observed = self.observations.get(ctx.agent, path)
            version, count = await anyio.to_thread.run_sync(
                edit_checked, path, display, old, new, replace_all, observed, self.settings.edit_max_file_bytes
            )
            self._observe(ctx, "edit", path, version)
        return {"path": display, "replacements": count, "replace_all": replace_all}
