"""Configuration: harness.toml layers, presets, the deep merge with grow-only lists, and validation.

Layers, later winning: section defaults → the selected presets (in order, each after what it
``extends``) → the user file → the project ``harness.toml`` → ``-c key=value`` overrides. Tables
merge key by key; any other value (lists included) is replaced by the later layer, with one
exception: a list marked grow-only (:data:`DenyList`: ``plugins.block``, deny rules) is the union
of every layer, so no later layer or preset can remove an entry. Every leaf remembers the layer it
came from, so errors name the file and ``harness config show --origin`` can tell.

Each section is validated by a pydantic model (``extra="forbid"``): the core's own (``plugins``,
``session``, in :mod:`harness_core.sections`) and one per plugin, registered through ``harness_register_config``. Presets come from
plugins (``harness_register_presets``) and from ``[presets.NAME]`` tables in the files.
"""

from __future__ import annotations

import copy
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import pydantic

from .errors import HarnessError

__all__ = [
    "ConfigError",
    "ConfigProblem",
    "ConfigSource",
    "DenyList",
    "GrowOnly",
    "HarnessConfig",
    "PluginSettings",
    "Preset",
    "compose",
    "core_sections",
    "effective_preset",
    "preview_preset",
    "user_config_path",
]

PROJECT_FILE = "harness.toml"
#: Top-level keys the composition itself owns (not sections).
RESERVED_KEYS = frozenset({"preset", "presets"})


class GrowOnly:
    """Marks a list field whose layers are united instead of replaced (deny-type lists)."""

    def __repr__(self) -> str:
        return "GrowOnly()"


#: A list of strings that only grows across layers and presets: use it for anything that denies.
DenyList = Annotated[list[str], GrowOnly()]


@dataclass(frozen=True, slots=True, kw_only=True)
class PluginSettings:
    """``[plugins]`` as discovery needs it, read before any plugin (or pydantic model) is loaded.

    The same section is validated again, with everything else, by ``PluginsSection`` when the
    configuration is composed; this early read only checks what discovery relies on.
    """

    require: tuple[str, ...] = ()
    block: tuple[str, ...] = ()
    order: tuple[str, ...] = ()
    modules: tuple[str, ...] = ()


def core_sections() -> dict[str, type[pydantic.BaseModel]]:
    """The core's own sections, ``[plugins]``, ``[session]`` and ``[code_mode]`` (imported on first
    use: defining pydantic models is what makes start-up slow, and ``harness --help`` or
    ``harness plugins`` never need them)."""
    from .sections import CodeModeSection, PluginsSection, SessionSection

    return {"plugins": PluginsSection, "session": SessionSection, "code_mode": CodeModeSection}


# --- Errors -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigProblem:
    """One thing wrong with the configuration: where, what, and what to do."""

    file: str
    key: str
    problem: str
    fix: str = ""

    def __str__(self) -> str:
        where = f"{self.file}: {self.key}: " if self.key else f"{self.file}: "
        return where + self.problem + (f"; {self.fix}" if self.fix else "")


class ConfigError(HarnessError):
    """Raised when the configuration cannot be read or does not validate; lists every problem."""

    code = "CONFIG_ERROR"

    def __init__(self, problems: Sequence[ConfigProblem]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(str(problem) for problem in self.problems))


def _fail(file: str, key: str, problem: str, fix: str = "") -> ConfigError:
    return ConfigError([ConfigProblem(file=file, key=key, problem=problem, fix=fix)])


# --- Reading ------------------------------------------------------------------------------------


def user_config_path() -> Path | None:
    """The user file: ``$HARNESS_USER_CONFIG`` if set (empty: none), else the platform config dir."""
    override = os.environ.get("HARNESS_USER_CONFIG")
    if override is not None:
        return Path(override) if override else None
    if sys.platform == "win32":
        base = Path(os.environ.get("APPDATA", Path.home() / "AppData" / "Roaming"))
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "harness" / PROJECT_FILE


def read_toml(path: Path, label: str) -> dict[str, Any]:
    """Parse one TOML file; syntax errors name the file, line and column."""
    import tomllib  # only when there is a file to read: start-up without one stays lighter

    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise _fail(label, "", f"invalid TOML: {exc}", "fix the syntax at that line and column") from None
    except OSError as exc:
        raise _fail(label, "", f"cannot read the file: {exc.strerror or exc}") from None


def parse_override(text: str) -> tuple[tuple[str, ...], Any]:
    """``a.b=value`` → (("a", "b"), value). The value is TOML (``true``, ``5``, ``["x"]``, ``"s"``);
    anything that is not valid TOML is taken as a plain string, so ``-c approval.policy=never`` works."""
    import tomllib

    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise _fail("-c", text, "expected KEY=VALUE", 'for example -c approval.policy="never"')
    parts = tuple(part.strip() for part in key.split("."))
    if any(not part for part in parts):
        raise _fail("-c", key, "empty part in the dotted key", "write it as section.key")
    try:
        value = tomllib.loads(f"value = {raw.strip()}")["value"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    return parts, value


def _nest(parts: tuple[str, ...], value: Any) -> dict[str, Any]:
    nested: dict[str, Any] = {parts[-1]: value}
    for part in reversed(parts[:-1]):
        nested = {part: nested}
    return nested


@dataclass(frozen=True, slots=True)
class Layer:
    """One source of configuration values and the label errors and ``--origin`` use for it."""

    label: str
    data: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ConfigSource:
    """Where configuration comes from, before any plugin is loaded: files and overrides.

    ``ConfigSource.for_project(dir)`` reads ``dir/harness.toml`` and the user file;
    ``ConfigSource.from_mapping(data)`` wraps a dict (tests, embedding).
    """

    layers: tuple[Layer, ...]
    project_dir: Path | None = None
    project_file: Path | None = None
    user_file: Path | None = None

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], label: str = "config") -> ConfigSource:
        return cls(layers=(Layer(label, copy.deepcopy(dict(data))),))

    @classmethod
    def for_project(
        cls,
        project_dir: Path | str | None = None,
        overrides: Iterable[str] = (),
        *,
        user_file: Path | None | bool = True,
    ) -> ConfigSource:
        """Read the user file (``user_file=False`` skips it), ``harness.toml`` and ``-c`` overrides."""
        directory = Path(project_dir) if project_dir is not None else Path.cwd()
        layers: list[Layer] = []
        user_path = user_config_path() if user_file is True else (user_file or None)
        if isinstance(user_path, Path) and user_path.is_file():
            layers.append(Layer(str(user_path), read_toml(user_path, str(user_path))))
        else:
            user_path = None
        project_path = directory / PROJECT_FILE
        if project_path.is_file():
            layers.append(Layer(PROJECT_FILE, read_toml(project_path, PROJECT_FILE)))
        else:
            project_path = None  # type: ignore[assignment]
        override_data: dict[str, Any] = {}
        for text in overrides:
            parts, value = parse_override(text)
            _merge(override_data, _nest(parts, value), frozenset(), {}, "-c")
        if override_data:
            layers.append(Layer("-c", override_data))
        return cls(layers=tuple(layers), project_dir=directory, project_file=project_path, user_file=user_path)

    def plugin_settings(self) -> PluginSettings:
        """``[plugins]`` from the files and overrides alone (presets cannot load or block plugins)."""
        merged: dict[str, Any] = {}
        origins: dict[tuple[str, ...], str] = {}
        for layer in self.layers:
            section = layer.data.get("plugins")
            if section is not None:
                _merge(merged, {"plugins": section}, frozenset({("plugins", "block")}), origins, layer.label)
        section = merged.get("plugins", {})
        if not isinstance(section, dict):
            raise _fail(_origin_of(("plugins",), origins), "plugins", "must be a table")
        problems: list[ConfigProblem] = []
        values: dict[str, tuple[str, ...]] = {}
        for key, value in section.items():
            where = _origin_of(("plugins", key), origins)
            if key not in PluginSettings.__dataclass_fields__:
                known = ", ".join(PluginSettings.__dataclass_fields__)
                problems.append(ConfigProblem(file=where, key=f"plugins.{key}", problem="unknown key", fix=f"keys of [plugins]: {known}"))
            elif not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
                problems.append(
                    ConfigProblem(file=where, key=f"plugins.{key}", problem=f"must be a list of names, got {value!r}")
                )
            else:
                values[key] = tuple(value)
        if problems:
            raise ConfigError(problems)
        return PluginSettings(**values)


# --- Presets --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Preset:
    """A named config fragment; ``extends`` names presets applied before it."""

    name: str
    fragment: Mapping[str, Any]
    description: str = ""
    extends: tuple[str, ...] = ()
    source: str = ""
    default: bool = False


def _presets_from_files(source: ConfigSource, known: Mapping[str, Preset]) -> dict[str, Preset]:
    found: dict[str, Preset] = {}
    for layer in source.layers:
        table = layer.data.get("presets")
        if table is None:
            continue
        if not isinstance(table, dict):
            raise _fail(layer.label, "presets", "must be a table of [presets.NAME] tables")
        for name, body in table.items():
            key = f"presets.{name}"
            if not isinstance(body, dict):
                raise _fail(layer.label, key, f"must be a table, got {type(body).__name__}")
            if name in known:
                raise _fail(
                    layer.label,
                    key,
                    f'preset "{name}" is already defined by {known[name].source}',
                    "choose another name and build on it with extends",
                )
            body = dict(body)
            extends = body.pop("extends", [])
            if isinstance(extends, str):
                extends = [extends]
            if not isinstance(extends, list) or not all(isinstance(item, str) for item in extends):
                raise _fail(layer.label, f"{key}.extends", "must be a list of preset names")
            description = body.pop("description", "")
            if not isinstance(description, str):
                raise _fail(layer.label, f"{key}.description", "must be a string")
            for reserved in ("preset", "presets", "plugins"):
                if reserved in body:
                    raise _fail(
                        layer.label,
                        f"{key}.{reserved}",
                        "a preset cannot select presets or load and block plugins",
                        "put that at the top level of harness.toml",
                    )
            found[name] = Preset(
                name=name, fragment=body, description=description, extends=tuple(extends), source=layer.label
            )
    return found


def _preset_chain(name: str, presets: Mapping[str, Preset], where: str) -> list[Preset]:
    """The presets to apply for ``name``, extended ones first; cycles and unknown names fail."""
    order: list[Preset] = []
    seen: set[str] = set()
    # Iterative depth-first walk; the stack holds (name, path so far, expanded?).
    stack: list[tuple[str, tuple[str, ...], bool]] = [(name, (), False)]
    while stack:
        current, path, expanded = stack.pop()
        if expanded:
            if current not in seen:
                seen.add(current)
                order.append(presets[current])
            continue
        if current in path:
            cycle = " -> ".join((*path[path.index(current) :], current))
            raise _fail(where, f"presets.{path[-1]}.extends", f"cyclic extends: {cycle}")
        if current not in presets:
            known = ", ".join(sorted(presets)) or "none"
            key = f"presets.{path[-1]}.extends" if path else "preset"
            raise _fail(where, key, f'unknown preset "{current}" (known: {known})')
        stack.append((current, path, True))
        for parent in reversed(presets[current].extends):
            stack.append((parent, (*path, current), False))
    return order


# --- Merging ----------------------------------------------------------------------------------------


def _merge(
    base: dict[str, Any],
    overlay: Mapping[str, Any],
    grow_only: frozenset[tuple[str, ...]],
    origins: dict[tuple[str, ...], str],
    label: str,
    prefix: tuple[str, ...] = (),
) -> None:
    """Deep-merge ``overlay`` into ``base`` in place, recording each leaf's origin."""
    stack: list[tuple[dict[str, Any], Mapping[str, Any], tuple[str, ...]]] = [(base, overlay, prefix)]
    while stack:
        target, source, path = stack.pop()
        for key, value in source.items():
            here = (*path, key)
            if here in grow_only and isinstance(value, list):
                current = target.get(key)
                united = list(current) if isinstance(current, list) else []
                added = [item for item in value if item not in united]
                target[key] = united + added
                previous = origins.get(here)
                if previous is None or previous == "default":
                    origins[here] = label
                elif added:
                    # Only a layer that contributed entries is named as an origin of the list.
                    origins[here] = f"{previous} + {label}"
            elif isinstance(value, dict) and isinstance(target.get(key), dict):
                stack.append((target[key], value, here))
            else:
                for stale in [p for p in origins if p[: len(here)] == here]:
                    del origins[stale]
                target[key] = copy.deepcopy(value)
                for leaf in _leaves(value, here):
                    origins[leaf] = label


def _leaves(value: Any, path: tuple[str, ...]) -> list[tuple[str, ...]]:
    if isinstance(value, dict) and value:
        found: list[tuple[str, ...]] = []
        for key, item in value.items():
            found += _leaves(item, (*path, key))
        return found
    return [path]


def grow_only_paths(sections: Mapping[str, type[pydantic.BaseModel]]) -> frozenset[tuple[str, ...]]:
    """Every ``section.field`` (nested models included) whose field is marked :class:`GrowOnly`."""
    paths: set[tuple[str, ...]] = set()
    stack: list[tuple[tuple[str, ...], type[pydantic.BaseModel]]] = [
        (tuple(name.split(".")), model) for name, model in sections.items()
    ]
    while stack:
        prefix, model = stack.pop()
        for field_name, info in model.model_fields.items():
            here = (*prefix, info.alias or field_name)
            if any(isinstance(marker, GrowOnly) for marker in info.metadata):
                paths.add(here)
            annotation = info.annotation
            if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
                stack.append((here, annotation))
    return frozenset(paths)


# --- Validation ---------------------------------------------------------------------------------------


def _origin_of(path: tuple[str, ...], origins: Mapping[tuple[str, ...], str]) -> str:
    for length in range(len(path), 0, -1):
        label = origins.get(path[:length])
        if label is not None:
            return label
    for leaf, label in origins.items():
        if leaf[: len(path)] == path:
            return label
    return "config"


def _presets_setting(path: tuple[str, ...], origins: Mapping[tuple[str, ...], str]) -> list[str]:
    """The presets that set a value at or under ``path``, in the order first seen."""
    found: list[str] = []
    for leaf, label in origins.items():
        if leaf[: len(path)] != path:
            continue
        for part in label.split(" + "):
            if part.startswith("preset ") and part[len("preset ") :] not in found:
                found.append(part[len("preset ") :])
    return found


def _containers(sections: Mapping[str, type[pydantic.BaseModel]]) -> set[tuple[str, ...]]:
    """The tables that only hold dotted sections: ``("hooks",)`` for ``hooks.claude_code``."""
    found: set[tuple[str, ...]] = set()
    for name in sections:
        parts = tuple(name.split("."))
        for length in range(1, len(parts)):
            found.add(parts[:length])
    return found


def _section_table(merged: Mapping[str, Any], parts: tuple[str, ...]) -> Any:
    """The raw table at ``parts`` (``{}`` where the files do not have it)."""
    table: Any = merged
    for part in parts:
        if not isinstance(table, dict):
            return table
        table = table.get(part, {})
    return table


def _validate_sections(
    merged: Mapping[str, Any],
    sections: Mapping[str, type[pydantic.BaseModel]],
    origins: Mapping[tuple[str, ...], str],
) -> dict[str, pydantic.BaseModel]:
    problems: list[ConfigProblem] = []
    validated: dict[str, pydantic.BaseModel] = {}
    containers = _containers(sections)
    known = ", ".join(sorted(sections))
    # Every table on the way to a section must hold only sections (or tables leading to them).
    pending: list[tuple[tuple[str, ...], Mapping[str, Any]]] = [((), merged)]
    while pending:
        prefix, table = pending.pop()
        for key, value in table.items():
            here = (*prefix, key)
            if not prefix and key in RESERVED_KEYS:
                continue
            dotted = ".".join(here)
            if dotted in sections:
                continue
            if here in containers and isinstance(value, dict):
                pending.append((here, value))
                continue
            setters = _presets_setting(here, origins)
            if setters:
                # A preset names a section no loaded plugin owns (its plugin is blocked, left out
                # or missing): refuse, since dropping it would silently lose that policy.
                names = ", ".join(f'"{name}"' for name in setters)
                problems.append(
                    ConfigProblem(
                        file=_origin_of(here, origins),
                        key=dotted,
                        problem=f"preset {names} sets section [{dotted}], which no loaded plugin owns",
                        fix=f"load the plugin that owns [{dotted}] (is it blocked, left out by HARNESS_LOAD_PLUGINS "
                        "or not installed?), or select another preset (preset = [] applies none); "
                        f"known sections: {known}",
                    )
                )
                continue
            problems.append(
                ConfigProblem(
                    file=_origin_of(here, origins),
                    key=dotted,
                    problem=f"unknown section or key [{dotted}]",
                    fix=f"known sections: {known}; a plugin's section exists only while that plugin is loaded",
                )
            )
    for name, model in sections.items():
        parts = tuple(name.split("."))
        raw = _section_table(merged, parts)
        if not isinstance(raw, dict):
            problems.append(
                ConfigProblem(file=_origin_of(parts, origins), key=name, problem=f"must be a table, got {type(raw).__name__}")
            )
            continue
        try:
            validated[name] = model.model_validate(raw)
        except pydantic.ValidationError as exc:
            for error in exc.errors():
                path = (*parts, *(str(part) for part in error["loc"]))
                problem = error["msg"]
                if error["type"] == "extra_forbidden":
                    problem = "unknown key"
                    allowed = ", ".join(model.model_fields)
                    fix = f"keys of [{name}]: {allowed}"
                else:
                    fix = ""
                    if "input" in error and error["type"] != "missing":
                        problem = f"{problem}, got {error['input']!r}"
                problems.append(ConfigProblem(file=_origin_of(path, origins), key=".".join(path), problem=problem, fix=fix))
    if problems:
        raise ConfigError(problems)
    return validated


# --- The result ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HarnessConfig:
    """The effective configuration: validated sections, the merged values and where each came from."""

    sections: Mapping[str, pydantic.BaseModel]
    values: Mapping[str, Any]
    origins: Mapping[tuple[str, ...], str]
    presets: tuple[str, ...] = ()
    available_presets: Mapping[str, Preset] = field(default_factory=dict)
    source: ConfigSource | None = None

    @property
    def project_dir(self) -> Path:
        """The project folder, absolute (the current folder when the config came from a mapping)."""
        source = self.source
        folder = source.project_dir if source is not None and source.project_dir is not None else Path.cwd()
        return folder.resolve()

    def section(self, name: str) -> Any:
        """The validated model of section ``name`` (its defaults when the files do not mention it)."""
        try:
            return self.sections[name]
        except KeyError:
            known = ", ".join(sorted(self.sections))
            raise KeyError(f"no config section {name!r} is registered (known: {known})") from None

    def origin(self, dotted_key: str) -> str:
        """Which layer the value at ``dotted_key`` came from: a file, a preset, ``-c`` or default."""
        return _origin_of(tuple(dotted_key.split(".")), self.origins)


def compose(
    source: ConfigSource,
    sections: Mapping[str, type[pydantic.BaseModel]],
    plugin_presets: Mapping[str, Preset],
) -> HarnessConfig:
    """Build the effective configuration from the layers, the sections and the presets."""
    all_sections = {**core_sections(), **sections}
    grow_only = grow_only_paths(all_sections)
    presets = {**plugin_presets, **_presets_from_files(source, plugin_presets)}

    # None: nobody chose, so the default preset applies; an explicit [] means "no preset".
    selected: list[str] | None = None
    selecting_label = ""
    for layer in source.layers:
        if "preset" in layer.data:
            choice = layer.data["preset"]
            if isinstance(choice, str):
                choice = [choice]
            if not isinstance(choice, list) or not all(isinstance(item, str) for item in choice):
                raise _fail(layer.label, "preset", "must be a preset name or a list of names")
            selected, selecting_label = choice, layer.label
    if selected is None:
        defaults = [preset for preset in plugin_presets.values() if preset.default]
        if len(defaults) > 1:
            names = ", ".join(f'"{p.name}" ({p.source})' for p in defaults)
            raise _fail("presets", "preset", f"more than one plugin declares a default preset: {names}", 'set preset = "NAME" in harness.toml')
        selected = [defaults[0].name] if defaults else []
        selecting_label = "default preset"

    merged: dict[str, Any] = {}
    origins: dict[tuple[str, ...], str] = {}
    applied: list[str] = []
    for name in selected:
        for preset in _preset_chain(name, presets, selecting_label):
            if preset.name not in applied:
                applied.append(preset.name)
                _merge(merged, copy.deepcopy(dict(preset.fragment)), grow_only, origins, f"preset {preset.name}")
    for layer in source.layers:
        data = {key: value for key, value in layer.data.items() if key not in RESERVED_KEYS}
        _merge(merged, data, grow_only, origins, layer.label)
    validated = _validate_sections(merged, all_sections, origins)
    return HarnessConfig(
        sections=validated,
        values=_dump(validated, origins),
        origins=origins,
        presets=tuple(applied),
        available_presets=presets,
        source=source,
    )


def _dump(validated: Mapping[str, pydantic.BaseModel], origins: dict[tuple[str, ...], str]) -> dict[str, Any]:
    """The validated sections as nested JSON values; keys no layer set get the origin "default"."""
    values: dict[str, Any] = {}
    for name, model in validated.items():
        parts = tuple(name.split("."))
        for field_name in type(model).model_fields:
            origins.setdefault((*parts, field_name), "default")
        table = values
        for part in parts[:-1]:
            table = table.setdefault(part, {})
        table[parts[-1]] = model.model_dump(mode="json")
    return values


def preview_preset(name: str, config: HarnessConfig) -> HarnessConfig:
    """The configuration the project would have with ``name`` as its only selected preset.

    The files and ``-c`` overrides of ``config`` still apply on top, as they would if the project
    wrote ``preset = "NAME"``; section defaults fill the rest. Raises :class:`ConfigError` when the
    preset cannot be selected here (for example, it sets a section no loaded plugin owns).
    """
    sections = {key: type(model) for key, model in config.sections.items()}
    grow_only = grow_only_paths(sections)
    merged: dict[str, Any] = {}
    origins: dict[tuple[str, ...], str] = {}
    chain = _preset_chain(name, config.available_presets, "presets")
    for preset in chain:
        _merge(merged, copy.deepcopy(dict(preset.fragment)), grow_only, origins, f"preset {preset.name}")
    for layer in config.source.layers if config.source is not None else ():
        data = {key: value for key, value in layer.data.items() if key not in RESERVED_KEYS}
        _merge(merged, data, grow_only, origins, layer.label)
    validated = _validate_sections(merged, sections, origins)
    return HarnessConfig(
        sections=validated,
        values=_dump(validated, origins),
        origins=origins,
        presets=tuple(preset.name for preset in chain),
        available_presets=config.available_presets,
        source=config.source,
    )


def effective_preset(name: str, config: HarnessConfig) -> dict[str, Any]:
    """What preset ``name`` sets once its ``extends`` chain is applied (deny lists united)."""
    presets = config.available_presets
    sections = {key: type(model) for key, model in config.sections.items()}
    grow_only = grow_only_paths(sections)
    merged: dict[str, Any] = {}
    for preset in _preset_chain(name, presets, "presets"):
        _merge(merged, copy.deepcopy(dict(preset.fragment)), grow_only, {}, preset.name)
    return merged
