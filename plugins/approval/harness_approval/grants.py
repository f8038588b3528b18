"""Session grants: "this exact call for the rest of the session", keyed by tool and arguments."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["Grant", "active_grants", "fingerprint", "new_grant_id"]

GRANT_EVENT = "approval/grant"
REVOKE_EVENT = "approval/revoke"


def fingerprint(arguments: Any) -> str:
    """A canonical digest of the arguments: key order and whitespace do not matter, values do."""
    import hashlib  # only when a grant is made or looked up

    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def new_grant_id() -> str:
    return os.urandom(6).hex()


@dataclass(frozen=True, slots=True, kw_only=True)
class Grant:
    """One granted ask: the tool, the arguments' fingerprint, the ask's reason and the call it came from."""

    id: str
    tool_name: str
    fingerprint: str
    reason: str | None = None
    call_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "tool_name": self.tool_name,
            "fingerprint": self.fingerprint,
            "reason": self.reason,
            "call_id": self.call_id,
        }


def active_grants(events: Iterable[tuple[str, dict[str, Any]]]) -> dict[str, Grant]:
    """Fold ``approval/grant`` and ``approval/revoke`` events (in order) into the grants still active."""
    grants: dict[str, Grant] = {}
    for kind, data in events:
        if kind == GRANT_EVENT:
            grant = Grant(
                id=str(data["id"]),
                tool_name=str(data["tool_name"]),
                fingerprint=str(data["fingerprint"]),
                reason=data.get("reason"),
                call_id=data.get("call_id"),
            )
            grants[grant.id] = grant
        elif kind == REVOKE_EVENT:
            grants.pop(str(data.get("id")), None)
    return grants
