"""harness-sandbox's [sandbox] section (DESIGN §7): defaults, and unknown keys or values fail at load."""

from __future__ import annotations

import pydantic
import pytest

from harness_core import ConfigError, ConfigSource, Harness
from harness_sandbox import SandboxPlugin
from harness_sandbox.config import SandboxConfig

from .conftest import start


def test_an_unconfigured_section_gets_the_defaults(workspace) -> None:
    _harness, plugin = start(workspace)
    assert plugin.settings == SandboxConfig()
    assert plugin.settings.mode == "workspace-write"
    assert plugin.settings.network is False
    assert plugin.settings.writable_roots == []
    assert plugin.settings.backend == "auto"
    assert plugin.settings.probe_timeout_ms == 5000


def test_the_section_model_forbids_extra_keys_and_is_frozen() -> None:
    assert SandboxConfig.model_config.get("extra") == "forbid"
    settings = SandboxConfig()
    with pytest.raises(pydantic.ValidationError):
        settings.mode = "read-only"  # type: ignore[misc]


def test_every_documented_key_is_accepted(workspace) -> None:
    section = {"mode": "read-only", "network": True, "writable_roots": ["build"], "backend": "landlock", "probe_timeout_ms": 250}
    _harness, plugin = start(workspace, section)
    assert plugin.settings is not None and plugin.settings.model_dump() == section


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ({"mode": "full"}, "sandbox.mode"),
        ({"mode": "workspace_write"}, "sandbox.mode"),
        ({"backend": "docker"}, "sandbox.backend"),
        ({"backend": "bwrap"}, "sandbox.backend"),
        ({"network": "yes"}, "sandbox.network"),
        ({"network": "false"}, "sandbox.network"),
        ({"network": 1}, "sandbox.network"),
        ({"writable_roots": "build"}, "sandbox.writable_roots"),
        ({"writable_roots": [3]}, "sandbox.writable_roots.0"),
        ({"writable_roots": [""]}, "sandbox.writable_roots"),
        ({"probe_timeout_ms": 0}, "sandbox.probe_timeout_ms"),
        ({"probe_timeout_ms": -5}, "sandbox.probe_timeout_ms"),
        ({"probe_timeout_ms": "5000"}, "sandbox.probe_timeout_ms"),
        ({"probe_timeout_ms": 1.5}, "sandbox.probe_timeout_ms"),
        ({"probe_timeout_ms": True}, "sandbox.probe_timeout_ms"),
    ],
)
def test_a_bad_value_is_a_config_error_naming_its_key(section, key) -> None:
    with pytest.raises(ConfigError) as error:
        Harness(plugins=[SandboxPlugin()], config={"sandbox": section})
    assert [problem.key for problem in error.value.problems] == [key]
    assert error.value.code == "CONFIG_ERROR"


def test_an_unknown_mode_names_the_allowed_ones() -> None:
    with pytest.raises(ConfigError, match="read-only.*workspace-write.*danger-full-access"):
        Harness(plugins=[SandboxPlugin()], config={"sandbox": {"mode": "full"}})


def test_an_empty_writable_root_says_what_to_write() -> None:
    with pytest.raises(ConfigError, match=r"writable_roots\[1\] is empty"):
        Harness(plugins=[SandboxPlugin()], config={"sandbox": {"writable_roots": ["ok", " "]}})


def test_an_unknown_key_in_harness_toml_names_the_file_and_the_keys(tmp_path) -> None:
    (tmp_path / "harness.toml").write_text('[sandbox]\nmodes = "read-only"\n')
    with pytest.raises(ConfigError) as error:
        Harness(plugins=[SandboxPlugin()], config=ConfigSource.for_project(tmp_path, user_file=False))
    assert str(error.value).startswith("harness.toml: sandbox.modes: unknown key; keys of [sandbox]: mode, network, writable_roots")


def test_a_value_in_harness_toml_is_what_the_plugin_sees(tmp_path) -> None:
    (tmp_path / "harness.toml").write_text('[sandbox]\nmode = "read-only"\nnetwork = true\n')
    plugin = SandboxPlugin()
    Harness(plugins=[plugin], config=ConfigSource.for_project(tmp_path, user_file=False))
    assert plugin.effective_mode() == "read-only" and plugin.policy().network is True
    assert plugin.mode_origin == "harness.toml"
