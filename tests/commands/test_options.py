"""Each command's typed ``Options`` matches its flags: every flag has a field of its type.

The handlers read only ``Options`` (mypy checks each access); the flags are declared with
argparse. These tests are what keeps the two equal: a new flag without a field, a field
without a flag, or a field typed differently from what argparse stores fails here, naming
the command and the flag.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import shlex
import typing
from pathlib import Path
from types import ModuleType

import pytest

from evaluator.cli import build_parser
from evaluator.commands import COMMANDS, EXAMPLES
from evaluator.commands.flags import TargetFlags, options_from

#: set on every subparser by the entry point, not flags of the command (a command may take
#: ``full_parser``, the factory of the whole parser, as an option: completion does)
_ENTRY_POINT = {"help", "debug", "handler", "options", "full_parser"}


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # argparse has no public way to list subparsers
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("no subcommands")


def _fields(cls: type) -> dict[str, object]:
    """Field name -> type, nested option groups (``TargetFlags``) flattened."""
    found: dict[str, object] = {}
    for name, hint in typing.get_type_hints(cls).items():
        if dataclasses.is_dataclass(hint) and isinstance(hint, type):
            found |= _fields(hint)
        else:
            found[name] = hint
    return found


def _stored(action: argparse.Action) -> object:
    """The type argparse stores for ``action``."""
    if isinstance(action, argparse._StoreTrueAction):
        return bool
    converter = action.type
    if converter is None:
        base: object = str
    elif isinstance(converter, type):
        base = converter
    else:  # a function such as repeat_count: its return annotation
        base = typing.get_type_hints(converter)["return"]
    if action.nargs in ("+", "*") or isinstance(action, argparse._AppendAction):
        return list[base]  # type: ignore[valid-type]
    if action.default is None and not action.required:
        return base | None  # type: ignore[operator]
    return base


def _commands() -> list[tuple[str, ModuleType, argparse.ArgumentParser]]:
    parsers = _subparsers(build_parser(every=True))
    return [(name, importlib.import_module(mod), parsers[name]) for name, _, mod in COMMANDS]


@pytest.mark.parametrize(("name", "module", "parser"), _commands(), ids=[n for n, *_ in COMMANDS])
def test_every_flag_is_a_field_of_its_type(
    name: str, module: ModuleType, parser: argparse.ArgumentParser
) -> None:
    """Name for name and type for type (``--k N`` is ``int | None``, ``--html`` ``str | None``)."""
    fields = _fields(module.Options)
    flags = {a.dest: _stored(a) for a in parser._actions if a.dest not in _ENTRY_POINT}
    assert set(fields) - {"full_parser"} == set(flags), name
    for dest, stored in flags.items():
        assert fields[dest] == stored, f"{name} --{dest.replace('_', '-')}: {fields[dest]}"


@pytest.mark.parametrize(
    ("name", "line"), [(name, line) for name, lines in EXAMPLES.items() for line in lines]
)
def test_every_help_example_builds_its_options(name: str, line: str) -> None:
    """Each example of ``--help`` parses into its command's frozen ``Options``."""
    words = shlex.split(line.split(" > ")[0])[1:]  # no "evaluator", no redirection
    args = build_parser(name).parse_args(words)
    options = options_from(args.options, args)
    assert type(options).__module__ == f"evaluator.commands.{name}"
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.config = "x"


def test_target_flags_name_what_was_given() -> None:
    """``gate --candidate`` lists the live-run flags it refuses, as they were typed."""
    args = build_parser("gate").parse_args(
        ["gate", "--candidate", "c.json", "--target-url", "http://h/rag", "--k", "3"]
    )
    options = options_from(args.options, args)
    assert TargetFlags(target_url="http://h/rag", k=3) == options.target_flags
    assert ["--target-url", "--k"] == options.target_flags.given()
    assert Path("c.json") == Path(options.candidate)
