"""The path-guard plugin: hook implementations only (config section, configure, the guard)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from harness_core import Execution, HarnessConfig, hookimpl

from .matching import DenyMatcher, workspace_roots

if TYPE_CHECKING:
    from .config import PathGuardConfig

__all__ = ["SECTION", "PathGuard"]

#: The config section this plugin owns: ``[path_guard]`` in harness.toml.
SECTION = "path_guard"


class PathGuard:
    """Deny a file-tool call whose path matches a ``[path_guard] deny`` glob.

    The entry point names the class, so each Harness gets its own instance and configuration.
    """

    def __init__(self) -> None:
        # Set by harness_configure, which the host always runs before any call can reach the guard.
        self.settings: PathGuardConfig | None = None
        self.matcher: DenyMatcher | None = None

    @hookimpl
    def harness_register_config(self, register: Callable[[str, type[PathGuardConfig]], None]) -> None:
        # Imported here, not at module level: defining a pydantic model is the slow part of
        # start-up, and commands such as `harness plugins` never compose the configuration.
        from .config import PathGuardConfig

        register(SECTION, PathGuardConfig)

    @hookimpl
    def harness_configure(self, config: HarnessConfig) -> None:
        settings: PathGuardConfig = config.section(SECTION)
        self.settings = settings
        self.matcher = DenyMatcher(settings.deny, workspace_roots(str(config.project_dir), settings.workspace))

    @hookimpl
    def tools_guard(self, execution: Execution) -> str | None:
        if self.settings is None or self.matcher is None:
            return "path-guard was never configured, so it cannot tell which paths are protected"
        argument = self.settings.tools.get(execution.name)
        if argument is None:
            return None
        arguments = execution.arguments
        path = arguments.get(argument) if isinstance(arguments, Mapping) else None
        if not isinstance(path, str):
            # Abstaining is safe: a file tool cannot open a path it was not given as a string, and
            # its own argument validation rejects the call (a typed @tool with INVALID_ARGS).
            return None
        pattern = self.matcher.first_match(path)
        if pattern is None:
            return None
        return f'path "{path}" is protected by path-guard rule "{pattern}"'
