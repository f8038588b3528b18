"""reference/plugins.md §2, §5, §12 and §16.4: bash over the sandbox seam, with a fake sandbox plugin.

A confined policy is always wrapped (no answer from ``sandbox_confine`` refuses, never runs
unconfined); a runner failure is an error and the command never ran; a denial is an ordinary
result ending in the denial marker and, when a retry could be approved, the escalation hint; an
escalation is approved once, for one call, before anything runs.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from harness_core import Signal, hookimpl
from harness_core.sandbox import denial_marker, escalation_hint

from .support import Answerer, FakeSandbox, code, run, text

pytestmark = pytest.mark.anyio

UNAVAILABLE_PREFIX = 'sandbox mode "read-only" is requested but no sandbox backend is usable on this host'
HINT = (
    "[sandbox: escalation available — retry this exact command once with sandbox_permissions (the narrowest wider "
    "mode that suffices) + justification; the approval prompt asks the user]"
)
WHY = "the build writes its cache into the workspace"


def test_the_hint_constant_is_the_seam_text() -> None:
    assert escalation_hint("command") == HINT
    assert denial_marker("read-only") == "[sandbox: file access denied under read-only mode]"


async def test_a_confined_policy_wraps_bash_c_and_spawns_the_runner(make_harness, workspace: Path) -> None:
    sandbox = FakeSandbox(workspace, mode="workspace-write")
    result = await run(make_harness(sandbox), "bash", command='echo "mode=$FAKEBOX_MODE"; pwd')
    assert text(result) == f"mode=workspace-write\n{workspace}\n"
    assert sandbox.confined == [(["bash", "-c", 'echo "mode=$FAKEBOX_MODE"; pwd'], "workspace-write")]
    assert sandbox.cwds == [str(workspace)]
    assert result.value["sandbox"] == {"mode": "workspace-write", "denied": False, "enforcement": "full", "backend": "fakebox"}


async def test_danger_full_access_runs_unwrapped_and_never_asks_the_backend(make_harness, workspace: Path) -> None:
    sandbox = FakeSandbox(workspace, mode="danger-full-access")
    result = await run(make_harness(sandbox), "bash", command='echo "mode=[$FAKEBOX_MODE]"')
    assert text(result) == "mode=[]\n"
    assert sandbox.confined == []
    assert result.value["sandbox"]["mode"] == "danger-full-access"


async def test_the_policy_workspace_root_is_the_default_workdir(make_harness, tmp_path: Path) -> None:
    root = tmp_path / "sandbox-root"
    root.mkdir()
    result = await run(make_harness(FakeSandbox(root, mode="workspace-write")), "bash", command="pwd")
    assert text(result) == f"{root}\n"


async def test_a_denial_ends_with_the_marker_and_the_hint_when_an_approver_is_installed(make_harness, workspace) -> None:
    sandbox = FakeSandbox(workspace, behaviors={"read-only": "deny"})
    result = await run(make_harness(sandbox, Answerer("allowed-once")), "bash", command="touch x")
    assert result.is_error is False  # a denial is an ordinary result
    assert text(result) == (
        "[stderr]\ntouch: cannot touch 'x': Read-only file system\n"
        f"[sandbox: file access denied under read-only mode]\n{HINT}\n[exit code: 1]"
    )
    assert result.value["sandbox"]["denied"] is True


async def test_a_denial_has_no_hint_without_an_approval_service(make_harness, workspace) -> None:
    sandbox = FakeSandbox(workspace, behaviors={"read-only": "deny"})
    result = await run(make_harness(sandbox), "bash", command="touch x")
    assert text(result).endswith("[sandbox: file access denied under read-only mode]\n[exit code: 1]")
    assert "escalation available" not in text(result)


async def test_a_runner_failure_is_sandbox_unavailable_and_outranks_the_denial(make_harness, workspace, tmp_path) -> None:
    proof = tmp_path / "ran"
    sandbox = FakeSandbox(workspace, behaviors={"read-only": "runner-fail"})
    result = await run(make_harness(sandbox), "bash", command=f"touch {proof}")
    assert not proof.exists()
    assert result.is_error and code(result) == "SANDBOX_UNAVAILABLE"
    assert result.error is not None and result.error.info is not None
    assert result.error.info.name == "SandboxUnavailableError"
    message = result.error.message
    assert message.startswith(UNAVAILABLE_PREFIX)
    assert message.endswith(" Runner failure: fakebox: cannot create the mount namespace")


async def test_a_runner_that_cannot_start_is_sandbox_unavailable(make_harness, workspace, tmp_path) -> None:
    proof = tmp_path / "ran"
    sandbox = FakeSandbox(workspace, behaviors={"read-only": "missing-runner"})
    result = await run(make_harness(sandbox), "bash", command=f"touch {proof}")
    assert code(result) == "SANDBOX_UNAVAILABLE"
    assert "Runner failure: cannot start /nonexistent/fakebox" in result.error.message  # type: ignore[union-attr]
    assert not proof.exists()


@pytest.mark.parametrize("behavior", ["none", "raise"])
async def test_no_confinement_for_a_confined_policy_refuses_and_never_runs_unconfined(
    make_harness, workspace, tmp_path, behavior
) -> None:
    proof = tmp_path / "ran"
    sandbox = FakeSandbox(workspace, behaviors={"read-only": behavior})
    result = await run(make_harness(sandbox), "bash", command=f"touch {proof}")
    assert result.is_error and code(result) == "SANDBOX_UNAVAILABLE"
    assert text(result) == f"Error: {UNAVAILABLE_PREFIX}; refusing to run the command unconfined. " + (
        "Install bubblewrap or run a Landlock-enforcing kernel (Linux), ensure sandbox-exec is usable (macOS), or "
        "ensure the ACL restricted-token runner can start (Windows) — otherwise switch the consumer to "
        "danger-full-access."
    )
    assert not proof.exists()


async def test_a_sandbox_policy_without_a_confine_implementation_refuses(make_harness, workspace, tmp_path) -> None:
    class PolicyOnly(FakeSandbox):
        sandbox_confine = None  # type: ignore[assignment]

    proof = tmp_path / "ran"
    result = await run(make_harness(PolicyOnly(workspace)), "bash", command=f"touch {proof}")
    assert code(result) == "SANDBOX_UNAVAILABLE" and not proof.exists()


# --- escalation ---------------------------------------------------------------------------------------


def escalating(workspace: Path) -> FakeSandbox:
    """Read-only denies; a workspace-write retry runs (and says so)."""
    return FakeSandbox(workspace, behaviors={"read-only": "deny", "workspace-write": "wrap"})


async def test_an_approved_escalation_runs_this_one_call_under_the_wider_mode(make_harness, workspace, sink) -> None:
    sandbox, answerer = escalating(workspace), Answerer("allowed-once")
    harness = make_harness(sandbox, answerer)
    command = 'echo "mode=$FAKEBOX_MODE"'
    denied = await run(harness, "bash", command=command)
    assert HINT in text(denied)
    retried = await run(harness, "bash", command=command, sandbox_permissions="workspace-write", justification=WHY)
    assert text(retried) == "mode=workspace-write\n"
    assert retried.value["sandbox"]["mode"] == "workspace-write"
    [request] = answerer.requests
    assert request.reason == f"escalate sandbox to workspace-write: {WHY}"
    assert request.tool_name == "bash" and request.agent == "main"
    assert [event["reason"] for event in sink.of_kind("approval/asked")] == [request.reason]
    assert [event["outcome"] for event in sink.of_kind("approval/decided")] == ["allowed-once"]
    # One call only: the next one is read-only again.
    assert HINT in text(await run(harness, "bash", command=command))
    assert [mode for _, mode in sandbox.confined] == ["read-only", "workspace-write", "read-only"]


@pytest.mark.parametrize(
    ("outcome", "message"),
    [
        ("rejected", 'the user rejected escalating this command to "workspace-write"'),
        ("cancelled", 'approval for escalating to "workspace-write" was cancelled'),
        ("unavailable", 'sandbox escalation to "workspace-write" requires approval, but no approval channel is available'),
        (None, 'sandbox escalation to "workspace-write" requires approval, but no approval channel is available'),
    ],
)
async def test_an_escalation_that_is_not_allowed_runs_nothing(make_harness, workspace, tmp_path, outcome, message) -> None:
    proof = tmp_path / "ran"
    sandbox = escalating(workspace)
    result = await run(
        make_harness(sandbox, Answerer(outcome)),
        "bash",
        command=f"touch {proof}",
        sandbox_permissions="workspace-write",
        justification=WHY,
    )
    assert result.is_error and text(result) == f"Error: {message}"
    assert sandbox.confined == [] and not proof.exists()


async def test_an_escalation_without_an_approval_service_is_refused(make_harness, workspace, tmp_path) -> None:
    proof = tmp_path / "ran"
    sandbox = escalating(workspace)
    result = await run(
        make_harness(sandbox), "bash", command=f"touch {proof}", sandbox_permissions="workspace-write", justification=WHY
    )
    assert text(result) == (
        'Error: sandbox escalation to "workspace-write" requires approval, but no approval service is composed'
    )
    assert sandbox.confined == [] and not proof.exists()


async def test_an_escalation_from_a_call_without_an_agent_is_refused(make_harness, workspace, tmp_path) -> None:
    proof = tmp_path / "ran"
    answerer = Answerer("allowed-once")
    result = await run(
        make_harness(escalating(workspace), answerer),
        "bash",
        agent=None,
        command=f"touch {proof}",
        sandbox_permissions="workspace-write",
        justification=WHY,
    )
    assert text(result) == (
        'Error: sandbox escalation to "workspace-write" requires approval, but the call has no agent to route it through'
    )
    assert answerer.requests == [] and not proof.exists()


async def test_an_escalation_that_is_not_wider_asks_nobody(make_harness, workspace) -> None:
    answerer = Answerer("allowed-once")
    harness = make_harness(FakeSandbox(workspace, mode="workspace-write"), answerer)
    result = await run(harness, "bash", command="true", sandbox_permissions="workspace-write", justification=WHY)
    assert text(result) == (
        'Error: sandbox escalation to "workspace-write" is not strictly wider than this call\'s current '
        '"workspace-write" mode'
    )
    assert answerer.requests == []


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"sandbox_permissions": "workspace-write"}, "invalid escalation: sandbox_permissions requires a justification"),
        ({"justification": WHY}, "invalid escalation: justification is only valid together with sandbox_permissions"),
        ({"sandbox_permissions": "workspace-write", "justification": "  "}, "invalid justification: expected a non-empty sentence"),
        ({"sandbox_permissions": 3, "justification": WHY}, 'invalid sandbox_permissions: expected one of "workspace-write", "danger-full-access"'),
    ],
)
async def test_malformed_escalation_arguments_are_refused(make_harness, workspace, extra, message) -> None:
    answerer = Answerer("allowed-once")
    result = await run(make_harness(escalating(workspace), answerer), "bash", command="true", **extra)
    assert text(result) == f"Error: {message}"
    assert answerer.requests == []


async def test_a_call_cancelled_while_its_escalation_waits_for_approval_starts_nothing(make_harness, workspace, tmp_path) -> None:
    proof = tmp_path / "ran"
    signal = Signal()

    class SlowYes:
        @hookimpl
        async def approval_request(self, request):
            signal.abort("the user left")
            await anyio.sleep(0)
            return "allowed-once"

    sandbox = escalating(workspace)
    result = await run(
        make_harness(sandbox, SlowYes()),
        "bash",
        signal=signal,
        command=f"touch {proof}",
        sandbox_permissions="workspace-write",
        justification=WHY,
    )
    assert result.is_error and code(result) == "ABORTED"
    assert not proof.exists()


async def test_a_sandbox_that_ignores_the_approved_mode_is_refused(make_harness, workspace, tmp_path) -> None:
    class Stubborn(FakeSandbox):
        @hookimpl
        def sandbox_policy(self, execution, mode):
            return super().sandbox_policy(execution, None)

    proof = tmp_path / "ran"
    result = await run(
        make_harness(Stubborn(workspace), Answerer("allowed-once")),
        "bash",
        command=f"touch {proof}",
        sandbox_permissions="workspace-write",
        justification=WHY,
    )
    assert result.is_error and "refusing to run under a policy the user did not approve" in text(result)
    assert not proof.exists()
