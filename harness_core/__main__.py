"""``python -m harness_core``: the ``harness`` command."""

from harness_cli import run

run()
