"""The entry-point reader finds exactly what importlib.metadata finds, without importing it."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from harness_core.entrypoints import find_entry_points


def _write_dist(root: Path, folder: str, header_file: str, name: str, version: str, body: str) -> None:
    info = root / folder
    info.mkdir()
    (info / header_file).write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: x\n\nName: not-me\n")
    (info / "entry_points.txt").write_text(body)


def _as_tuples(found: list) -> list[tuple[str, str, str | None, str | None]]:
    return sorted((ep.name, ep.value, ep.distribution, ep.version) for ep in found)


def test_agrees_with_importlib_metadata_on_this_environment():
    expected = sorted((ep.name, ep.value, ep.dist.name, ep.dist.version) for ep in entry_points(group="harness"))
    assert _as_tuples(find_entry_points("harness")) == expected
    assert expected, "the workspace installs harness plugins, so the group is not empty"


def test_reads_dist_info_and_egg_info_sections_comments_and_extras(tmp_path, monkeypatch):
    _write_dist(
        tmp_path,
        "harness_one-2.0.dist-info",
        "METADATA",
        "harness-one",
        "2.0",
        "# a comment\n[console_scripts]\nnot-ours = x:y\n\n[harness]\none = mod_one:Plugin [extra]\n# another comment\n",
    )
    _write_dist(tmp_path, "harness_two.egg-info", "PKG-INFO", "harness-two", "0.3", "[harness]\ntwo=mod_two\n")
    (tmp_path / "mod_one.py").write_text("class Plugin:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    found = {ep.name: ep for ep in find_entry_points("harness")}
    assert (found["one"].distribution, found["one"].version) == ("harness-one", "2.0")
    assert (found["two"].distribution, found["two"].version) == ("harness-two", "0.3")
    assert "not-ours" not in found
    assert found["one"].load().__name__ == "Plugin"
    expected = {(ep.name, ep.value, ep.dist.name, ep.dist.version) for ep in entry_points(group="harness")}
    assert {("one", "mod_one:Plugin [extra]", "harness-one", "2.0"), ("two", "mod_two", "harness-two", "0.3")} <= expected
    assert set(_as_tuples(find_entry_points("harness"))) == expected


def test_first_distribution_on_sys_path_shadows_a_later_one(tmp_path, monkeypatch):
    early, late = tmp_path / "early", tmp_path / "late"
    early.mkdir()
    late.mkdir()
    _write_dist(early, "harness_dup-1.0.dist-info", "METADATA", "harness-dup", "1.0", "[other]\nx = y\n")
    _write_dist(late, "Harness.Dup-2.0.dist-info", "METADATA", "harness-dup", "2.0", "[harness]\ndup = mod\n")
    monkeypatch.syspath_prepend(str(late))
    monkeypatch.syspath_prepend(str(early))
    names = [ep.name for ep in find_entry_points("harness")]
    assert "dup" not in names
    assert "dup" not in [ep.name for ep in entry_points(group="harness")]


def test_a_zip_on_sys_path_defers_to_importlib_metadata(tmp_path, monkeypatch):
    archive = tmp_path / "bundle.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr("harness_zipped-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: harness-zipped\nVersion: 1.0\n")
        bundle.writestr("harness_zipped-1.0.dist-info/entry_points.txt", "[harness]\nzipped = zmod:P\n")
    monkeypatch.syspath_prepend(str(archive))
    found = {ep.name: ep for ep in find_entry_points("harness")}
    assert (found["zipped"].distribution, found["zipped"].version) == ("harness-zipped", "1.0")


@pytest.mark.parametrize("command", ["plugins", "--help"])
def test_listing_plugins_does_not_import_importlib_metadata(command):
    code = (
        "import sys, harness_cli\n"
        f"sys.argv = ['harness', {command!r}]\n"
        "try:\n    harness_cli.main()\nexcept SystemExit:\n    pass\n"
        "print('LOADED' if 'importlib.metadata' in sys.modules else 'NOT-LOADED', file=sys.stderr)\n"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert completed.stderr.strip().endswith("NOT-LOADED"), completed.stderr[-2000:]
