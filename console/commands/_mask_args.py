"""`--mask RULE` / `--no-mask`: the masking of records shown or exported, from the config's `mask` and the
command line (console.read.masking)."""

from __future__ import annotations

import argparse
from typing import Any

from console.commands._output import note
from console.errors import BadInput
from console.read.masking import Masker, MaskRuleError, masker


def add_mask_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--mask",
        dest="mask_rules",
        action="append",
        default=[],
        metavar="RULE",
        help="mask a field path (user.email, cards.*.number), re:REGEX, @cards, @emails or @keys in what is "
        "shown or written (repeatable; added to the config's mask rules)",
    )
    parser.add_argument(
        "--no-mask", action="store_true", help="show records unmasked, the config's mask rules notwithstanding"
    )


def masker_from_args(args: Any) -> Masker | None:
    """The masker the config and the command line ask for; None when masking is off. A bad --mask rule is
    bad input; a bad rule in the config masks every string (masking fails closed)."""
    given = list(getattr(args, "mask_rules", None) or [])
    if getattr(args, "no_mask", False):
        if given:
            raise BadInput("--mask and --no-mask contradict each other: give one")
        from console.config import load_config

        if load_config()[0].mask:
            note("masking is off (--no-mask): the config's mask rules are not applied")
        return None
    try:
        from_command_line = masker(given)
    except MaskRuleError as problem:
        raise BadInput(str(problem)) from None
    from console.config import MASK_EVERYTHING, load_config

    configured = list(load_config()[0].mask)
    try:
        chosen = masker(configured + given)
    except MaskRuleError as problem:
        note(f"config mask: {problem}; every string is masked")
        chosen = masker(list(MASK_EVERYTHING))
    if chosen is not None:
        note(f"masking on: {', '.join(chosen.rules.texts)}")
    return chosen if chosen is not None else from_command_line
