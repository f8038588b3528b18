"""DESIGN §2–§3: the Harness as a host — plugin order, entry points sorted by name, tools from plugins, close."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from harness_core import Harness, PluginRefusedError, ToolCall, hookimpl

from .support import make_echo


def install_fake_distribution(root: Path, name: str, entry_points: dict[str, str], modules: dict[str, str]) -> None:
    """Write an importable module plus a .dist-info with entry points, as pip would."""
    for module, source in modules.items():
        (root / f"{module}.py").write_text(textwrap.dedent(source))
    info = root / f"{name.replace('-', '_')}-1.0.dist-info"  # as wheels name them
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    lines = "\n".join(f"{key} = {value}" for key, value in entry_points.items())
    (info / "entry_points.txt").write_text(f"[harness]\n{lines}\n")


PLUGIN_SOURCE = """
from harness_core import Deny, hookimpl

ORDER = []

class Plugin:
    def __init__(self, name):
        self.name = name

    @hookimpl
    async def tools_pre_execute(self, execution, call_next):
        ORDER.append(self.name)
        return await call_next()

zeta = Plugin("zeta")
alpha = Plugin("alpha")
"""


@pytest.mark.anyio
async def test_entry_point_plugins_load_sorted_by_name_not_install_order(tmp_path, monkeypatch):
    install_fake_distribution(
        tmp_path,
        "harness-fake",
        {"zeta": "fake_plugins:zeta", "alpha": "fake_plugins:alpha"},
        {"fake_plugins": PLUGIN_SOURCE},
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    harness = Harness(load_entrypoints=True)
    names = [name for name, _ in harness.plugins()]
    assert names.index("alpha") < names.index("zeta")

    import fake_plugins

    async def body(args, ctx):
        return "ok"

    harness.tools.register(make_echo(body))
    await harness.execute(ToolCall(call_id="c1", name="echo", arguments={}))
    # registered alpha then zeta, so zeta (last registered) is the outermost listener
    assert fake_plugins.ORDER == ["zeta", "alpha"]


def test_entry_points_are_not_loaded_unless_asked(tmp_path, monkeypatch):
    install_fake_distribution(tmp_path, "harness-fake", {"alpha": "fake_plugins_two:alpha"}, {"fake_plugins_two": PLUGIN_SOURCE})
    monkeypatch.syspath_prepend(str(tmp_path))
    assert [name for name, _ in Harness().plugins()] == []


@pytest.mark.anyio
async def test_a_plugin_contributes_tools_that_leave_with_it():
    async def body(args, ctx):
        return "from the plugin"

    class Tools:
        @hookimpl
        def harness_register_tools(self, register):
            self.dispose = register(make_echo(body))

    plugin = Tools()
    harness = Harness(plugins=[plugin])
    assert [schema["name"] for schema in harness.tools.schemas()] == ["echo"]
    result = await harness.execute(ToolCall(call_id="c1", name="echo", arguments={}))
    assert result.value == "from the plugin"
    harness.unregister(plugin)
    assert harness.tools.schemas() == []


def test_a_plugin_whose_tool_is_refused_is_not_left_half_registered():
    async def body(args, ctx):
        return "x"

    class Clash:
        @hookimpl
        def harness_register_tools(self, register):
            register(make_echo(body))

    harness = Harness(plugins=[Clash()])
    with pytest.raises(TypeError, match='tool "echo" is already registered'):
        harness.register(Clash(), name="second")
    assert harness.plugin_manager.get_plugin("second") is None
    assert harness.tools.names() == ["echo"]


@pytest.mark.anyio
async def test_closing_the_harness_unregisters_every_plugin_and_its_tools():
    async def body(args, ctx):
        return "x"

    class Tools:
        @hookimpl
        def harness_register_tools(self, register):
            register(make_echo(body))

    async with Harness(plugins=[Tools()]) as harness:
        assert harness.tools.names() == ["echo"]
    assert harness.tools.names() == [] and harness.plugins() == []
    await harness.aclose()  # closing twice is harmless


def test_a_blocked_plugin_name_cannot_be_registered():
    harness = Harness()
    harness.plugin_manager.set_blocked("sandbox")

    class Anything:
        pass

    with pytest.raises(PluginRefusedError, match="blocked"):
        harness.register(Anything(), name="sandbox")


def test_a_wrapper_impl_of_harness_register_tools_is_refused():
    class Wrapping:
        @hookimpl(wrapper=True)
        def harness_register_tools(self, register):
            return (yield)

    with pytest.raises(PluginRefusedError, match="harness_register_tools as a wrapper"):
        Harness(plugins=[Wrapping()])


@pytest.mark.anyio
async def test_unnamed_plugins_get_readable_names_that_errors_can_quote():
    class Sloppy:
        @hookimpl
        async def tools_pre_execute(self, execution, call_next):
            return "allow"

    harness = Harness(plugins=[Sloppy(), Sloppy()])
    names = [name for name, _ in harness.plugins()]
    assert names == [
        "test_unnamed_plugins_get_readable_names_that_errors_can_quote.<locals>.Sloppy",
        "test_unnamed_plugins_get_readable_names_that_errors_can_quote.<locals>.Sloppy#2",
    ]

    async def body(args, ctx):
        return "x"

    harness.tools.register(make_echo(body))
    result = await harness.execute(ToolCall(call_id="c1", name="echo", arguments={}))
    assert result.error.message.startswith('plugin "test_unnamed_plugins_get_readable_names_that_errors_can_quote.<locals>.Sloppy#2" returned str')


@pytest.mark.anyio
async def test_close_runs_in_reverse_registration_order_and_a_failure_skips_nothing(caplog):
    from harness_core import CloseError

    closed: list[str] = []

    class Closer:
        def __init__(self, name: str, fail: bool = False) -> None:
            self.name, self.fail = name, fail

        @hookimpl
        async def harness_close(self):
            closed.append(self.name)
            if self.fail:
                raise RuntimeError(f"{self.name} could not stop its worker")

    class SyncCloser:
        @hookimpl
        def harness_close(self):
            closed.append("sync")

    harness = Harness(plugins=[Closer("first"), SyncCloser(), Closer("middle", fail=True), Closer("last")])
    with pytest.raises(CloseError) as caught:
        await harness.aclose()
    assert closed == ["last", "middle", "sync", "first"]
    assert "middle could not stop its worker" in str(caught.value) and len(caught.value.failures) == 1
    assert "failed to close" in caplog.text
    assert harness.plugins() == []
    await harness.aclose()  # a second close does nothing and raises nothing
    assert closed == ["last", "middle", "sync", "first"]


def test_the_cli_always_closes_its_harness(tmp_path, monkeypatch, capsys):
    import uuid

    from harness_core.cli import main

    module = f"closing_{uuid.uuid4().hex[:8]}"
    marker = tmp_path / "closed"
    (tmp_path / f"{module}.py").write_text(
        "from pathlib import Path\nfrom harness_core import hookimpl\n"
        f"class P:\n    @hookimpl\n    def harness_close(self):\n        Path({str(marker)!r}).write_text('yes')\n"
    )
    (tmp_path / "harness.toml").write_text(f'[plugins]\nmodules = ["{module}:P"]\n')
    monkeypatch.setenv("HARNESS_USER_CONFIG", "")
    monkeypatch.setenv("HARNESS_LOAD_PLUGINS", "")
    assert main(["-C", str(tmp_path), "call", "nothing-here"]) == 1
    assert marker.read_text() == "yes"


class OwnSpecs:
    """A plugin hook specification added through harness_add_hookspecs."""

    from harness_core import hookspec as _spec

    @_spec
    def greeting_chain(self, name, call_next):
        """A waterfall of greeters."""


class SpecOwner:
    @hookimpl
    def harness_add_hookspecs(self, add):
        add(OwnSpecs)


class Shout:
    @hookimpl
    async def greeting_chain(self, name, call_next):
        return (await call_next()).upper()


class Polite:
    @hookimpl
    def greeting_chain(self, name, call_next):
        return call_next() if name != "boss" else "good morning, boss"


@pytest.mark.anyio
async def test_a_plugin_adds_its_own_waterfall_hook_and_runs_it_with_call_waterfall():
    from harness_core import call_waterfall

    # Implementations registered before the spec exists are fine: names are checked at the end.
    harness = Harness(plugins=[Polite(), Shout(), SpecOwner()])
    hook = harness.plugin_manager.hook.greeting_chain

    async def default():
        return "hello"

    assert await call_waterfall(hook, default, name="ann") == "HELLO"
    assert await call_waterfall(hook, default, name="boss") == "GOOD MORNING, BOSS"


def test_an_impl_of_a_hook_nobody_specifies_refuses_to_start_unless_optional():
    with pytest.raises(PluginRefusedError, match="unknown hook 'greeting_chain'"):
        Harness(plugins=[Shout()])

    class Optional:
        @hookimpl(optionalhook=True)
        def greeting_chain(self, name, call_next):
            return call_next()

    Harness(plugins=[Optional()])


def test_a_plugin_command_runs_through_the_cli(tmp_path, monkeypatch, capsys):
    import uuid

    from harness_core.cli import main

    module = f"commands_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(
        "from harness_core import hookimpl\n"
        "class Hello:\n"
        "    @hookimpl\n"
        "    def harness_register_commands(self, register):\n"
        "        def setup(parser):\n"
        "            parser.add_argument('who')\n"
        "        def run(args, harness):\n"
        "            print('hello ' + args.who)\n"
        "            return 3 if args.who == 'nobody' else 0\n"
        "        register('hello', help='say hello', setup=setup, run=run)\n"
        "        register('call', help='taken', setup=setup, run=run)\n"
    )
    (tmp_path / "harness.toml").write_text(f'[plugins]\nmodules = ["{module}:Hello"]\n')
    monkeypatch.setenv("HARNESS_USER_CONFIG", "")
    monkeypatch.setenv("HARNESS_LOAD_PLUGINS", "")
    assert main(["-C", str(tmp_path), "hello", "ann"]) == 2  # the plugin also tried to take "call"
    assert 'registered the command "call", which is taken' in capsys.readouterr().err
    (tmp_path / f"{module}.py").write_text(
        (tmp_path / f"{module}.py").read_text().replace("        register('call', help='taken', setup=setup, run=run)\n", "")
    )
    import importlib
    import sys

    sys.modules.pop(module, None)
    importlib.invalidate_caches()
    assert main(["-C", str(tmp_path), "hello", "ann"]) == 0
    assert "hello ann" in capsys.readouterr().out
    assert main(["-C", str(tmp_path), "nonsense"]) == 2
    assert "unknown command 'nonsense'" in capsys.readouterr().err
