"""A Claude Code PreToolUse hook: deny shell commands that reach the network.

Claude Code passes the call as JSON on stdin; printing a `permissionDecision` of `deny` blocks it.
The harness runs this same script, unchanged, through its Claude Code hook bridge.
"""

import json
import sys

call = json.load(sys.stdin)
command = str(call.get("tool_input", {}).get("command", ""))
if any(word in command.split() for word in ("curl", "wget")):
    json.dump(
        {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": "this project keeps shell commands off the network",
            }
        },
        sys.stdout,
    )
