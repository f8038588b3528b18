"""The approval plugin: the ``approval_request`` service, its answerer chain, policy and grants."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from harness_core import (
    ApprovalRequest,
    ConfigError,
    ContextMessage,
    Execution,
    Harness,
    HarnessConfig,
    TextBlock,
    ToolResult,
    hookimpl,
)
from harness_core.config import ConfigProblem

from . import hookspecs
from .grants import GRANT_EVENT, REVOKE_EVENT, Grant, fingerprint, new_grant_id

if TYPE_CHECKING:
    from .config import ApprovalConfig

__all__ = ["OUTCOMES", "ApprovalPlugin", "policy_context_text"]

logger = logging.getLogger("harness.approval")

SECTION = "approval"
PLUGIN_SOURCE = "user-approval"
#: The closed vocabulary the core understands.
OUTCOMES = frozenset({"allowed-once", "rejected", "cancelled", "unavailable"})
BUILT_IN_ANSWERERS = ("terminal", "scripted")

POLICY_CONTEXT = {
    "ask": "Approval policy: ask. Operations that require approval may ask through the configured answerers; "
    "without an available answerer, the request fails closed.",
    "never": "Approval prompts are disabled in this session: actions that require approval are rejected "
    "automatically — do not request sandbox escalation (do not set `sandbox_permissions`).",
}

Answer = Callable[[ApprovalRequest, "Execution | None", Callable[[], Awaitable[str]]], Any]


def _by_argnames(impl: Any) -> Answer:
    """Call a plugin's answerer with the arguments it declared (pluggy's subset rule)."""

    def answer(request: ApprovalRequest, call: Execution | None, call_next: Callable[[], Awaitable[str]]) -> Any:
        values = {"request": request, "call": call, "call_next": call_next}
        return impl.function(*[values[name] for name in impl.argnames])

    return answer


#: How many calls the plugin remembers between pre-execute and their result. A dry run never
#: produces a result, so without a bound those entries would accumulate.
PENDING_LIMIT = 256


def policy_context_text(policy: str) -> str:
    """The model-visible text describing the session's approval policy."""
    return POLICY_CONTEXT[policy]


class ApprovalPlugin:
    """Turns an ``Ask`` into one decision: policy first, then the answerers, failing closed.

    ``never`` rejects before any answerer is consulted; an aborted signal cancels; no answer, a
    raising answerer or an answer outside the vocabulary is ``unavailable``. The core writes the
    ``approval/asked`` / ``approval/decided`` audit pair around every request.
    """

    def __init__(self) -> None:
        self.settings: ApprovalConfig | None = None
        self.harness: Harness | None = None
        self.policy = "ask"
        # Calls that reached pre-execute and have no result yet, by call id: answerers see the
        # arguments of the call they are asked about (the request itself carries none).
        self.pending: dict[object, Execution] = {}
        self.grants: dict[str, Grant] = {}

    # --- start-up ---------------------------------------------------------------------------

    @hookimpl
    def harness_add_hookspecs(self, add: Callable[[object], None]) -> None:
        add(hookspecs)

    @hookimpl
    def harness_register_config(self, register: Callable[[str, type[Any]], None]) -> None:
        from .config import ApprovalConfig

        register(SECTION, ApprovalConfig)

    @hookimpl
    def harness_configure(self, config: HarnessConfig, harness: Harness) -> None:
        settings: ApprovalConfig = config.section(SECTION)
        self.settings, self.harness, self.policy = settings, harness, settings.policy
        self._build_chain(settings, harness, config)  # refuse to start on an unknown answerer

    def _build_chain(
        self, settings: ApprovalConfig, harness: Harness, config: HarnessConfig | None
    ) -> list[tuple[str, Answer]]:
        from .answerers import ScriptedAnswerer
        from .terminal import TerminalAnswerer

        chain: list[tuple[str, Answer]] = []
        impls = {impl.plugin_name: impl for impl in harness.plugin_manager.hook.approval_answer.get_hookimpls()}
        problems = []
        for name in settings.answerers:
            if name == "terminal":
                chain.append((name, TerminalAnswerer(grants=settings.grants).approval_answer))
            elif name == "scripted":
                chain.append((name, ScriptedAnswerer(settings.scripted).approval_answer))
            elif name in impls:
                chain.append((name, _by_argnames(impls[name])))
            elif config is None:
                continue  # its plugin went away after start-up: it no longer answers
            else:
                known = sorted({*BUILT_IN_ANSWERERS, *impls})
                problems.append(
                    ConfigProblem(
                        file=config.origin(f"{SECTION}.answerers"),
                        key=f"{SECTION}.answerers",
                        problem=f'unknown answerer "{name}"',
                        fix=f"known answerers: {', '.join(known)} (a plugin answers by implementing approval_answer)",
                    )
                )
        if problems:
            raise ConfigError(problems)
        return chain

    # --- the service ------------------------------------------------------------------------

    @hookimpl(tryfirst=True)
    def tools_pre_execute(self, execution: Execution, call_next: Callable[[], Awaitable[Any]]) -> Awaitable[Any]:
        self.pending[execution.token] = execution
        while len(self.pending) > PENDING_LIMIT:
            del self.pending[next(iter(self.pending))]  # the oldest first
        return call_next()

    @hookimpl
    def tools_result(self, execution: Execution, result: ToolResult) -> None:
        self.pending.pop(execution.token, None)

    @hookimpl
    async def approval_request(self, request: ApprovalRequest) -> str:
        if request.signal.aborted:
            return "cancelled"
        # Decided here, before any answerer: no answerer, however ordered, can get around it.
        if self.policy == "never":
            return "rejected"
        # Matched by the execution's identity, never by call id alone (ids may repeat).
        call = self.pending.get(request.token) if request.token is not None else None
        if call is not None:
            grant = self._grant_for(request.tool_name, call.arguments, request.reason)
            if grant is not None:
                self._record("approval/grant-used", {"id": grant.id, "call_id": request.call_id})
                return "allowed-once"
        outcome = await self._ask(request, call)
        if outcome == "allowed-session":
            if call is None:
                return "allowed-once"
            self._grant(request, call)
            return "allowed-once"
        return outcome

    async def _ask(self, request: ApprovalRequest, call: Execution | None) -> str:
        """Run the answerer chain, raced against the request's signal; fail closed on anything odd."""
        answered: list[str] = []
        # Built per ask: an answerer whose plugin was unregistered must stop answering.
        chain = self._build_chain(self.settings, self.harness, None) if self.settings and self.harness else []

        async def answer(scope: anyio.CancelScope) -> None:
            try:
                outcome = await self._run_chain(chain, 0, request, call)
            except Exception as exc:
                logger.warning('approval answerer failed for tool "%s" (%s): %s', request.tool_name, request.call_id, exc)
                outcome = "unavailable"
            answered.append(self._checked(outcome))
            scope.cancel()

        async def watch(scope: anyio.CancelScope) -> None:
            await request.signal.wait()
            # The abort wins: a late answer is discarded with the cancelled task.
            answered.append("cancelled")
            scope.cancel()

        async with anyio.create_task_group() as group:
            group.start_soon(answer, group.cancel_scope)
            group.start_soon(watch, group.cancel_scope)
        return answered[0] if answered else "cancelled"

    async def _run_chain(
        self, chain: list[tuple[str, Answer]], index: int, request: ApprovalRequest, call: Execution | None
    ) -> str:
        if index >= len(chain):
            return "unavailable"
        _name, function = chain[index]

        async def call_next() -> str:
            return await self._run_chain(chain, index + 1, request, call)

        outcome = function(request, call, call_next)
        if isinstance(outcome, Awaitable):
            outcome = await outcome
        return outcome  # type: ignore[no-any-return]

    def _checked(self, outcome: object) -> str:
        allowed = OUTCOMES | ({"allowed-session"} if self.settings is not None and self.settings.grants else set())
        if isinstance(outcome, str) and outcome in allowed:
            return outcome
        logger.warning("approval answerer returned %r, outside the vocabulary; treated as unavailable", outcome)
        return "unavailable"

    # --- policy -----------------------------------------------------------------------------

    def set_policy(self, policy: str, source: str = "user") -> ContextMessage | None:
        """Switch the session policy; returns the notice for the model, or ``None`` if unchanged."""
        if policy not in ("ask", "never"):
            raise TypeError('approval policy must be one of "ask" or "never"')
        previous = self.policy
        if policy == previous:
            return None
        self._record("approval/policy", {"policy": policy, "source": source})
        self.policy = policy
        changed_by = "the user" if source == "user" else source
        text = f'The approval policy changed from "{previous}" to "{policy}" (changed by {changed_by}).'
        return ContextMessage(content=[TextBlock(text=text)], source=PLUGIN_SOURCE)

    @hookimpl
    def permission_knob(self, name: str) -> str | None:
        from harness_core.permissions import APPROVAL_POLICY_KNOB

        return self.policy if name == APPROVAL_POLICY_KNOB else None

    @hookimpl
    def permission_knob_set(self, name: str, value: str, source: str) -> list[ContextMessage] | None:
        from harness_core.permissions import APPROVAL_POLICY_KNOB

        if name != APPROVAL_POLICY_KNOB:
            return None
        if value not in ("ask", "never"):
            raise ValueError(f'{APPROVAL_POLICY_KNOB}: unknown value {value!r}; expected one of ask, never')
        # The live setter, so the model hears of the switch (reference/plugins.md §9 (c)).
        notice = self.set_policy(value, source)
        return [notice] if notice is not None else []

    def policy_context(self) -> str:
        """The model-visible description of the current policy."""
        return policy_context_text(self.policy)

    # --- grants -----------------------------------------------------------------------------

    def _grant(self, request: ApprovalRequest, call: Execution) -> Grant:
        grant = Grant(
            id=new_grant_id(),
            tool_name=request.tool_name,
            fingerprint=fingerprint(call.arguments),
            reason=request.reason,
            call_id=request.call_id,
        )
        self.grants[grant.id] = grant
        self._record(GRANT_EVENT, grant.to_json())
        return grant

    def _grant_for(self, tool_name: str, arguments: Any, reason: str | None) -> Grant | None:
        # A grant answers exactly the ask it was given for: same tool, same arguments, same reason
        # (so a grant for running a command never answers that command's sandbox escalation).
        if not self.grants or self.settings is None or not self.settings.grants:
            return None
        self._apply_revocations()
        digest = fingerprint(arguments)
        for grant in self.grants.values():
            if grant.tool_name == tool_name and grant.fingerprint == digest and grant.reason == reason:
                return grant
        return None

    def _apply_revocations(self) -> None:
        # `harness approvals revoke` appends to the session log from another process: read it back.
        path = getattr(self.harness.events if self.harness else None, "path", None)
        if path is None or not Path(path).is_file():
            return
        from harness_core.session_log import read_session

        revoked = {str(event.data.get("id")) for event in read_session(Path(path)).events if event.type == REVOKE_EVENT}
        for grant_id in revoked:
            self.grants.pop(grant_id, None)

    def revoke(self, grant_id: str, source: str = "user") -> bool:
        """Revoke a grant of this session; ``False`` if there is no such active grant."""
        if self.grants.pop(grant_id, None) is None:
            return False
        self._record(REVOKE_EVENT, {"id": grant_id, "source": source})
        return True

    def _record(self, kind: str, data: dict[str, Any]) -> None:
        events = self.harness.events if self.harness is not None else None
        if events is not None:
            events.append(kind, data)

    # --- CLI --------------------------------------------------------------------------------

    @hookimpl
    def harness_register_commands(self, register: Callable[..., None]) -> None:
        from .commands import run_approvals, setup_approvals

        register("approvals", help="list or revoke the session grants of the approval plugin", setup=setup_approvals, run=run_approvals)
