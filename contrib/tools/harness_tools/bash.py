"""The ``bash`` tool: arguments, sandbox confinement and escalation, the run, the model-facing text.

reference/plugins.md §5, §11 and §12. All policy happens inside the body, in this order: check the
arguments; refuse ``run_in_background`` without a jobs plugin; resolve the sandbox policy (with an
approved one-shot escalation); confine ``["bash", "-c", command]`` for a confined policy (no
answer is a refusal, never an unconfined run); run it in its own process group; classify a runner
failure (an error: the command did not run) before a denial (a marker on an ordinary result).
``run_in_background`` hands the same confined command over to the jobs plugin through the
``jobs_start`` seam (:mod:`harness_core.jobs`) instead of running it here.
"""

from __future__ import annotations

import errno
import fnmatch
import json
import math
import os
import re
import signal as signals
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness_core import (
    AbortError,
    ContentBlock,
    Harness,
    HarnessError,
    RunContext,
    TextBlock,
    ToolDefinition,
    ToolOutput,
)
from harness_core.jobs import JobCommand, JobIO, JobRequest, JobStream
from harness_core.lossless import thaw
from harness_core.sandbox import ConfinedCommand, SandboxPolicy, SandboxUnavailableError, runner_failure_marker

from .errors import BackgroundUnavailableError, ToolInputError
from .process import ProcessGroups, StreamCapture, run_group
from .sandboxing import SandboxAccess, escalation_parameters

if TYPE_CHECKING:
    from .config import ToolsConfig

__all__ = ["BACKGROUND_NOT_INSTALLED", "BashTool", "JobOutput", "render_bash"]

#: The refusal of ``run_in_background`` while no jobs plugin is installed (checked before any spawn).
BACKGROUND_NOT_INSTALLED = "run_in_background requires the jobs plugin (harness-jobs); it is not installed"
#: A plugin provides "jobs" but nothing answered ``jobs_start``: refused, nothing ran.
BACKGROUND_NOT_SUPPORTED = (
    'run_in_background: a plugin provides "jobs" but none answered jobs_start; run the command in the foreground'
)
#: reference/plugins.md §12: the prompt line every bash description carries.
EXIT_CODE_GUIDANCE = "Check the [exit code: N] marker on every bash result; investigate failures before moving on."
#: Variables that keep commands from paging, colouring or prompting (reference §11).
QUIET_ENV = {"NO_COLOR": "1", "TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat"}

_STREAM_SCHEMA = {
    "type": "object",
    "properties": {
        "text": {"type": "string"},
        "truncated": {"type": "boolean"},
        "spill_path": {"type": ["string", "null"]},
        "bytes": {"type": "integer", "minimum": 0},
    },
    "required": ["text", "truncated", "spill_path", "bytes"],
}
FOREGROUND_SCHEMA = {
    "type": "object",
    "properties": {
        "kind": {"const": "foreground"},
        "exit_code": {"type": ["integer", "null"]},
        "signal": {"type": ["string", "null"]},
        "timed_out": {"type": "boolean"},
        "timeout_ms": {"type": "number"},
        "stdout": _STREAM_SCHEMA,
        "stderr": _STREAM_SCHEMA,
        "sandbox": {
            "anyOf": [
                {"type": "null"},
                {
                    "type": "object",
                    "properties": {
                        "mode": {"type": "string"},
                        "denied": {"type": "boolean"},
                        "enforcement": {"type": ["string", "null"]},
                        "backend": {"type": ["string", "null"]},
                    },
                    "required": ["mode", "denied", "enforcement", "backend"],
                },
            ]
        },
        "markers": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["kind", "exit_code", "signal", "timed_out", "timeout_ms", "stdout", "stderr", "sandbox", "markers"],
}
#: reference §12: a background run answers with the job id only.
BACKGROUND_SCHEMA = {
    "type": "object",
    "properties": {"kind": {"const": "background"}, "job_id": {"type": "string"}},
    "required": ["kind", "job_id"],
}
OUTPUT_SCHEMA = {"anyOf": [FOREGROUND_SCHEMA, BACKGROUND_SCHEMA]}


def _json(value: Any) -> str:
    try:
        return json.dumps(thaw(value))
    except (TypeError, ValueError):
        return repr(value)


def _ms(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


@dataclass(frozen=True, slots=True)
class BashRequest:
    """The checked arguments of one call."""

    command: str
    timeout_ms: float | None
    workdir: str | None
    background: bool


def parse_request(args: Any) -> BashRequest:
    """Check the named arguments (extra keys are ignored; the escalation pair is checked later)."""
    if not isinstance(args, Mapping):
        raise ToolInputError("invalid arguments: expected an object")
    command = args.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ToolInputError("invalid command: expected a non-empty string")
    description = args.get("description")
    if description is not None and (not isinstance(description, str) or not description.strip()):
        raise ToolInputError("invalid description: expected a non-empty string")
    timeout = args.get("timeout_ms")
    if timeout is not None and (
        type(timeout) not in (int, float) or not math.isfinite(timeout) or timeout <= 0
    ):
        raise ToolInputError(f"invalid timeout_ms: expected a positive number, got {_json(timeout)}")
    workdir = args.get("workdir")
    if workdir is not None and (not isinstance(workdir, str) or not workdir):
        raise ToolInputError("invalid workdir: expected a non-empty string")
    background = args.get("run_in_background")
    if background is not None and type(background) is not bool:
        raise ToolInputError(f"invalid run_in_background: expected a boolean, got {_json(background)}")
    return BashRequest(command=command, timeout_ms=timeout, workdir=workdir, background=background is True)


def render_bash(_args: Any, value: Any) -> list[ContentBlock]:
    """stdout, then ``[stderr]`` and stderr, or ``(no output)``; then each marker on its own line.

    A background run renders as ``started background job <id>``.
    """
    if value["kind"] == "background":
        return [TextBlock(text=f"started background job {value['job_id']}")]
    text = value["stdout"]["text"]
    errors = value["stderr"]["text"]
    if errors:
        if text and not text.endswith("\n"):
            text += "\n"
        text += "[stderr]\n" + errors
    if not text:
        text = "(no output)"
    for marker in value["markers"]:
        if not text.endswith("\n"):
            text += "\n"
        text += marker
    return [TextBlock(text=text)]


def _runner_did_not_start(error: OSError, runner: str, workdir: str) -> bool:
    """reference §5: only a missing or unexecutable runner program is the sandbox's failure."""
    return (
        error.errno in (errno.ENOENT, errno.EACCES)
        and os.path.isdir(workdir)
        and (error.filename is None or os.fsdecode(error.filename) == runner)
    )


class CommandStartError(HarnessError):
    """Raised when the shell itself cannot be started (not a failure of the command)."""

    code = "COMMAND_NOT_STARTED"


class BashTool:
    """The ``bash`` tool of one Harness: its definition and its body."""

    def __init__(
        self,
        settings: ToolsConfig,
        harness: Harness,
        project_dir: Path,
        sandbox: SandboxAccess,
        live_groups: ProcessGroups,
    ) -> None:
        self.settings = settings
        self.harness = harness
        self.project_dir = project_dir
        self.spill_dir = str(project_dir / settings.spill_dir)
        self.sandbox = sandbox
        self.live_groups = live_groups

    # --- the definition -----------------------------------------------------------------------

    def definition(self, *, background_advertised: bool) -> ToolDefinition:
        """The model-facing tool; the optional parameters appear only when they can work."""
        settings = self.settings
        properties: dict[str, Any] = {
            "command": {
                "type": "string",
                "description": "The command, run as `bash -c <command>` in a fresh non-login shell.",
            },
            "description": {
                "type": "string",
                "description": "What the command does, in 5-10 words of active voice (shown to the user).",
            },
            "timeout_ms": {
                "type": "number",
                "description": f"Kill the command (and everything it started) after this many milliseconds. "
                f"Default {settings.bash_timeout_ms}, at most {settings.bash_max_timeout_ms}.",
            },
            "workdir": {
                "type": "string",
                "description": "The folder to run in; a relative path is taken from the workspace root. "
                "Default: the workspace root.",
            },
        }
        if background_advertised:
            properties["run_in_background"] = {
                "type": "boolean",
                "description": "Start the command as a background job and return its id at once (no timeout).",
            }
        if self.sandbox.advertised:
            properties.update(escalation_parameters("command"))
        return ToolDefinition(
            name="bash",
            description=self._description(),
            parameters={"type": "object", "properties": properties, "required": ["command"]},
            output=ToolOutput(schema=OUTPUT_SCHEMA, render=render_bash),
            execute=self.execute,
        )

    def _description(self) -> str:
        settings = self.settings
        text = (
            "Run a shell command with `bash -c` and return its output. Every call starts a fresh shell (no "
            "variables, aliases or folder changes carry over) in its own process group, which is killed with "
            f"everything it started when the timeout passes. Each of stdout and stderr shows at most "
            f"{settings.bash_max_output_chars} characters; a longer stream shows its head and its tail and "
            "names a file holding the full output. A result ends with markers on their own lines: "
            "`[timed out after <ms>ms]`, `[killed by signal: <signal>]`, or `[exit code: <n>]` when the command "
            "failed. A non-zero exit is an ordinary result, not a tool error. "
            f"{EXIT_CODE_GUIDANCE} Use the read, write and edit tools for files rather than cat, heredocs or "
            "sed -i. If a sandbox blocks a file access, the result says "
            "`[sandbox: file access denied under <mode> mode]`."
        )
        if self.sandbox.advertised:
            text += (
                " When such a denial also offers escalation and the command really needs the access, retry the "
                "exact same command once, in the same turn, with `sandbox_permissions` (the narrowest wider "
                "mode that suffices) and a one-sentence `justification`; the user is asked to approve. Never "
                "escalate speculatively before a real denial; a rejected escalation is final for that command; "
                "do not escalate when approval prompts are disabled."
            )
        return text

    # --- the body ------------------------------------------------------------------------------

    async def execute(self, args: Any, ctx: RunContext) -> dict[str, Any]:
        """Run one command; see the module docstring for the order of the checks."""
        request = parse_request(args)
        if request.background and "jobs" not in self.harness.provided():
            # Refused before any approval is asked or any process starts.
            raise BackgroundUnavailableError(BACKGROUND_NOT_INSTALLED)
        policy = await self.sandbox.policy_for(ctx, args)
        workdir = self._workdir(request.workdir, policy)
        argv = ["bash", "-c", request.command]
        confined: ConfinedCommand | None = None
        if policy is not None and policy.confined:
            confined = self.harness.plugin_manager.hook.sandbox_confine(argv=list(argv), policy=policy, cwd=workdir)
            if confined is None:
                # A confined mode with nobody to confine it: refuse, never run unconfined (§2).
                raise SandboxUnavailableError(policy.mode)
            argv = list(confined.argv)
        if ctx.signal.aborted:
            # Cancelled while the escalation was being approved: nothing starts.
            raise AbortError("tool call aborted")
        if request.background:
            return self._start_job(request.command, argv, workdir, ctx, confined, policy)
        settings = self.settings
        timeout_ms = min(
            request.timeout_ms if request.timeout_ms is not None else settings.bash_timeout_ms,
            settings.bash_max_timeout_ms,
        )
        prefix = "bash-" + (re.sub(r"[^A-Za-z0-9_-]", "_", ctx.call_id)[:40] or "call")
        stdout, stderr = (
            StreamCapture(
                label,
                max_chars=settings.bash_max_output_chars,
                spill_dir=self.spill_dir,
                spill_prefix=prefix,
                max_spill_bytes=settings.bash_max_spill_bytes,
            )
            for label in ("stdout", "stderr")
        )
        try:
            outcome = await run_group(
                argv,
                cwd=workdir,
                env=self._environment(),
                timeout_s=timeout_ms / 1000,
                signal=ctx.signal,
                grace_s=settings.bash_grace_ms / 1000,
                stdout=stdout,
                stderr=stderr,
                live=self.live_groups,
            )
        except OSError as exc:
            stdout.abandon()
            stderr.abandon()
            if confined is not None and policy is not None and _runner_did_not_start(exc, argv[0], workdir):
                raise SandboxUnavailableError(policy.mode, f"cannot start {argv[0]}: {exc.strerror}") from exc
            raise CommandStartError(f"cannot start the command: {exc}") from exc
        except BaseException:
            stdout.abandon()
            stderr.abandon()
            raise
        if outcome.aborted:
            stdout.abandon()
            stderr.abandon()
            raise AbortError("tool call aborted")
        error_text = stderr.shown()
        markers: list[str] = []
        sandbox: dict[str, Any] | None = None
        if confined is not None and policy is not None:
            detail = confined.runner_failure(outcome.exit_code, error_text)
            if detail is not None:
                # The runner itself failed: the command never ran (this outranks a denial).
                stdout.abandon()
                stderr.abandon()
                raise SandboxUnavailableError(policy.mode, detail)
            denied = confined.denied(outcome.exit_code, error_text)
            if denied:
                markers.append(self.sandbox.denial_text(ctx, policy.mode))
            sandbox = {
                "mode": policy.mode,
                "denied": denied,
                "enforcement": confined.enforcement,
                "backend": confined.backend,
            }
        elif policy is not None:
            sandbox = {"mode": policy.mode, "denied": False, "enforcement": None, "backend": None}
        if outcome.timed_out:
            markers.append(f"[timed out after {_ms(timeout_ms)}ms]")
        if outcome.signal is not None:
            markers.append(f"[killed by signal: {outcome.signal}]")
        elif outcome.exit_code:
            markers.append(f"[exit code: {outcome.exit_code}]")
        return {
            "kind": "foreground",
            "exit_code": outcome.exit_code,
            "signal": outcome.signal,
            "timed_out": outcome.timed_out,
            "timeout_ms": timeout_ms,
            "stdout": _stream_value(stdout),
            "stderr": _stream_value(stderr, error_text),
            "sandbox": sandbox,
            "markers": markers,
        }

    def _start_job(
        self,
        command: str,
        argv: list[str],
        workdir: str,
        ctx: RunContext,
        confined: ConfinedCommand | None = None,
        policy: SandboxPolicy | None = None,
    ) -> dict[str, Any]:
        """Hand the (already confined) command to the jobs plugin; the job outlives this call."""
        env = self._environment()
        grace_s = self.settings.bash_grace_ms / 1000
        live = self.live_groups
        # Decided now, while the call's context is live: whether a denial could be escalated.
        denial_text = self.sandbox.denial_text(ctx, policy.mode) if confined is not None and policy is not None else ""

        async def start(io: JobIO) -> int | None:
            stdout, stderr = JobOutput(io, "stdout"), JobOutput(io, "stderr")
            code = await run(stdout, stderr)
            if confined is not None and policy is not None:
                # The same reading as in the foreground (§5): a runner failure outranks a denial;
                # the marker lands at the end of the job's stderr, where job_output shows it.
                tail = stderr.tail.decode(errors="replace")
                if confined.runner_failure(code, tail) is not None:
                    io.write("stderr", ("\n" + runner_failure_marker(policy.mode) + "\n").encode())
                elif confined.denied(code, tail):
                    io.write("stderr", ("\n" + denial_text + "\n").encode())
            return code

        async def run(stdout: JobOutput, stderr: JobOutput) -> int | None:
            io = stdout.io
            try:
                outcome = await run_group(
                    argv,
                    cwd=workdir,
                    env=env,
                    timeout_s=math.inf,  # reference §11: a background process has no executor timeout
                    signal=io.signal,
                    grace_s=grace_s,
                    stdout=stdout,
                    stderr=stderr,
                    live=live,
                )
            except OSError as exc:
                io.write("stderr", f"spawn failed: {exc}\n".encode())
                return None
            if outcome.signal is not None:
                return -_signal_number(outcome.signal)
            if outcome.aborted:
                return None
            return outcome.exit_code

        job = JobRequest(
            owner=ctx.agent,
            kind="bash",
            label=command,
            start=start,
            command=JobCommand(argv=tuple(argv), cwd=workdir, env=dict(env)),
        )
        job_id = self.harness.plugin_manager.hook.jobs_start(request=job)
        if job_id is None:
            raise BackgroundUnavailableError(BACKGROUND_NOT_SUPPORTED)
        return {"kind": "background", "job_id": job_id}

    def _workdir(self, requested: str | None, policy: SandboxPolicy | None) -> str:
        base = policy.workspace_root if policy is not None else str(self.project_dir)
        folder = base if requested is None else os.path.join(base, requested)
        if not os.path.isdir(folder):
            raise ToolInputError(f'invalid workdir: "{folder}" is not an existing folder')
        return folder

    def _environment(self) -> dict[str, str]:
        patterns = [pattern.upper() for pattern in self.settings.bash_env_scrub]
        env = {
            name: value
            for name, value in os.environ.items()
            if not any(fnmatch.fnmatchcase(name.upper(), pattern) for pattern in patterns)
        }
        env.update(QUIET_ENV)
        return env


class JobOutput:
    """Feeds one stream of a background command to its job (an ``OutputSink`` for ``run_group``).

    Keeps the last few KiB too, so the sandbox's stderr dialect can be read when the command ends.
    """

    TAIL_BYTES = 8192

    def __init__(self, io: JobIO, stream: JobStream) -> None:
        self.io = io
        self.stream: JobStream = stream
        self.tail = b""

    async def feed(self, chunk: bytes) -> None:
        self.io.write(self.stream, chunk)
        self.tail = (self.tail + chunk)[-self.TAIL_BYTES :]

    async def finish(self) -> None:
        return None


def _signal_number(name: str) -> int:
    try:
        return int(signals.Signals[name])
    except KeyError:
        return int(name) if name.isdigit() else int(signals.SIGKILL)


def _stream_value(capture: StreamCapture, shown: str | None = None) -> dict[str, Any]:
    return {
        "text": capture.shown() if shown is None else shown,
        "truncated": capture.truncated,
        "spill_path": capture.spill_path,
        "bytes": capture.total_bytes,
    }
