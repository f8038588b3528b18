"""The harness logger, created on first use: importing logging is a noticeable part of start-up."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import logging

__all__ = ["get_logger"]


def get_logger(name: str = "harness") -> logging.Logger:
    """The logger ``name`` (``harness`` or a child such as ``harness.approval``)."""
    import logging

    return logging.getLogger(name)
