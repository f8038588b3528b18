"""bench/sandbox_spawn.py keeps working (a smoke run with tiny counts; timings are never asserted)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "sandbox_spawn.py"


def load_bench():
    spec = importlib.util.spec_from_file_location("sandbox_spawn", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_benchmark_times_every_working_backend_against_an_unconfined_spawn(verdicts, tmp_path, monkeypatch) -> None:
    bench = load_bench()
    figures, unusable = bench.measure(2)
    working = {name for name, verdict in verdicts.items() if verdict.usable}
    assert set(figures) == {"baseline", *working} and all(value > 0 for value in figures.values())
    assert set(unusable) == set(verdicts) - working
    text = bench.report(figures, unusable, 2)
    assert '| baseline: `subprocess.run(["true"])` |' in text
    for name in working:
        assert f"| `true` under {name} |" in text

    monkeypatch.setattr(bench, "ROOT", tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "performance.md").write_text("# Performance\n\nintro\n\n## Other bench\n\nkept\n")
    bench.write_report(text)
    bench.write_report(text)  # rewriting replaces the section instead of appending a second one
    written = (tmp_path / "docs" / "performance.md").read_text()
    assert "intro" in written and "kept" in written and written.count("## Sandbox spawn") == 1
