"""Loading settings: the TOML file, ``EVALUATOR_*`` variables, and errors that name the field.

A bad setting stops the process at start with a :class:`~evaluator.errors.ConfigError`
naming the field (``targets[0].response.answer: ...``) and, for a mistyped key, the
nearest known one; paths in the file are resolved against the file's directory.
"""

from __future__ import annotations

import difflib
import os
import tomllib
import typing
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, Tag, ValidationError
from pydantic_settings import SettingsConfigDict, SettingsError

from evaluator import border
from evaluator.config.jobs import JobConfig
from evaluator.config.settings import Settings
from evaluator.config.sources import DEFAULT_CONFIG_PATH, ENV_PREFIX
from evaluator.config.target import KIND_NAMES, TARGET_KINDS, HttpTargetConfig, TargetConfig
from evaluator.errors import ConfigError
from evaluator.targets.templates import ENV_REFERENCE

__all__ = ["load_settings"]


def _walk(
    loc: tuple[str | int, ...],
) -> tuple[tuple[str | int, ...], type[BaseModel] | None, Mapping[str, type[BaseModel]]]:
    """``loc`` as the user wrote it, the model holding its last key, and that model's kinds.

    Pydantic puts the tag of a discriminated union into the location (``targets.0.http.url``);
    no config file says ``http`` there, so the tag is dropped from what is shown, and used to
    pick the model that holds the keys after it. The kinds are the union's tag -> model when
    the last key is in one of its members (a callable target: the HTTP target is the other
    kind); the holder is None when the member is not known (a target of no kind).
    """
    shown: list[str | int] = []
    model: type[BaseModel] | None = Settings
    holder: type[BaseModel] | None = None
    tags: dict[str, type[BaseModel]] = {}  # the union the next key enters
    kinds: Mapping[str, type[BaseModel]] = {}
    for part in loc:
        if isinstance(part, int):
            shown.append(part)
            continue
        if part in tags:
            model, kinds, tags = tags[part], tags, {}
            continue
        shown.append(part)
        if tags:  # a key of a union member, the member not chosen
            holder, kinds, model = None, tags, None
        else:
            holder, kinds = model, kinds if model in kinds.values() else {}
        field = None if model is None else model.model_fields.get(part)
        model = None if field is None else _inner_model(field.annotation)
        tags = {} if field is None else _tagged(field.annotation)
    return tuple(shown), holder, kinds


def _tagged(annotation: object) -> dict[str, type[BaseModel]]:
    """The tag -> model of a discriminated union somewhere in ``annotation``."""
    found: dict[str, type[BaseModel]] = {}
    if typing.get_origin(annotation) is Annotated:
        base, *metadata = typing.get_args(annotation)
        for item in metadata:
            if isinstance(item, Tag) and isinstance(base, type) and issubclass(base, BaseModel):
                found[item.tag] = base
        return found | _tagged(base)
    for arg in typing.get_args(annotation):
        found |= _tagged(arg)
    return found


def _inner_model(annotation: object) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _inner_model(arg)
        if found is not None:
            return found
    return None


def _in_data(data: object, loc: tuple[str | int, ...]) -> bool:
    for part in loc:
        in_list = isinstance(part, int) and isinstance(data, list) and 0 <= part < len(data)
        in_table = isinstance(part, str) and isinstance(data, dict) and part in data
        if not (in_list or in_table):
            return False
        data = data[part]  # type: ignore[index]
    return True


def _format_validation(
    exc: ValidationError,
    source: str,
    file_data: Mapping[str, Any] | None = None,
    flags: Mapping[str, str] | None = None,
) -> str:
    """One line naming each bad value where the user wrote it: the command-line flag, the
    environment variable, or the key in the config file (with "did you mean" for an unknown
    key), never a source it did not come from."""
    parts = []
    origins = flags or {}
    for kind, where, msg in _problems(exc):
        loc, holder, kinds = _walk(where)
        message = msg.removeprefix("Value error, ")
        if kind == "extra_forbidden" and loc:
            message = _unknown_key(str(loc[-1]), holder, kinds)
        field = _written_at(loc, source, file_data, origins) if loc else source
        parts.append(f"{field}: {message}")
    return "invalid configuration: " + "; ".join(parts)


def _written_at(
    loc: tuple[str | int, ...],
    source: str,
    file_data: Mapping[str, Any] | None,
    origins: Mapping[str, str],
) -> str:
    """Where the value at ``loc`` was set: its command-line flag, its environment variable
    (or the one that set its whole list as JSON), the config file's key, else the dotted key
    alone."""
    dotted = ".".join(str(p) for p in loc)
    env = "EVALUATOR_" + "__".join(str(p) for p in loc).upper()
    whole = "EVALUATOR_" + str(loc[0]).upper()
    if origins.get(str(loc[0])):
        return origins[str(loc[0])]
    if str(loc[0]) in origins:
        return f"{dotted} (command line)"
    if env in os.environ:
        return f"environment variable {env} ({dotted})"
    if len(loc) > 1 and whole in os.environ:
        # a list of tables set whole as JSON (EVALUATOR_TARGETS='[{...}]')
        return f"environment variable {whole} ({dotted})"
    if file_data is not None and _in_data(file_data, loc):
        return f"{source}: {dotted}"
    return dotted


def _problems(exc: ValidationError) -> list[tuple[str, tuple[str | int, ...], str]]:
    """(type, location, message) of each error; a target of no kind (neither `url` nor
    `callable`, or both) is told by its unknown keys when it has some: ``urll`` is a typo
    of ``url``, and the closest key says so better than "set exactly one". Of the input,
    only a table's keys are read, never a value (it may be a secret)."""
    known = {name for model in TARGET_KINDS.values() for name in model.model_fields}
    found: list[tuple[str, tuple[str | int, ...], str]] = []
    for err in exc.errors(include_url=False):
        loc, data = tuple(err["loc"]), err.get("input")
        unknown = []
        if err["type"] == "target_kind" and isinstance(data, Mapping):
            unknown = [str(key) for key in data if key not in known]
        found += [("extra_forbidden", (*loc, key), "") for key in unknown]
        if not unknown:
            found.append((err["type"], loc, err["msg"]))
    return found


def _unknown_key(
    key: str, holder: type[BaseModel] | None, kinds: Mapping[str, type[BaseModel]]
) -> str:
    """Why ``key`` is not accepted where it was written: a key of another kind of the same
    thing (``max_connections`` on a callable target), or a typo, with the closest key (of
    any kind when the kind is not known: ``holder`` None)."""
    if holder is not None:
        for tag, model in kinds.items():
            if model is not holder and key in model.model_fields:
                return f"only for {KIND_NAMES.get(tag, repr(tag))}"
    models = [holder] if holder is not None else list(kinds.values())
    known = list(dict.fromkeys(name for model in models for name in model.model_fields))
    close = difflib.get_close_matches(key, known, n=1)
    return "unknown key" + (f' (did you mean "{close[0]}"?)' if close else "")


def _check_environment(referenced: Collection[str] = ()) -> None:
    """A misspelt ``EVALUATOR_`` variable would be ignored silently: reject it by name.

    A variable the config file references (``token = "${EVALUATOR_UI_TOKEN}"``) is a value
    the file reads, not a settings override: it is never refused for its name.
    """
    known = set(Settings.model_fields)
    for name in sorted(os.environ):
        if not name.upper().startswith(ENV_PREFIX) or name in referenced:
            continue
        field = name[len(ENV_PREFIX) :].split("__", 1)[0].lower()
        if field not in known:
            hint = difflib.get_close_matches(field, known, n=1)
            also = f" (did you mean EVALUATOR_{hint[0].upper()}?)" if hint else ""
            raise ConfigError(f"unknown environment variable {name}{also}")


def _config_path(config_path: str | Path | None) -> Path | None:
    """The config file to read: ``config_path``, which must exist, else
    ``config/evaluator.toml`` when it does, else none (defaults and environment)."""
    if config_path is None:
        return DEFAULT_CONFIG_PATH if DEFAULT_CONFIG_PATH.is_file() else None
    path = Path(config_path)
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist or is not a file")
    return path


def _file_settings(path: Path) -> tuple[dict[str, Any], type[Settings]]:
    """The config file decoded, and the settings class that reads it (below the environment
    and the flags); an ``EVALUATOR_`` variable the file does not reference is checked by
    name."""
    try:
        text = border.read_file(path, border.MAX_SETTINGS_BYTES).decode("utf-8")
        file_data = tomllib.loads(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from exc
    except ValueError as exc:
        # TOMLDecodeError, or the int conversion's digit limit (a 5,000-digit integer)
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
    _check_environment(set(ENV_REFERENCE.findall(text)))
    bound_config = SettingsConfigDict(**{**Settings.model_config, "toml_file": path})
    return file_data, type("FileSettings", (Settings,), {"model_config": bound_config})


def load_settings(
    config_path: str | Path | None = None,
    overrides: dict[str, Any] | None = None,
    flags: Mapping[str, str] | None = None,
) -> Settings:
    """Load settings from ``config_path`` (or ``config/evaluator.toml`` when it exists).

    Args:
        config_path: the TOML file; an explicit path must exist.
        overrides: values from command-line flags, highest priority.
        flags: top-level setting -> the flag that set it (``{"k": "--k"}``), so an invalid
            value is reported against the flag; ``""`` for a setting built from several
            flags (a target from ``--target-url``), reported as its field.

    Raises:
        ConfigError: unreadable or invalid TOML, or a field that fails validation.
    """
    path = _config_path(config_path)
    cls: type[Settings] = Settings
    source = "environment"
    file_data: dict[str, Any] | None = None
    if path is not None:
        source = str(path)
        file_data, cls = _file_settings(path)
    else:
        _check_environment()
    try:
        settings = cls(**(overrides or {}))
    except ValidationError as exc:
        raise ConfigError(_format_validation(exc, source, file_data, flags)) from None
    except SettingsError as exc:
        # an EVALUATOR_ variable that is not valid JSON (EVALUATOR_TARGETS='[{bad')
        raise ConfigError(_env_problem(exc)) from None
    if path is not None and file_data is not None:
        settings = _relative_to_file(settings, file_data, path.parent, set(overrides or {}))
    return _with_openslo(settings)


def _with_openslo(settings: Settings) -> Settings:
    """``settings`` with the SLOs of its OpenSLO files added to ``[[slos]]``, each checked
    against the jobs as a ``[[slos]]`` table is, naming the file's field when it fails."""
    if not settings.openslo_files:
        return settings
    # here, not at the top: PyYAML only for a configuration that names an OpenSLO file
    from evaluator.config.openslo import read_openslo
    from evaluator.config.slo import MAX_SLOS

    read = [found for path in settings.openslo_files for found in read_openslo(path)]
    if len(settings.slos) + len(read) > MAX_SLOS:
        raise ConfigError(f"invalid configuration: slos: more than {MAX_SLOS} SLOs")
    slos = tuple(found.slo for found in read)
    problem = settings.slo_problem(slos, lambda i, field: read[i].where(field))
    if problem is not None:
        raise ConfigError(f"invalid configuration: {problem}")
    return settings.model_copy(update={"slos": (*settings.slos, *slos)})


def _from_file(file_data: Mapping[str, Any], overridden: set[str], *loc: str | int) -> bool:
    """Whether the value at ``loc`` was written in the config file (not replaced by a flag
    or an environment variable)."""
    top = str(loc[0])
    env = "EVALUATOR_" + "__".join(str(p) for p in loc).upper()
    if top in overridden or env in os.environ or f"EVALUATOR_{top.upper()}" in os.environ:
        return False
    return _in_data(file_data, loc)


def _against(base: Path, value: Path) -> Path:
    """``value`` read from a config file in ``base``: relative paths are relative to the file."""
    if value.is_absolute():
        return value
    return Path(os.path.normpath(base / value))


class _FilePaths:
    """Resolves the paths written in one config file against the file's folder; a path set
    by a flag or an environment variable is left as typed."""

    def __init__(self, file_data: Mapping[str, Any], base: Path, overridden: set[str]) -> None:
        self.file_data = file_data
        self.base = base
        self.overridden = overridden

    def resolve(self, value: Path, *loc: str | int) -> Path | None:
        """``value`` against the file's folder when the file wrote it at ``loc``, else None."""
        if not _from_file(self.file_data, self.overridden, *loc):
            return None
        return _against(self.base, value)

    def top(self, settings: Settings) -> dict[str, Any]:
        """The top-level paths: reports folder, gates file, OpenSLO files."""
        top: dict[str, Any] = {}
        for name in ("reports_dir", "gates_file"):
            value = getattr(settings, name)
            resolved = self.resolve(value, name) if value is not None else None
            if resolved is not None:
                top[name] = resolved
        if _from_file(self.file_data, self.overridden, "openslo_files"):
            top["openslo_files"] = tuple(_against(self.base, p) for p in settings.openslo_files)
        return top

    def job(self, index: int, job: JobConfig) -> JobConfig:
        """A job with its golden set and baseline resolved."""
        update = {}
        for name in ("dataset", "baseline"):
            value = getattr(job, name)
            resolved = self.resolve(value, "jobs", index, name) if value is not None else None
            if resolved is not None:
                update[name] = resolved
        return job.model_copy(update=update) if update else job

    def target(self, index: int, target: TargetConfig) -> TargetConfig:
        """An HTTP target with its CA bundle resolved."""
        if not isinstance(target, HttpTargetConfig) or target.tls.ca_bundle is None:
            return target
        bundle = self.resolve(target.tls.ca_bundle, "targets", index, "tls", "ca_bundle")
        if bundle is None:
            return target
        tls = target.tls.model_copy(update={"ca_bundle": bundle})
        return target.model_copy(update={"tls": tls})


def _relative_to_file(
    settings: Settings, file_data: Mapping[str, Any], base: Path, overridden: set[str]
) -> Settings:
    """Resolve the paths written in the config file against the file's folder, as a user
    reading the file expects; flags and environment variables stay relative to the working
    directory, where they were typed."""
    paths = _FilePaths(file_data, base, overridden)
    top = paths.top(settings)
    top["jobs"] = tuple(paths.job(i, job) for i, job in enumerate(settings.jobs))
    top["targets"] = tuple(paths.target(i, target) for i, target in enumerate(settings.targets))
    judge = settings.judge
    labels = judge.drift_labels if judge is not None else None
    resolved = paths.resolve(labels, "judge", "drift_labels") if labels is not None else None
    if judge is not None and resolved is not None:
        top["judge"] = judge.model_copy(update={"drift_labels": resolved})
    return settings.model_copy(update=top)


def _env_problem(exc: SettingsError) -> str:
    """Name the variable a :class:`SettingsError` is about, never its value (a secret?)."""
    text = str(exc)
    field = text.split('"')[1] if text.count('"') >= 2 else ""
    if field:
        return (
            f"environment variable EVALUATOR_{field.upper()}: not valid JSON "
            f"(a list or object value is written as JSON, e.g. '[{{\"url\": ...}}]')"
        )
    return f"invalid configuration in environment: {text}"
