"""The permission-presets plugin: ships the presets, derives the current one, switches the knobs.

It owns no enforcement (reference/plugins.md §9): the sandbox plugin enforces ``sandbox.mode`` and
the approval plugin ``approval.policy``. A switch records the user's intent (``permission/preset``)
first, then writes each changed knob through its owner (``permission_knob_set``), whose own events
(``sandbox/mode``, ``approval/policy``) and notices follow.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from harness_core import ConfigError, ContextMessage, Harness, HarnessConfig, HarnessError, hookimpl
from harness_core.config import ConfigProblem, effective_preset
from harness_core.permissions import APPROVAL_POLICY_KNOB, SANDBOX_MODE_KNOB
from harness_core.sandbox import SANDBOX_MODES

from .presets import SHIPPED, Bundle, fragment

if TYPE_CHECKING:
    import argparse

__all__ = ["CUSTOM", "PRESET_EVENT", "SECTION", "PermissionPresets", "UnknownPresetError"]

#: The config section this plugin owns: ``[permission]``.
SECTION = "permission"
#: The session event recording a selection (log-only; the knob events carry the consequences).
PRESET_EVENT = "permission/preset"
#: The derived state of knobs that match no preset; it can never be selected or defined.
CUSTOM = "custom"
APPROVAL_POLICIES = ("ask", "never")


class UnknownPresetError(HarnessError, KeyError):
    """Raised when a selection names a preset that is not in the table; nothing is recorded."""

    code = "UNKNOWN_PRESET"

    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(f'permission: unknown preset "{name}" (known: {", ".join(known)})')
        self.name = name
        self.known = known

    def __str__(self) -> str:
        # KeyError would quote the message; keep it readable.
        return self.message


def _problem(file: str, key: str, problem: str, fix: str = "") -> ConfigError:
    return ConfigError([ConfigProblem(file=file, key=key, problem=problem, fix=fix)])


class PermissionPresets:
    """The preset table, the current preset derived from the knobs, and the switch between them.

    Reach it as ``harness.plugin_manager.get_plugin("permission-presets")`` when it is loaded
    through its entry point. A session is one Harness lifetime with its session log.
    """

    def __init__(self) -> None:
        self.harness: Harness | None = None
        #: Presets that set both knobs, in table order: shipped first, then the others by name.
        self.table: dict[str, Bundle] = {}
        #: The last recorded selection; it wins ties while its bundle still matches the knobs.
        self.selected: str | None = None
        # The event sink the session's pin went to: a new sink is a new session, pinned once.
        self._pinned_sink: object | None = None
        self._ready = False

    # --- start-up ---------------------------------------------------------------------------

    @hookimpl
    def harness_register_config(self, register: Callable[[str, type[Any]], None]) -> None:
        from .config import PermissionConfig

        register(SECTION, PermissionConfig)

    @hookimpl
    def harness_register_presets(self, register: Callable[..., None]) -> None:
        for preset in SHIPPED:
            register(preset.name, fragment(preset), description=preset.description, default=preset.default)

    @hookimpl
    def harness_configure(self, config: HarnessConfig, harness: Harness) -> None:
        self.harness = harness
        if CUSTOM in config.available_presets:
            raise _problem(
                config.available_presets[CUSTOM].source,
                f"presets.{CUSTOM}",
                f'{SECTION}: "{CUSTOM}" is reserved for the derived not-a-preset state and cannot name a table entry',
                "give the preset another name",
            )
        if "timeout" not in config.sections:
            raise _problem(
                "plugins",
                "timeout",
                f"{SECTION}: no timeout policy is loaded (nobody owns [timeout]); every preset turns the timeout "
                "policy on, so composing this plugin without it is a misconfiguration",
                "install and load harness-timeout-policy (entry point timeout-policy), or block permission-presets",
            )
        self.table = self._build_table(config)

    def _build_table(self, config: HarnessConfig) -> dict[str, Bundle]:
        shipped = [preset.name for preset in SHIPPED]
        others = sorted(name for name in config.available_presets if name not in shipped)
        table: dict[str, Bundle] = {}
        for name in [*shipped, *others]:
            if name not in config.available_presets:
                continue
            settings = effective_preset(name, config)
            sandbox = settings.get("sandbox", {}).get("mode") if isinstance(settings.get("sandbox"), dict) else None
            approval = (
                settings.get("approval", {}).get("policy") if isinstance(settings.get("approval"), dict) else None
            )
            if sandbox is None or approval is None:
                continue  # not a permission preset: it leaves at least one knob alone
            source = config.available_presets[name].source
            if sandbox not in SANDBOX_MODES:
                raise _problem(
                    source,
                    f"presets.{name}.sandbox.mode",
                    f"{SECTION}: unknown sandbox mode {sandbox!r}",
                    f"use one of {', '.join(SANDBOX_MODES)}",
                )
            if approval not in APPROVAL_POLICIES:
                raise _problem(
                    source,
                    f"presets.{name}.approval.policy",
                    f"{SECTION}: unknown approval policy {approval!r}",
                    f"use one of {', '.join(APPROVAL_POLICIES)}",
                )
            table[name] = Bundle(sandbox, approval)
        return table

    @hookimpl
    def harness_register_tools(self) -> None:
        # Every plugin is configured by now, so the knob owners can answer (hookspecs: the host
        # runs harness_register_tools after every harness_configure). No tools are registered.
        harness = self._harness()
        if harness.plugin_manager.hook.permission_knob(name=SANDBOX_MODE_KNOB) is None:
            # reference/plugins.md §9 (e), worded for this composition: the sandbox plugin confines.
            raise _problem(
                "plugins",
                "sandbox",
                f"{SECTION}: no loaded plugin owns {SANDBOX_MODE_KNOB} (is the sandbox plugin loaded?) — presets "
                "bundle a sandbox mode, so composing this plugin without a confining sandbox is a misconfiguration",
                "install and load harness-sandbox (entry point sandbox), or block permission-presets",
            )
        if harness.plugin_manager.hook.permission_knob(name=APPROVAL_POLICY_KNOB) is None:
            raise _problem(
                "plugins",
                "approval",
                f"{SECTION}: no loaded plugin owns {APPROVAL_POLICY_KNOB} (is the approval plugin loaded?) — "
                "presets bundle an approval policy, so composing this plugin without the approval service is a "
                "misconfiguration",
                "install and load harness-approval (entry point approval), or block permission-presets",
            )
        self._ready = True
        self._pin()

    # --- session pinning ----------------------------------------------------------------------

    @hookimpl(tryfirst=True)
    def tools_pre_execute(self, call_next: Callable[[], Awaitable[Any]]) -> Awaitable[Any]:
        # The CLI attaches its session log after start-up: pin that session on its first call.
        self._pin()
        return call_next()

    def _pin(self) -> None:
        """Record the derived preset once per session log (reference/plugins.md §9 (c)), unless custom."""
        sink = self.harness.events if self.harness is not None else None
        if sink is None or sink is self._pinned_sink or not self._ready:
            return
        self._pinned_sink = sink
        derived = self.current()
        if derived != CUSTOM:
            sink.append(PRESET_EVENT, {"preset": derived})
            self.selected = derived

    # --- the runtime API ------------------------------------------------------------------------

    def names(self) -> list[str]:
        """The selectable presets, in table order (``custom`` is never one of them)."""
        return list(self.table)

    def bundle(self, name: str) -> Bundle:
        """The sandbox mode and approval policy of preset ``name``."""
        try:
            return self.table[name]
        except KeyError:
            raise UnknownPresetError(name, self.names()) from None

    def knobs(self) -> Bundle:
        """The effective sandbox mode and approval policy, as their owners report them."""
        hook = self._harness().plugin_manager.hook
        sandbox = hook.permission_knob(name=SANDBOX_MODE_KNOB)
        approval = hook.permission_knob(name=APPROVAL_POLICY_KNOB)
        if not isinstance(sandbox, str) or not isinstance(approval, str):
            raise HarnessError(
                f"{SECTION}: the knob owners went away "
                f"({SANDBOX_MODE_KNOB}={sandbox!r}, {APPROVAL_POLICY_KNOB}={approval!r})"
            )
        return Bundle(sandbox, approval)

    def current(self) -> str:
        """The current preset: the recorded selection if its bundle still matches the knobs, else the
        first preset in table order that matches them, else ``custom``."""
        knobs = self.knobs()
        if self.selected is not None and self.table.get(self.selected) == knobs:
            return self.selected
        for name, bundle in self.table.items():
            if bundle == knobs:
                return name
        return CUSTOM

    def select(self, name: str, source: str = "user") -> list[ContextMessage]:
        """Switch to preset ``name``: record the selection, then switch each knob that differs.

        Returns the model-visible notices of the switches (the approval plugin's switch notice).
        Re-selecting the current preset records nothing; an unknown name records nothing and
        raises :class:`UnknownPresetError`.
        """
        target = self.bundle(name)
        self._pin()
        if self.current() != name:
            # The selection precedes the knob events (reference/plugins.md §9 (c)).
            self._record(PRESET_EVENT, {"preset": name})
            self.selected = name
        knobs = self.knobs()
        notices: list[ContextMessage] = []
        if target.sandbox != knobs.sandbox:
            notices += self._switch(SANDBOX_MODE_KNOB, target.sandbox, source)
        if target.approval != knobs.approval:
            notices += self._switch(APPROVAL_POLICY_KNOB, target.approval, source)
        return notices

    def _switch(self, knob: str, value: str, source: str) -> list[ContextMessage]:
        answer = self._harness().plugin_manager.hook.permission_knob_set(name=knob, value=value, source=source)
        if answer is None:
            raise HarnessError(f"{SECTION}: no loaded plugin owns {knob}; cannot switch it to {value!r}")
        return list(answer)

    def _record(self, kind: str, data: dict[str, Any]) -> None:
        events = self.harness.events if self.harness is not None else None
        if events is not None:
            events.append(kind, data)

    def _harness(self) -> Harness:
        if self.harness is None:
            raise HarnessError("the permission-presets plugin was never configured (harness_configure did not run)")
        return self.harness

    # --- doctor and CLI -----------------------------------------------------------------------

    @hookimpl
    def harness_diagnose(self) -> list[tuple[str, str]]:
        """The current preset and the knobs it was derived from, for `harness doctor`."""
        knobs = self.knobs()
        current = self.current()
        detail = f'sandbox mode "{knobs.sandbox}", approval policy "{knobs.approval}"'
        if current == CUSTOM:
            return [("info", f"current preset custom: {detail} match no preset (available: {', '.join(self.names())})")]
        return [("info", f"current preset {current}: {detail} (available: {', '.join(self.names())})")]

    @hookimpl
    def harness_register_commands(self, register: Callable[..., None]) -> None:
        from .commands import run_permission, setup_permission

        def run(args: argparse.Namespace, harness: Harness) -> int:
            return run_permission(args, self)

        register(
            "permission",
            help="show the current permission preset, or switch to another",
            setup=setup_permission,
            run=run,
        )
