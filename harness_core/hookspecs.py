"""Hook specifications of the tool-call pipeline, grouped by stage in the order they fire.

Every spec says when it fires, what an implementation may do, what it must not do, and what
happens when nobody implements it. The core runs each pipeline hook itself (pluggy cannot await),
walking the implementations in pluggy's call order: ``tryfirst`` first, then the last registered.
For a waterfall that first implementation is the outermost; its ``call_next()`` runs the rest.

Implementations may take any subset of a spec's arguments, as with any pluggy hook. Waterfall
impls may be ``def`` or ``async def``; a ``def`` impl may ``return call_next()`` to continue.
The core calls every hook here itself, so wrappers (``wrapper=True`` / ``hookwrapper=True``)
are refused on all of them, and so are ``async def`` impls of the synchronous ones (guards,
observers, the host's registration and configuration hooks).
"""

# Hook specifications have docstrings for bodies: nothing runs them.
# mypy: disable-error-code="empty-body"

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

import pluggy

if TYPE_CHECKING:
    from pydantic import BaseModel

    from .code_mode import CodeRuntime
    from .config import HarnessConfig
    from .host import Harness
    from .jobs import JobRequest
    from .registry import ToolDefinition
    from .sandbox import ConfinedCommand, SandboxPolicy
    from .types import (
        ApprovalOutcome,
        ApprovalRequest,
        ContentBlock,
        ContextMessage,
        DispatchExecution,
        Execution,
        PostDecision,
        PreDecision,
        ToolResult,
    )

__all__ = ["CallNext", "PROJECT_NAME", "hookimpl", "hookspec"]

#: The pluggy project name: markers, entry-point group and CLI all use it.
PROJECT_NAME = "harness"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

T = TypeVar("T")

#: The continuation a waterfall impl receives: a zero-argument async callable running the rest
#: of the chain (down to the core's default). Calling it again runs the rest again.
CallNext: TypeAlias = Callable[[], Awaitable[T]]


# --- Host: start-up, in the order the host calls them ------------------------------------------


@hookspec
def harness_add_hookspecs(add: Callable[[object], None]) -> None:
    """Add this plugin's own hook specifications: call ``add(module_or_class)``.

    When: right after the plugin is registered, before any hook name is checked, so other plugins
    may implement the new hooks whatever their registration order.
    May: add specs marked with ``harness_core.hookspec`` (an approval answerer chain, a sandbox
    backend); run them with ``call_waterfall`` or through ``harness.plugin_manager.hook``.
    Must not: redefine a hook the core or another plugin specifies.
    Default: no hooks added.
    """


@hookspec
def harness_register_config(register: Callable[[str, type[BaseModel]], None]) -> None:
    """Contribute this plugin's config section: call ``register("name", Model)``.

    When: once, right after the plugins are registered and before the configuration is composed.
    May: register one or more sections, each a pydantic model with ``extra="forbid"`` (unknown
    keys must be errors); a dotted name (``"hooks.codex"``) puts the section in a table shared
    with other plugins' sections; mark deny-type list fields with ``harness_core.DenyList`` so no later
    layer or preset can remove an entry.
    Must not: register a section another plugin or the core owns (``plugins``, ``session``).
    Default: no section.
    """


@hookspec
def harness_register_presets(register: Callable[..., None]) -> None:
    """Contribute named presets: ``register(name, fragment, description="", extends=(), default=False)``.

    When: once, before the configuration is composed (users select them with ``preset = ...``).
    May: register config fragments (tables of sections) that build on other presets through
    ``extends``; mark at most one as the default, used when the project selects none.
    Must not: load or block plugins from a preset (``plugins`` is refused in a fragment).
    Default: no presets.
    """


@hookspec
def harness_configure(config: HarnessConfig, harness: Harness) -> None:
    """Receive the effective, validated configuration (read your section with ``config.section(name)``).

    When: once per plugin, after the configuration is composed and before any tool is registered.
    May: keep what it needs from its section on ``self``; keep ``harness`` to use the host later
    (its ``events`` sink, ``register`` for helper plugins of its own); raise to refuse to start
    (the error names the plugin). Take only the arguments you need, as with any hook.
    Must not: be ``async def``; change the configuration (it is frozen).
    Default: nothing.
    """


@hookspec
def harness_register_commands(register: Callable[..., None]) -> None:
    """Add subcommands to the ``harness`` CLI: ``register(name, help=..., setup=..., run=...)``.

    ``setup(parser)`` adds the command's arguments to an ``argparse`` parser; ``run(args, harness)``
    runs it with the project's started Harness and returns the exit status (0, 1 or 2).
    When: when the CLI is given a command the core does not know, after the plugins are loaded.
    May: register commands named after the plugin (``approvals``, ``jobs``).
    Must not: register a name a core command has (``call``, ``run``, ``config``, ...).
    Default: no commands.
    """


@hookspec
def harness_provides() -> list[str]:
    """Name the capabilities this plugin enforces, e.g. ``["timeout_ms"]`` for a timeout policy.

    When: whenever the host checks what is enforced (``harness doctor``, start-up warnings); the
    answer is reliable only once every plugin is configured (from ``harness_register_tools`` on).
    May: return capability names; the host warns, for example, when a tool declares ``timeout_ms``
    and no plugin provides ``"timeout_ms"``.
    Must not: claim a capability it does not enforce (that silences a real warning).
    Default: nothing is provided.
    """


@hookspec
def harness_diagnose() -> list[tuple[str, str]]:
    """Report on the plugin's health for ``harness doctor``: ``[(level, message), ...]``.

    When: when ``harness doctor`` runs (or ``h.diagnose()`` is called), after start-up.
    May: return levels ``"info"`` (shown), ``"warning"`` (shown, exit status unchanged) and
    ``"error"`` (doctor exits 1): e.g. which sandbox backend is active and why the others are not,
    or that a confined mode cannot be enforced on this host.
    Must not: be slow or have side effects (run probes at start-up and report their cached result).
    Default: nothing to report.
    """


@hookspec
def harness_close() -> Awaitable[None] | None:
    """Release what the plugin holds (jobs, processes, open files) when the harness closes.

    When: once, on ``await h.aclose()`` or leaving ``async with Harness(...)``, plugin by plugin
    in reverse registration order.
    May: be ``def`` or ``async def``; await the end of its own tasks.
    Must not: expect other plugins to still be usable; raising is reported and never keeps the
    other plugins from closing.
    Default: nothing.
    """



@hookspec
def harness_register_tools(register: Callable[[ToolDefinition], Callable[[], None]]) -> None:
    """Contribute tools: call ``register(definition)`` once per tool.

    When: once per plugin, after ``harness_configure`` (so the tools may depend on the plugin's
    configuration): at start-up, or on ``h.register(plugin)`` for a plugin added later.
    May: register any number of ToolDefinitions (or ``@tool`` functions); keep the returned
    ``dispose`` to unregister one later.
    Must not: register a name another plugin already registered (that raises), or ``run_code``.
    Default: no tools.
    """


# --- Stage 1: pre-execute (async waterfall) ----------------------------------------------------


@hookspec
def tools_pre_execute(execution: Execution, call_next: CallNext[PreDecision]) -> PreDecision:
    """Decide whether a call may run: ``Allow()``, ``Deny(reason=...)`` or ``Ask(reason=...)``.

    When: once per call, after the arguments were snapshotted and before approval and the guards.
    It also runs for names no tool is registered under (the unknown-tool failure comes at dispatch).
    May: return a decision without calling ``call_next()`` (short-circuit the inner listeners);
    await ``call_next()`` and return, change or override its decision (an outer listener can turn
    an inner ``Deny`` into ``Allow``); await other work while watching ``execution.signal``.
    Must not: change the arguments or the signal (both are read-only); expect an ``Allow`` to skip
    the guards (it never does). Anything but Allow, Deny or Ask is treated as a denial naming you.
    Default: ``Allow()``.
    """


# --- Stage 2: approval (async service, first answer wins) --------------------------------------


@hookspec
def approval_request(request: ApprovalRequest) -> ApprovalOutcome | None | Awaitable[ApprovalOutcome | None]:
    """Answer an ``Ask`` once: ``"allowed-once"``, ``"rejected"``, ``"cancelled"`` or ``"unavailable"``.

    When: after the pre-execute waterfall returned ``Ask`` for a call that has an ``agent``.
    May: take as long as a human needs, watching ``request.signal``; return ``None`` to abstain
    and let the next implementation answer.
    Must not: answer outside the four outcomes (that fails the call); expect ``allowed-once`` to
    skip the guards (they run after it).
    Default: nobody answers, and the ask is denied:
    ``tool "<name>" requires approval (not yet supported)`` (or the ask's own reason).
    """


# --- Stage 3: guards (sync, monotonic) ---------------------------------------------------------


@hookspec
def tools_guard(execution: Execution) -> object | None:
    """Veto a call that policy allowed: return ``None`` to abstain, anything else to deny.

    When: only when the decision so far is allow (the waterfall said ``Allow`` or an ask was
    ``allowed-once``), after approval and before dispatch; guards are called in pluggy's call order
    and the first denial wins. The returned value (as ``str``) is the denial reason.
    May: read the execution. Raising fails the call and the body never runs.
    Must not: be ``async def`` or a wrapper (both are refused at registration: a guard cannot
    await, and nothing may turn a guard's denial into an allow).
    Default: abstain.
    """


# --- Stage 4: execute (async waterfall around the body) ----------------------------------------


@hookspec
def tools_execute(execution: DispatchExecution, call_next: CallNext[ToolResult]) -> ToolResult:
    """Wrap the dispatch of the tool body (timeout, retry, metrics).

    When: once per call that got past pre-execute, approval and the guards.
    May: await ``call_next()`` (again, to retry: each call re-runs the inner wrappers and the
    body); return its result or a new ``ToolResult`` (a success is re-rendered from its ``value``);
    short-circuit without calling ``call_next()`` (the body does not run); assign
    ``execution.signal`` for the delegated call and restore it afterwards (no other stage may).
    Must not: change the arguments or any identity field; return anything but a ToolResult.
    A wrapper that raises fails the call and skips post-execute.
    Default: dispatch the body (unknown tools, body errors and bad output come back as failed
    results, never as exceptions).
    """


# --- Stage 5: post-execute (async waterfall) ---------------------------------------------------


@hookspec
def tools_post_execute(execution: Execution, result: ToolResult, call_next: CallNext[PostDecision]) -> PostDecision:
    """Judge the result: ``Accept()``, ``Accept(content=...)``, ``Accept(value=...)`` or ``Block(feedback=...)``.

    When: after dispatch, and also for denied calls, unknown tools, body failures and calls
    cancelled between policy and dispatch; not after a throw in an earlier stage.
    May: replace the model-facing content (also of a failure); replace the value of a success
    (re-validated and re-rendered); block with feedback; add ``additional_contexts``.
    Must not: mutate ``result`` (it is frozen); replace both content and value; replace the value
    of a failure (both fail the call); return anything but Accept or Block.
    Default: ``Accept()``.
    """


# --- Stage 6: result (sync emit, observers only) -----------------------------------------------


@hookspec
def tools_result(execution: Execution, result: ToolResult) -> None:
    """Observe the final, frozen outcome of a call; it is the very object ``execute`` returns.

    When: exactly once per call, on every path (denials, errors, aborts included).
    May: read, record, count. A raising observer is logged and the others still run.
    Must not: be ``async def`` (refused: nothing awaits an observer); expect to change anything.
    Default: nothing.
    """


@hookspec
def tools_change() -> None:
    """Hear that the set of tools changed (a tool was registered or unregistered).

    When: after each registration change, synchronously.
    May: refresh what it derived from ``h.tools.schemas()``. Raising rolls the change back and
    the error reaches whoever registered or unregistered the tool.
    Must not: be ``async def``.
    Default: nothing.
    """


# --- Sandbox seam (services that tools with side effects call; see harness_core.sandbox) -------


@hookspec(firstresult=True)
def sandbox_policy(execution: Execution, mode: str | None) -> SandboxPolicy | None:
    """Resolve the sandbox policy of one call: mode, workspace root, writable roots, network.

    When: called by a tool body (bash, write, edit) before it spawns or touches the filesystem;
    ``mode`` is a wider mode the user just approved for this call (an escalation), else ``None``.
    May: return the policy for this call (first answer wins).
    Must not: return a policy the plugin cannot enforce; tools treat ``None`` as "no sandbox
    plugin installed": they run unconfined, and ``harness doctor`` says so.
    Default: ``None``.
    """


@hookspec(firstresult=True)
def sandbox_confine(argv: list[str], policy: SandboxPolicy, cwd: str | None) -> ConfinedCommand | None:
    """Wrap a command for a confined policy: return the argv to spawn instead and how to read it.

    When: called by a tool body for a policy whose mode is not ``danger-full-access``; ``cwd`` is
    the folder the command should start in (the backend makes it the working directory inside
    the sandbox), or ``None`` for the spawner's own.
    May: return a :class:`~harness_core.sandbox.ConfinedCommand`; raise
    :class:`~harness_core.sandbox.SandboxUnavailableError` when no backend can enforce it.
    Must not: return the argv unwrapped (silent unconfined pass-through is forbidden).
    Default: ``None`` (no sandbox plugin: the tool must refuse to run a confined policy).
    """


# --- Jobs seam (a service producers call to run work in the background; see harness_core.jobs) --


@hookspec(firstresult=True)
def jobs_start(request: JobRequest) -> str | None:
    """Start background work and return its job id (``<kind>-<N>``, e.g. ``bash-1``).

    When: called by a tool body (bash with ``run_in_background``) that hands work over, from
    inside the caller's event loop; ``request.start`` must not have been called yet.
    May: check the whole request first (kind, label, limits, owner, capacity) and raise
    :class:`~harness_core.jobs.JobRefusedError` before anything starts; then call
    ``request.start(io)`` exactly once and return the new id at once (first answer wins).
    Must not: block until the work ends; call ``request.start`` when refusing; use up an id
    for a refused request; let the work outlive ``harness_close``.
    Default: ``None`` (no jobs plugin: the tool must refuse to run in the background).
    """


# --- Code Mode (the program runner, and an async waterfall on the log copy only) ---------------


@hookspec(firstresult=True)
def code_runtime() -> CodeRuntime | None:
    """Provide the runner for ``run_code`` programs (see :mod:`harness_core.code_mode`).

    When: asked by the core when a ``run_code`` call starts, and when the SDK text is rendered.
    May: return a :class:`~harness_core.code_mode.CodeRuntime` (first answer wins).
    Must not: run a program in-process without confinement it cannot enforce, or dispatch tools
    other than through ``request.call_tool`` (that is what keeps sub-calls under policy).
    Default: ``None`` (no runtime: ``run_code`` fails with ``requires a code runtime``).
    """


@hookspec
def tools_code_dispatch_log(dispatch: Any, call_next: CallNext[list[ContentBlock]]) -> list[ContentBlock]:
    """Shape the durable log copy of a Code Mode sub-call's content (a spill preview, say).

    When: once per settled sub-call of a ``run_code`` program that has an agent, after the
    program already received its value.
    May: return replacement content blocks for the ``tool/code-dispatch`` event.
    Must not: expect to change the program's value, the sub-call result or what the model sees.
    A raising listener is logged and the original content is logged instead.
    Default: the content unchanged.
    """


# --- Permission knobs (session permission state a selector switches; see harness_core.permissions)


@hookspec(firstresult=True)
def permission_knob(name: str) -> str | None:
    """Tell the effective value of a permission knob this plugin owns, e.g. ``"workspace-write"``.

    When: asked by a permission selector (the permission-presets plugin) at start-up and whenever
    it derives the current preset; ``name`` is one of :data:`harness_core.permissions.KNOBS`
    (``"sandbox.mode"``, ``"approval.policy"``).
    May: return the session's effective value of a knob it owns: the session switch if one was
    made, else the configured default (first answer wins).
    Must not: answer for a knob it does not own or enforce (return ``None``); be slow or record
    anything.
    Default: ``None``: nobody owns the knob, and a selector must treat that as a misconfiguration.
    """


@hookspec(firstresult=True)
def permission_knob_set(name: str, value: str, source: str) -> list[ContextMessage] | None:
    """Switch a permission knob this plugin owns for the rest of the session.

    When: called by a permission selector after it recorded its own selection event; ``source``
    says who asked (``"user"`` for a person).
    May: switch through the plugin's canonical setter, which records the plugin's own session event
    (``sandbox/mode``, ``approval/policy``); return the model-visible notices of the switch (the
    approval plugin's ``The approval policy changed from "<a>" to "<b>" (changed by the user).``),
    an empty list when there are none (first answer wins); raise ``ValueError`` naming the knob
    and the allowed values for a value outside them, switching nothing.
    Must not: answer for a knob it does not own (return ``None``); record a selection event of its
    own; switch anything else.
    Default: ``None``: nobody owns the knob, and the selector must fail rather than pretend.
    """
