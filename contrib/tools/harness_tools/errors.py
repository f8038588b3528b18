"""Coded errors of the tools: invalid arguments, file-system refusals and background execution."""

from __future__ import annotations

from harness_core import HarnessError

__all__ = ["BackgroundUnavailableError", "FsError", "ToolInputError", "with_remedy"]


class ToolInputError(HarnessError):
    """Raised when a tool's arguments are malformed; the message names the argument and what it needs."""

    code = "INVALID_ARGS"


class FsError(HarnessError):
    """Raised when a file operation is refused or fails; ``code`` says which (``FS_STALE_VERSION``, ...).

    Codes follow reference/plugins.md §13: ``FS_NOT_FOUND``, ``FS_NOT_REGULAR_FILE``, ``FS_NOT_TEXT``,
    ``FS_TOO_LARGE``, ``FS_NOT_OBSERVED``, ``FS_STALE_VERSION``, ``FS_EDIT_NOT_FOUND``,
    ``FS_AMBIGUOUS_EDIT``, ``FS_SANDBOX_DENIED``, ``FS_INTENT_DENIED``, ``FS_IO_ERROR``.
    """

    code = "FS_IO_ERROR"

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message, code=code)


class BackgroundUnavailableError(HarnessError):
    """Raised when a bash call asks for ``run_in_background`` and no jobs plugin can take the process."""

    code = "BACKGROUND_UNAVAILABLE"


#: reference/plugins.md §15: the remedy appended at the tool boundary, code preserved.
_REMEDIES = {
    "FS_STALE_VERSION": " — re-read the file, then retry",
    "FS_NOT_OBSERVED": " — read the file, then retry",
}


def with_remedy(code: str, message: str) -> FsError:
    """An FsError whose message ends with the model-facing remedy for its code, if it has one."""
    return FsError(code, message + _REMEDIES.get(code, ""))
