"""``harness approvals list|revoke``: the session grants, read from and written to the session log."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from harness_core import Harness
from harness_core.session_log import SessionLog, find_session, read_session

from .grants import REVOKE_EVENT, active_grants

__all__ = ["run_approvals", "setup_approvals"]


def setup_approvals(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    listing = actions.add_parser("list", help="the grants still active in a session")
    listing.add_argument("--session", help="session id, unique prefix or .jsonl path (default: newest)")
    listing.add_argument("--json", action="store_true", help="machine-readable output")
    revoke = actions.add_parser("revoke", help="revoke one grant (recorded in the session log)")
    revoke.add_argument("grant", help="the grant id shown by `harness approvals list`")
    revoke.add_argument("--session", help="session id, unique prefix or .jsonl path (default: newest)")


def _session_path(args: argparse.Namespace, harness: Harness) -> Path:
    directory = Path(args.project) / harness.config.section("session").dir
    return find_session(directory, args.session)


def run_approvals(args: argparse.Namespace, harness: Harness) -> int:
    if args.action is None:
        print("harness approvals: error: choose an action: list or revoke", file=sys.stderr, flush=True)
        return 2
    path = _session_path(args, harness)
    events = [(event.type, event.data) for event in read_session(path).events]
    grants = active_grants(events)
    if args.action == "list":
        if args.json:
            print(json.dumps([grant.to_json() for grant in grants.values()], indent=2))
            return 0
        if not grants:
            print(f"no active grants in session {path.stem}")
        for grant in grants.values():
            print(f"{grant.id}  {grant.tool_name}  arguments {grant.fingerprint[:16]}…  (granted at call {grant.call_id})")
        return 0
    if args.grant not in grants:
        known = ", ".join(grants) or "none"
        print(f"harness approvals: error: no active grant {args.grant!r} in session {path.stem} (active: {known})", file=sys.stderr)
        return 2
    with SessionLog(path.parent, path.stem) as log:
        log.append(REVOKE_EVENT, {"id": args.grant, "source": "cli"})
    print(f"revoked grant {args.grant} in session {path.stem}")
    return 0
