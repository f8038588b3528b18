"""The tools plugin: hook implementations only (hookspecs, config section, configure, tools, close)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness_core import Harness, HarnessConfig, PluginRefusedError, ToolDefinition, hookimpl

from . import hookspecs

if TYPE_CHECKING:
    from .bash import BashTool
    from .config import ToolsConfig
    from .files import FileTools
    from .process import ProcessGroups

# The tool modules (process handling, file tools, sandbox access) are imported when the tools are
# registered, not when the entry point loads: `harness plugins` and `harness --help` never need them.

__all__ = ["JOBS", "SECTION", "ToolsPlugin"]

#: The config section this plugin owns: ``[tools]`` in harness.toml.
SECTION = "tools"
#: The capability of a jobs plugin that takes background processes (``harness_provides``).
JOBS = "jobs"


class ToolsPlugin:
    """Contributes ``bash``, ``read``, ``write`` and ``edit``, and the ``fs_write_intent`` hook.

    The entry point names the class, so each Harness (a session) gets its own instance: its own
    read-before-edit record and its own running process groups.
    """

    def __init__(self) -> None:
        # Set by harness_configure and harness_register_tools, which the host runs in that order.
        self.settings: ToolsConfig | None = None
        self.harness: Harness | None = None
        self.project_dir: Path | None = None
        self.bash: BashTool | None = None
        self.files: FileTools | None = None
        self.background_advertised = False
        #: Process groups of bash calls still running (killed if the Harness closes under them).
        self.live_groups: ProcessGroups | None = None

    @hookimpl
    def harness_add_hookspecs(self, add: Callable[[object], None]) -> None:
        add(hookspecs)

    @hookimpl
    def harness_register_config(self, register: Callable[[str, type[Any]], None]) -> None:
        # Imported here, not at module level: defining pydantic models is the slow part of start-up.
        from .config import ToolsConfig

        register(SECTION, ToolsConfig)

    @hookimpl
    def harness_configure(self, config: HarnessConfig, harness: Harness) -> None:
        self.settings = config.section(SECTION)
        self.harness = harness
        self.project_dir = config.project_dir
        for impl in harness.plugin_manager.hook.fs_write_intent.get_hookimpls():
            if impl.wrapper or impl.hookwrapper or inspect.iscoroutinefunction(impl.function):
                raise PluginRefusedError(
                    f'plugin "{impl.plugin_name}" implements fs_write_intent as a wrapper or async def; it is a '
                    "synchronous veto (nothing would await it, and nothing may undo a denial), so make it a plain def"
                )

    @hookimpl
    def harness_register_tools(self, register: Callable[[ToolDefinition], Callable[[], None]]) -> None:
        settings, harness, project_dir = self.settings, self.harness, self.project_dir
        if settings is None or harness is None or project_dir is None:
            raise PluginRefusedError('plugin "tools" was asked for its tools before it was configured')
        # Decided here, not in harness_configure: every plugin is configured by now, so a sandbox
        # plugin can tell whether it confines. The schemas are then fixed: escalation is offered only
        # while a confining sandbox is installed, background runs only while a jobs plugin is.
        from .bash import BashTool
        from .files import FileTools
        from .process import ProcessGroups
        from .sandboxing import CONFINING, SandboxAccess

        provided = harness.provided()
        confining = CONFINING in provided
        self.live_groups = ProcessGroups()
        self.background_advertised = JOBS in provided
        self.bash = BashTool(
            settings,
            harness,
            project_dir,
            SandboxAccess(harness, advertised=confining, subject="command"),
            self.live_groups,
        )
        self.files = FileTools(
            settings, harness, project_dir, SandboxAccess(harness, advertised=confining, subject="operation")
        )
        register(self.bash.definition(background_advertised=self.background_advertised))
        for definition in self.files.definitions():
            register(definition)

    @hookimpl
    def harness_close(self) -> None:
        # Calls still running own these groups and reap their leaders; make sure nothing outlives us.
        if self.live_groups is not None:
            self.live_groups.close()
        if self.files is not None:
            self.files.observations.clear()
