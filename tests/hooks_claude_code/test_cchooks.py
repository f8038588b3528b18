"""Hooks written with cchooks (PyPI), the helper library for Claude Code hooks, run unchanged.

cchooks is not in the root ``dev`` extra (this bridge may not edit it), so these tests skip where it
is not installed; ``pip install cchooks`` to run them.
"""

from __future__ import annotations

import json
import sys

import pytest

from harness_core import Harness, ToolCall, tool
from harness_core.config import ConfigSource, Layer
from harness_hooks_claude_code import ClaudeCodeHooks

pytest.importorskip("cchooks", reason="cchooks is not installed (not in the dev extra); pip install cchooks")


@tool
async def bash(command: str) -> dict:
    """Pretend to run a command."""
    return {"stdout": f"ran {command}", "stderr": "", "interrupted": False, "isImage": False}


def make(project, hooks: dict) -> Harness:
    (project / ".claude").mkdir(parents=True, exist_ok=True)
    (project / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))
    harness = Harness(plugins=[ClaudeCodeHooks()], config=ConfigSource(layers=(Layer("config", {}),), project_dir=project))
    harness.tools.register(bash)
    return harness


def hook(tmp_path, name: str, body: str) -> dict:
    path = tmp_path / name
    path.write_text("from cchooks import create_context\nc = create_context()\n" + body + "\n")
    return {"matcher": "Bash", "hooks": [{"type": "command", "command": f"{sys.executable} {path}"}]}


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))


@pytest.mark.anyio
async def test_a_cchooks_pre_tool_use_deny_and_allow(tmp_path):
    body = "if 'rm' in c.tool_input['command']:\n    c.output.deny('no rm (cchooks)')\nelse:\n    c.output.allow('ok')"
    harness = make(tmp_path / "p", {"PreToolUse": [hook(tmp_path, "pre.py", body)]})
    denied = await harness.execute(ToolCall(call_id="c1", name="bash", arguments={"command": "rm x"}, agent="main"))
    assert denied.content[0].text == "Error: no rm (cchooks)"
    allowed = await harness.execute(ToolCall(call_id="c2", name="bash", arguments={"command": "ls"}, agent="main"))
    assert not allowed.is_error


@pytest.mark.anyio
async def test_a_cchooks_post_tool_use_reads_the_structured_response_and_adds_context(tmp_path):
    body = "c.output.add_context('stdout was ' + c.tool_response['stdout'])"
    harness = make(tmp_path / "p", {"PostToolUse": [hook(tmp_path, "post.py", body)]})
    result = await harness.execute(ToolCall(call_id="c1", name="bash", arguments={"command": "ls"}, agent="main"))
    assert result.additional_contexts[0].content[0].text == "stdout was ran ls"
