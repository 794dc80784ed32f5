"""Command-line options made from the settings table (app/options.py), and the words an
error uses for a setting: its option when the value came from the command line, its
TRAININGRUN_* variable when it came from the environment.

Each option's type comes from its field's annotation, its `choices` from a Literal or the
marker's known names, and its help from the field's description with the default appended.
"""

from __future__ import annotations

import argparse
import types
from collections.abc import Collection
from pathlib import Path
from typing import Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from app.cli.parser import PROG, CommandParser
from app.options import (
    Command,
    Options,
    choices,
    default,
    env_name,
    marker,
    option,
    problems,
    settings_of,
)

T = TypeVar("T", bound=Options)


def _plain(annotation: Any) -> Any:
    """The annotation without `| None`; a union of several types is read as text."""
    if get_origin(annotation) in (Union, types.UnionType):
        kinds = [a for a in get_args(annotation) if a is not type(None)]
        return kinds[0] if len(kinds) == 1 else str
    return annotation


def help_text(table: type[BaseModel], name: str, command: Command) -> str:
    """The field's description, with the command's default appended unless it is none
    (None, off, an empty list)."""
    text = table.model_fields[name].description or ""
    value = default(table, name, command)
    if value is not None and value is not False and value != []:
        text += f" (default {value:g})" if isinstance(value, float) else f" (default {value})"
    return text.replace("%", "%%")  # argparse formats help with %


def argument(
    table: type[BaseModel], name: str, command: Command, *, with_defaults: bool
) -> dict[str, Any]:
    """add_argument's keywords for one setting on `command`."""
    info: FieldInfo = table.model_fields[name]
    on = marker(info)
    kind = _plain(info.annotation)
    kw: dict[str, Any] = {"dest": name, "help": help_text(table, name, command)}
    value = default(table, name, command) if with_defaults else None
    if kind is bool:
        kw.update(action="store_true", default=bool(value) if with_defaults else None)
        return kw
    if get_origin(kind) is list:
        (item,) = get_args(kind)
        kw.update(action="append", type=item, default=list(value) if with_defaults else None)
    else:
        known = choices(info)
        if known is not None:
            kw["choices"] = list(known)
        kw["type"] = kind if kind in (int, float, Path) else str
        kw["default"] = Path(value) if kind is Path and value is not None else value
    if on.metavar:
        kw["metavar"] = on.metavar
    return kw


def add_settings(
    parser: argparse.ArgumentParser,
    command: Command,
    table: type[BaseModel] = Options,
    *,
    with_defaults: bool = False,
) -> None:
    """Add every setting of `table` marked for `command`. Without `with_defaults` an option
    left out stays None, so the environment or the table's default fills it in (serve,
    watch); with it, the option holds the command's default (train reads no environment)."""
    for name, on in settings_of(table, command):
        kw = argument(table, name, command, with_defaults=with_defaults)
        parser.add_argument(option(name, on), **kw)


def settings_parser(
    command: Command, table: type[BaseModel], description: str
) -> argparse.ArgumentParser:
    """The parser of a command whose options are all settings of `table` (serve, watch)."""
    p = CommandParser(prog=f"{PROG} {command}", description=description)
    add_settings(p, command, table)
    return p


def given(args: argparse.Namespace, table: type[BaseModel]) -> dict[str, Any]:
    """The settings the command line gave (an option left out is None)."""
    return {
        name: value
        for name in table.model_fields
        if (value := getattr(args, name, None)) is not None
    }


def options_of(table: type[BaseModel], command: Command) -> dict[str, str]:
    """Each setting on `command`'s line: field name -> its option."""
    return {name: option(name, on) for name, on in settings_of(table, command)}


class Where:
    """Names each setting as the user gave it: its option when the command line gave it (or
    when nothing did, so the option is what to change), its environment variable when the
    environment did, or when the command has no such option."""

    def __init__(
        self,
        table: type[BaseModel],
        command: Command,
        given: Collection[str],
        from_env: Collection[str] | None = None,
    ) -> None:
        self.table = table
        self.options = options_of(table, command)
        self.given = set(given)
        # None: not known yet, so whatever the command line did not give came from there.
        self.from_env = None if from_env is None else set(from_env)

    def __call__(self, name: str) -> str:
        env = name not in self.given and (self.from_env is None or name in self.from_env)
        if name in self.options and not env:
            return self.options[name]
        return env_name(self.table, name)

    def all(self) -> dict[str, str]:
        """field name -> its words, for every setting of the table."""
        return {name: self(name) for name in self.table.model_fields}


def read_settings(
    parser: argparse.ArgumentParser, command: Command, table: type[T], args: argparse.Namespace
) -> tuple[T, Where]:
    """The settings from the command line, then the environment, then the defaults (the
    command's own where it has one), and how to name each; a one-line error naming the
    option or the variable of each bad value otherwise."""
    values = given(args, table)
    try:
        settings = table(**values)
        from_env = settings.model_fields_set - set(values)
        # A command's own default gives way to the environment, as the table's does.
        own = {
            name: value
            for name, on in settings_of(table, command)
            for cmd, value in on.defaults
            if cmd == command and name not in settings.model_fields_set
        }
        if own:
            settings = table(**values, **own)
    except ValidationError as exc:
        where = Where(table, command, values)
        parser.error("; ".join(_error(err, where) for err in exc.errors()))
    where = Where(table, command, values, from_env)
    # Values from the environment skip argparse's choices: the table's known sets, again.
    found = problems(table, dict(settings), where.all())
    if found:
        parser.error("; ".join(found))
    return settings, where


def _error(err: Any, where: Where) -> str:
    if not err["loc"]:
        return str(err["msg"])
    message = str(err["msg"]).removeprefix("Value error, ")
    return f"{where(str(err['loc'][0]))}: {message} (got {err.get('input')!r})"
