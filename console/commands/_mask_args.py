"""`--mask RULE` / `--mask-keys` / `--no-mask`: the masking of records and partition keys shown or written,
from the config's `mask` and `mask_keys` and the command line (console.read.masking).

Masking never fails open: a bad rule in the config masks every string, and `--no-mask` turning the
config's masking off is said on stderr and written to the action log first (when the log cannot be
written, the command stops: masking stays on)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from console.commands._output import note
from console.errors import BadInput
from console.read.masking import KEYS_PRESET, Masker, MaskRuleError, masker


def add_mask_arguments(parser: argparse.ArgumentParser, *, records: bool = True) -> None:
    """The masking options; `records=False` for a command that shows partition keys but no records (heat)."""
    if records:
        parser.add_argument(
            "--mask",
            dest="mask_rules",
            action="append",
            default=[],
            metavar="RULE",
            help="mask a field path (user.email, data.cards.*.number), re:REGEX, @cards, @emails or @keys in "
            "what is shown or written (repeatable; added to the config's mask rules)",
        )
    parser.add_argument(
        "--mask-keys",
        action="store_true",
        help="mask partition keys wherever they are shown (keys can be personal data too; the config's "
        "mask_keys = true does the same)",
    )
    parser.add_argument(
        "--no-mask",
        action="store_true",
        help="show unmasked, the config's mask rules and mask_keys notwithstanding (said, and written to "
        "the action log)",
    )


def configured_rules() -> list[str]:
    """The config's mask rules, `@keys` added when its mask_keys is on."""
    from console.config import load_config

    config = load_config()[0]
    return list(config.mask) + ([KEYS_PRESET] if config.mask_keys and KEYS_PRESET not in config.mask else [])


def _given(args: Any) -> list[str]:
    given = list(getattr(args, "mask_rules", None) or [])
    if getattr(args, "mask_keys", False):
        given.append(KEYS_PRESET)
    return given


def _masking_off(args: Any, given: list[str]) -> None:
    """--no-mask: refused beside a rule; said and logged when it turns the config's masking off."""
    if given:
        raise BadInput("--mask or --mask-keys and --no-mask contradict each other: give one")
    configured = configured_rules()
    if configured:
        from console.reshard.actionlog import ActionLog

        command = getattr(args, "command", None) or "kconsole"
        stream = getattr(args, "stream", None) or getattr(args, "source", None)
        ActionLog.default().masking_off(stream=stream, rules=tuple(configured), where=f"{command} --no-mask")
        note(f"masking is off (--no-mask): the config's {', '.join(configured)} not applied; written to the action log")


def masker_from_args(args: Any) -> Masker | None:
    """The masker the config and the command line ask for; None when masking is off. A bad --mask rule is
    bad input; a bad rule in the config masks every string (masking fails closed)."""
    given = _given(args)
    if getattr(args, "no_mask", False):
        _masking_off(args, given)
        return None
    try:
        from_command_line = masker(given)
    except MaskRuleError as problem:
        raise BadInput(str(problem)) from None
    from console.config import MASK_EVERYTHING

    try:
        chosen = masker(configured_rules() + given)
    except MaskRuleError as problem:
        note(f"config mask: {problem}; every string is masked")
        chosen = masker(list(MASK_EVERYTHING) + ([KEYS_PRESET] if KEYS_PRESET in given else []))
    if chosen is not None:
        note(f"masking on: {', '.join(chosen.rules.texts)}")
    return chosen if chosen is not None else from_command_line


def key_mask_from_args(args: Any) -> Callable[[str], str] | None:
    """How partition keys are shown by a command that shows keys but no records (heat): masked when the
    config's mask_keys or an @keys rule, or --mask-keys, asks; None shows them as they are."""
    given = _given(args)
    if getattr(args, "no_mask", False):
        _masking_off(args, given)
        return None
    if KEYS_PRESET not in configured_rules() + given:
        return None
    note("masking on: partition keys (@keys)")
    return Masker.of_keys().token


CONFIGURED = "@config"  # `copy --mask` without a rule: the config's rules


def add_copy_mask_arguments(parser: argparse.ArgumentParser) -> None:
    """`copy --mask [RULE]`: off by default (a copy is a copy); on, the config's rules plus any given."""
    parser.add_argument(
        "--mask",
        dest="mask_rules",
        action="append",
        nargs="?",
        const=CONFIGURED,
        default=[],
        metavar="RULE",
        help="write the records masked: the config's mask rules, plus RULE if given (repeatable; field path, "
        "re:REGEX, @cards, @emails, @keys). Without it a copy is byte for byte, the config's mask notwithstanding",
    )
    parser.add_argument("--mask-keys", action="store_true", help="with the records masked, their partition keys too")


def copy_masker(args: Any, stored: list[str] | None = None) -> Masker | None:
    """The masker `copy --mask` asks for (`stored`: the rules of the copy being resumed, which it keeps);
    None when the copy is byte for byte. A rule that does not parse is bad input, wherever it comes from."""
    given = [rule for rule in args.mask_rules if rule != CONFIGURED]
    if args.mask_keys:
        given.append(KEYS_PRESET)
    asked = bool(args.mask_rules or args.mask_keys)
    if stored is not None and not asked:
        rules = stored
    elif asked:
        rules = list(dict.fromkeys(configured_rules() + given))
    else:
        if configured_rules():
            note("copy: records are copied as they are; the config's mask rules apply with --mask")
        return None
    try:
        chosen = masker(rules)
    except MaskRuleError as problem:
        raise BadInput(f"{problem}; a masked copy needs rules that parse") from None
    if chosen is None:
        raise BadInput("copy --mask: no mask rules (give --mask RULE, or mask = [...] in the config)", code="usage")
    note(f"copy: writing the records masked: {', '.join(chosen.rules.texts)}")
    return chosen
