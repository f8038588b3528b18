"""DESIGN §4: the core's side of presets that the permission presets rely on.

A selected preset that sets a section no loaded plugin owns is an error naming the preset and the
section (fail closed: dropping the section would silently drop that policy); ``preview_preset``
tells what selecting a preset would put in effect, the project's files still applied on top.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pydantic
import pytest

from harness_core import ConfigError, Harness, hookimpl
from harness_core.config import preview_preset

from .support import project


class Limits(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    limit: int = 10
    mode: str = "strict"


class Shipper:
    """Ships a preset that sets its own section and one owned by a plugin that may be missing."""

    def __init__(self, owns_limits: bool = True) -> None:
        self.owns_limits = owns_limits

    @hookimpl
    def harness_register_config(self, register: Any) -> None:
        if self.owns_limits:
            register("limits", Limits)

    @hookimpl
    def harness_register_presets(self, register: Any) -> None:
        register("careful", {"limits": {"limit": 1}, "audit": {"level": "high"}}, description="d", default=True)
        register("plain", {"limits": {"limit": 5}})


class AuditOwner:
    @hookimpl
    def harness_register_config(self, register: Any) -> None:
        class Audit(pydantic.BaseModel):
            model_config = pydantic.ConfigDict(extra="forbid", frozen=True)
            level: str = "low"

        register("audit", Audit)


def test_a_default_preset_setting_an_unowned_section_names_the_preset_and_the_section(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        Harness(plugins=[Shipper()], config=project(tmp_path))
    assert str(caught.value).startswith(
        'preset careful: audit: preset "careful" sets section [audit], which no loaded plugin owns; load the plugin '
        "that owns [audit] (is it blocked, left out by HARNESS_LOAD_PLUGINS or not installed?), or select another "
        "preset (preset = [] applies none); known sections: "
    )
    assert "limits" in str(caught.value).rsplit("known sections: ", 1)[1]


def test_a_user_preset_extending_it_is_named_too_and_a_file_setting_it_as_well_does_not_hide_it(tmp_path: Path) -> None:
    toml = 'preset = "mine"\n[presets.mine]\nextends = ["careful"]\naudit.depth = 3\n[audit]\nextra = "x"\n'
    with pytest.raises(ConfigError) as caught:
        Harness(plugins=[Shipper()], config=project(tmp_path, toml))
    assert 'preset "careful", "mine" sets section [audit], which no loaded plugin owns' in str(caught.value)


def test_a_section_only_the_files_set_keeps_the_plain_unknown_section_message(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"harness.toml: audit: unknown section or key \[audit\]"):
        Harness(plugins=[Shipper()], config=project(tmp_path, 'preset = "plain"\n[audit]\nlevel = "x"\n'))


def test_with_the_owner_loaded_the_preset_applies(tmp_path: Path) -> None:
    harness = Harness(plugins=[Shipper(), AuditOwner()], config=project(tmp_path))
    assert harness.config.section("audit").level == "high"


def test_preview_shows_what_selecting_a_preset_would_put_in_effect_files_on_top(tmp_path: Path) -> None:
    harness = Harness(plugins=[Shipper(), AuditOwner()], config=project(tmp_path, '[limits]\nmode = "loose"\n'))
    preview = preview_preset("plain", harness.config)
    assert preview.presets == ("plain",)
    assert preview.values["limits"] == {"limit": 5, "mode": "loose"}
    assert (preview.origin("limits.limit"), preview.origin("limits.mode")) == ("preset plain", "harness.toml")
    assert preview.values["audit"] == {"level": "low"} and preview.origin("audit.level") == "default"
    # The harness's own configuration is untouched: the default preset still applies there.
    assert harness.config.presets == ("careful",) and harness.config.section("limits").limit == 1


def test_preview_of_a_preset_that_cannot_be_selected_raises_the_same_error(tmp_path: Path) -> None:
    harness = Harness(plugins=[Shipper(owns_limits=True)], config=project(tmp_path, "preset = []\n"))
    with pytest.raises(ConfigError, match=r'preset "careful" sets section \[audit\], which no loaded plugin owns'):
        preview_preset("careful", harness.config)
    with pytest.raises(ConfigError, match=r'unknown preset "nope"'):
        preview_preset("nope", harness.config)
