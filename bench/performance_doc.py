"""docs/performance.md: each benchmark owns one ``## `` section and replaces only that one."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PERFORMANCE = ROOT / "docs" / "performance.md"


def replace_section(text: str, heading: str, path: Path = PERFORMANCE) -> None:
    """Put ``text`` (starting with ``heading``) in place of that section, keeping every other one."""
    existing = path.read_text(encoding="utf-8") if path.exists() else "# Performance\n\n"
    head, _, tail = existing.partition(heading)
    rest = ""
    if tail:
        after = tail.split("\n## ", 1)
        rest = "\n## " + after[1] if len(after) > 1 else ""
    path.write_text(head.rstrip() + "\n\n" + text + rest, encoding="utf-8")
