"""The terminal answerer: shows the pending call on a TTY and reads one key (allow, reject)."""

from __future__ import annotations

import json
import os
import select
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TextIO

import anyio
import anyio.to_thread

from harness_core import ApprovalRequest, Execution, hookimpl

__all__ = ["TerminalAnswerer", "render_card"]

ALLOW_KEYS = {"a", "y"}
SESSION_KEYS = {"s"}
REJECT_KEYS = {"r", "n"}
CANCEL_KEYS = {"\x03", "\x1b"}  # Ctrl-C and Escape, read as characters while the prompt is up


def render_card(request: ApprovalRequest, call: Execution | None, *, grants: bool) -> str:
    """The pending call as the human sees it: tool, arguments as the model sent them, reason."""
    arguments = "(unknown: the call is not in this session)" if call is None else json.dumps(call.arguments, ensure_ascii=False)
    lines = [
        f"┌ approval needed: {request.tool_name} (call {request.call_id}, agent {request.agent})",
        f"│ arguments: {arguments}",
    ]
    if request.reason:
        lines.append(f"│ reason: {request.reason}")
    choices = "[a] allow once   " + ("[s] allow this exact call for the session   " if grants else "") + "[r] reject   Ctrl-C cancel"
    lines.append(f"└ {choices}: ")
    return "\n".join(lines)


class TerminalAnswerer:
    """Asks the person at the terminal. Without a terminal it passes the ask on at once.

    Reading happens in a worker thread with the terminal in character mode (no echo, Ctrl-C read
    as a key rather than a signal), polling so that a cancelled ask gives the terminal back
    promptly instead of leaving a thread blocked on a read.
    """

    def __init__(self, *, grants: bool = False, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        self.grants = grants
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout

    def available(self) -> bool:
        """True when both ends are a terminal (a pipe, a file or CI never gets a prompt)."""
        try:
            return self.stdin.isatty() and self.stdout.isatty()
        except (ValueError, AttributeError):
            return False

    @hookimpl
    async def approval_answer(
        self, request: ApprovalRequest, call: Execution | None, call_next: Callable[[], Awaitable[str]]
    ) -> str:
        if not self.available():
            return await call_next()
        self.stdout.write(render_card(request, call, grants=self.grants))
        self.stdout.flush()
        stop = threading.Event()
        try:
            key = await anyio.to_thread.run_sync(self._read_key, stop, abandon_on_cancel=True)
        finally:
            stop.set()
        outcome = self._outcome(key)
        self.stdout.write({"allowed-once": "allowed once\n", "allowed-session": "allowed for the session\n",
                           "rejected": "rejected\n", "cancelled": "cancelled\n"}[outcome])
        self.stdout.flush()
        return outcome

    def _outcome(self, key: str) -> str:
        key = key.lower()
        if key in ALLOW_KEYS:
            return "allowed-once"
        if self.grants and key in SESSION_KEYS:
            return "allowed-session"
        if key in REJECT_KEYS:
            return "rejected"
        return "cancelled"

    def _read_key(self, stop: threading.Event) -> str:
        fd = self.stdin.fileno()
        import termios

        saved: Any = termios.tcgetattr(fd)
        raw = termios.tcgetattr(fd)
        raw[3] &= ~(termios.ICANON | termios.ECHO | termios.ISIG)
        termios.tcsetattr(fd, termios.TCSANOW, raw)
        try:
            while not stop.is_set():
                ready, _, _ = select.select([fd], [], [], 0.1)
                if not ready:
                    continue
                data = os.read(fd, 1)
                if not data:
                    return "\x03"  # end of input: nobody is there to answer
                key = data.decode(errors="replace")
                if key.lower() in ALLOW_KEYS | REJECT_KEYS | CANCEL_KEYS or (self.grants and key.lower() in SESSION_KEYS):
                    return key
            return "\x03"
        finally:
            termios.tcsetattr(fd, termios.TCSAFLUSH, saved)
