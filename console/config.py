"""User settings in a TOML file under platformdirs' user config dir.

A bad file never stops the console: `load_config` returns the defaults and a one-line warning.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, fields, replace
from pathlib import Path

import platformdirs

APP_NAME = "kconsole"


def config_path() -> Path:
    override = os.environ.get("KCONSOLE_CONFIG")
    if override:
        return Path(override)
    return Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml"


def data_dir() -> Path:
    """Where the action log and saved tails go (KCONSOLE_DATA_DIR overrides, for tests)."""
    override = os.environ.get("KCONSOLE_DATA_DIR")
    return Path(override) if override else Path(platformdirs.user_data_dir(APP_NAME))


def cache_dir() -> Path:
    """Where short-lived lookups are remembered, e.g. stream names for completion (KCONSOLE_CACHE_DIR overrides)."""
    override = os.environ.get("KCONSOLE_CACHE_DIR")
    return Path(override) if override else Path(platformdirs.user_cache_dir(APP_NAME))


@dataclass(frozen=True)
class Config:
    interval: float = 5.0  # seconds between shard-map polls in the console
    last_stream: str | None = None
    theme: str = "textual-dark"
    read_only: bool = False

    def validate(self) -> list[str]:
        problems = []
        if not isinstance(self.interval, (int, float)) or isinstance(self.interval, bool) or not 0.2 <= self.interval <= 3600:
            problems.append(f"interval must be a number of seconds from 0.2 to 3600 (got {self.interval!r})")
        if self.last_stream is not None and not isinstance(self.last_stream, str):
            problems.append("last_stream must be a string")
        if not isinstance(self.theme, str):
            problems.append("theme must be a string")
        if not isinstance(self.read_only, bool):
            problems.append("read_only must be true or false")
        return problems


def load_config(path: Path | None = None) -> tuple[Config, str | None]:
    """Read the config; on any problem return the defaults and a one-line warning naming the file."""
    path = path or config_path()
    if not path.exists():
        return Config(), None
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return Config(), f"ignoring config {path}: {exc}; using defaults"
    known = {f.name for f in fields(Config)}
    unknown = sorted(set(raw) - known)
    config = replace(Config(), **{k: v for k, v in raw.items() if k in known})
    problems = config.validate()
    if problems:
        return Config(), f"ignoring config {path}: {problems[0]}; using defaults"
    if unknown:
        return config, f"config {path}: unknown setting(s) {', '.join(unknown)} ignored"
    return config, None


def save_config(config: Config, path: Path | None = None) -> None:
    path = path or config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"interval = {float(config.interval)}", f'theme = "{config.theme}"',
             f"read_only = {'true' if config.read_only else 'false'}"]
    if config.last_stream:
        lines.append(f'last_stream = "{config.last_stream}"')
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
