"""harness-path-guard: the entry point loads, and its guard denies protected paths through a real Harness.

DESIGN §2: a guard can only deny or abstain, and nothing registered around it can undo a denial.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from harness_core import Allow, Harness, TextBlock, ToolCall, ToolDefinition, ToolOutput, hookimpl
from harness_path_guard import PathGuard

WORKSPACE = "/srv/project"


def test_the_path_guard_entry_point_is_registered_in_group_harness_and_loads() -> None:
    found = [ep for ep in entry_points(group="harness") if ep.name == "path-guard"]
    assert len(found) == 1, "pip install -e contrib/path-guard (dev.py does it for the workspace)"
    entry_point = found[0]
    assert entry_point.value == "harness_path_guard.plugin:PathGuard"
    assert entry_point.dist is not None and entry_point.dist.name == "harness-path-guard"
    assert entry_point.load() is PathGuard


def test_entry_point_discovery_registers_a_fresh_path_guard_under_its_entry_point_name(monkeypatch) -> None:
    monkeypatch.setenv("HARNESS_LOAD_PLUGINS", "path-guard")
    first, second = Harness(load_entrypoints=True), Harness(load_entrypoints=True)
    plugin = first.plugin_manager.get_plugin("path-guard")
    assert isinstance(plugin, PathGuard)
    assert second.plugin_manager.get_plugin("path-guard") is not plugin  # a class entry point: one per Harness


def test_the_package_re_exports_a_sorted_all() -> None:
    import harness_path_guard

    assert harness_path_guard.__all__ == sorted(harness_path_guard.__all__)
    assert all(hasattr(harness_path_guard, name) for name in harness_path_guard.__all__)


# --- a write tool whose body records what it was asked to do ---------------------------------------


class Writes:
    """The body of the test ``write`` tool: it only records its calls."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    async def __call__(self, args: Any, ctx: Any) -> str:
        self.paths.append(args["file_path"])
        return f"wrote {args['file_path']}"


def file_tool(name: str, body: Writes) -> ToolDefinition:
    async def execute(args: Any, ctx: Any) -> str:
        return await body(args, ctx)

    return ToolDefinition(
        name=name,
        description=f"{name} a file",
        parameters={"type": "object", "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}}},
        output=ToolOutput(schema={"type": "string"}, render=lambda args, value: [TextBlock(text=value)]),
        execute=execute,
    )


@pytest.fixture
def writes() -> Writes:
    return Writes()


def guarded(writes: Writes, *plugins: object, register: tuple[str, ...] = ("write",), **section: Any) -> Harness:
    """A Harness with the path guard (plus ``plugins``, registered after it), ``[path_guard]`` set to
    ``section`` and a file tool under each name in ``register``."""
    section.setdefault("workspace", WORKSPACE)
    harness = Harness(plugins=[PathGuard(), *plugins], config={"path_guard": section})
    for name in register:
        harness.tools.register(file_tool(name, writes))
    return harness


def write(path: object, name: str = "write") -> ToolCall:
    return ToolCall(call_id="c1", name=name, arguments={"file_path": path, "content": "x"}, agent="main")


# --- denial through the pipeline -----------------------------------------------------------------


@pytest.mark.anyio
async def test_a_write_to_a_denied_path_is_refused_with_the_rule_and_the_body_never_runs(writes) -> None:
    harness = guarded(writes, deny=["**/.env"])
    result = await harness.execute(write("app/.env"))
    assert result.is_error and writes.paths == []
    assert result.error is not None
    assert result.error.message == 'path "app/.env" is protected by path-guard rule "**/.env"'
    assert result.content == (TextBlock(text='Error: path "app/.env" is protected by path-guard rule "**/.env"'),)


@pytest.mark.anyio
async def test_a_write_to_a_path_no_rule_matches_runs_the_body(writes) -> None:
    harness = guarded(writes, deny=["**/.env", "secrets/**"])
    result = await harness.execute(write("app/settings.py"))
    assert not result.is_error and result.value == "wrote app/settings.py"
    assert writes.paths == ["app/settings.py"]


@pytest.mark.anyio
async def test_the_denial_names_the_first_matching_rule_in_configuration_order(writes) -> None:
    harness = guarded(writes, deny=["*.md", "secrets/**", "**/*.pem"])
    result = await harness.execute(write("secrets/tls/key.pem"))
    assert result.error is not None and result.error.message.endswith('rule "secrets/**"')


class AllowEverything:
    """An outer pre-execute listener that allows without asking anyone (and never calls call_next)."""

    @hookimpl(tryfirst=True)
    async def tools_pre_execute(self, execution, call_next):
        return Allow()


class AbstainingGuard:
    @hookimpl(tryfirst=True)
    def tools_guard(self, execution):
        return None


@pytest.mark.anyio
async def test_no_listener_or_guard_registered_around_it_can_undo_the_denial(writes) -> None:
    harness = guarded(writes, AllowEverything(), AbstainingGuard(), deny=["**/.env"])
    result = await harness.execute(write(".env"))
    assert result.is_error and writes.paths == []


@pytest.mark.anyio
async def test_the_dry_run_reports_an_allowing_waterfall_and_a_denying_guard(writes) -> None:
    harness = guarded(writes, deny=["**/.env"])
    verdict = await harness.dry_run(write("deep/down/.env"))
    assert verdict.to_json() == {
        "pre_execute": "allow",
        "decision": "deny",
        "reason": 'path "deep/down/.env" is protected by path-guard rule "**/.env"',
    }


# --- which calls the guard looks at ------------------------------------------------------------------


@pytest.mark.anyio
async def test_tools_missing_from_the_tools_mapping_are_not_judged(writes) -> None:
    harness = guarded(writes, register=("write", "bash"), deny=["**/.env"])
    result = await harness.execute(write(".env", name="bash"))
    assert not result.is_error and writes.paths == [".env"]


@pytest.mark.anyio
async def test_the_tools_mapping_names_the_argument_that_holds_each_tools_path(writes) -> None:
    harness = guarded(writes, deny=["**/.env"], tools={"save": "target"})
    call = ToolCall(call_id="c1", name="save", arguments={"target": "a/.env"}, agent="main")
    verdict = await harness.dry_run(call)
    assert verdict.reason == 'path "a/.env" is protected by path-guard rule "**/.env"'
    # Setting tools replaces the default mapping, so write is no longer judged.
    result = await harness.execute(write(".env"))
    assert not result.is_error and writes.paths == [".env"]


@pytest.mark.parametrize("value", [None, 7, ["a/.env"], {"path": ".env"}])
@pytest.mark.anyio
async def test_a_path_argument_that_is_missing_or_not_a_string_is_left_to_the_tool(value) -> None:
    harness = Harness(plugins=[PathGuard()], config={"path_guard": {"deny": ["**"]}})
    arguments = {"content": "x"} if value is None else {"file_path": value}
    verdict = await harness.dry_run(ToolCall(call_id="c1", name="write", arguments=arguments))
    assert verdict.decision == "allow"


@pytest.mark.anyio
async def test_arguments_that_are_not_an_object_are_left_to_the_tool() -> None:
    harness = Harness(plugins=[PathGuard()], config={"path_guard": {"deny": ["**"]}})
    verdict = await harness.dry_run(ToolCall(call_id="c1", name="write", arguments=[".env"]))
    assert verdict.decision == "allow"


@pytest.mark.anyio
async def test_without_a_deny_list_the_guard_abstains(writes) -> None:
    harness = guarded(writes)
    assert not (await harness.execute(write(".env"))).is_error


# --- matching: globs and normalisation, judged by the guard ----------------------------------------


MATCHES = [
    # (deny pattern, path the model sent, denied?)
    ("**/.env", ".env", True),
    ("**/.env", "app/.env", True),
    ("**/.env", "a/b/c/.env", True),
    ("**/.env", "./app//.env", True),
    ("**/.env", "a/../.env", True),
    ("**/.env", "../.env", True),  # escapes the workspace: ** spans outside folders too
    ("**/.env", "../../elsewhere/.env", True),
    ("**/.env", "/srv/someone/.env", True),
    ("**/.env", f"{WORKSPACE}/app/.env", True),  # absolute inside the workspace
    ("**/.env", "app/.env.example", False),
    ("**/.env", "app/.envrc", False),
    ("**/.env", "app/.env/notes", False),
    ("secrets/**", "secrets/key", True),
    ("secrets/**", "secrets/a/b/key", True),
    ("secrets/**", "secrets", True),  # the folder itself
    ("secrets/**", "./secrets/../secrets/key", True),
    ("secrets/**", "x/../secrets/key", True),
    ("secrets/**", "../project/secrets/key", True),  # leaves and re-enters the workspace
    ("secrets/**", f"{WORKSPACE}/secrets/key", True),
    ("secrets/**", "app/secrets/key", False),  # anchored at the workspace
    ("secrets/**", "secrets-old/key", False),
    ("secrets/**", "../secrets/key", False),  # a secrets folder outside the workspace
    ("secrets/**", "/secrets/key", False),
    ("*.pem", "key.pem", True),
    ("*.pem", "certs/key.pem", False),  # * stays within one segment
    ("*.pem", "../key.pem", False),
    ("**/*.pem", "certs/deep/key.pem", True),
    ("**/*.pem", "key.pem", True),
    ("app/**/config/*.toml", "app/config/db.toml", True),
    ("app/**/config/*.toml", "app/a/b/config/db.toml", True),
    ("app/**/config/*.toml", "app/a/b/config/sub/db.toml", False),
    ("/etc/**", "/etc/passwd", True),
    ("/etc/**", "../../../../../../etc/passwd", True),
    ("/etc/passwd", "/etc//./passwd", True),
    ("/etc/passwd", "/etc/../etc/passwd", True),
    ("**/passwd", "/etc/passwd", True),
    ("/etc/**", "etc/passwd", False),  # relative: inside the workspace
    (f"{WORKSPACE}/secrets/**", "secrets/key", True),  # an absolute pattern sees absolute paths inside too
    ("x", "../x", False),
    ("**", "anything/at/all", True),
    ("**", "/outside/too", True),
    ("key-?.txt", "key-1.txt", True),
    ("key-?.txt", "key-10.txt", False),
    ("key-[0-9].txt", "key-7.txt", True),
    ("key-[!0-9].txt", "key-a.txt", True),
    ("key-[!0-9].txt", "key-7.txt", False),
]


@pytest.mark.parametrize(("pattern", "path", "denied"), MATCHES)
@pytest.mark.anyio
async def test_the_guard_matches_paths_after_normalising_them(pattern, path, denied) -> None:
    harness = Harness(plugins=[PathGuard()], config={"path_guard": {"deny": [pattern], "workspace": WORKSPACE}})
    verdict = await harness.dry_run(write(path))
    assert (verdict.decision == "deny") is denied, verdict


@pytest.mark.anyio
async def test_a_home_relative_path_is_judged_with_the_home_folder_expanded(monkeypatch) -> None:
    monkeypatch.setenv("HOME", "/home/someone")
    harness = Harness(
        plugins=[PathGuard()], config={"path_guard": {"deny": ["/home/*/.ssh/**"], "workspace": WORKSPACE}}
    )
    assert (await harness.dry_run(write("~/.ssh/id_ed25519"))).decision == "deny"


# --- the workspace --------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_workspace_is_relative_to_the_project_folder_of_the_config_source(tmp_path) -> None:
    from harness_core import ConfigSource

    (tmp_path / "harness.toml").write_text('[path_guard]\ndeny = ["secrets/**"]\nworkspace = "repo"\n')
    harness = Harness(plugins=[PathGuard()], config=ConfigSource.for_project(tmp_path, user_file=False))
    assert (await harness.dry_run(write(str(tmp_path / "repo" / "secrets" / "k")))).decision == "deny"
    assert (await harness.dry_run(write(str(tmp_path / "secrets" / "k")))).decision == "allow"
    assert (await harness.dry_run(write("secrets/k"))).decision == "deny"


@pytest.mark.anyio
async def test_without_a_project_folder_the_workspace_is_the_current_folder(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    harness = Harness(plugins=[PathGuard()], config={"path_guard": {"deny": ["secrets/**"]}})
    assert (await harness.dry_run(write(str(tmp_path / "secrets" / "k")))).decision == "deny"


@pytest.mark.anyio
async def test_a_symlinked_workspace_is_also_matched_through_its_real_path(tmp_path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    harness = Harness(
        plugins=[PathGuard()], config={"path_guard": {"deny": ["secrets/**"], "workspace": str(tmp_path / "link")}}
    )
    assert (await harness.dry_run(write(str(Path(real) / "secrets" / "k")))).decision == "deny"
    assert (await harness.dry_run(write(str(tmp_path / "link" / "secrets" / "k")))).decision == "deny"
