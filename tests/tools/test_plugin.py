"""harness-tools: the entry point loads, ``[tools]`` validates, and the schemas are honest.

reference/plugins.md §12 and §15: ``sandbox_permissions`` and ``justification`` are offered only
while a confining sandbox is installed; ``run_in_background`` only while a jobs plugin is.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from harness_core import ConfigError, Harness, PluginRefusedError, hookimpl
from harness_core.sandbox import ESCALATION_TARGETS
from harness_tools import ToolsPlugin

from .support import FakeSandbox


def test_the_tools_entry_point_is_registered_in_group_harness_and_loads() -> None:
    found = [ep for ep in entry_points(group="harness") if ep.name == "tools"]
    assert len(found) == 1, "pip install -e contrib/tools (dev.py does it for the workspace)"
    entry_point = found[0]
    assert entry_point.value == "harness_tools.plugin:ToolsPlugin"
    assert entry_point.dist is not None and entry_point.dist.name == "harness-tools"
    assert entry_point.load() is ToolsPlugin


def test_entry_point_discovery_gives_each_harness_its_own_tools_plugin(monkeypatch, workspace) -> None:
    monkeypatch.setenv("HARNESS_LOAD_PLUGINS", "tools")
    first, second = Harness(load_entrypoints=True), Harness(load_entrypoints=True)
    plugin = first.plugin_manager.get_plugin("tools")
    assert isinstance(plugin, ToolsPlugin)
    assert second.plugin_manager.get_plugin("tools") is not plugin
    assert first.tools.names() == ["bash", "read", "write", "edit"]


def test_the_package_re_exports_a_sorted_all() -> None:
    import harness_tools

    assert harness_tools.__all__ == sorted(harness_tools.__all__)
    assert all(hasattr(harness_tools, name) for name in harness_tools.__all__)


# --- [tools] --------------------------------------------------------------------------------------


def test_the_defaults_are_the_documented_ones(make_harness) -> None:
    settings = make_harness().config.section("tools")
    assert (settings.bash_timeout_ms, settings.bash_max_timeout_ms) == (120_000, 600_000)
    assert settings.bash_max_output_chars == 30_000
    assert (settings.read_limit, settings.read_max_line_length, settings.read_max_bytes) == (2000, 2000, 51_200)


@pytest.mark.parametrize(
    ("settings", "fragment"),
    [
        ({"bash_timeout_ms": 0}, "tools.bash_timeout_ms"),
        ({"bash_timeout_ms": "10"}, "tools.bash_timeout_ms"),
        ({"read_limit": 2.5}, "tools.read_limit"),
        ({"bash_timeout_mss": 10}, "tools.bash_timeout_mss"),
        ({"bash_timeout_ms": 700_000}, "exceeds bash_max_timeout_ms"),
    ],
)
def test_a_bad_tools_section_is_a_config_error_naming_the_key(workspace, settings: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ConfigError) as caught:
        Harness(plugins=[ToolsPlugin()], config={"tools": settings})
    assert fragment in str(caught.value)


def test_the_section_is_frozen(make_harness) -> None:
    settings = make_harness().config.section("tools")
    with pytest.raises(Exception):  # noqa: B017 - pydantic's frozen error
        settings.read_limit = 5


# --- schemas --------------------------------------------------------------------------------------


def schemas(harness: Harness) -> dict[str, dict[str, Any]]:
    return {schema["name"]: schema["parameters"] for schema in harness.tools.schemas()}


def test_without_a_confining_sandbox_no_tool_offers_escalation(make_harness) -> None:
    found = schemas(make_harness())
    assert set(found["bash"]["properties"]) == {"command", "description", "timeout_ms", "workdir"}
    assert found["bash"]["required"] == ["command"]
    for name in ("write", "edit"):
        assert "sandbox_permissions" not in found[name]["properties"]
        assert "justification" not in found[name]["properties"]


def test_with_a_confining_sandbox_bash_write_and_edit_offer_escalation(make_harness, workspace: Path) -> None:
    found = schemas(make_harness(FakeSandbox(workspace)))
    for name in ("bash", "write", "edit"):
        assert found[name]["properties"]["sandbox_permissions"]["enum"] == list(ESCALATION_TARGETS)
        assert "justification" in found[name]["properties"]
    assert "sandbox_permissions" not in found["read"]["properties"]
    assert "one-shot retry of a command" in found["bash"]["properties"]["sandbox_permissions"]["description"]
    assert "one-shot retry of an operation" in found["write"]["properties"]["sandbox_permissions"]["description"]


def test_escalation_is_decided_after_every_plugin_is_configured(workspace: Path) -> None:
    class ConfiguredSandbox(FakeSandbox):
        """Like the real sandbox plugin: it knows whether it confines only once configured."""

        configured = False

        @hookimpl
        def harness_configure(self) -> None:
            self.configured = True

        @hookimpl
        def harness_provides(self) -> list[str]:
            assert self.configured, "harness_provides was called before harness_configure"
            return ["sandbox:confining"]

    harness = Harness(plugins=[ToolsPlugin(), ConfiguredSandbox(workspace)])
    assert "sandbox_permissions" in schemas(harness)["bash"]["properties"]


def test_run_in_background_is_offered_only_when_a_jobs_plugin_provides_jobs(make_harness) -> None:
    class Jobs:
        @hookimpl
        def harness_provides(self) -> list[str]:
            return ["jobs"]

    assert "run_in_background" not in schemas(make_harness())["bash"]["properties"]
    assert schemas(make_harness(Jobs()))["bash"]["properties"]["run_in_background"] == {
        "type": "boolean",
        "description": "Start the command as a background job and return its id at once (no timeout).",
    }


def test_no_tool_declares_a_timeout_for_the_timeout_plugin(make_harness) -> None:
    harness = make_harness()
    assert [definition.timeout_ms for definition in harness.tools] == [None, None, None, None]
    assert harness.warnings() == []


def test_only_read_runs_concurrently(make_harness) -> None:
    harness = make_harness()
    safe = {d.name: d.is_concurrency_safe is not None and d.is_concurrency_safe({}) for d in harness.tools}
    assert safe == {"bash": False, "read": True, "write": False, "edit": False}


# --- fs_write_intent --------------------------------------------------------------------------------


def test_an_async_fs_write_intent_is_refused_at_start_up_naming_the_plugin(workspace: Path) -> None:
    class AsyncVeto:
        @hookimpl
        async def fs_write_intent(self, execution, path, operation):
            return None

    with pytest.raises(PluginRefusedError, match=r'AsyncVeto" implements fs_write_intent as a wrapper or async def'):
        Harness(plugins=[ToolsPlugin(), AsyncVeto()])


def test_fs_write_intent_is_a_known_hook_whatever_the_registration_order(workspace: Path) -> None:
    class Veto:
        @hookimpl
        def fs_write_intent(self, path):
            return None

    harness = Harness(plugins=[Veto(), ToolsPlugin()])
    assert len(harness.plugin_manager.hook.fs_write_intent.get_hookimpls()) == 1


def test_the_config_model_is_not_imported_until_the_configuration_is_composed(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = "import sys, harness_tools; print('harness_tools.config' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert out.stdout.strip() == "False"
