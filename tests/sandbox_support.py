"""Test helpers shared by every suite that runs something under the real sandbox."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from harness_sandbox.policy import temp_roots


@contextmanager
def outside_folder(prefix: str) -> Iterator[Path]:
    """A fresh folder no writable root covers (not under /tmp or the temp dir); skips where none exists.

    workspace-write may write the workspace and the temp roots, so a write that must be denied
    needs a target elsewhere: /var/tmp or the home folder, whichever is not a temp root here.
    """
    roots = temp_roots()
    for base in ("/var/tmp", str(Path.home())):
        real = os.path.realpath(base)
        if os.path.isdir(real) and not any(real == root or real.startswith(root.rstrip("/") + "/") for root in roots):
            folder = Path(tempfile.mkdtemp(prefix=prefix, dir=real))
            try:
                yield folder
            finally:
                shutil.rmtree(folder, ignore_errors=True)
            return
    pytest.skip(f"no folder outside the writable temp roots {roots}")
