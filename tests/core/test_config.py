"""DESIGN §4 and §7: harness.toml layers, presets, grow-only deny lists, and errors that name file and key."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pydantic
import pytest

from harness_core import Harness, hookimpl
from harness_core.config import ConfigError, ConfigSource, DenyList
from harness_core.errors import PluginRefusedError


class GuardConfig(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    deny: DenyList = []
    mode: str = "strict"
    limit: int = 10


class GuardPlugin:
    """Owns [guard] and ships two presets, one extending the other."""

    def __init__(self) -> None:
        self.seen = None

    @hookimpl
    def harness_register_config(self, register):
        register("guard", GuardConfig)

    @hookimpl
    def harness_register_presets(self, register):
        register("base", {"guard": {"deny": ["rm -rf *"], "limit": 5}}, description="the floor")
        register("relaxed", {"guard": {"mode": "relaxed", "deny": ["curl *"]}}, extends=["base"], default=True)

    @hookimpl
    def harness_configure(self, config):
        self.seen = config.section("guard")


def project(tmp_path: Path, text: str, user: str | None = None, overrides: tuple[str, ...] = ()) -> ConfigSource:
    (tmp_path / "harness.toml").write_text(textwrap.dedent(text))
    user_file: Path | bool = False
    if user is not None:
        user_file = tmp_path / "user.toml"
        user_file.write_text(textwrap.dedent(user))
    return ConfigSource.for_project(tmp_path, overrides, user_file=user_file)


def test_defaults_apply_when_no_file_mentions_a_section():
    plugin = GuardPlugin()
    harness = Harness(plugins=[plugin], config={"preset": []})
    assert plugin.seen == GuardConfig()
    assert harness.config.origin("guard.mode") == "default"


def test_layers_later_winning_presets_then_user_then_project_then_overrides(tmp_path):
    source = project(
        tmp_path,
        """
        preset = "base"
        [guard]
        limit = 7
        """,
        user='[guard]\nmode = "from-user"\nlimit = 3\n',
        overrides=("guard.mode=cli",),
    )
    plugin = GuardPlugin()
    harness = Harness(plugins=[plugin], config=source)
    assert plugin.seen.limit == 7 and plugin.seen.mode == "cli"
    assert harness.config.origin("guard.limit") == "harness.toml"
    assert harness.config.origin("guard.mode") == "-c"
    assert harness.config.origin("guard.deny") == "preset base"


def test_a_preset_applies_what_it_extends_first_and_the_default_preset_is_used_when_none_is_chosen(tmp_path):
    plugin = GuardPlugin()
    harness = Harness(plugins=[plugin], config=project(tmp_path, ""))
    assert harness.config.presets == ("base", "relaxed")
    assert plugin.seen.mode == "relaxed" and plugin.seen.limit == 5
    assert plugin.seen.deny == ["rm -rf *", "curl *"]


def test_deny_lists_only_grow_no_later_layer_can_remove_an_entry(tmp_path):
    plugin = GuardPlugin()
    source = project(tmp_path, 'preset = "base"\n[guard]\ndeny = []\n', overrides=('guard.deny=["sudo *"]',))
    Harness(plugins=[plugin], config=source)
    assert plugin.seen.deny == ["rm -rf *", "sudo *"]


def test_blocked_plugins_only_grow_across_user_and_project_files(tmp_path):
    source = project(tmp_path, '[plugins]\nblock = ["jobs"]\n', user='[plugins]\nblock = ["sandbox"]\n')
    assert source.plugin_settings().block == ("sandbox", "jobs")


def test_users_define_presets_that_extend_shipped_ones(tmp_path):
    source = project(
        tmp_path,
        """
        preset = ["team"]
        [presets.team]
        extends = ["relaxed"]
        description = "our team's floor"
        guard.deny = ["git push *"]
        guard.limit = 1
        """,
    )
    plugin = GuardPlugin()
    harness = Harness(plugins=[plugin], config=source)
    assert harness.config.presets == ("base", "relaxed", "team")
    assert plugin.seen.deny == ["rm -rf *", "curl *", "git push *"] and plugin.seen.limit == 1


def test_a_cyclic_extends_is_an_error_naming_the_cycle(tmp_path):
    source = project(
        tmp_path,
        """
        preset = "a"
        [presets.a]
        extends = ["b"]
        [presets.b]
        extends = ["a"]
        """,
    )
    with pytest.raises(ConfigError, match="cyclic extends: a -> b -> a"):
        Harness(plugins=[GuardPlugin()], config=source)


def test_an_unknown_preset_is_an_error_listing_the_known_ones(tmp_path):
    with pytest.raises(ConfigError) as caught:
        Harness(plugins=[GuardPlugin()], config=project(tmp_path, 'preset = "nope"\n'))
    message = str(caught.value)
    assert 'harness.toml: preset: unknown preset "nope"' in message and "base, relaxed" in message


def test_an_unknown_extends_is_an_error(tmp_path):
    source = project(tmp_path, 'preset = "x"\n[presets.x]\nextends = ["missing"]\n')
    with pytest.raises(ConfigError, match='presets.x.extends: unknown preset "missing"'):
        Harness(plugins=[GuardPlugin()], config=source)


def test_redefining_a_shipped_preset_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match='preset "base" is already defined by plugin'):
        Harness(plugins=[GuardPlugin()], config=project(tmp_path, "[presets.base]\nguard.limit = 1\n"))


def test_a_preset_cannot_load_or_block_plugins(tmp_path):
    with pytest.raises(ConfigError, match="a preset cannot select presets or load and block plugins"):
        Harness(config=project(tmp_path, '[presets.x]\nplugins.block = ["a"]\n'))


def test_unknown_keys_wrong_types_and_bad_values_name_the_file_and_key(tmp_path):
    source = project(
        tmp_path,
        """
        [guard]
        limt = 3
        limit = "many"
        """,
    )
    with pytest.raises(ConfigError) as caught:
        Harness(plugins=[GuardPlugin()], config=source)
    lines = str(caught.value).splitlines()
    assert any(line.startswith("harness.toml: guard.limt: unknown key") for line in lines)
    assert any(line.startswith("harness.toml: guard.limit: ") and "'many'" in line for line in lines)
    assert len(caught.value.problems) == 2


def test_an_unknown_section_is_an_error_naming_the_known_ones(tmp_path):
    with pytest.raises(ConfigError) as caught:
        Harness(config=project(tmp_path, "[sandbx]\nmode = 1\n"))
    assert "harness.toml: sandbx: unknown section or key [sandbx]" in str(caught.value)
    assert "known sections: code_mode, plugins, session" in str(caught.value)


def test_a_problem_from_an_override_names_the_override(tmp_path):
    with pytest.raises(ConfigError, match="-c: guard.limit: "):
        Harness(plugins=[GuardPlugin()], config=project(tmp_path, "", overrides=("guard.limit=lots",)))


def test_toml_syntax_errors_name_the_line_and_column(tmp_path):
    with pytest.raises(ConfigError) as caught:
        project(tmp_path, "[guard]\nlimit = = 3\n")
    assert "harness.toml: invalid TOML:" in str(caught.value) and "line 2, column" in str(caught.value)


@pytest.mark.parametrize("bad", ["no-equals", "=3", "a..b=1"])
def test_malformed_overrides_are_errors(tmp_path, bad):
    with pytest.raises(ConfigError, match="-c"):
        ConfigSource.for_project(tmp_path, [bad], user_file=False)


def test_override_values_are_toml_and_bare_words_are_strings(tmp_path):
    source = ConfigSource.for_project(tmp_path, ["a.b=true", "a.c=[1, 2]", "a.d=never"], user_file=False)
    assert source.layers[-1].data == {"a": {"b": True, "c": [1, 2], "d": "never"}}


def test_the_user_file_comes_from_the_environment(tmp_path, monkeypatch):
    user = tmp_path / "mine.toml"
    user.write_text('[session]\ndir = "logs"\n')
    monkeypatch.setenv("HARNESS_USER_CONFIG", str(user))
    harness = Harness(config=ConfigSource.for_project(tmp_path / "empty"))
    assert harness.config.section("session").dir == "logs"
    assert harness.config.origin("session.dir") == str(user)
    monkeypatch.setenv("HARNESS_USER_CONFIG", "")
    assert ConfigSource.for_project(tmp_path / "empty").user_file is None


class LooseConfig(pydantic.BaseModel):
    limit: int = 1


def test_a_section_model_that_allows_unknown_keys_is_refused():
    class Loose:
        @hookimpl
        def harness_register_config(self, register):
            register("loose", LooseConfig)

    with pytest.raises(PluginRefusedError, match='must set model_config = ConfigDict\\(extra="forbid"\\)'):
        Harness(plugins=[Loose()])


def test_a_plugin_cannot_take_over_a_core_section():
    class Thief:
        @hookimpl
        def harness_register_config(self, register):
            register("plugins", GuardConfig)

    with pytest.raises(PluginRefusedError, match=r"registered config section \[plugins\], which the core owns"):
        Harness(plugins=[Thief()])


def test_two_default_presets_are_an_error(tmp_path):
    class OtherDefault:
        @hookimpl
        def harness_register_presets(self, register):
            register("other", {}, default=True)

    with pytest.raises(ConfigError, match="more than one plugin declares a default preset"):
        Harness(plugins=[GuardPlugin(), OtherDefault()])


def test_a_plugin_that_fails_to_configure_is_named():
    class Broken:
        @hookimpl
        def harness_configure(self, config):
            raise ValueError("needs a token")

    with pytest.raises(PluginRefusedError, match='plugin "test_a_plugin_that_fails_to_configure_is_named.<locals>.Broken" failed to configure: ValueError: needs a token'):
        Harness(plugins=[Broken()])


def test_a_plugin_registered_later_is_configured_with_its_section_defaults():
    harness = Harness(config=ConfigSource.from_mapping({"preset": []}))
    plugin = GuardPlugin()
    harness.register(plugin)
    assert plugin.seen == GuardConfig()
    assert "guard" in harness.config.sections


def test_a_section_in_the_files_needs_its_plugin_at_start_up():
    # The configuration is validated once, at start-up: a section whose plugin is not loaded
    # is an unknown section, never silently ignored.
    with pytest.raises(ConfigError, match=r"unknown section or key \[guard\]"):
        Harness(config={"guard": {"limit": 2}})


class DialectA(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    strict: bool = False


class BridgeA:
    def __init__(self, name: str = "hooks.alpha") -> None:
        self.name, self.seen = name, None

    @hookimpl
    def harness_register_config(self, register):
        register(self.name, DialectA)

    @hookimpl
    def harness_configure(self, config):
        self.seen = config.section(self.name)


def test_two_plugins_share_a_parent_table_through_dotted_sections(tmp_path):
    alpha, beta = BridgeA("hooks.alpha"), BridgeA("hooks.beta")
    source = project(tmp_path, "[hooks.alpha]\nstrict = true\n")
    harness = Harness(plugins=[alpha, beta], config=source)
    assert alpha.seen.strict is True and beta.seen.strict is False
    assert harness.config.origin("hooks.alpha.strict") == "harness.toml"
    assert harness.config.values["hooks"] == {"alpha": {"strict": True}, "beta": {"strict": False}}


def test_an_unknown_table_under_a_dotted_parent_is_named(tmp_path):
    with pytest.raises(ConfigError, match=r"harness.toml: hooks.gamma: unknown section or key \[hooks.gamma\]"):
        Harness(plugins=[BridgeA()], config=project(tmp_path, "[hooks.gamma]\nx = 1\n"))


def test_a_key_error_in_a_dotted_section_names_the_full_path(tmp_path):
    with pytest.raises(ConfigError, match="harness.toml: hooks.alpha.strct: unknown key"):
        Harness(plugins=[BridgeA()], config=project(tmp_path, "[hooks.alpha]\nstrct = true\n"))


def test_a_section_cannot_hold_or_sit_inside_another_plugins_section():
    with pytest.raises(PluginRefusedError, match=r"\[hooks\], which overlaps \[hooks.alpha\]"):
        Harness(plugins=[BridgeA("hooks.alpha"), BridgeA("hooks")])
