"""The code-python plugin: the [code_python] section, the code_runtime answer, doctor lines, close."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness_core import Harness, HarnessConfig, PluginRefusedError, hookimpl
from harness_core.code_mode import CodeRuntime

if TYPE_CHECKING:
    from harness_core.processes import ProcessGroups
    from harness_core.sandbox import SandboxPolicy

    from .config import CodePythonConfig
    from .runtime import PythonRuntime

__all__ = ["CodePythonPlugin", "SECTION"]

#: The config section this plugin owns: ``[code_python]`` in harness.toml.
SECTION = "code_python"


class CodePythonPlugin:
    """Answers ``code_runtime`` with a :class:`PythonRuntime` built from the ``[code_python]`` section.

    The entry point names the class, so each Harness gets its own instance and its own set of
    running worker processes (killed when that Harness closes).
    """

    def __init__(self) -> None:
        self.runtime: PythonRuntime | None = None
        #: The worker processes still running; made with the runtime, so that merely discovering
        #: the plugin (``harness plugins``) never imports the runtime module.
        self.live: ProcessGroups | None = None

    @hookimpl
    def harness_register_config(self, register: Callable[[str, type[Any]], None]) -> None:
        # Imported here, not at module level: defining pydantic models is the slow part of start-up.
        from .config import CodePythonConfig

        register(SECTION, CodePythonConfig)

    @hookimpl
    def harness_configure(self, config: HarnessConfig, harness: Harness) -> None:
        from harness_core.processes import ProcessGroups

        from .runtime import PythonRuntime

        settings: CodePythonConfig = config.section(SECTION)
        project_dir = Path(config.project_dir)
        if self.live is None:
            self.live = ProcessGroups()
        self.runtime = PythonRuntime(settings, harness, project_dir, self.live)

    @hookimpl
    def code_runtime(self) -> CodeRuntime:
        if self.runtime is None:
            raise PluginRefusedError('plugin "code-python" was asked for its runtime before it was configured')
        return self.runtime

    @hookimpl
    def harness_diagnose(self) -> list[tuple[str, str]]:
        runtime = self.runtime
        if runtime is None:
            return [("warning", "not configured: run_code programs cannot run")]
        # A program's own code is confined only by the sandbox: unconfined, run_code can do what an
        # unconfined shell can, whatever the tool policies say. That deserves a warning.
        if not runtime.settings.sandbox:
            return [
                (
                    "warning",
                    f"run_code programs run with {runtime.interpreter}, unsandboxed ([code_python] sandbox = false): "
                    "a program's own code is not confined",
                )
            ]
        hook = runtime.harness.plugin_manager.hook
        try:
            policy: SandboxPolicy | None = hook.sandbox_policy(execution=None, mode=None)
        except Exception as exc:
            return [("error", f"the sandbox policy cannot be resolved ({exc}); run_code programs will not run")]
        if policy is None:
            where = "unsandboxed (no sandbox plugin answers sandbox_policy)"
            return [("warning", f"run_code programs run with {runtime.interpreter}, {where}: a program's own code is not confined")]
        elif not policy.confined:
            where = f"unsandboxed (sandbox mode {policy.mode})"
        else:
            # The same question a run asks (the backend's probe result is cached by the sandbox plugin).
            try:
                confined = hook.sandbox_confine(argv=runtime.worker_argv(), policy=policy, cwd=policy.workspace_root)
            except Exception as exc:
                confined, problem = None, str(exc)
            else:
                problem = "sandbox_confine answered nothing"
            if confined is None:
                return [
                    (
                        "error",
                        f'run_code programs will not run: sandbox mode "{policy.mode}" needs confinement and '
                        f"none is usable here ({problem})",
                    )
                ]
            network = "on" if policy.network else "off"
            where = f"sandboxed by {confined.backend} ({policy.mode} mode, network {network})"
        return [("info", f"run_code programs run with {runtime.interpreter}, {where}")]

    @hookimpl
    def harness_close(self) -> None:
        if self.live is not None:
            self.live.close()
