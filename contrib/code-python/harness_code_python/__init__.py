"""harness-code-python: the Code Mode runtime that runs ``run_code`` programs written in Python.

Each program runs in its own worker process (its own process group, confined by the sandbox
plugin when one answers); its ``await tools.<name>(args)`` calls come back over a pipe and run
through the whole policy pipeline. Configured by the ``[code_python]`` section.
"""

from .plugin import SECTION, CodePythonPlugin

# The config model (harness_code_python.config) and the runtime (harness_code_python.runtime) are
# imported when the host configures the plugin, which keeps `harness plugins` and `--help` quick.
__all__ = ["CodePythonPlugin", "SECTION"]
