"""The worker process: runs one program as an async function body and relays its tool calls over a pipe.

Started by the runtime as ``python -I -B -c <this file's source>`` (so an interpreter without this
package installed, and a sandbox that hides where the package lives, can run it: only the
standard library is used). The protocol is one JSON object
per line. The worker keeps duplicates of its stdin and stdout for the protocol and then points
file descriptors 0 and 1 elsewhere (``/dev/null`` and stderr), so nothing the program or its child
processes write can be mistaken for a protocol message; ``print``, ``sys.stdout`` and ``sys.stderr``
become log lines.

Host to worker: the start message ``{"program", "bindings", "max_log_lines", "max_log_bytes"}``,
then ``{"t": "reply", "id", "ok": true, "value"}`` or ``{"t": "reply", "id", "ok": false, "message"}``.
Worker to host: ``{"t": "log", "line"}``, ``{"t": "call", "id", "name", "args"}``, and exactly one
of ``{"t": "done", "result"?, "dropped"}`` or ``{"t": "fail", "kind", "message", "dropped"}``.
"""

from __future__ import annotations

import ast
import asyncio
import builtins
import io
import json
import math
import os
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any

#: reference/core-pipeline.md §6.3: a binding call whose arguments are not lossless JSON.
ARGUMENTS_NOT_JSON = "tool arguments must be lossless JSON (call the tool with an arguments object, e.g. `{}`)"
#: The largest integer magnitude a JavaScript number holds exactly (session logs are read by JS too).
MAX_SAFE_INTEGER = 2**53
#: The global the transformed program returns when it returned nothing (``return`` or falling off the end).
NO_RESULT_NAME = "__harness_no_result__"
#: The name the program's body is compiled under.
PROGRAM_FUNCTION = "__harness_program__"
#: The file name the program's tracebacks and syntax errors show.
PROGRAM_FILE = "<program>"
#: Exit status when the host closed the protocol pipe (it is gone or gave up on this run).
EXIT_HOST_GONE = 70


class ToolCallError(Exception):
    """Raised in the program when a tool call failed: denied, blocked, unknown, raised or bad arguments.

    ``tool_name`` names the tool; ``str(error)`` is the reason.
    """

    def __init__(self, tool_name: str, message: str) -> None:
        super().__init__(message)
        self.tool_name = tool_name


def json_problem(value: Any) -> str | None:
    """Where and why ``value`` is not lossless JSON, or ``None`` when it is.

    The rules of the core's snapshot: ``None``, ``bool``, ``str``, ``int`` within ±2**53, finite
    ``float`` other than ``-0.0``, and exact ``list`` / ``dict`` with ``str`` keys; no cycles.
    Iterative, so deeply nested values are fine.
    """
    stack: list[tuple[Any, str, bool]] = [(value, "$", False)]
    ancestors: set[int] = set()
    while stack:
        item, path, leaving = stack.pop()
        if leaving:
            ancestors.discard(id(item))
            continue
        kind = type(item)
        if item is None or kind is bool or kind is str:
            continue
        if kind is int:
            if abs(item) > MAX_SAFE_INTEGER:
                return f"{path}: the integer {item} is beyond ±2**53"
            continue
        if kind is float:
            if not math.isfinite(item):
                return f"{path}: the float {item!r} is not finite"
            if item == 0.0 and math.copysign(1.0, item) < 0:
                return f"{path}: -0.0 does not survive JSON"
            continue
        if kind is list or kind is dict:
            if id(item) in ancestors:
                return f"{path}: a circular reference"
            ancestors.add(id(item))
            stack.append((item, path, True))
            if kind is list:
                for index in range(len(item) - 1, -1, -1):
                    stack.append((item[index], f"{path}[{index}]", False))
            else:
                for key, member in item.items():
                    if type(key) is not str:
                        return f"{path}: the key {key!r} is a {type(key).__name__}, not a str"
                    stack.append((member, f"{path}[{key!r}]", False))
            continue
        return f"{path}: a {kind.__name__} is not JSON"
    return None


class Channel:
    """The protocol pipe pair: serialized writes from any thread, replies delivered to the event loop."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self._reader = os.fdopen(read_fd, "rb")
        self._write_fd = write_fd
        self._lock = threading.Lock()
        self._next_id = 0
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        #: Set once the final message is sent: the host's closing the pipe is then the normal end.
        self.finished = False

    def read_start(self) -> dict[str, Any]:
        """The start message (the first line the host sends)."""
        line = self._reader.readline()
        if not line:
            os._exit(EXIT_HOST_GONE)
        message: dict[str, Any] = json.loads(line)
        return message

    def send(self, message: dict[str, Any]) -> None:
        """Write one message; the host reads every line, so the pipe drains."""
        data = (json.dumps(message, ensure_ascii=True, allow_nan=False) + "\n").encode("ascii")
        with self._lock:
            view = memoryview(data)
            while view:
                written = os.write(self._write_fd, view)
                view = view[written:]

    def listen(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the thread that reads replies and hands them to ``loop``."""
        self._loop = loop
        threading.Thread(target=self._read_replies, name="harness-protocol", daemon=True).start()

    def _read_replies(self) -> None:
        loop = self._loop
        assert loop is not None
        for line in self._reader:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict) and message.get("t") == "reply":
                loop.call_soon_threadsafe(self._deliver, message)
        # The host closed the pipe: the run is over (after the final message), or the host is gone or
        # gave up on this run. Nothing may go on either way.
        os._exit(0 if self.finished else EXIT_HOST_GONE)

    def _deliver(self, message: dict[str, Any]) -> None:
        future = self._pending.pop(message.get("id"), None)  # type: ignore[arg-type]
        if future is not None and not future.done():
            future.set_result(message)

    async def call(self, name: str, arguments: Any) -> Any:
        """Ask the host to run ``name`` with ``arguments``; its value, or ``ToolCallError``."""
        problem = json_problem(arguments)
        if problem is not None:
            # Rejected here: nothing reaches the host, so nothing is dispatched or logged.
            raise ToolCallError(name, ARGUMENTS_NOT_JSON)
        loop = asyncio.get_running_loop()
        self._next_id += 1
        call_id = self._next_id
        future: asyncio.Future[dict[str, Any]] = loop.create_future()
        self._pending[call_id] = future
        try:
            self.send({"t": "call", "id": call_id, "name": name, "args": arguments})
            reply = await future
        finally:
            self._pending.pop(call_id, None)
        if reply.get("ok") is True:
            return reply.get("value")
        raise ToolCallError(name, str(reply.get("message", "tool call failed")))


class Logs:
    """The program's output as log lines, bounded by line count and bytes; the rest is counted."""

    def __init__(self, channel: Channel, max_lines: int, max_bytes: int) -> None:
        self._channel = channel
        self._max_lines = max_lines
        self._max_bytes = max_bytes
        self._lines = 0
        self._bytes = 0
        self.dropped = 0
        self._partial = ""
        self._cut = False
        self._lock = threading.Lock()

    def write(self, text: str) -> None:
        """Take text; every complete line becomes one log entry."""
        with self._lock:
            if self._cut:
                # The rest of a line already sent cut short: drop it up to its newline.
                end = text.find("\n")
                if end < 0:
                    return
                text, self._cut = text[end + 1 :], False
            pieces = (self._partial + text).split("\n")
            self._partial = pieces.pop()
            if len(self._partial) > self._max_bytes:
                # An endless line without a newline still has to end somewhere: send it cut.
                pieces.append(self._partial)
                self._partial, self._cut = "", True
            for piece in pieces:
                self._emit(piece)

    def finish(self) -> None:
        """Emit the last line if it had no newline."""
        with self._lock:
            if self._partial:
                self._emit(self._partial)
                self._partial = ""

    def _emit(self, line: str) -> None:
        size = len(line.encode("utf-8", "replace"))
        if self._lines >= self._max_lines or self._bytes >= self._max_bytes:
            self.dropped += 1
            return
        room = self._max_bytes - self._bytes
        if size > room:
            line = line.encode("utf-8", "replace")[:room].decode("utf-8", "ignore")
            size = room
        self._lines += 1
        self._bytes += size
        self._channel.send({"t": "log", "line": line})


class LogStream(io.TextIOBase):
    """``sys.stdout`` / ``sys.stderr`` for the program: text in, log lines out."""

    def __init__(self, logs: Logs, name: str) -> None:
        super().__init__()
        self._logs = logs
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    @property
    def encoding(self) -> str:  # type: ignore[override]  # a fixed text stream: always UTF-8
        return "utf-8"

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self._logs.write(text)
        return len(text)

    def isatty(self) -> bool:
        return False


class Tools:
    """The ``tools`` namespace: ``await tools.name(args)`` or ``await tools["name"](args)``."""

    def __init__(self, names: list[str], channel: Channel) -> None:
        self._names = frozenset(names)
        self._channel = channel

    def _binding(self, name: str) -> Callable[..., Awaitable[Any]]:
        channel = self._channel
        missing = object()

        async def call(arguments: Any = missing, **keywords: Any) -> Any:
            if arguments is missing:
                arguments = dict(keywords)
            elif keywords:
                raise TypeError(f"tools.{name}() takes an arguments dict or keyword arguments, not both")
            return await channel.call(name, arguments)

        call.__name__ = name
        call.__qualname__ = f"tools.{name}"
        return call

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        # Dunder look-ups come from Python itself (copy, pickle, repr machinery), never from a program.
        if name.startswith("__") and name.endswith("__") or name not in self._names:
            raise AttributeError(f"no tool named {name!r} is available; available: {', '.join(sorted(self._names))}")
        return self._binding(name)

    def __getitem__(self, name: str) -> Callable[..., Awaitable[Any]]:
        if name not in self._names:
            raise KeyError(f"no tool named {name!r} is available")
        return self._binding(name)

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __dir__(self) -> list[str]:
        return sorted(self._names)

    def __repr__(self) -> str:
        return f"<tools: {', '.join(sorted(self._names))}>"


class _TopLevel(ast.NodeTransformer):
    """Marks the program's own ``return`` (bare: no result) and finds a top-level ``yield``."""

    def __init__(self) -> None:
        self.yield_line: int | None = None

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        return node  # a nested function's return and yield are its own

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AST:
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        return node  # a return in a class body stays a syntax error

    def visit_Return(self, node: ast.Return) -> ast.AST:
        if node.value is None:
            node.value = ast.copy_location(ast.Name(id=NO_RESULT_NAME, ctx=ast.Load()), node)
        return node

    def visit_Yield(self, node: ast.Yield) -> ast.AST:
        if self.yield_line is None:
            self.yield_line = node.lineno
        return node

    def visit_YieldFrom(self, node: ast.YieldFrom) -> ast.AST:
        if self.yield_line is None:
            self.yield_line = node.lineno
        return node


def syntax_message(error: SyntaxError) -> str:
    """``SyntaxError: <what> (line N)`` and the offending line."""
    message = f"SyntaxError: {error.msg}"
    if error.lineno is not None:
        message += f" (line {error.lineno})"
    if error.text and error.text.strip():
        message += f": {error.text.strip()}"
    return message


def compile_program(program: str) -> Any:
    """The program as the code of a module defining one ``async def`` whose body it is.

    Parsed as a module first (the parser accepts top-level ``await`` and ``return``), then moved
    into the function body, so line numbers and multi-line strings stay exactly as written.
    """
    tree = ast.parse(program, filename=PROGRAM_FILE, mode="exec")
    finder = _TopLevel()
    body = [finder.visit(statement) for statement in tree.body]
    if finder.yield_line is not None:
        raise SyntaxError(
            "'yield' is not allowed in a program; return the value instead", (PROGRAM_FILE, finder.yield_line, 0, None)
        )
    body.append(ast.Return(value=ast.Name(id=NO_RESULT_NAME, ctx=ast.Load())))
    arguments = ast.arguments(
        posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]
    )
    fields: dict[str, Any] = {
        "name": PROGRAM_FUNCTION,
        "args": arguments,
        "body": body,
        "decorator_list": [],
        "returns": None,
    }
    if "type_params" in ast.AsyncFunctionDef._fields:
        fields["type_params"] = []
    function = ast.AsyncFunctionDef(**fields, lineno=1, col_offset=0)
    module = ast.Module(body=[function], type_ignores=[])
    ast.fix_missing_locations(module)
    return compile(module, PROGRAM_FILE, "exec", dont_inherit=True)


def exception_message(error: BaseException) -> str:
    """``<Type>: <message>``, or the type alone when the message is empty."""
    try:
        text = str(error)
    except Exception:  # an exception whose __str__ raises still has to be reported
        text = "<unprintable message>"
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


async def run_program(start: dict[str, Any], channel: Channel, logs: Logs) -> dict[str, Any]:
    """Run the program; the final message (``done`` or ``fail``) for the host."""
    channel.listen(asyncio.get_running_loop())
    try:
        code = compile_program(start["program"])
    except SyntaxError as error:
        return {"t": "fail", "kind": "syntax", "message": syntax_message(error)}
    except (ValueError, TypeError, RecursionError, MemoryError) as error:  # null bytes, absurd nesting
        return {"t": "fail", "kind": "syntax", "message": exception_message(error)}
    no_result = object()
    scope: dict[str, Any] = {
        "__name__": "__program__",
        "__builtins__": builtins,
        "tools": Tools(list(start["bindings"]), channel),
        "ToolCallError": ToolCallError,
        NO_RESULT_NAME: no_result,
    }
    try:
        exec(code, scope)
        program = scope.pop(PROGRAM_FUNCTION)
        result = await program()
    except BaseException as error:  # the program's own failure, SystemExit included
        logs.finish()
        return {"t": "fail", "kind": "exception", "message": exception_message(error)}
    logs.finish()
    if result is no_result:
        return {"t": "done"}
    problem = json_problem(result)
    if problem is not None:
        return {
            "t": "fail",
            "kind": "result",
            "message": f"the program returned a value that is not lossless JSON ({problem}); return None, a bool, "
            "a number, a str, a list or a dict with str keys",
        }
    return {"t": "done", "result": result}


def main() -> None:
    """Take over the standard streams, read the start message, run the program and report."""
    protocol_in = os.dup(0)
    protocol_out = os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)  # stray writes to fd 1 (child processes) land in stderr, never in the protocol
    channel = Channel(protocol_in, protocol_out)
    start = channel.read_start()
    logs = Logs(channel, int(start["max_log_lines"]), int(start["max_log_bytes"]))
    sys.stdin = open(os.devnull, encoding="utf-8")  # input() sees end of file; lives as long as the process
    sys.stdout = LogStream(logs, "<stdout>")
    sys.stderr = LogStream(logs, "<stderr>")
    asyncio.run(report(start, channel, logs))


async def report(start: dict[str, Any], channel: Channel, logs: Logs) -> None:
    """Run the program, send its final message, then wait for the host to close the pipe.

    The worker stays alive until the host has taken stock of the processes the program started
    (they are the worker's children only while it lives), and the reader thread exits the process
    when the pipe closes. The event loop is blocked meanwhile on purpose: tasks the program left
    behind must not run on, and asyncio.run must not cancel and await them.
    """
    final = await run_program(start, channel, logs)
    final["dropped"] = logs.dropped
    channel.finished = True
    channel.send(final)
    threading.Event().wait()


if __name__ == "__main__":
    main()
