"""``harness sandbox``: the effective mode, the writable roots, and which backend confines commands here.

Exit status 0 when commands can run as configured, 1 when the mode is confined and no backend can
enforce it (every confined command would be refused with SANDBOX_UNAVAILABLE).
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .plugin import SandboxPlugin
    from .selection import ProbeReport

__all__ = ["render_report", "report_json", "run_sandbox", "setup_sandbox"]


def setup_sandbox(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def _mode_source(plugin: SandboxPlugin) -> str:
    return "session override" if plugin.override is not None else f"from {plugin.mode_origin}"


def report_json(plugin: SandboxPlugin, report: ProbeReport) -> dict[str, Any]:
    """The ``--json`` shape of the report."""
    mode = plugin.effective_mode()
    policy = plugin.policy()
    confined = mode != "danger-full-access"
    return {
        "mode": mode,
        "mode_source": _mode_source(plugin),
        "network": policy.network,
        "workspace_root": policy.workspace_root,
        "writable_roots": list(policy.writable_roots),
        "backend_setting": report.setting,
        "active": report.active,
        "enforceable": report.active is not None or not confined,
        "backends": [
            {
                "name": verdict.backend,
                "usable": verdict.usable,
                "enforcement": verdict.enforcement,
                "active": verdict.backend == report.active,
                "detail": verdict.detail,
            }
            for verdict in report.verdicts
        ],
    }


def render_report(data: dict[str, Any], report: ProbeReport) -> tuple[str, int]:
    """The text ``harness sandbox`` prints for ``data`` (:func:`report_json`), and its exit status."""
    mode = data["mode"]
    lines = [f"mode: {mode} ({data['mode_source']})"]
    if mode == "danger-full-access":
        lines.append("network: on (danger-full-access is unconfined)")
    else:
        lines.append("network: " + ("on" if data["network"] else "off"))
    lines.append(f"workspace: {data['workspace_root']}")
    roots = data["writable_roots"]
    if mode == "danger-full-access":
        lines.append("writable: everything")
    else:
        lines.append("writable: " + (", ".join(roots) if roots else "nothing but /dev/null"))
    chain = ", then ".join(report.candidates) if report.candidates else "nothing on this platform"
    lines.append(f"backend: {report.setting}" + (f" (tries {chain})" if report.setting == "auto" else ""))
    for verdict in report.verdicts:
        if verdict.usable:
            state = "active" if verdict.backend == report.active else report.why_not(verdict)
            lines.append(f"  {verdict.backend}: usable, {verdict.enforcement} enforcement, {state} — {verdict.detail}")
        else:
            lines.append(f"  {verdict.backend}: unusable — {verdict.detail}")
    if report.active is not None:
        verdict = next(v for v in report.verdicts if v.backend == report.active)
        if mode == "danger-full-access":
            lines.append(f"verdict: commands run unconfined (danger-full-access); {report.active} would confine the narrower modes")
        else:
            lines.append(f"verdict: commands are confined by {report.active} ({verdict.enforcement} enforcement)")
        return "\n".join(lines), 0
    if mode == "danger-full-access":
        lines.append("verdict: commands run unconfined (danger-full-access); no backend could confine a narrower mode")
        return "\n".join(lines), 0
    lines.append(
        f"verdict: no backend can enforce {mode} here: every confined command is refused (SANDBOX_UNAVAILABLE)"
    )
    return "\n".join(lines), 1


def run_sandbox(args: argparse.Namespace, plugin: SandboxPlugin) -> int:
    report = plugin.probe_report(everything=True)
    data = report_json(plugin, report)
    text, status = render_report(data, report)
    print(json.dumps(data, indent=2) if args.json else text, flush=True)
    return status
