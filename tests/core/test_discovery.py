"""DESIGN §4: entry-point discovery — fixed order, blocking before import, allow-list, failures reported."""

from __future__ import annotations

import logging
import textwrap
import uuid

import pytest

from harness_core import Harness
from harness_core.config import ConfigSource
from harness_core.discovery import PluginLoadError

from .test_host import install_fake_distribution

GOOD = """
from harness_core import hookimpl

class Policy:
    @hookimpl
    def tools_guard(self, execution):
        return None

policy = Policy()
"""

BROKEN = """
raise ImportError("needs libfoo, which is not installed")
"""


@pytest.fixture
def fake_plugins(tmp_path, monkeypatch):
    """Three fake distributions: two good entry points and one that fails to import."""
    suffix = uuid.uuid4().hex[:8]
    good, broken, marker = f"good_{suffix}", f"broken_{suffix}", f"marker_{suffix}"
    install_fake_distribution(
        tmp_path, "harness-good", {"zeta": f"{good}:policy", "alpha": f"{good}:Policy"}, {good: GOOD}
    )
    install_fake_distribution(tmp_path, "harness-broken", {"broken": f"{broken}:plugin"}, {broken: BROKEN})
    # A module that records its own import, to prove blocked plugins are never imported.
    install_fake_distribution(
        tmp_path,
        "harness-marker",
        {"marker": f"{marker}:policy"},
        {marker: f"import pathlib\npathlib.Path({str(tmp_path / 'imported')!r}).write_text('yes')\n" + GOOD},
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    # Only the fake plugins: whatever else is installed in this environment stays out.
    monkeypatch.setenv("HARNESS_LOAD_PLUGINS", "alpha,zeta,marker,broken")
    return tmp_path


def names(harness: Harness) -> list[str]:
    return [name for name, _ in harness.plugins()]


def test_plugins_register_sorted_by_name_and_a_failed_import_is_skipped_with_a_warning(fake_plugins, caplog):
    with caplog.at_level(logging.WARNING, logger="harness"):
        harness = Harness(load_entrypoints=True)
    assert names(harness) == ["alpha", "marker", "zeta"]
    failed = [record for record in harness.discovery if record.status == "failed"]
    assert [record.name for record in harness.discovery if record.status == "loaded"] == ["alpha", "marker", "zeta"]
    assert [record.name for record in failed] == ["broken"]
    assert failed[0].distribution == "harness-broken" and failed[0].version == "1.0"
    assert "ImportError: needs libfoo" in failed[0].error
    assert "plugin 'broken' (harness-broken 1.0) failed to load and was skipped" in caplog.text


def test_a_class_entry_point_is_instantiated_per_harness(fake_plugins):
    first, second = Harness(load_entrypoints=True), Harness(load_entrypoints=True)
    alpha_one = dict(first.plugins())["alpha"]
    alpha_two = dict(second.plugins())["alpha"]
    assert alpha_one is not alpha_two and not isinstance(alpha_one, type)


def test_the_order_can_be_pinned_in_harness_toml(fake_plugins):
    harness = Harness(load_entrypoints=True, config={"plugins": {"order": ["zeta", "marker"]}})
    assert names(harness) == ["zeta", "marker", "alpha"]


def test_blocked_plugins_are_never_imported(fake_plugins):
    harness = Harness(load_entrypoints=True, config={"plugins": {"block": ["marker"]}})
    assert "marker" not in names(harness)
    assert not (fake_plugins / "imported").exists()
    assert {record.name: record.status for record in harness.discovery}["marker"] == "blocked"


def test_the_environment_allow_list_restricts_loading(fake_plugins, monkeypatch):
    monkeypatch.setenv("HARNESS_LOAD_PLUGINS", "alpha, zeta")
    harness = Harness(load_entrypoints=True)
    assert names(harness) == ["alpha", "zeta"]
    assert not (fake_plugins / "imported").exists()
    monkeypatch.setenv("HARNESS_LOAD_PLUGINS", "")
    assert names(Harness(load_entrypoints=True)) == []


def test_a_required_plugin_that_fails_to_import_stops_the_harness(fake_plugins):
    with pytest.raises(PluginLoadError) as caught:
        Harness(load_entrypoints=True, config={"plugins": {"require": ["broken"]}})
    assert 'required plugin "broken" (harness-broken 1.0) failed to load: ImportError: needs libfoo' in str(caught.value)


@pytest.mark.parametrize(
    ("settings", "env", "words"),
    [
        ({"require": ["ghost"]}, None, 'required plugin "ghost" is not installed'),
        ({"require": ["alpha"], "block": ["alpha"]}, None, 'required plugin "alpha" is also blocked'),
        ({"require": ["alpha"]}, "zeta", 'required plugin "alpha" is left out by HARNESS_LOAD_PLUGINS'),
    ],
)
def test_a_required_plugin_that_cannot_load_names_why(fake_plugins, monkeypatch, settings, env, words):
    if env is not None:
        monkeypatch.setenv("HARNESS_LOAD_PLUGINS", env)
    with pytest.raises(PluginLoadError, match=words):
        Harness(load_entrypoints=True, config={"plugins": settings})


def test_a_plugin_with_an_unknown_hook_is_an_error_naming_it(tmp_path, monkeypatch):
    module = f"typo_{uuid.uuid4().hex[:8]}"
    source = "from harness_core import hookimpl\nclass P:\n    @hookimpl\n    def tools_gaurd(self, execution):\n        return None\n"
    install_fake_distribution(tmp_path, "harness-typo", {"typo": f"{module}:P"}, {module: source})
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("HARNESS_LOAD_PLUGINS", "typo")
    from harness_core import PluginRefusedError

    with pytest.raises(PluginRefusedError, match="plugin \"typo\" implements unknown hook 'tools_gaurd'"):
        Harness(load_entrypoints=True)


def test_project_plugin_modules_load_from_the_project_folder(tmp_path):
    module = f"local_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(GOOD))
    (tmp_path / "harness.toml").write_text(f'[plugins]\nmodules = ["{module}:Policy"]\n')
    harness = Harness(config=ConfigSource.for_project(tmp_path, user_file=False))
    assert names(harness) == [f"{module}:Policy"]
    assert harness.discovery[-1].status == "loaded"
