"""harness-path-guard's [path_guard] section: validated at load, and its deny list only grows (DESIGN §4)."""

from __future__ import annotations

import pydantic
import pytest

from harness_core import ConfigError, ConfigSource, Harness, hookimpl
from harness_path_guard import PathGuard
from harness_path_guard.config import PathGuardConfig


def start(config: object, *plugins: object) -> PathGuard:
    guard = PathGuard()
    Harness(plugins=[guard, *plugins], config=config)  # type: ignore[arg-type]
    return guard


def test_an_unconfigured_section_gets_the_defaults() -> None:
    guard = start({})
    assert guard.settings == PathGuardConfig()
    assert guard.settings.deny == []
    assert guard.settings.tools == {"write": "file_path", "edit": "file_path", "read": "file_path"}
    assert guard.settings.workspace == "."


def test_harness_configure_keeps_the_validated_section() -> None:
    guard = start({"path_guard": {"deny": ["**/.env"], "tools": {"save": "path"}}})
    assert guard.settings.deny == ["**/.env"] and guard.settings.tools == {"save": "path"}
    assert guard.matcher.patterns == ["**/.env"]


def test_the_section_model_forbids_extra_keys_and_is_frozen() -> None:
    assert PathGuardConfig.model_config.get("extra") == "forbid"
    settings = PathGuardConfig(deny=["**/.env"])
    with pytest.raises(pydantic.ValidationError):
        settings.deny = []  # type: ignore[misc]


def problems_of(error: pytest.ExceptionInfo[ConfigError]) -> list[tuple[str, str, str]]:
    return [(problem.file, problem.key, problem.problem) for problem in error.value.problems]


def test_an_unknown_key_is_an_error_naming_its_key_path() -> None:
    with pytest.raises(ConfigError) as error:
        start({"path_guard": {"denny": ["**/.env"]}})
    assert problems_of(error) == [("config", "path_guard.denny", "unknown key")]
    assert "keys of [path_guard]: deny, tools, workspace" in str(error.value)


def test_an_unknown_key_in_harness_toml_names_the_file(tmp_path) -> None:
    (tmp_path / "harness.toml").write_text("[path_guard]\ndenny = []\n")
    with pytest.raises(ConfigError, match=r"^harness\.toml: path_guard\.denny: unknown key"):
        start(ConfigSource.for_project(tmp_path, user_file=False))


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ({"deny": "**/.env"}, "path_guard.deny"),
        ({"deny": [3]}, "path_guard.deny.0"),
        ({"tools": {"write": 1}}, "path_guard.tools.write"),
        ({"tools": ["write"]}, "path_guard.tools"),
        ({"workspace": ["."]}, "path_guard.workspace"),
    ],
)
def test_a_value_of_the_wrong_type_is_an_error_naming_its_key_path(section, key) -> None:
    with pytest.raises(ConfigError) as error:
        start({"path_guard": section})
    assert [problem.key for problem in error.value.problems] == [key]


def test_an_empty_pattern_is_refused_at_load() -> None:
    with pytest.raises(ConfigError) as error:
        start({"path_guard": {"deny": ["**/.env", ""]}})
    [problem] = error.value.problems
    assert problem.key == "path_guard.deny"
    assert problem.problem.startswith('deny[1]: empty pattern; delete it, or write "**" to protect every path')


def test_a_pattern_that_could_never_match_is_refused_at_load() -> None:
    with pytest.raises(ConfigError, match=r'deny\[0\]: pattern "secrets/" has an empty segment'):
        start({"path_guard": {"deny": ["secrets/"]}})


def test_an_empty_tool_or_argument_name_is_refused() -> None:
    with pytest.raises(ConfigError, match="neither may be empty"):
        start({"path_guard": {"tools": {"write": ""}}})


# --- deny lists only grow ------------------------------------------------------------------------------


class ProtectiveDefaults:
    """A tiny plugin contributing a default preset that protects secrets/."""

    @hookimpl
    def harness_register_presets(self, register):
        register("protective", {"path_guard": {"deny": ["secrets/**"]}}, description="protect secrets/", default=True)
        register("stricter", {"path_guard": {"deny": ["**/*.pem"]}}, extends=["protective"])


def test_a_project_cannot_remove_a_deny_rule_that_a_preset_set() -> None:
    guard = start({"path_guard": {"deny": []}}, ProtectiveDefaults())
    assert guard.settings.deny == ["secrets/**"]


def test_preset_and_project_deny_rules_are_united_in_order() -> None:
    guard = start({"preset": "stricter", "path_guard": {"deny": ["**/.env", "secrets/**"]}}, ProtectiveDefaults())
    assert guard.settings.deny == ["secrets/**", "**/*.pem", "**/.env"]


def test_every_file_layer_and_override_adds_to_the_deny_list(tmp_path) -> None:
    user = tmp_path / "user.toml"
    user.write_text('[path_guard]\ndeny = ["**/.env"]\n')
    (tmp_path / "harness.toml").write_text('[path_guard]\ndeny = []\ntools = { save = "path" }\n')
    source = ConfigSource.for_project(tmp_path, ['path_guard.deny=["*.key"]'], user_file=user)
    harness = Harness(plugins=[guard := PathGuard()], config=source)
    assert guard.settings.deny == ["**/.env", "*.key"]
    # harness.toml's empty list added nothing, so only the layers that added entries are named.
    assert harness.config.origin("path_guard.deny") == f"{user} + -c"
    # Other values are replaced by the later layer as usual.
    assert guard.settings.tools == {"save": "path"}


def test_the_effective_section_is_what_the_plugin_sees() -> None:
    harness = Harness(plugins=[PathGuard(), ProtectiveDefaults()], config={"path_guard": {"deny": ["**/.env"]}})
    section = harness.config.section("path_guard")
    assert isinstance(section, PathGuardConfig) and section.deny == ["secrets/**", "**/.env"]
