"""Masking of sensitive values in records as shown or exported, so a console shared on a call does not
put card numbers or e-mail addresses on the screen.

A rule is a field path into the record's decoded content (`user.email`, `cards.*.number`; `*` is any
key, and a list is stepped through element by element; a leading `data.` names the content, as in
`--where`, so `data.user.email` masks `user.email`, and a field of the content named `data` as well),
`re:REGEX` (every match in every string of the content, and in text records), or a preset: `@cards`
(13 to 19 digits, optionally grouped by spaces or dashes), `@emails`, `@keys` (the partition key itself:
keys can be personal data too). A masked value becomes `<masked N #HASH>`: its length and a short
salted hash, so equal values stay recognisable within a session while the value itself is not shown.
Masking never fails open: a value a rule cannot be applied to is masked whole.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from console.read.decoding import DecodedRecord
from console.read.payloads import KIND_JSON, KIND_TEXT

PRESETS = {
    "@cards": r"\b\d(?:[ -]?\d){12,18}\b",
    "@emails": r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+",
}


KEYS_PRESET = "@keys"
CONTENT_ROOT = "data"  # what --where and --fields call the decoded content


class MaskRuleError(ValueError):
    """A mask rule that does not parse; the message says which and why."""


@dataclass(frozen=True, slots=True)
class MaskRules:
    paths: tuple[tuple[str, ...], ...]
    patterns: tuple[re.Pattern[str], ...]
    texts: tuple[str, ...]  # the rules as given, for the header and --json
    keys: bool = False  # @keys: partition keys are masked too


def parse_rules(texts: Iterable[str]) -> MaskRules:
    """The rules given, checked: MaskRuleError names the first that does not parse."""
    paths: list[tuple[str, ...]] = []
    patterns: list[re.Pattern[str]] = []
    given: list[str] = []
    keys = False
    for text in texts:
        rule = text.strip()
        if not rule:
            continue
        given.append(rule)
        if rule == KEYS_PRESET:
            keys = True
        elif rule.startswith("@"):
            if rule not in PRESETS:
                raise MaskRuleError(f"mask preset {rule!r} is not one of {', '.join((*PRESETS, KEYS_PRESET))}")
            patterns.append(re.compile(PRESETS[rule]))
        elif rule.startswith("re:"):
            try:
                patterns.append(re.compile(rule[3:]))
            except re.error as problem:
                raise MaskRuleError(f"mask rule {rule!r} is not a regular expression: {problem}") from None
            if not rule[3:]:
                raise MaskRuleError("mask rule 're:' needs a regular expression after it")
        else:
            steps = tuple(rule.split("."))
            if any(not step for step in steps):
                raise MaskRuleError(f"mask rule {rule!r} is not a field path (e.g. user.email, cards.*.number)")
            paths.append(steps)
            if steps[0] == CONTENT_ROOT and len(steps) > 1:
                paths.append(steps[1:])  # `data.` names the content, as in --where (both are masked)
    return MaskRules(tuple(paths), tuple(patterns), tuple(given), keys)


class Masker:
    """Masks records with a set of rules; callable on a DecodedRecord (console.read.tail_options.TailOptions.mask)."""

    def __init__(self, rules: MaskRules, salt: bytes | None = None) -> None:
        self.rules = rules
        self._salt = salt if salt is not None else secrets.token_bytes(16)

    @classmethod
    def of_keys(cls) -> Masker:
        """A masker of partition keys alone (the @keys rule): `token` masks a key shown on its own."""
        return cls(MaskRules((), (), (KEYS_PRESET,), keys=True))

    def token(self, text: str) -> str:
        digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), key=self._salt, digest_size=3).hexdigest()
        return f"<masked {len(text)} #{digest}>"

    def __call__(self, record: DecodedRecord) -> DecodedRecord:
        if self.rules.keys and record.partition_key is not None:
            record = replace(record, partition_key=self.token(record.partition_key))
        if not self.rules.paths and not self.rules.patterns:
            return record
        if record.kind == KIND_JSON:
            value = record.value
            for path in self.rules.paths:
                value = self._at_path(value, path)
            value = self._in_strings(value)
            # data=None: the record's stored bytes would otherwise be printed in place of the masked value
            return replace(record, value=value, data=None)
        if record.kind == KIND_TEXT:
            return replace(record, value=self._in_strings(record.value), data=None)
        # Raw bytes are shown in hex: a pattern found in them masks the whole payload.
        text = bytes(record.value).decode("latin-1")
        if any(pattern.search(text) for pattern in self.rules.patterns):
            return replace(record, kind=KIND_TEXT, value=self.token(text), data=None)
        return record

    def copied(self, record: DecodedRecord) -> tuple[str | None, bytes]:
        """The partition key and bytes a masked copy of `record` carries (`kconsole copy --mask`): the masked
        content as compact JSON or as text; a payload the field paths cannot look into (binary, or one that
        did not decode) is masked whole when there are field paths, since what they name cannot be found
        in it."""
        masked = self(record)
        if masked.kind == KIND_JSON:
            return masked.partition_key, json.dumps(masked.value, ensure_ascii=False, separators=(",", ":")).encode()
        if masked.kind == KIND_TEXT:
            return masked.partition_key, masked.value.encode("utf-8", "surrogatepass")
        if self.rules.paths:
            return masked.partition_key, self.token(bytes(record.value).decode("latin-1")).encode()
        return masked.partition_key, bytes(masked.value)

    def _whole(self, value: Any) -> str:
        return self.token(value if isinstance(value, str) else repr(value))

    def _at_path(self, value: Any, path: tuple[str, ...]) -> Any:
        if isinstance(value, list):
            return [self._at_path(item, path) for item in value]
        if not path:
            return self._whole(value)
        if not isinstance(value, dict):
            return value
        step, rest = path[0], path[1:]
        if step == "*":
            return {key: self._at_path(item, rest) for key, item in value.items()}
        if step not in value:
            return value
        masked = dict(value)
        masked[step] = self._at_path(value[step], rest)
        return masked

    def _in_strings(self, value: Any) -> Any:
        if not self.rules.patterns:
            return value
        if isinstance(value, str):
            try:
                for pattern in self.rules.patterns:
                    value = pattern.sub(lambda match: self.token(match.group()), value)
            except (RecursionError, MemoryError):  # never fail open: the whole value goes
                return self.token(value)
            return value
        if isinstance(value, list):
            return [self._in_strings(item) for item in value]
        if isinstance(value, dict):
            return {key: self._in_strings(item) for key, item in value.items()}
        return value


def masker(rules: Iterable[str]) -> Masker | None:
    """A Masker for these rules, or None when there are none; MaskRuleError for a rule that does not parse."""
    parsed = parse_rules(rules)
    return Masker(parsed) if parsed.paths or parsed.patterns or parsed.keys else None
