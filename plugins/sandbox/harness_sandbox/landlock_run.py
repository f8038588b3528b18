"""Landlock launcher: restrict this process's file writes (and TCP), then exec the command.

    python -I -S landlock_run.py [--rw PATH]... [--no-network] -- COMMAND [ARG]...
    python -I -S landlock_run.py [--rw PATH]... [--no-network] --probe

Run as a file (never imported by the plugin at run time), standard library only, so that an
isolated interpreter without site-packages starts it quickly. Every write right Landlock knows is
handled, and allowed only beneath the ``--rw`` paths (a path that is a file, such as /dev/null,
gets the file rights only); reads and execution stay unrestricted. ``--no-network`` also denies
TCP connect and bind (Landlock ABI >= 4) and, from ABI 6, abstract unix sockets outside the
sandbox, as a new network namespace would. Signals to processes outside the sandbox are denied
from ABI 6, and the capability bounding set is cleared, so a root caller keeps no capability.

Contract with the plugin (reference/plugins.md §4): a launcher failure prints one line
``landlock-run: <detail>`` to stderr and exits 125; a kernel whose ABI cannot enforce everything
asked prints ``landlock-run: partial enforcement (older Landlock ABI)`` and goes on. ``--probe``
restricts itself, checks that a write is really refused, and prints ``fully enforced (Landlock
ABI N)`` or ``partially enforced (older ABI) (Landlock ABI N)``.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import sys

# Importing typing would cost this launcher about 8 ms per command (it pulls in re); mypy still
# reads the guarded import.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn

RUNNER_FAILED = 125
PARTIAL_LINE = "landlock-run: partial enforcement (older Landlock ABI)"

# Syscall numbers are the same on every architecture (asm-generic numbering).
SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION = 1 << 0
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP = 38, 24

# include/uapi/linux/landlock.h
WRITE_FILE, REMOVE_DIR, REMOVE_FILE = 1 << 1, 1 << 4, 1 << 5
MAKE_CHAR, MAKE_DIR, MAKE_REG, MAKE_SOCK = 1 << 6, 1 << 7, 1 << 8, 1 << 9
MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 10, 1 << 11, 1 << 12
REFER = 1 << 13  # ABI 2: without it (ABI 1) the kernel refuses every cross-directory link/rename
TRUNCATE = 1 << 14  # ABI 3: without it truncate(2) is not controlled, hence "partial"
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6

WRITE_RIGHTS_V1 = (
    WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_CHAR | MAKE_DIR | MAKE_REG | MAKE_SOCK | MAKE_FIFO | MAKE_BLOCK | MAKE_SYM
)
FILE_RIGHTS = WRITE_FILE | TRUNCATE  # the only write rights that apply to a non-directory


class RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class LauncherError(Exception):
    """Raised when the restriction cannot be put in place; the command must not run."""


def fail(detail: str) -> NoReturn:
    sys.stderr.write(f"landlock-run: {detail}\n")
    sys.stderr.flush()
    os._exit(RUNNER_FAILED)


def parse(argv: list[str]) -> tuple[list[str], bool, bool, list[str]]:
    """``(rw paths, no_network, probe, command)``; raises LauncherError on bad usage."""
    writable: list[str] = []
    no_network = probe = False
    index = 0
    while index < len(argv):
        word = argv[index]
        if word == "--":
            return writable, no_network, probe, argv[index + 1 :]
        if word == "--rw" and index + 1 < len(argv):
            writable.append(argv[index + 1])
            index += 2
            continue
        if word == "--no-network":
            no_network = True
        elif word == "--probe":
            probe = True
        else:
            raise LauncherError(f"usage: unexpected argument {word!r} (expected --rw PATH, --no-network, --probe or --)")
        index += 1
    if not probe:
        raise LauncherError("usage: no command given after --")
    return writable, no_network, probe, []


class Kernel:
    """The three Landlock syscalls and prctl, through libc."""

    def __init__(self) -> None:
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.syscall.restype = ctypes.c_long
        self.libc.prctl.restype = ctypes.c_int

    def call(self, name: str, number: int, *args: object) -> int:
        result = int(self.libc.syscall(ctypes.c_long(number), *args))
        if result < 0:
            code = ctypes.get_errno()
            raise LauncherError(f"{name} failed: {errno.errorcode.get(code, code)} ({os.strerror(code)})")
        return result

    def abi(self) -> int:
        result = int(self.libc.syscall(ctypes.c_long(SYS_CREATE_RULESET), None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION)))
        if result >= 0:
            return result
        code = ctypes.get_errno()
        if code == errno.ENOSYS:
            raise LauncherError("this kernel has no Landlock support (landlock_create_ruleset: ENOSYS)")
        if code == errno.EOPNOTSUPP:
            raise LauncherError("Landlock is built in but disabled at boot (add landlock to the lsm= kernel parameter)")
        raise LauncherError(f"landlock_create_ruleset(VERSION) failed: {errno.errorcode.get(code, code)} ({os.strerror(code)})")

    def prctl(self, option: int, value: int) -> int:
        zero = ctypes.c_ulong(0)
        result = int(self.libc.prctl(ctypes.c_int(option), ctypes.c_ulong(value), zero, zero, zero))
        return 0 if result == 0 else ctypes.get_errno()


def restrict(kernel: Kernel, writable: list[str], no_network: bool) -> tuple[int, bool]:
    """Restrict this process; return ``(abi, partial)``."""
    abi = kernel.abi()
    handled_fs = WRITE_RIGHTS_V1 | (REFER if abi >= 2 else 0) | (TRUNCATE if abi >= 3 else 0)
    attr = RulesetAttr(handled_access_fs=handled_fs, handled_access_net=0, scoped=0)
    size = 8
    if no_network and abi >= 4:
        attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP
        size = 16
    if abi >= 6:
        attr.scoped = SCOPE_SIGNAL | (SCOPE_ABSTRACT_UNIX_SOCKET if no_network else 0)
        size = 24
    partial = abi < 3 or (no_network and abi < 4)
    ruleset = kernel.call("landlock_create_ruleset", SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    try:
        for path in writable:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except FileNotFoundError:
                continue  # a missing root grants nothing (reference/plugins.md §2: canonicalPath)
            except OSError as exc:
                raise LauncherError(f"cannot open writable root {path!r}: {exc.strerror}") from None
            try:
                check_unmoved(fd, path)
                is_dir = stat.S_ISDIR(os.fstat(fd).st_mode)
                rule = PathBeneathAttr(allowed_access=handled_fs if is_dir else handled_fs & FILE_RIGHTS, parent_fd=fd)
                kernel.call(f"landlock_add_rule({path!r})", SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(RULE_PATH_BENEATH), ctypes.byref(rule), ctypes.c_uint32(0))
            finally:
                os.close(fd)
        drop_capabilities(kernel)
        code = kernel.prctl(PR_SET_NO_NEW_PRIVS, 1)
        if code:
            raise LauncherError(f"prctl(PR_SET_NO_NEW_PRIVS) failed: {os.strerror(code)}")
        kernel.call("landlock_restrict_self", SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))
    finally:
        os.close(ruleset)
    return abi, partial


def check_unmoved(fd: int, path: str) -> None:
    """Refuse a root that no longer is where the plugin found it (a symlink swapped in since).

    The plugin passes canonical paths. A sandboxed command may since have replaced a writable
    root, or a folder on its way, by a symlink (``ln -s / build``); the opened fd is what gets
    granted, so it is checked, not the path.
    """
    try:
        opened = os.readlink(f"/proc/self/fd/{fd}")
    except OSError as exc:
        raise LauncherError(f"cannot verify writable root {path!r} through /proc: {exc.strerror}") from None
    if opened != path:
        raise LauncherError(f"writable root {path!r} now resolves to {opened!r} (replaced by a symlink?); refusing to grant it")


def drop_capabilities(kernel: Kernel) -> None:
    """Clear the bounding set, so a root caller's command keeps no capability after exec.

    Landlock limits file writes, not what capabilities allow (loading modules, raw devices through
    ioctl, ...). Without CAP_SETPCAP (any unprivileged caller) there is nothing to drop: EPERM is
    expected and ignored. NO_NEW_PRIVS then keeps exec from granting them back.
    """
    try:
        with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as handle:
            last = int(handle.read())
    except (OSError, ValueError):
        last = 40
    for capability in range(last + 1):
        code = kernel.prctl(PR_CAPBSET_DROP, capability)
        if code == errno.EPERM:
            return
        if code not in (0, errno.EINVAL):
            raise LauncherError(f"prctl(PR_CAPBSET_DROP, {capability}) failed: {os.strerror(code)}")


def verify() -> None:
    """After restricting: a write outside the rules must be refused (/dev/zero is harmless to open)."""
    try:
        fd = os.open("/dev/zero", os.O_WRONLY | os.O_CLOEXEC)
    except PermissionError:
        return
    except OSError as exc:
        raise LauncherError(f"probe: opening /dev/zero for writing failed unexpectedly: {exc.strerror}") from None
    os.close(fd)
    raise LauncherError("probe: the ruleset was accepted but a write outside it was not refused")


def main(argv: list[str]) -> NoReturn:
    try:
        writable, no_network, probe, command = parse(argv)
        kernel = Kernel()
        abi, partial = restrict(kernel, writable, no_network)
        if probe:
            verify()
    except LauncherError as exc:
        fail(str(exc))
    except Exception as exc:  # anything unexpected is still a launcher failure, never an unconfined run
        fail(f"{type(exc).__name__}: {exc}")
    if probe:
        state = "partially enforced (older ABI)" if partial else "fully enforced"
        sys.stdout.write(f"{state} (Landlock ABI {abi})\n")
        sys.stdout.flush()
        os._exit(0)
    if partial:
        sys.stderr.write(PARTIAL_LINE + "\n")
        sys.stderr.flush()
    try:
        # TIOCSTI: without a session of its own the command could type into the caller's terminal.
        os.setsid()
    except OSError:
        pass  # already a session leader (spawned with start_new_session): no controlling terminal
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        # The launcher worked; the command could not start: ordinary 126/127 semantics, like env(1).
        sys.stderr.write(f"landlock-run: cannot run {command[0]!r}: {exc.strerror}\n")
        sys.stderr.flush()
        os._exit(127 if isinstance(exc, FileNotFoundError) else 126)


if __name__ == "__main__":
    main(sys.argv[1:])
