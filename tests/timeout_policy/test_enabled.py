"""The [timeout] enabled switch: off, the wrapper lets calls through and says so (DESIGN §5)."""

from __future__ import annotations

import anyio
import pytest

from harness_core import ConfigError, Harness
from harness_timeout_policy import TimeoutPolicy

from .test_plugin import call, slow_tool


def start(section: dict[str, object]) -> tuple[Harness, TimeoutPolicy]:
    plugin = TimeoutPolicy()
    harness = Harness(plugins=[plugin], config={"timeout": section})
    harness.tools.register(slow_tool(timeout_ms=20, cooperative=True, sleep=0.3))
    return harness, plugin


@pytest.mark.anyio
async def test_disabled_the_wrapper_passes_the_call_through_without_a_deadline() -> None:
    harness, _plugin = start({"enabled": False, "default_ms": 10})
    with anyio.fail_after(5):
        result = await harness.execute(call())
    # The body waited out its own sleep: no deadline signal ever aborted it.
    assert not result.is_error and result.value == "done"


@pytest.mark.anyio
async def test_enabled_by_default_the_same_call_times_out() -> None:
    harness, plugin = start({})
    assert plugin.enabled
    with anyio.fail_after(5):
        result = await harness.execute(call())
    assert result.error is not None and result.error.info is not None
    assert result.error.info.code == "TOOL_TIMEOUT"


def test_disabled_it_no_longer_claims_timeout_ms_so_the_host_warns() -> None:
    harness, _plugin = start({"enabled": False})
    assert "timeout_ms" not in harness.provided()
    assert any('tool "slow" declares timeout_ms=20' in warning for warning in harness.warnings())


def test_doctor_says_whether_deadlines_are_enforced() -> None:
    off, _ = start({"enabled": False})
    assert (
        "TimeoutPolicy",
        "warning",
        "disabled by [timeout] enabled = false: no call gets a deadline, declared timeouts included",
    ) in off.diagnose()
    on, _ = start({"default_ms": 1000})
    assert ("TimeoutPolicy", "info", "enforcing declared timeouts (default for the others: 1000ms)") in on.diagnose()
    assert on.warnings() == []


def test_enabled_must_be_a_boolean_not_a_word() -> None:
    with pytest.raises(ConfigError, match=r"timeout\.enabled: Input should be a valid boolean, got 'no'"):
        Harness(plugins=[TimeoutPolicy()], config={"timeout": {"enabled": "no"}})
