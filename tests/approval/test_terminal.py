"""reference/plugins.md §1(c) answerers: the terminal answerer, driven through a real pseudo-terminal.

A child process builds a Harness with the approval plugin (``[approval] answerers =
["terminal"]``), an ask-everything listener and a ``deploy`` tool, runs one call and prints
``RESULT ok`` or ``RESULT <error message>``. Here the test plays the person at the terminal: it
waits for the card, presses one key and reads the outcome. Without a terminal the answerer passes
the ask on at once, so it fails closed as ``unavailable`` instead of waiting for input.
"""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")

PROMPT = "[a] allow once"
TIMEOUT = 5.0
UNAVAILABLE = 'tool "deploy" requires approval, but no approval channel is available'

CHILD = '''
import sys

import anyio

from harness_approval import ApprovalPlugin
from harness_core import Ask, Harness, TextBlock, ToolCall, ToolDefinition, ToolOutput, hookimpl

GRANTS = "grants" in sys.argv[1:]
CALLS = 2 if "twice" in sys.argv[1:] else 1
ABORT = "abort" in sys.argv[1:]


class AskAll:
    @hookimpl
    async def tools_pre_execute(self, execution, call_next):
        return Ask(reason="deploys need a human")


async def execute(args, ctx):
    return "deployed"


DEPLOY = ToolDefinition(
    name="deploy",
    description="Deploy somewhere",
    parameters={"type": "object"},
    output=ToolOutput(schema={"type": "string"}, render=lambda args, value: [TextBlock(text=value)]),
    execute=execute,
)


async def main():
    harness = Harness(
        plugins=[ApprovalPlugin(), AskAll()],
        config={"approval": {"answerers": ["terminal"], "grants": GRANTS}},
    )
    harness.tools.register(DEPLOY)
    for number in range(1, CALLS + 1):
        call = ToolCall(call_id=f"c{number}", name="deploy", arguments={"target": "prod", "replicas": 2}, agent="main")
        async with anyio.create_task_group() as group:
            if ABORT:
                group.start_soon(abort_later, call)
            result = await harness.execute(call)
            group.cancel_scope.cancel()
        print("RESULT ok" if not result.is_error else "RESULT " + result.error.message, flush=True)
    if ABORT:
        import termios
        for _ in range(200):
            if termios.tcgetattr(0)[3] & termios.ICANON:
                print("TERMINAL line mode", flush=True)
                break
            await anyio.sleep(0.01)
        else:
            print("TERMINAL still in key mode", flush=True)


async def abort_later(call):
    await anyio.sleep(0.5)
    call.signal.abort("the user pressed stop")


anyio.run(main)
'''


@pytest.fixture
def child_script(tmp_path: Path) -> Path:
    script = tmp_path / "ask_one_call.py"
    script.write_text(CHILD)
    return script


class PtyChild:
    """A child Python process whose stdin, stdout and stderr are the slave side of a new pty."""

    def __init__(self, script: Path, *args: str) -> None:
        pid, fd = pty.fork()
        if pid == 0:  # the child: become the script (never return into pytest)
            try:
                os.execv(sys.executable, [sys.executable, str(script), *args])
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd
        self.output = b""
        self.status: int | None = None

    @property
    def text(self) -> str:
        return self.output.decode("utf-8", errors="replace").replace("\r\n", "\n")

    def _read(self, deadline: float) -> bool:
        """Read what is there; False at end of output (the child closed the terminal)."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return True
        ready, _, _ = select.select([self.fd], [], [], remaining)
        if not ready:
            return True
        try:
            chunk = os.read(self.fd, 4096)
        except OSError:  # EIO on Linux once every slave descriptor is closed
            return False
        self.output += chunk
        return bool(chunk)

    def expect(self, text: str, timeout: float = TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.text:
            if time.monotonic() >= deadline:
                raise AssertionError(f"timed out after {timeout}s waiting for {text!r}; output so far:\n{self.text}")
            if not self._read(deadline):
                raise AssertionError(f"the child ended before printing {text!r}; output:\n{self.text}")

    def wait_for_key_mode(self, timeout: float = TIMEOUT) -> None:
        """Wait until the answerer switched the terminal to reading single keys (ICANON off).

        On Linux ``tcgetattr`` on the master reports the slave's settings; a key sent before the
        switch would sit in a line buffer (and Ctrl-C would be a signal instead of a key).
        """
        deadline = time.monotonic() + timeout
        while termios.tcgetattr(self.fd)[3] & termios.ICANON:
            if time.monotonic() >= deadline:
                raise AssertionError(f"the terminal never left line mode; output so far:\n{self.text}")
            time.sleep(0.01)

    def send(self, keys: str) -> None:
        os.write(self.fd, keys.encode())

    def finish(self, timeout: float = TIMEOUT) -> str:
        """Read to the end of the output and reap the child; returns the whole output."""
        deadline = time.monotonic() + timeout
        while self._read(deadline):
            if time.monotonic() >= deadline:
                raise AssertionError(f"the child did not finish within {timeout}s; output so far:\n{self.text}")
        _pid, self.status = os.waitpid(self.pid, 0)
        return self.text

    def close(self) -> None:
        if self.status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            _pid, self.status = os.waitpid(self.pid, 0)
        os.close(self.fd)


@pytest.fixture
def spawn(child_script: Path) -> Iterator[object]:
    children: list[PtyChild] = []

    def start(*args: str) -> PtyChild:
        child = PtyChild(child_script, *args)
        children.append(child)
        return child

    yield start
    for child in children:
        child.close()


def answer(spawn, keys: str, *args: str) -> tuple[str, list[str]]:
    """Run the child, wait for the card, press ``keys``; the output and the RESULT lines."""
    child = spawn(*args)
    child.expect(PROMPT)
    child.wait_for_key_mode()
    child.send(keys)
    output = child.finish()
    assert child.status is not None and os.waitstatus_to_exitcode(child.status) == 0, output
    return output, [line.removeprefix("RESULT ") for line in output.splitlines() if line.startswith("RESULT ")]


def test_the_card_shows_the_tool_the_arguments_as_sent_the_reason_and_the_choices(spawn):
    child = spawn()
    child.expect(PROMPT)
    card = child.text
    assert "approval needed: deploy (call c1, agent main)" in card
    assert '│ arguments: {"target": "prod", "replicas": 2}' in card
    assert "│ reason: deploys need a human" in card
    assert "[a] allow once   [r] reject   Ctrl-C cancel" in card
    assert "[s]" not in card  # no session grants unless [approval] grants = true
    child.wait_for_key_mode()
    child.send("r")
    child.finish()


@pytest.mark.parametrize("key", ["a", "y", "A"])
def test_pressing_a_allows_the_call_once(spawn, key):
    output, results = answer(spawn, key)
    assert results == ["ok"]
    assert "allowed once" in output


@pytest.mark.parametrize("key", ["r", "n"])
def test_pressing_r_rejects_the_call(spawn, key):
    output, results = answer(spawn, key)
    assert results == ['the user rejected tool "deploy"']
    assert "rejected" in output.split(PROMPT, 1)[1]


@pytest.mark.parametrize("key", ["\x03", "\x1b"])
def test_ctrl_c_or_escape_cancels_the_ask(spawn, key):
    _output, results = answer(spawn, key)
    assert results == ['approval for tool "deploy" was cancelled']


def test_other_keys_are_ignored_until_an_answer_key(spawn):
    _output, results = answer(spawn, "xq1 s" + "a")
    assert results == ["ok"]


def test_with_grants_s_allows_the_exact_call_for_the_session_and_the_repeat_does_not_prompt(spawn):
    child = spawn("grants", "twice")
    child.expect(PROMPT)
    assert "[s] allow this exact call for the session" in child.text
    child.wait_for_key_mode()
    child.send("s")
    output = child.finish()
    assert [line for line in output.splitlines() if line.startswith("RESULT")] == ["RESULT ok", "RESULT ok"]
    assert output.count(PROMPT) == 1
    assert "allowed for the session" in output


def test_an_abort_while_the_card_is_up_ends_the_ask_and_gives_the_terminal_back(spawn):
    child = spawn("abort")
    child.expect(PROMPT)
    output = child.finish()
    assert "RESULT tool call aborted before dispatch" in output
    assert "TERMINAL line mode" in output


def test_without_a_terminal_the_ask_is_unavailable_at_once(child_script):
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(child_script)], input="a\n", capture_output=True, text=True, timeout=20
    )
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"RESULT {UNAVAILABLE}"]
    assert PROMPT not in done.stdout
    assert elapsed < 5


def test_a_terminal_on_stdin_but_not_on_stdout_is_not_enough_for_a_prompt(child_script):
    master, slave = pty.openpty()
    try:
        process = subprocess.Popen(
            [sys.executable, str(child_script)], stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            out, err = process.communicate(timeout=20)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    finally:
        os.close(slave)
        os.close(master)
    assert process.returncode == 0, err
    assert out.splitlines() == [f"RESULT {UNAVAILABLE}"]
