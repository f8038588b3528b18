"""The [timeout] section: on or off, an optional default budget and per-tool overrides, in milliseconds."""

from __future__ import annotations

import pydantic

__all__ = ["TimeoutConfig"]


class TimeoutConfig(pydantic.BaseModel):
    """The [timeout] section: which calls get a deadline and how long it is."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    # Strict: a string such as "no" is an error, not a truthy value.
    enabled: bool = pydantic.Field(
        default=True, strict=True, description="false lets every call through without a deadline (nothing is enforced)"
    )
    default_ms: pydantic.PositiveInt | None = pydantic.Field(
        default=None, description="budget for tools that declare none; leave it out to time only declared tools"
    )
    tools: dict[str, pydantic.PositiveInt] = pydantic.Field(
        default_factory=dict, description="per-tool budgets, overriding what the tool declares"
    )
