"""``python -m harness_core``: the ``harness`` command."""

from .cli import run

run()
