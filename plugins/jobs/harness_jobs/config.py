"""The [jobs] section: per-owner capacity, output caps and the job_output wait budget."""

from __future__ import annotations

import pydantic

__all__ = ["JobsConfig"]


class JobsConfig(pydantic.BaseModel):
    """The [jobs] section: how many jobs an owner may run and how much output is kept."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    max_per_owner: pydantic.PositiveInt = pydantic.Field(
        default=10, description="running and stopping jobs one owner may have; unowned jobs share one bucket"
    )
    max_output_bytes: pydantic.PositiveInt = pydantic.Field(
        default=64000, description="bytes of each output stream kept in memory (the head); the rest is counted"
    )
    max_spill_bytes: pydantic.PositiveInt = pydantic.Field(
        default=64 * 1024 * 1024, description="bytes of each stream kept in its spill file; past it the file is dropped"
    )
    wait_timeout_ms: pydantic.PositiveInt = pydantic.Field(
        default=30000, description="how long job_output waits with wait=true and no timeout_ms"
    )
    max_wait_timeout_ms: pydantic.PositiveInt = pydantic.Field(
        default=600000, description="the longest wait any job tool accepts; larger timeout_ms are clamped"
    )
    close_grace_ms: pydantic.PositiveInt = pydantic.Field(
        default=10000, description="how long closing waits for a stopped job before cancelling its task"
    )

    @pydantic.model_validator(mode="after")
    def _wait_fits_the_cap(self) -> JobsConfig:
        if self.wait_timeout_ms > self.max_wait_timeout_ms:
            raise ValueError(
                f"wait_timeout_ms ({self.wait_timeout_ms}) exceeds max_wait_timeout_ms ({self.max_wait_timeout_ms})"
            )
        return self
