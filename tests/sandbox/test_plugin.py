"""harness-sandbox: the entry point loads; policy and confinement through a real Harness; fail closed.

reference/plugins.md §2–§5: a confined mode gets enforcing argv or SANDBOX_UNAVAILABLE, never a
silent unconfined run; danger-full-access is never wrapped; the backend verdict is probed once.
"""

from __future__ import annotations

import os
import subprocess
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from harness_core import Harness, MemoryEventSink, TextBlock, ToolCall, ToolDefinition, ToolOutput
from harness_core.sandbox import SandboxPolicy, SandboxUnavailableError
from harness_sandbox import SandboxPlugin
from harness_sandbox.backends import Bubblewrap, Landlock

from .conftest import start

UNAVAILABLE = (
    'sandbox mode "workspace-write" is requested but no sandbox backend is usable on this host; refusing to run '
    "the command unconfined. Install bubblewrap or run a Landlock-enforcing kernel (Linux), ensure sandbox-exec is "
    "usable (macOS), or ensure the ACL restricted-token runner can start (Windows) — otherwise switch the consumer "
    "to danger-full-access."
)


def test_the_sandbox_entry_point_is_registered_in_group_harness_and_loads() -> None:
    found = [ep for ep in entry_points(group="harness") if ep.name == "sandbox"]
    assert len(found) == 1, "pip install -e plugins/sandbox (dev.py does it for the workspace)"
    entry_point = found[0]
    assert entry_point.value == "harness_sandbox.plugin:SandboxPlugin"
    assert entry_point.dist is not None and entry_point.dist.name == "harness-sandbox"
    assert entry_point.load() is SandboxPlugin


def test_entry_point_discovery_gives_each_harness_its_own_plugin(monkeypatch) -> None:
    monkeypatch.setenv("HARNESS_LOAD_PLUGINS", "sandbox")
    first, second = Harness(load_entrypoints=True), Harness(load_entrypoints=True)
    plugin = first.plugin_manager.get_plugin("sandbox")
    assert isinstance(plugin, SandboxPlugin)
    assert second.plugin_manager.get_plugin("sandbox") is not plugin


def test_the_package_re_exports_a_sorted_all() -> None:
    import harness_sandbox

    assert harness_sandbox.__all__ == sorted(harness_sandbox.__all__)
    assert all(hasattr(harness_sandbox, name) for name in harness_sandbox.__all__)


def test_loading_the_entry_point_imports_neither_the_config_model_nor_the_backends() -> None:
    import sys

    code = "import sys, harness_sandbox.plugin; print(sorted(m for m in sys.modules if m.startswith('harness_sandbox')))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "['harness_sandbox', 'harness_sandbox.plugin']"


# --- capabilities ---------------------------------------------------------------------------------


def test_it_provides_sandbox_and_confining_when_a_backend_works(workspace, backend) -> None:
    harness, _plugin = start(workspace, {"backend": backend})
    assert {"sandbox", "sandbox:confining"} <= harness.provided()


def test_without_a_working_backend_it_provides_only_sandbox_and_warns(workspace, monkeypatch, caplog) -> None:
    monkeypatch.setattr("harness_sandbox.backends.bwrap_candidates", lambda: [("/nonexistent/bwrap", "test")])
    with caplog.at_level("WARNING", logger="harness.sandbox"):
        harness, _plugin = start(workspace, {"backend": "bubblewrap"})
    assert harness.provided() == {"sandbox"}
    assert 'no backend can enforce "workspace-write"' in caplog.text and "harness sandbox" in caplog.text


# --- fail closed ---------------------------------------------------------------------------------


def shell_tool(harness: Harness) -> ToolDefinition:
    """A minimal bash tool written against the seam: policy, confine when confined, spawn."""

    async def execute(args: Any, ctx: Any) -> str:
        hook = harness.plugin_manager.hook
        policy = hook.sandbox_policy(execution=ctx, mode=None)
        argv = ["bash", "-c", args["command"]]
        if policy.confined:
            confined = hook.sandbox_confine(argv=argv, policy=policy, cwd=None)
            if confined is None:
                raise RuntimeError("no sandbox plugin: refusing to run a confined policy")
            argv = list(confined.argv)
        completed = subprocess.run(argv, cwd=policy.workspace_root, capture_output=True, text=True, timeout=60)
        return completed.stdout + completed.stderr

    return ToolDefinition(
        name="sh",
        description="run a shell command",
        parameters={"type": "object", "properties": {"command": {"type": "string"}}},
        output=ToolOutput(schema={"type": "string"}, render=lambda args, value: [TextBlock(text=value)]),
        execute=execute,
    )


@pytest.mark.anyio
async def test_a_named_backend_that_cannot_start_refuses_the_command_and_it_never_runs(workspace, monkeypatch) -> None:
    monkeypatch.setattr("harness_sandbox.backends.bwrap_candidates", lambda: [("/nonexistent/bwrap", "test")])
    harness, plugin = start(workspace, {"backend": "bubblewrap"})
    harness.tools.register(shell_tool(harness))
    marker = workspace / "marker"
    result = await harness.execute(ToolCall(call_id="c1", name="sh", arguments={"command": f"touch {marker}"}, agent="main"))
    assert result.is_error
    assert result.error is not None and result.error.message == UNAVAILABLE
    assert result.error.info is not None and result.error.info.code == "SANDBOX_UNAVAILABLE"
    assert not marker.exists()
    [verdict] = plugin.probe_report().verdicts
    assert verdict.backend == "bubblewrap" and not verdict.usable
    assert "cannot start /nonexistent/bwrap" in verdict.detail


@pytest.mark.anyio
async def test_auto_with_every_probe_failing_refuses_every_confined_mode(workspace, monkeypatch) -> None:
    monkeypatch.setattr("harness_sandbox.backends.bwrap_candidates", lambda: [])
    monkeypatch.setattr(
        "harness_sandbox.selection.default_backends",
        lambda: {"bubblewrap": Bubblewrap(), "landlock": Landlock(python="/nonexistent/python3")},
    )
    harness, plugin = start(workspace, {"backend": "auto", "mode": "read-only"})
    harness.tools.register(shell_tool(harness))
    marker = workspace / "marker"
    result = await harness.execute(ToolCall(call_id="c1", name="sh", arguments={"command": f"touch {marker}"}))
    assert result.error is not None and result.error.message == UNAVAILABLE.replace("workspace-write", "read-only")
    assert not marker.exists()
    for mode in ("read-only", "workspace-write"):
        with pytest.raises(SandboxUnavailableError):
            harness.plugin_manager.hook.sandbox_confine(argv=["true"], policy=plugin.policy(mode), cwd=None)
    details = {verdict.backend: verdict.detail for verdict in plugin.probe_report().verdicts}
    assert details["bubblewrap"].startswith("no bwrap binary")
    assert details["landlock"] == "cannot start /nonexistent/python3: No such file or directory"


@pytest.mark.anyio
async def test_danger_full_access_is_never_wrapped_even_without_a_backend(workspace, monkeypatch) -> None:
    monkeypatch.setattr("harness_sandbox.backends.bwrap_candidates", lambda: [])
    harness, plugin = start(workspace, {"backend": "bubblewrap", "mode": "danger-full-access"})
    harness.tools.register(shell_tool(harness))
    policy = harness.plugin_manager.hook.sandbox_policy(execution=None, mode=None)
    assert policy.mode == "danger-full-access" and not policy.confined
    assert harness.plugin_manager.hook.sandbox_confine(argv=["bash", "-c", "true"], policy=policy, cwd=None) is None
    marker = workspace / "marker"
    result = await harness.execute(ToolCall(call_id="c1", name="sh", arguments={"command": f"touch {marker}"}))
    assert not result.is_error and marker.exists()


@pytest.mark.anyio
async def test_a_confined_call_through_the_pipeline_runs_under_the_backend(workspace, outside, backend) -> None:
    harness, _plugin = start(workspace, {"backend": backend})
    harness.tools.register(shell_tool(harness))
    command = f"echo in > inside.txt; echo out > {outside}/escaped.txt"
    result = await harness.execute(ToolCall(call_id="c1", name="sh", arguments={"command": command}))
    assert not result.is_error
    assert (workspace / "inside.txt").read_text() == "in\n"
    assert not (outside / "escaped.txt").exists()


def test_confine_refuses_an_argv_that_is_not_a_list_of_strings(workspace, backend) -> None:
    harness, plugin = start(workspace, {"backend": backend})
    for bad in ("bash -c true", [], ["bash", 3]):
        with pytest.raises(TypeError, match="non-empty list of str"):
            harness.plugin_manager.hook.sandbox_confine(argv=bad, policy=plugin.policy(), cwd=None)
    with pytest.raises(TypeError, match="needs a SandboxPolicy"):
        harness.plugin_manager.hook.sandbox_confine(argv=["true"], policy={"mode": "read-only"}, cwd=None)


# --- the probe runs once -----------------------------------------------------------------------------


class Counting:
    """A backend that counts its probes and otherwise does what the real one does."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self.probes = inner, inner.name, 0

    def probe(self, network: bool, timeout_s: float) -> Any:
        self.probes += 1
        return self.inner.probe(network, timeout_s)

    def confine(self, argv: Any, policy: SandboxPolicy, verdict: Any, cwd: Any = None) -> Any:
        return self.inner.confine(argv, policy, verdict)


@pytest.fixture
def counting(monkeypatch) -> dict[str, Counting]:
    from harness_sandbox.selection import default_backends

    backends = {name: Counting(backend) for name, backend in default_backends().items()}
    monkeypatch.setattr("harness_sandbox.selection.default_backends", lambda: dict(backends))
    return backends


def test_the_selection_is_probed_once_for_the_plugins_lifetime(workspace, counting, verdicts) -> None:
    harness, plugin = start(workspace, {"backend": "auto"})
    hook = harness.plugin_manager.hook
    for mode in ("read-only", "workspace-write", "read-only"):
        try:
            hook.sandbox_confine(argv=["true"], policy=plugin.policy(mode), cwd=None)
        except SandboxUnavailableError:
            pass
    harness.provided()
    plugin.probe_report()
    first_usable = next((name for name in ("bubblewrap", "landlock") if verdicts[name].usable), None)
    expected = {"bubblewrap": 1, "landlock": 0 if first_usable == "bubblewrap" else 1, "seatbelt": 0}
    assert {name: backend.probes for name, backend in counting.items()} == expected
    plugin.probe_report(everything=True)
    plugin.probe_report(everything=True)
    assert {name: backend.probes for name, backend in counting.items()} == {"bubblewrap": 1, "landlock": 1, "seatbelt": 1}


def test_an_unavailable_verdict_is_cached_too(workspace, counting, monkeypatch) -> None:
    monkeypatch.setattr("harness_sandbox.backends.bwrap_candidates", lambda: [("/nonexistent/bwrap", "test")])
    harness, plugin = start(workspace, {"backend": "bubblewrap"})
    for _ in range(3):
        with pytest.raises(SandboxUnavailableError):
            harness.plugin_manager.hook.sandbox_confine(argv=["true"], policy=plugin.policy(), cwd=None)
    assert counting["bubblewrap"].probes == 1


def test_a_named_backend_is_the_only_candidate(workspace, counting) -> None:
    harness, plugin = start(workspace, {"backend": "seatbelt"})
    harness.provided()
    assert [name for name, backend in counting.items() if backend.probes] == ["seatbelt"]
    assert plugin.probe_report().candidates == ("seatbelt",)


def test_each_harness_probes_for_itself(workspace, counting) -> None:
    start(workspace, {"backend": "landlock"})
    start(workspace, {"backend": "landlock"})
    assert counting["landlock"].probes == 2


# --- mode precedence and the session override -----------------------------------------------------


def test_mode_precedence_is_escalation_then_session_then_config(workspace) -> None:
    sink = MemoryEventSink()
    harness, plugin = start(workspace, {"mode": "read-only"}, events=sink)
    hook = harness.plugin_manager.hook
    assert hook.sandbox_policy(execution=None, mode=None).mode == "read-only"
    plugin.set_mode("workspace-write")
    assert hook.sandbox_policy(execution=None, mode=None).mode == "workspace-write"
    plugin.set_mode("read-only", source="delegation")
    plugin.set_mode("danger-full-access")
    assert hook.sandbox_policy(execution=None, mode=None).mode == "danger-full-access"  # the last one wins
    plugin.set_mode("read-only")
    assert hook.sandbox_policy(execution=None, mode="workspace-write").mode == "workspace-write"  # an approved escalation
    assert hook.sandbox_policy(execution=None, mode=None).mode == "read-only"  # for that call only
    assert sink.of_kind("sandbox/mode") == [
        {"mode": "workspace-write", "source": "user"},
        {"mode": "read-only", "source": "delegation"},
        {"mode": "danger-full-access", "source": "user"},
        {"mode": "read-only", "source": "user"},
    ]


def test_an_unknown_mode_is_refused_and_not_recorded(workspace) -> None:
    sink = MemoryEventSink()
    harness, plugin = start(workspace, events=sink)
    with pytest.raises(ValueError, match="unknown sandbox mode 'full'; expected one of read-only, workspace-write"):
        plugin.set_mode("full")
    with pytest.raises(ValueError, match="unknown sandbox mode"):
        harness.plugin_manager.hook.sandbox_policy(execution=None, mode="everything")
    assert sink.of_kind("sandbox/mode") == [] and plugin.effective_mode() == "workspace-write"


def test_set_mode_without_an_event_sink_still_switches(workspace) -> None:
    _harness, plugin = start(workspace)
    plugin.set_mode("read-only")
    assert plugin.policy().mode == "read-only"


def test_an_unconfigured_plugin_says_so() -> None:
    from harness_core import HarnessError

    with pytest.raises(HarnessError, match="never configured"):
        SandboxPlugin().policy()


def test_the_policy_is_complete_for_in_process_fencing(workspace: Path) -> None:
    harness, _plugin = start(workspace, {"writable_roots": ["build"]})
    policy = harness.plugin_manager.hook.sandbox_policy(execution=None, mode=None)
    assert policy.workspace_root == str(workspace)
    assert policy.writable_roots[0] == str(workspace) and str(workspace / "build") in policy.writable_roots
    assert "/tmp" in policy.writable_roots and policy.network is False


def test_the_command_starts_in_the_folder_the_tool_asks_for(workspace):
    from .conftest import start

    harness, _plugin = start(workspace, {"backend": "bubblewrap"})
    hook = harness.plugin_manager.hook
    if "sandbox:confining" not in harness.provided():
        pytest.skip("no working bubblewrap here")
    sub = workspace / "sub"
    sub.mkdir()
    policy = hook.sandbox_policy(execution=None, mode=None)
    confined = hook.sandbox_confine(argv=["pwd"], policy=policy, cwd=str(sub))
    # Spawned from "/" on purpose: only --chdir can put the command in the folder asked for.
    completed = subprocess.run(list(confined.argv), cwd="/", capture_output=True, text=True, timeout=30)
    assert completed.stdout.strip() == os.path.realpath(sub)


def test_doctor_reports_the_backend_and_fails_when_the_mode_cannot_be_enforced(workspace, monkeypatch):
    from .conftest import start

    harness, _plugin = start(workspace, {})
    report = [(level, message) for source, level, message in harness.diagnose() if source != "core"]
    assert report[0] == ("info", 'mode "workspace-write", network off')
    assert all(level == "info" for level, _ in report) or "sandbox:confining" not in harness.provided()

    monkeypatch.setattr("harness_sandbox.backends.bwrap_candidates", lambda: [("/nonexistent/bwrap", "test")])
    broken, _plugin = start(workspace, {"backend": "bubblewrap"})
    errors = [message for source, level, message in broken.diagnose() if level == "error"]
    assert errors == ['no backend can enforce "workspace-write" here: confined commands are refused (SANDBOX_UNAVAILABLE)']
