"""The pipeline benchmark keeps working (a smoke run with tiny counts; timings are never asserted)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import anyio

BENCH = Path(__file__).resolve().parents[2] / "bench" / "pipeline_overhead.py"


def load_bench():
    spec = importlib.util.spec_from_file_location("pipeline_overhead", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_benchmark_measures_every_configuration_and_reports_the_ratio(tmp_path, monkeypatch):
    bench = load_bench()
    figures = anyio.run(bench.measure, 20, 1)
    assert set(figures) == {"baseline", "bare", "loaded", "loaded_typed"}
    assert all(value > 0 for value in figures.values())
    text = bench.report(figures, 20, 1)
    assert "Ratio loaded / baseline" in text

    monkeypatch.setattr(bench, "ROOT", tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "performance.md").write_text("# Performance\n\nintro\n\n## Other bench\n\nkept\n")
    bench.write_report(text)
    written = (tmp_path / "docs" / "performance.md").read_text()
    assert "intro" in written and "## Pipeline overhead" in written and "kept" in written
    bench.write_report(text)  # rewriting replaces the section instead of appending a second one
    assert (tmp_path / "docs" / "performance.md").read_text().count("## Pipeline overhead") == 1


def load_startup():
    path = BENCH.with_name("startup.py")
    spec = importlib.util.spec_from_file_location("startup_bench", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_startup_benchmark_runs_every_command_and_reports_ratios():
    bench = load_startup()
    figures = bench.measure(1)
    assert set(figures) == {"baseline", "help", "plugins"} and all(value > 0 for value in figures.values())
    text = bench.report(figures, 1)
    assert "`harness --help`" in text and "`harness plugins`" in text


def test_the_hook_bridge_benchmark_measures_both_hooks_and_the_parallel_case():
    path = BENCH.with_name("hook_bridge.py")
    spec = importlib.util.spec_from_file_location("hook_bridge_bench", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    figures = bench.measure(10)
    assert set(figures) == {"python_bridge", "python_direct", "shell_bridge", "shell_direct", "four_sleeping"}
    assert figures["four_sleeping"] >= 200  # the hooks really ran
    assert "Four matching hooks" in bench.report(figures, 10)
