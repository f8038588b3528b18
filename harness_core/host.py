"""The Harness: plugin registration (with the core's refusals), the typed hook facade, and execute.

Only this module touches pluggy's hook callers (STYLE rule 8). ``HookCalls`` builds one chain per
hook from ``get_hookimpls()`` when the set of plugins changes and reuses it for every call; the
plugin manager tells it when to rebuild.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping, Sequence
from types import CoroutineType, ModuleType, TracebackType
from typing import Any

import pluggy
import pydantic

from . import hookspecs
from .chain import Link, Waterfall, links_of
from .code_mode import CodeRuntimeMissingError, PresentationMode
from .code_transport import CODE_ONLY_RULE, PresentationModes
from .config import ConfigSource, HarnessConfig, Preset, compose
from .discovery import PluginRecord, discover_plugins, load_module_plugins
from .errors import HarnessError, PluginRefusedError
from .events import EventSink
from .hookspecs import PROJECT_NAME, CallNext
from .log import get_logger
from .pipeline import DryRun, Pipeline
from .registry import ToolDefinition, ToolRegistry
from .signal import Dispose, Signal
from .types import (
    Accept,
    Allow,
    ApprovalRequest,
    Ask,
    Block,
    ContentBlock,
    Deny,
    DispatchExecution,
    Execution,
    PostDecision,
    PreDecision,
    ToolCall,
    ToolResult,
)

__all__ = ["CloseError", "Harness", "HookCalls"]


#: Hooks the core walks itself; a pluggy wrapper on any of them would never run as intended.
CORE_RUN_HOOKS = frozenset(
    {
        "harness_register_tools",
        "harness_add_hookspecs",
        "harness_register_config",
        "harness_register_presets",
        "harness_configure",
        "harness_provides",
        "harness_close",
        "harness_register_commands",
        "harness_diagnose",
        "tools_pre_execute",
        "approval_request",
        "tools_guard",
        "tools_execute",
        "tools_post_execute",
        "tools_result",
        "tools_change",
        "tools_code_dispatch_log",
    }
)
#: Hooks whose impls are called without awaiting: an ``async def`` impl would silently never run.
SYNC_HOOKS = frozenset(
    {
        "tools_guard",
        "tools_result",
        "tools_change",
        "harness_register_tools",
        "harness_add_hookspecs",
        "harness_register_config",
        "harness_register_presets",
        "harness_configure",
        "harness_provides",
        "harness_register_commands",
        "harness_diagnose",
        "code_runtime",
    }
)


# --- Per-link return checks: a wrong type is caught where it was returned, naming the plugin ---


def _check_pre(decision: object, link: Link) -> PreDecision:
    kind = type(decision)
    if kind is Allow or kind is Deny or kind is Ask:
        return decision  # type: ignore[return-value]
    # Fail closed: a confused listener denies, it never lets the call through (DESIGN §5).
    return Deny(
        reason=f'plugin "{link.plugin_name}" returned {kind.__name__} from tools_pre_execute; '
        "expected Allow, Deny or Ask"
    )


def _check_execute(result: object, link: Link) -> ToolResult:
    if type(result) is ToolResult:
        return result
    raise TypeError(f'plugin "{link.plugin_name}" returned {type(result).__name__} from tools_execute; expected ToolResult')


def _check_post(decision: object, link: Link) -> PostDecision:
    kind = type(decision)
    if kind is Accept or kind is Block:
        return decision  # type: ignore[return-value]
    raise TypeError(
        f'plugin "{link.plugin_name}" returned {kind.__name__} from tools_post_execute; expected Accept or Block'
    )


def _check_dispatch_log(content: object, link: Link) -> list[ContentBlock]:
    if isinstance(content, list | tuple) and all(isinstance(block, ContentBlock) for block in content):
        return list(content)
    raise TypeError(
        f'plugin "{link.plugin_name}" returned {type(content).__name__} from tools_code_dispatch_log; '
        "expected a list of content blocks"
    )


class _Chains:
    """Every hook's links in call order, built at once after a registration change."""

    __slots__ = ("pre", "guards", "execute", "post", "approval", "result", "change", "dispatch_log")

    def __init__(self, hook: Any) -> None:
        self.pre = Waterfall("tools_pre_execute", ("execution", "call_next"), links_of(hook.tools_pre_execute), _check_pre)
        self.execute = Waterfall("tools_execute", ("execution", "call_next"), links_of(hook.tools_execute), _check_execute)
        self.post = Waterfall("tools_post_execute", ("execution", "result", "call_next"), links_of(hook.tools_post_execute), _check_post)
        self.dispatch_log = Waterfall(
            "tools_code_dispatch_log", ("dispatch", "call_next"), links_of(hook.tools_code_dispatch_log), _check_dispatch_log
        )
        self.guards = links_of(hook.tools_guard)
        self.approval = links_of(hook.approval_request)
        self.result = links_of(hook.tools_result)
        self.change = links_of(hook.tools_change)


class HookCalls:
    """The typed facade over the hooks: one method per hook, chains cached between changes."""

    def __init__(self, pm: pluggy.PluginManager) -> None:
        self._pm = pm
        self._chains: _Chains | None = None

    def invalidate(self) -> None:
        """Forget the cached chains; the next call rebuilds them from pluggy."""
        self._chains = None

    @property
    def chains(self) -> _Chains:
        chains = self._chains
        if chains is None:
            chains = self._chains = _Chains(self._pm.hook)
        return chains

    async def pre_execute(self, execution: Execution, default: CallNext[PreDecision]) -> PreDecision:
        return await self.chains.pre.run((execution,), default)

    def has_approval(self) -> bool:
        return bool(self.chains.approval)

    async def approval_request(self, request: ApprovalRequest) -> object:
        """The first non-``None`` answer, in call order; ``None`` when every impl abstains."""
        arguments = {"request": request}
        for link in self.chains.approval:
            answer = link.call(arguments)
            if link.is_async or type(answer) is CoroutineType:
                answer = await answer
            if answer is not None:
                return answer
        return None

    def guard(self, execution: Execution) -> str | None:
        """The first guard's denial reason (as ``str``), or ``None`` when every guard abstains."""
        arguments = {"execution": execution}
        for link in self.chains.guards:
            verdict = link.call(arguments)
            if verdict is not None:
                return verdict if type(verdict) is str else str(verdict)
        return None

    async def execute(self, execution: DispatchExecution, default: CallNext[ToolResult]) -> ToolResult:
        return await self.chains.execute.run((execution,), default)

    async def post_execute(self, execution: Execution, result: ToolResult, default: CallNext[PostDecision]) -> PostDecision:
        return await self.chains.post.run((execution, result), default)

    def result(self, execution: Execution, result: ToolResult) -> None:
        """Tell every observer; a raising observer is logged and the others still hear it."""
        links = self.chains.result
        if not links:
            return
        arguments = {"execution": execution, "result": result}
        for link in links:
            try:
                link.call(arguments)
            except Exception as exc:
                get_logger().warning(
                    'tool "%s" (%s): tools_result observer %r failed: %s',
                    execution.name,
                    execution.call_id,
                    link.plugin_name,
                    exc,
                )

    def change(self) -> None:
        """Tell every ``tools_change`` listener; an exception propagates (the change rolls back)."""
        for link in self.chains.change:
            link.call({})

    async def code_dispatch_log(self, dispatch: Any, default: CallNext[list[ContentBlock]]) -> list[ContentBlock]:
        return await self.chains.dispatch_log.run((dispatch,), default)

    def code_runtime(self) -> Any:
        """The first ``code_runtime`` answer (``None``: no runtime is installed)."""
        return self._pm.hook.code_runtime()


def refuse_unsafe_impls(pm: pluggy.PluginManager, plugin: object) -> None:
    """Raise PluginRefusedError if ``plugin`` has an impl the core cannot run safely (DESIGN §2)."""
    plugin_name = pm.get_name(plugin)
    for caller in pm.get_hookcallers(plugin) or ():
        for impl in caller.get_hookimpls():
            if impl.plugin is not plugin:
                continue
            hook = caller.name
            if hook in CORE_RUN_HOOKS and (impl.wrapper or impl.hookwrapper):
                raise PluginRefusedError(
                    f'plugin "{plugin_name}" implements {hook} as a wrapper; the core runs {hook} itself, '
                    "so use a plain impl (waterfall impls receive call_next instead)"
                )
            if hook in SYNC_HOOKS and inspect.iscoroutinefunction(impl.function):
                raise PluginRefusedError(
                    f'plugin "{plugin_name}" implements {hook} as async def; {hook} is synchronous '
                    "(nothing would await it), so make it a plain def"
                )


class CloseError(HarnessError):
    """Raised by ``aclose`` after every plugin was closed, when some of them failed to."""

    code = "CLOSE_FAILED"

    def __init__(self, failures: list[str]) -> None:
        super().__init__("some plugins failed to close: " + "; ".join(failures))
        self.failures = failures


def _check_section(name: object, model: object, plugin: str, owners: Mapping[str, str]) -> None:
    if not isinstance(name, str) or not all(part.isidentifier() for part in name.split(".")):
        raise PluginRefusedError(
            f'plugin "{plugin}" registered config section {name!r}; use a name like "path_guard" or "hooks.codex"'
        )
    if name in owners or name.split(".")[0] in ("preset", "presets"):
        raise PluginRefusedError(f'plugin "{plugin}" registered config section [{name}], which {owners.get(name, "the core")} owns')
    for owned in owners:
        # A section cannot sit inside another one, or hold one: [hooks] and [hooks.codex] would clash.
        if owned.startswith(name + ".") or name.startswith(owned + "."):
            raise PluginRefusedError(
                f'plugin "{plugin}" registered config section [{name}], which overlaps [{owned}] of {owners[owned]}'
            )
    if not (isinstance(model, type) and issubclass(model, pydantic.BaseModel)):
        raise PluginRefusedError(f'plugin "{plugin}" registered config section [{name}] with {model!r}; expected a pydantic model class')
    if model.model_config.get("extra") != "forbid":
        raise PluginRefusedError(
            f'plugin "{plugin}" config model for [{name}] must set model_config = ConfigDict(extra="forbid") '
            "so that unknown keys are errors"
        )


def _check_preset(
    name: object,
    fragment: object,
    description: object,
    extends: object,
    default: object,
    plugin: str,
    known: Mapping[str, Preset],
) -> Preset:
    if not isinstance(name, str) or not name:
        raise PluginRefusedError(f'plugin "{plugin}" registered a preset named {name!r}; use a non-empty str')
    if name in known:
        raise PluginRefusedError(f'plugin "{plugin}" registered preset "{name}", already defined by {known[name].source}')
    if not isinstance(fragment, Mapping):
        raise PluginRefusedError(f'plugin "{plugin}" preset "{name}" must be a mapping of config sections')
    for reserved in ("preset", "presets", "plugins"):
        if reserved in fragment:
            raise PluginRefusedError(f'plugin "{plugin}" preset "{name}" sets "{reserved}"; a preset cannot select presets or load plugins')
    if isinstance(extends, str):
        extends = (extends,)
    if not isinstance(extends, Sequence) or not all(isinstance(item, str) for item in extends):
        raise PluginRefusedError(f'plugin "{plugin}" preset "{name}" extends must be a list of preset names')
    return Preset(
        name=name,
        fragment=dict(fragment),
        description=str(description),
        extends=tuple(extends),
        source=f'plugin "{plugin}"',
        default=bool(default),
    )


class _PluginManager(pluggy.PluginManager):
    """pluggy's manager, plus the core's refusals and chain invalidation on every change."""

    def __init__(self, hooks: HookCalls | None = None) -> None:
        super().__init__(PROJECT_NAME)
        self.hook_calls = hooks

    def register(self, plugin: object, name: str | None = None) -> str | None:
        plugin_name = super().register(plugin, name or self._default_name(plugin))
        if plugin_name is None:
            return None
        try:
            refuse_unsafe_impls(self, plugin)
        except PluginRefusedError:
            super().unregister(plugin)
            raise
        finally:
            if self.hook_calls is not None:
                self.hook_calls.invalidate()
        return plugin_name

    def _default_name(self, plugin: object) -> str:
        """A readable name for an unnamed plugin (pluggy would use its id): module or class name.

        A second instance of the same class gets ``#2``, ``#3``, ... so error messages that name
        the plugin still tell them apart.
        """
        base = getattr(plugin, "__name__", None) if inspect.ismodule(plugin) or inspect.isclass(plugin) else None
        if not isinstance(base, str):
            base = type(plugin).__qualname__
        name, counter = base, 1
        while self.has_plugin(name) or self.is_blocked(name):
            counter += 1
            name = f"{base}#{counter}"
        return name

    def unregister(self, plugin: object | None = None, name: str | None = None) -> Any:
        try:
            return super().unregister(plugin, name)
        finally:
            if self.hook_calls is not None:
                self.hook_calls.invalidate()


class Harness:
    """The host: registered plugins, their configuration, the tool registry, and the pipeline.

    ``Harness(plugins=[A, B])`` registers in list order, so pluggy calls B before A (B is the
    outer waterfall listener). ``load_entrypoints=True`` also loads the ``harness`` entry points
    (see :mod:`harness_core.discovery`). ``config`` is a ``ConfigSource`` (files and overrides,
    ``ConfigSource.for_project(dir)``), a plain mapping (one layer, handy in tests) or ``None``.
    ``events`` receives session events (``None``: discarded). ``configure=False`` stops after
    registering the plugins (no configuration, no tools): enough to list what loads, quickly.

    Start-up order: register plugins → check hook names → compose and validate the configuration
    (sections and presets from ``harness_register_config`` / ``harness_register_presets``) →
    ``harness_configure`` → ``harness_register_tools``. Any failure raises before a call can run.
    """

    def __init__(
        self,
        plugins: Iterable[object] = (),
        *,
        config: ConfigSource | Mapping[str, Any] | None = None,
        load_entrypoints: bool = False,
        events: EventSink | None = None,
        configure: bool = True,
    ) -> None:
        self._pm = _PluginManager()
        self._hooks = HookCalls(self._pm)
        self._pm.hook_calls = self._hooks
        self._pm.add_hookspecs(hookspecs)
        self.tools = ToolRegistry(self._hooks.change)
        self._modes = PresentationModes(self._hooks.change)
        self._pipeline = Pipeline(self.tools, self._hooks, events, self._modes)
        self._tool_disposers: dict[str, list[Dispose]] = {}
        self._closed = False
        self.source = config if isinstance(config, ConfigSource) else ConfigSource.from_mapping(config or {})
        #: What discovery did with each entry point and ``[plugins] modules`` entry.
        self.discovery: list[PluginRecord] = []
        settings = self.source.plugin_settings()
        for name in settings.block:
            self._pm.set_blocked(name)
        for plugin in plugins:
            self._register_plugin(plugin, None)
        if load_entrypoints:
            self.discovery += discover_plugins(settings, self._register_plugin)
        self.discovery += load_module_plugins(settings, self._register_plugin, self.source.project_dir)
        self._check_pending()
        self._config: HarnessConfig | None = None
        if not configure:
            # Discovery only (``harness plugins``): no configuration, no tools, nothing to run.
            return
        self._use_config(self._compose())
        for name, plugin in self.plugins():
            self._configure(name, plugin)
        for name, plugin in self.plugins():
            self._collect_tools(name, plugin)
        for warning in self.warnings():
            get_logger().warning("%s", warning)

    @property
    def configured(self) -> bool:
        """False for a Harness created with ``configure=False`` (plugins registered, nothing more)."""
        return self._config is not None

    @property
    def config(self) -> HarnessConfig:
        """The effective, validated configuration."""
        if self._config is None:
            raise HarnessError("this Harness was created with configure=False: it has no configuration")
        return self._config

    # --- plugins ------------------------------------------------------------------------------

    @property
    def plugin_manager(self) -> pluggy.PluginManager:
        """The underlying pluggy manager (register and unregister through the Harness instead)."""
        return self._pm

    def register(self, plugin: object, name: str | None = None) -> str:
        """Add a plugin after start-up: refuse unsafe impls, configure it, collect its tools."""
        plugin_name = self._register_plugin(plugin, name)
        try:
            self._check_pending()
            if self._impls("harness_register_config", plugin) or self._impls("harness_register_presets", plugin):
                self._use_config(self._compose())
            self._configure(plugin_name, plugin)
            self._collect_tools(plugin_name, plugin)
        except BaseException:
            self.unregister(plugin)
            raise
        return plugin_name

    def _register_plugin(self, plugin: object, name: str | None = None) -> str:
        plugin_name = self._pm.register(plugin, name)
        if plugin_name is None:
            raise PluginRefusedError(f"plugin {name or plugin!r} is blocked and was not registered")
        self._tool_disposers[plugin_name] = []
        for impl in self._impls("harness_add_hookspecs", plugin):
            try:
                impl.function(*[self._add_hookspecs for _ in impl.argnames])
            except BaseException:
                self._pm.unregister(plugin)
                raise
        return plugin_name

    def _add_hookspecs(self, specs: ModuleType | type) -> None:
        self._pm.add_hookspecs(specs)
        self._hooks.invalidate()

    def _impls(self, hook_name: str, plugin: object | None = None) -> list[Any]:
        caller = getattr(self._pm.hook, hook_name)
        return [impl for impl in caller.get_hookimpls() if plugin is None or impl.plugin is plugin]

    def _use_config(self, config: HarnessConfig) -> None:
        self._config = config
        section = config.section("code_mode")
        self._modes.configure(section.mode, section.agents, section.max_parallel_sub_calls)

    def _compose(self) -> HarnessConfig:
        sections: dict[str, type[pydantic.BaseModel]] = {}
        owners: dict[str, str] = {"plugins": "the core", "session": "the core", "code_mode": "the core"}
        for impl in self._impls("harness_register_config"):

            def register_section(name: str, model: type[pydantic.BaseModel], _plugin: str = impl.plugin_name) -> None:
                _check_section(name, model, _plugin, owners)
                sections[name] = model
                owners[name] = f'plugin "{_plugin}"'

            impl.function(*[register_section for _ in impl.argnames])
        presets: dict[str, Preset] = {}
        for impl in self._impls("harness_register_presets"):

            def register_preset(
                name: str,
                fragment: Mapping[str, Any],
                description: str = "",
                extends: Sequence[str] = (),
                default: bool = False,
                _plugin: str = impl.plugin_name,
            ) -> None:
                presets[name] = _check_preset(name, fragment, description, extends, default, _plugin, presets)

            impl.function(*[register_preset for _ in impl.argnames])
        return compose(self.source, sections, presets)

    def _configure(self, name: str, plugin: object) -> None:
        arguments = {"config": self.config, "harness": self}
        for impl in self._impls("harness_configure", plugin):
            try:
                impl.function(*[arguments[name] for name in impl.argnames])
            except HarnessError:
                raise
            except Exception as exc:
                raise PluginRefusedError(f'plugin "{name}" failed to configure: {type(exc).__name__}: {exc}') from exc

    def _collect_tools(self, name: str, plugin: object) -> None:
        disposers = self._tool_disposers.setdefault(name, [])

        def register(definition: ToolDefinition) -> Dispose:
            dispose = self.tools.register(definition)
            disposers.append(dispose)
            return dispose

        for impl in self._impls("harness_register_tools", plugin):
            impl.function(*[register for _ in impl.argnames])

    def provided(self) -> set[str]:
        """Capabilities the registered plugins say they enforce (``harness_provides``)."""
        capabilities: set[str] = set()
        for impl in self._impls("harness_provides"):
            capabilities.update(impl.function() or ())
        return capabilities

    def warnings(self) -> list[str]:
        """What deserves a look although the harness starts (logged at start-up, listed by doctor).

        Today: a tool that declares ``timeout_ms`` while no plugin provides ``"timeout_ms"``, since
        the core itself never enforces a deadline.
        """
        found = []
        if "timeout_ms" not in self.provided():
            for definition in self.tools:
                if definition.timeout_ms is not None:
                    found.append(
                        f'tool "{definition.name}" declares timeout_ms={definition.timeout_ms:g} but no plugin '
                        "enforces it (install the timeout policy plugin)"
                    )
        return found

    def diagnose(self) -> list[tuple[str, str, str]]:
        """``(source, level, message)`` for ``harness doctor``: the core's warnings and every plugin's
        ``harness_diagnose`` report. A plugin whose report fails is itself reported as an error."""
        found = [("core", "warning", warning) for warning in self.warnings()]
        for impl in self._impls("harness_diagnose"):
            try:
                entries = impl.function() or []
                for level, message in entries:
                    if level not in ("info", "warning", "error"):
                        raise ValueError(f"unknown level {level!r}")
                    found.append((impl.plugin_name, level, str(message)))
            except Exception as exc:
                found.append((impl.plugin_name, "error", f"harness_diagnose failed: {type(exc).__name__}: {exc}"))
        return found

    def unregister(self, plugin: object) -> None:
        """Remove a plugin and the tools it registered."""
        plugin_name = self._pm.get_name(plugin)
        if plugin_name is None:
            return
        for dispose in reversed(self._tool_disposers.pop(plugin_name, [])):
            dispose()
        self._pm.unregister(plugin)

    def _check_pending(self) -> None:
        # pluggy's check_pending, with the plugin's registered name and a hint in the message.
        for hook_name, caller in vars(self._pm.hook).items():
            if not isinstance(caller, pluggy.HookCaller) or caller.has_spec():
                continue
            for impl in caller.get_hookimpls():
                if not impl.optionalhook:
                    raise PluginRefusedError(
                        f'plugin "{impl.plugin_name}" implements unknown hook {hook_name!r}: no hook '
                        "specification by that name is registered (a typo, or the plugin that adds "
                        "that spec is not installed)"
                    )

    def plugins(self) -> list[tuple[str, object]]:
        """``(name, plugin)`` for every registered plugin, in registration order."""
        # pluggy keeps a blocked name as a (name, None) entry; that is not a plugin.
        return [(name, plugin) for name, plugin in self._pm.list_name_plugin() if plugin is not None]

    # --- Code Mode: what each agent is shown ---------------------------------------------------

    def present_as(self, agent: str, mode: PresentationMode) -> Dispose:
        """Declare ``agent``'s presentation mode at run time, over ``[code_mode]``; fires ``tools_change``.

        A second declaration for the same agent raises ``ValueError`` until the first is disposed
        (the returned ``dispose`` removes it, and fires ``tools_change`` again).
        """
        return self._modes.declare(agent, mode)

    def presentation_mode(self, agent: str | None = None) -> PresentationMode:
        """The mode for ``agent``: its ``present_as`` declaration, else ``[code_mode] agents``, else ``mode``."""
        return self._modes.of(agent)

    def schemas(self, agent: str | None = None) -> list[dict[str, Any]]:
        """What the model is shown for ``agent``: ``native`` every tool, ``both`` the tools and
        ``run_code``, ``code`` only ``run_code`` (``h.tools.schemas()`` is the registry's raw list)."""
        mode = self._modes.of(agent)
        if mode == "native":
            return self.tools.schemas()
        run_code = self._pipeline.code.schema()
        return [run_code] if mode == "code" else [*self.tools.schemas(), run_code]

    def visible_tool(self, name: str, agent: str | None = None) -> ToolDefinition | None:
        """The definition a model-direct call of ``name`` by ``agent`` resolves to (``run_code``
        included when the agent's mode is not ``native``), or ``None``."""
        return self._pipeline.resolve(name, agent)

    def code_sdk(self, agent: str | None = None) -> str:
        """The prompt text for ``agent``'s Code Mode: the runtime's SDK for the tools a program may
        call, plus the code-only rule under mode ``code``; empty under ``native``.

        Raises :class:`~harness_core.code_mode.CodeRuntimeMissingError` when no runtime is installed.
        """
        mode = self._modes.of(agent)
        if mode == "native":
            return ""
        code = self._pipeline.code
        runtime = code.runtime()
        if runtime is None:
            raise CodeRuntimeMissingError(self._modes.deployment)
        sdk = runtime.render_sdk(code.bindings())
        if type(sdk) is not str:
            raise TypeError(f"the code runtime's render_sdk returned {type(sdk).__name__}; expected str")
        return f"{CODE_ONLY_RULE}\n\n{sdk}" if mode == "code" else sdk

    # --- calls --------------------------------------------------------------------------------

    async def execute(self, call: ToolCall) -> ToolResult:
        """Run one call through the whole pipeline and return its frozen result.

        Never raises for a tool, policy or plugin failure: those become failed results. If the
        task awaiting this is cancelled, the call's signal is aborted, the outcome is still
        recorded (finalizer, ``tools_result``), and the cancellation propagates.
        """
        return await self._pipeline.execute(call)

    async def dry_run(self, call: ToolCall) -> DryRun:
        """What policy would decide for ``call`` (pre-execute, approval, guards); the body never runs.

        No ``tools_result`` fires and no ``tool/call`` or ``tool/result`` event is recorded. An ask
        does reach the approval service, as it would for a real call, and is audited like any
        other (``approval/asked``, ``approval/decided``): a human was asked.
        """
        return await self._pipeline.dry_run(call)

    @property
    def events(self) -> EventSink | None:
        """Where session events go (``None``: discarded); assignable, e.g. once a log is opened."""
        return self._pipeline.sink

    @events.setter
    def events(self, sink: EventSink | None) -> None:
        self._pipeline.sink = sink

    async def execute_batch(
        self, calls: Sequence[ToolCall], *, signal: Signal | None = None, max_parallel: int = 10
    ) -> list[ToolResult]:
        """Run one model turn's calls and return their results in model order.

        Pre-execute, approval and guards run serially in model order; only dispatch overlaps,
        and only for calls whose tool says ``is_concurrency_safe(args)``; any other call runs alone.
        Post-execute and finish commit in model order. If ``signal`` aborts, no further call
        starts and each unstarted call gets an ``ABORTED_BEFORE_DISPATCH`` result.
        """
        return await self._pipeline.execute_batch(calls, signal=signal, max_parallel=max_parallel)

    # --- lifetime -----------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close every plugin (``harness_close``) in reverse registration order, then unregister all.

        Each failure is logged and none keeps the other plugins from closing; if any failed,
        :class:`CloseError` lists them once everything is closed. Closing twice is harmless.
        """
        if self._closed:
            return
        self._closed = True
        failures: list[str] = []
        for name, plugin in reversed(self.plugins()):
            for impl in self._impls("harness_close", plugin):
                try:
                    outcome = impl.function()
                    if inspect.isawaitable(outcome):
                        await outcome
                except Exception as exc:
                    get_logger().error("plugin %r failed to close: %s: %s", name, type(exc).__name__, exc)
                    failures.append(f'plugin "{name}": {type(exc).__name__}: {exc}')
        for _name, plugin in reversed(self.plugins()):
            self.unregister(plugin)
        if failures:
            raise CloseError(failures)

    async def __aenter__(self) -> Harness:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
