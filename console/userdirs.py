"""Where kconsole keeps its files: the config file, the data folder and the cache folder, in
platformdirs' per-user directories (each with an environment override, for tests).

Every command looks for the config file, so finding it must not cost the import of platformdirs
(pathlib, tempfile and a few regular expressions: several milliseconds of a 30 ms start). On Linux
with an absolute HOME, the usual case, the config file is found with platformdirs' own XDG rule;
anything else (macOS, Windows, Android, a relative XDG_CONFIG_HOME or HOME) asks platformdirs.
tests/test_config.py checks the shortcut against platformdirs.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pathlib is imported where a path is built, not at start-up
    from pathlib import Path

APP_NAME = "kconsole"


def config_file() -> str:
    """The config file's path, as text (no pathlib on the way)."""
    override = os.environ.get("KCONSOLE_CONFIG")
    if override:
        return override
    return os.path.join(_user_config_dir(), "config.toml")


def _user_config_dir() -> str:
    """platformdirs.user_config_dir(APP_NAME), without importing platformdirs when the XDG rule is plain."""
    home = os.environ.get("HOME", "")
    if (
        sys.platform == "linux"
        and not hasattr(sys, "getandroidapilevel")
        and os.path.isabs(home)
        and not (os.getenv("ANDROID_DATA") == "/data" and os.getenv("ANDROID_ROOT") == "/system")
    ):
        xdg = os.environ.get("XDG_CONFIG_HOME", "")
        if os.path.isabs(xdg):
            return os.path.join(xdg, APP_NAME)
        if not xdg.strip():  # unset or blank: ~/.config, in every platformdirs release
            return os.path.join(os.path.expanduser("~/.config"), APP_NAME)
    import platformdirs

    return platformdirs.user_config_dir(APP_NAME)


def config_path() -> Path:
    """config_file() as a pathlib.Path."""
    from pathlib import Path

    return Path(config_file())


def data_dir() -> Path:
    """Where the action log and saved tails go (KCONSOLE_DATA_DIR overrides, for tests)."""
    from pathlib import Path

    override = os.environ.get("KCONSOLE_DATA_DIR")
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME))


def cache_dir() -> Path:
    """Where short-lived lookups are remembered, e.g. stream names for completion (KCONSOLE_CACHE_DIR overrides)."""
    from pathlib import Path

    override = os.environ.get("KCONSOLE_CACHE_DIR")
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_cache_dir(APP_NAME))
