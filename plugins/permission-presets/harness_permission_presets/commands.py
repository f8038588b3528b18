"""``harness permission [NAME] [--json]``: show the current preset, or select one for the session."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .plugin import PermissionPresets

__all__ = ["run_permission", "setup_permission"]


def setup_permission(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "name", nargs="?", metavar="NAME", help="the preset to switch to (default: show the current one)"
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def run_permission(args: argparse.Namespace, plugin: PermissionPresets) -> int:
    names = plugin.names()
    if args.name is None:
        current = plugin.current()
        if args.json:
            knobs = plugin.knobs()
            document = {"current": current, "available": names, "sandbox": knobs.sandbox, "approval": knobs.approval}
            print(json.dumps(document, indent=2))
        else:
            print(f"current preset {current} (available: {', '.join(names)})")
        return 0
    if args.name not in names:
        # reference/plugins.md §9 (c): the command's own wording, and no log change.
        print(f'unknown preset "{args.name}" (available: {", ".join(names)})', file=sys.stderr, flush=True)
        return 2
    notices = plugin.select(args.name, source="user")
    if args.json:
        texts = [getattr(block, "text", "") for notice in notices for block in notice.content]
        print(json.dumps({"preset": args.name, "notices": texts}, indent=2))
    else:
        print(f"preset {args.name}")
    return 0
