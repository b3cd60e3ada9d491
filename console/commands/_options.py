"""A command's own options, typed: a frozen dataclass read from argparse's Namespace once, where the
command starts, so the rest of the command reads typed fields, not `args.x`. The options every
command shares (--json/--output/--query, --local/--endpoint-url/--region/--profile, --read-only,
--yes) stay on the Namespace: emit, with_backend and the confirmations read them there."""

from __future__ import annotations

import argparse
from dataclasses import fields
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Options = TypeVar("Options", bound="DataclassInstance")


def options_from(cls: type[Options], args: argparse.Namespace) -> Options:
    """`cls` filled from `args` by field name; a field the chosen action does not take (argparse left it
    out) keeps its default."""
    given = vars(args)
    return cls(**{field.name: given[field.name] for field in fields(cls) if field.name in given})
