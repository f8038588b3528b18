"""The [code_python] section: interpreter, sandboxing, a hard time cap and the bounds on captured output."""

from __future__ import annotations

import pydantic

__all__ = ["CodePythonConfig"]


class CodePythonConfig(pydantic.BaseModel):
    """The [code_python] section: how ``run_code`` programs are run."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    python: str | None = pydantic.Field(
        default=None,
        min_length=1,
        description="the interpreter that runs programs (Python 3.9 or newer); leave it out for the harness's own",
    )
    sandbox: bool = pydantic.Field(
        default=True,
        strict=True,
        description="confine the program's process when a sandbox plugin answers sandbox_policy; "
        "false runs it unconfined",
    )
    timeout_ms: pydantic.PositiveInt | None = pydantic.Field(
        default=None,
        strict=True,
        description="hard cap on one program's run time; leave it out to rely on the run_code call's own deadline",
    )
    max_log_lines: pydantic.PositiveInt = pydantic.Field(
        default=1000, strict=True, description="most printed lines kept per run; later lines are counted, not kept"
    )
    max_log_bytes: pydantic.PositiveInt = pydantic.Field(
        default=65536,
        strict=True,
        description="most bytes of printed output kept per run (UTF-8); a longer line is cut",
    )
    max_message_bytes: pydantic.PositiveInt = pydantic.Field(
        default=32 * 1024 * 1024,
        strict=True,
        description="largest single message (tool arguments or the return value, as JSON) the program may send",
    )
    kill_grace_ms: pydantic.NonNegativeInt = pydantic.Field(
        default=200, strict=True, description="after SIGTERM, how long the program's process group gets before SIGKILL"
    )
