"""A command's own options, typed: a frozen dataclass (or NamedTuple) read from argparse's Namespace once, where the
command starts, so the rest of the command reads typed fields, not `args.x`. The options every
command shares (--json/--output/--query, --local/--endpoint-url/--region/--profile, --read-only,
--yes) stay on the Namespace: emit, with_backend and the confirmations read them there."""

from __future__ import annotations

import argparse
from typing import Any, TypeVar

Options = TypeVar("Options")


def option_names(cls: type[Any]) -> tuple[str, ...]:
    """The fields of an options class: a frozen dataclass, or a NamedTuple where a command's start must
    not import dataclasses (the keyspace commands)."""
    named: tuple[str, ...] | None = getattr(cls, "_fields", None)
    if named is not None:
        return named
    from dataclasses import fields

    return tuple(field.name for field in fields(cls))


def options_from(cls: type[Options], args: argparse.Namespace) -> Options:
    """`cls` filled from `args` by field name; a field the chosen action does not take (argparse left it
    out) keeps its default."""
    given = vars(args)
    return cls(**{name: given[name] for name in option_names(cls) if name in given})
