"""The [approval] section: session policy, answerers in order, scripted rules, opt-in grants."""

from __future__ import annotations

from typing import Literal

import pydantic

__all__ = ["ApprovalConfig", "ScriptedRule"]

Policy = Literal["ask", "never"]


class ScriptedRule(pydantic.BaseModel):
    """One ``[[approval.scripted]]`` rule: the first rule whose tool and arguments match answers."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    tool: str = pydantic.Field(description='tool name or glob, e.g. "bash" or "*"')
    arguments: dict[str, str] = pydantic.Field(
        default_factory=dict, description="argument name → glob its value must match (strings; other values as JSON)"
    )
    outcome: Literal["allowed-once", "rejected", "allowed-session"] = pydantic.Field(
        description='"allowed-once" or "rejected" ("allowed-session" needs grants = true)'
    )

    @pydantic.field_validator("tool")
    @classmethod
    def _tool_not_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must name a tool or a glob such as *")
        return value


class ApprovalConfig(pydantic.BaseModel):
    """The [approval] section: how an ask becomes one human decision."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    policy: Policy = pydantic.Field(
        default="ask", description='"ask" routes asks to the answerers; "never" rejects every ask at once'
    )
    answerers: list[str] = pydantic.Field(
        default_factory=lambda: ["terminal"],
        description='answerers tried outermost first: "terminal", "scripted" or a plugin implementing approval_answer',
    )
    scripted: list[ScriptedRule] = pydantic.Field(
        default_factory=list, description="ordered rules for the scripted answerer; the first match answers"
    )
    grants: bool = pydantic.Field(
        default=False,
        description='allow "allowed-session": an answer may grant this exact call for the rest of the session',
    )

    @pydantic.model_validator(mode="after")
    def _session_outcomes_need_grants(self) -> ApprovalConfig:
        if not self.grants:
            for index, rule in enumerate(self.scripted):
                if rule.outcome == "allowed-session":
                    raise ValueError(
                        f'scripted[{index}] answers "allowed-session", which needs grants = true in [approval]'
                    )
        if len(set(self.answerers)) != len(self.answerers):
            raise ValueError("answerers lists a name twice")
        return self
