"""harness-rules: allow, ask or deny each tool call by ``[rules]`` patterns; deny wins and is guarded.

``bash(git diff *)`` matches a command (every part of a compound command is judged on its own),
``read(src/**)`` a path relative to the workspace, ``fetch(url=https://example.com/*)`` an
argument. What the shell parser cannot judge is asked about, never allowed. See docs/rules.md.
The decision engine is :mod:`harness_rules.engine`, the shell parser :mod:`harness_rules.shell`.
"""

from .plugin import DECISION_EVENT, SECTION, RulesPlugin

__all__ = ["DECISION_EVENT", "RulesPlugin", "SECTION"]
