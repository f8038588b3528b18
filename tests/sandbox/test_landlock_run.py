"""The Landlock launcher as a process (reference/plugins.md §4): its probe, its failures, exec semantics."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harness_sandbox.backends import LANDLOCK_RULES, LAUNCHER_BOOT, LAUNCHER_DIR, Landlock


@pytest.fixture
def launcher(verdicts) -> tuple[str, ...]:
    if not verdicts["landlock"].usable:
        pytest.skip(f"landlock is unusable on this machine: {verdicts['landlock'].detail}")
    return Landlock().runner


def run(argv: list[str] | tuple[str, ...], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=60, cwd=cwd, stdin=subprocess.DEVNULL)


def runner_failure(completed: subprocess.CompletedProcess[str]) -> str | None:
    [rule] = LANDLOCK_RULES
    return rule.detail(completed.returncode, completed.stderr)


def test_the_launcher_runs_isolated_without_site_packages(launcher) -> None:
    assert launcher[1:4] == ("-I", "-S", "-c")


def test_the_probe_reports_full_or_partial_enforcement_and_the_abi(launcher) -> None:
    completed = run([*launcher, "--rw", "/dev/null", "--no-network", "--probe"])
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith(("fully enforced (Landlock ABI ", "partially enforced (older ABI) (Landlock ABI "))


@pytest.mark.parametrize(
    ("arguments", "detail"),
    [
        (["--bogus", "--", "true"], "landlock-run: usage: unexpected argument '--bogus' (expected --rw PATH, --no-network, --probe or --)"),
        (["--rw", "/tmp"], "landlock-run: usage: no command given after --"),
    ],
)
def test_a_usage_error_is_a_runner_failure_and_nothing_runs(launcher, tmp_path, arguments, detail) -> None:
    completed = run([*launcher, *arguments])
    assert completed.returncode == 125 and completed.stderr.strip() == detail
    assert runner_failure(completed) == detail


def test_a_launcher_that_cannot_be_loaded_is_a_runner_failure(launcher, tmp_path) -> None:
    boot = LAUNCHER_BOOT.replace(repr(LAUNCHER_DIR), repr(str(tmp_path / "gone")))
    marker = tmp_path / "marker"
    completed = run([launcher[0], "-I", "-S", "-c", boot, "--", "touch", str(marker)])
    assert completed.returncode == 125 and not marker.exists()
    assert (runner_failure(completed) or "").startswith(f"landlock-run: cannot load the launcher from {tmp_path / 'gone'}: ")


def test_a_missing_command_is_an_ordinary_127_not_a_runner_failure(launcher) -> None:
    completed = run([*launcher, "--rw", "/dev/null", "--", "harness-no-such-command"])
    assert completed.returncode == 127
    assert completed.stderr.strip() == "landlock-run: cannot run 'harness-no-such-command': No such file or directory"
    assert runner_failure(completed) is None


def test_the_command_keeps_its_arguments_environment_and_exit_status(launcher, tmp_path) -> None:
    completed = subprocess.run(
        [*launcher, "--rw", str(tmp_path), "--", "bash", "-c", 'printf "%s|" "$@"; echo "$HARNESS_X"; exit 7', "bash", "a b", "--rw", "--"],
        capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin", "HARNESS_X": "kept"},
    )
    assert completed.returncode == 7 and completed.stdout == "a b|--rw|--|kept\n", completed.stderr


def test_the_command_runs_in_a_session_of_its_own(launcher) -> None:
    completed = run([*launcher, "--rw", "/dev/null", "--", "bash", "-c", "read -r _ _ _ _ _ sid _ < /proc/$$/stat; echo $sid $$"])
    sid, pid = completed.stdout.split()
    assert sid == pid


def test_a_missing_writable_root_grants_nothing_and_is_not_an_error(launcher, tmp_path) -> None:
    completed = run([*launcher, "--rw", str(tmp_path / "missing"), "--rw", "/dev/null", "--", "true"])
    assert completed.returncode == 0, completed.stderr


def test_a_writable_root_that_is_a_file_gets_the_file_rights_only(launcher, tmp_path) -> None:
    log = tmp_path / "log.txt"
    log.write_text("")
    completed = run([*launcher, "--rw", str(log), "--", "bash", "-c", f"echo line >> {log} && echo x > {tmp_path}/other.txt"])
    assert log.read_text() == "line\n"
    assert completed.returncode != 0 and not (tmp_path / "other.txt").exists()
