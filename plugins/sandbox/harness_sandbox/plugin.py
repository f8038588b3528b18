"""The sandbox plugin: the [sandbox] section, sandbox_policy, sandbox_confine and `harness sandbox`."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from harness_core import ContextMessage, Execution, Harness, HarnessConfig, HarnessError, hookimpl

if TYPE_CHECKING:
    from harness_core.sandbox import ConfinedCommand, SandboxMode, SandboxPolicy

    from .config import SandboxConfig
    from .selection import ProbeReport, Selection

# The policy, backend and selection modules are imported when the harness is configured, not when
# the entry point is loaded: `harness plugins` and `harness --help` never need them.

__all__ = ["MODE_EVENT", "SECTION", "SandboxPlugin"]

logger = logging.getLogger("harness.sandbox")

#: The config section this plugin owns: ``[sandbox]`` in harness.toml.
SECTION = "sandbox"
#: The session event recording a mode change (reference/plugins.md §3 (d)).
MODE_EVENT = "sandbox/mode"


class SandboxPlugin:
    """Resolves each call's sandbox policy and confines commands with the backend that works here.

    The entry point names the class, so each Harness gets its own instance, its own session
    override and its own cached probe.
    """

    def __init__(self) -> None:
        # Set by harness_configure, which the host runs before any tool can ask.
        self.settings: SandboxConfig | None = None
        self.harness: Harness | None = None
        self.workspace_root = ""
        self.temp_roots: tuple[str, ...] = ()
        self.extra_roots: tuple[str, ...] = ()
        self.mode_origin = "default"
        #: The session's own mode (``set_mode``); ``None`` follows the configuration.
        self.override: SandboxMode | None = None
        self.selection: Selection | None = None
        self._warned = False

    # --- start-up ---------------------------------------------------------------------------

    @hookimpl
    def harness_register_config(self, register: Callable[[str, type[Any]], None]) -> None:
        # Imported here, not at module level: defining a pydantic model is the slow part of
        # start-up, and `harness plugins` never composes the configuration.
        from .config import SandboxConfig

        register(SECTION, SandboxConfig)

    @hookimpl
    def harness_configure(self, config: HarnessConfig, harness: Harness) -> None:
        from .policy import canonical_path, temp_roots
        from .selection import Selection, default_backends

        settings: SandboxConfig = config.section(SECTION)
        self.settings, self.harness = settings, harness
        self.mode_origin = config.origin(f"{SECTION}.mode")
        self.workspace_root = canonical_path(str(config.project_dir))
        self.temp_roots = temp_roots()
        self.extra_roots = tuple(canonical_path(root, base=self.workspace_root) for root in settings.writable_roots)
        self.selection = Selection(settings.backend, default_backends(), settings.network, settings.probe_timeout_ms / 1000)

    @hookimpl
    def harness_provides(self) -> list[str]:
        # Probing here (once) is what lets tools advertise sandbox_permissions only when it can work.
        capabilities = ["sandbox"]
        if self._selection().active() is not None:
            capabilities.append("sandbox:confining")
        elif not self._warned and self.effective_mode() != "danger-full-access":
            self._warned = True
            logger.warning(
                'sandbox: no backend can enforce "%s" on this host, so confined commands are refused '
                "(SANDBOX_UNAVAILABLE); run `harness sandbox` to see why",
                self.effective_mode(),
            )
        return capabilities

    @hookimpl
    def harness_diagnose(self) -> list[tuple[str, str]]:
        """The cached probe report for `harness doctor`; an unenforceable confined mode is an error."""
        report = self._selection().report()
        mode = self.effective_mode()
        found: list[tuple[str, str]] = [("info", f'mode "{mode}", network {"on" if self.settings and self.settings.network else "off"}')]
        for verdict in report.verdicts:
            if verdict.backend == report.active:
                found.append(("info", f"backend {verdict.backend} is active: {verdict.detail}"))
            elif verdict.usable:
                found.append(("info", f"backend {verdict.backend} works but is {report.why_not(verdict)}"))
            else:
                found.append(("info", f"backend {verdict.backend} is not usable: {verdict.detail}"))
        if report.active is None and mode != "danger-full-access":
            found.append(
                ("error", f'no backend can enforce "{mode}" here: confined commands are refused (SANDBOX_UNAVAILABLE)')
            )
        return found

    @hookimpl
    def harness_register_commands(self, register: Callable[..., None]) -> None:
        from .commands import run_sandbox, setup_sandbox

        def run(args: Any, harness: Harness) -> int:
            return run_sandbox(args, self)

        register("sandbox", help="show the sandbox mode and which backend confines commands here", setup=setup_sandbox, run=run)

    # --- the seam ---------------------------------------------------------------------------

    @hookimpl
    def sandbox_policy(self, execution: Execution, mode: str | None) -> SandboxPolicy:
        return self.policy(mode)

    @hookimpl
    def sandbox_confine(self, argv: Sequence[str], policy: SandboxPolicy, cwd: str | None) -> ConfinedCommand | None:
        from harness_core.sandbox import SandboxPolicy, SandboxUnavailableError

        if not isinstance(policy, SandboxPolicy):
            raise TypeError(f"sandbox_confine needs a SandboxPolicy, got {type(policy).__name__}")
        if isinstance(argv, str) or not argv or not all(isinstance(word, str) for word in argv):
            raise TypeError(f"sandbox_confine needs argv as a non-empty list of str, got {argv!r}")
        if not policy.confined:
            return None  # danger-full-access: the tool runs the command itself, never wrapped
        active = self._selection().active()
        if active is None:
            raise SandboxUnavailableError(policy.mode)
        for root in policy.writable_roots:
            # The roots are canonical; a path that resolves elsewhere now was swapped for a symlink
            # (say by an earlier confined command: `ln -s / build` for a root that did not exist).
            # Granting it would grant the symlink's target.
            real = os.path.realpath(root)
            if real != root:
                raise SandboxUnavailableError(
                    policy.mode, f'writable root "{root}" now resolves to "{real}" (replaced by a symlink?); refusing to grant it'
                )
        backend, verdict = active
        return backend.confine(list(argv), policy, verdict, cwd)

    # --- the permission knob (harness_core.permissions) ----------------------------------------

    @hookimpl
    def permission_knob(self, name: str) -> str | None:
        from harness_core.permissions import SANDBOX_MODE_KNOB

        return self.effective_mode() if name == SANDBOX_MODE_KNOB else None

    @hookimpl
    def permission_knob_set(self, name: str, value: str, source: str) -> list[ContextMessage] | None:
        from harness_core.permissions import SANDBOX_MODE_KNOB
        from harness_core.sandbox import SANDBOX_MODES

        if name != SANDBOX_MODE_KNOB:
            return None
        if value not in SANDBOX_MODES:
            expected = ", ".join(SANDBOX_MODES)
            raise ValueError(f"{SANDBOX_MODE_KNOB}: unknown value {value!r}; expected one of {expected}")
        if value != self.effective_mode():
            self.set_mode(value, source)
        # The mode's model-visible consequence is the policy text tools render; no notice here.
        return []

    # --- session ------------------------------------------------------------------------------

    def set_mode(self, mode: str, source: str = "user") -> None:
        """Switch this session's mode (last one wins) and record a ``sandbox/mode`` event."""
        from .policy import check_mode

        checked = check_mode(mode)
        events = self.harness.events if self.harness is not None else None
        if events is not None:
            events.append(MODE_EVENT, {"mode": checked, "source": source})
        self.override = checked

    def policy(self, mode: str | None = None) -> SandboxPolicy:
        """The complete policy of a call; ``mode`` is an escalation the user approved for it."""
        from .policy import check_mode, resolve_policy

        settings = self._settings()
        # Precedence (reference/plugins.md §3): an approved escalation > the session > the config.
        chosen = check_mode(mode) if mode is not None else self.effective_mode()
        return resolve_policy(chosen, self.workspace_root, self.temp_roots, self.extra_roots, settings.network)

    def effective_mode(self) -> SandboxMode:
        """The session's mode: its override if it set one, else the configured default."""
        return self.override if self.override is not None else self._settings().mode

    def probe_report(self, *, everything: bool = False) -> ProbeReport:
        """Which backend is active and what each probed backend said (``harness sandbox``)."""
        return self._selection().report(everything=everything)

    def _settings(self) -> SandboxConfig:
        if self.settings is None:
            raise HarnessError("the sandbox plugin was never configured (harness_configure did not run)")
        return self.settings

    def _selection(self) -> Selection:
        if self.selection is None:
            raise HarnessError("the sandbox plugin was never configured (harness_configure did not run)")
        return self.selection
