"""User settings in a TOML file under platformdirs' user config dir (console.userdirs finds it).

A bad file never stops the console or a command: each setting is checked on its own, an unusable
one is replaced by its default and named in a one-line warning, and a safety setting (`read_only`,
`mask`, `mask_keys`) that is present but unusable fails closed. The file is read within a bound (1 MiB,
a regular file): anything else is one warning line, and read-only stays on.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from console.userdirs import config_path


@dataclass(frozen=True)
class Config:
    interval: float = 5.0  # seconds between shard-map polls in the console
    last_stream: str | None = None
    theme: str = "textual-dark"
    read_only: bool = False
    key_format: str = "decimal"  # how hash keys are written in the console: "decimal" or "hex"
    # Mask rules applied to records shown or exported (console.read.masking): field paths, re:REGEX, @presets.
    mask: tuple[str, ...] = ()
    # Partition keys masked wherever they are shown (tail, the Heat tab's and `heat`'s hot keys): the `@keys` rule.
    mask_keys: bool = False


# A mask that is set but unusable masks every string: masking fails closed, like read_only.
MASK_EVERYTHING = ("re:(?s).+",)


# Each key's check: the value to use, or None when the value is unusable.
def _interval(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0.2 <= value <= 3600:
        return float(value)
    return None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value and value.isprintable() and len(value) <= 200 else None


def _mask(value: object) -> tuple[str, ...] | None:
    if isinstance(value, list) and len(value) <= 100 and all(isinstance(rule, str) and rule for rule in value):
        return tuple(value)
    return None


_CHECKS = {
    "interval": (_interval, "a number of seconds from 0.2 to 3600"),
    "last_stream": (_text, "a stream name"),
    "theme": (_text, "a theme name"),
    "read_only": (lambda value: value if isinstance(value, bool) else None, "true or false"),
    "key_format": (lambda value: value if value in ("decimal", "hex") else None, '"decimal" or "hex"'),
    "mask": (_mask, 'a list of mask rules (e.g. ["user.email", "@cards"])'),
    "mask_keys": (lambda value: value if isinstance(value, bool) else None, "true or false"),
}
# Safety settings fail closed: present but unusable, they take the safe value, never the default.
FAIL_CLOSED: dict[str, Any] = {"read_only": True, "mask": MASK_EVERYTHING, "mask_keys": True}
# `read_only = ...` in a file that does not parse as TOML: still a read_only that is present.
_READ_ONLY_LINE = re.compile(r"^\s*read_only\s*=\s*(\S*)", re.MULTILINE)
_MASK_LINE = re.compile(r"^\s*mask\s*=", re.MULTILINE)
_MASK_KEYS_LINE = re.compile(r"^\s*mask_keys\s*=\s*(\S*)", re.MULTILINE)


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "..."


MAX_CONFIG_BYTES = 1024 * 1024  # a settings file of a few lines; anything bigger is not one


def _read_bounded(path: Path) -> bytes | None:
    """The file's bytes, or None when it holds more than MAX_CONFIG_BYTES or is not a regular file
    (/dev/zero, a FIFO, a directory): it is never read further, nor waited on."""
    import os
    import stat

    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return None
        chunks, size = [], 0
        while size <= MAX_CONFIG_BYTES:
            chunk = os.read(descriptor, MAX_CONFIG_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return None if size > MAX_CONFIG_BYTES else b"".join(chunks)
    finally:
        os.close(descriptor)


def load_config(path: Path | None = None) -> tuple[Config, str | None]:
    """Read the config, each key on its own: an unusable value is replaced by its default (a safety
    key by its safe value) and named in the one-line warning, which is None when all is well."""
    path = path or config_path()
    try:
        data = _read_bounded(path)
    except FileNotFoundError:
        return Config(), None
    except OSError as error:  # unreadable: whether it asks for read-only cannot be known, so it does
        reason = error.strerror or error
        return Config(read_only=True), f"cannot read config {path}: {reason}; using defaults, read-only"
    if data is None:  # too big to be a settings file: it may ask for read-only, so it does
        return (
            Config(read_only=True),
            f"ignoring config {path}: larger than {MAX_CONFIG_BYTES // 1024 // 1024} MiB or not a regular "
            "file; using defaults, read-only",
        )
    text = data.decode("utf-8", errors="replace")
    import tomllib

    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        read_only = any(value != "false" for value in _READ_ONLY_LINE.findall(text))
        safety = ", read-only (read_only is set but unreadable)" if read_only else ""
        mask = MASK_EVERYTHING if _MASK_LINE.search(text) else ()
        if mask:
            safety += ", every string masked (mask is set but unreadable)"
        mask_keys = any(value != "false" for value in _MASK_KEYS_LINE.findall(text))
        if mask_keys:
            safety += ", partition keys masked (mask_keys is set but unreadable)"
        return (
            Config(read_only=read_only, mask=mask, mask_keys=mask_keys),
            f"ignoring config {path}: {error}; using defaults{safety}",
        )
    values: dict[str, Any] = {}
    problems: list[str] = []
    for key, value in raw.items():
        if key not in _CHECKS:
            problems.append(f"unknown setting {key} ignored")
            continue
        check, expected = _CHECKS[key]
        usable = check(value)
        if usable is not None:
            values[key] = usable
        elif key in FAIL_CLOSED:
            values[key] = FAIL_CLOSED[key]
            problems.append(f"{key} must be {expected} (got {_shown(value)}); treated as {_toml(FAIL_CLOSED[key])}")
        else:
            problems.append(f"{key} must be {expected} (got {_shown(value)}); using {_toml(getattr(Config, key))}")
    warning = f"config {path}: {'; '.join(problems)}" if problems else None
    return replace(Config(), **values), warning


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string: JSON's escapes are TOML's
    if isinstance(value, tuple):
        return f"[{', '.join(_toml(item) for item in value)}]"
    return repr(value)


def save_config(config: Config, path: Path | None = None) -> None:
    path = path or config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        f"interval = {float(config.interval)}",
        f"theme = {_toml(config.theme)}",
        f"read_only = {_toml(config.read_only)}",
        f"key_format = {_toml(config.key_format)}",
    ]
    if config.last_stream:
        lines.append(f"last_stream = {_toml(config.last_stream)}")
    if config.mask:
        lines.append(f"mask = {_toml(config.mask)}")
    if config.mask_keys:
        lines.append(f"mask_keys = {_toml(config.mask_keys)}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
