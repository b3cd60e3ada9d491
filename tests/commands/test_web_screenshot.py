"""The web screenshot recipe (tests/screenshots.py --web) in headless Chromium: the PNG is taken only
after the console's first poll reached the page, and a console that never draws is an error, not a
picture of textual-serve's splash."""

from __future__ import annotations

import os
import shutil
import struct

import pytest

from tests import screenshots

CHROMIUM = os.environ.get("KCONSOLE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="no Chromium to drive"),
]


async def test_the_web_recipe_waits_for_the_console_and_never_shoots_the_splash(tmp_path, monkeypatch):
    monkeypatch.setenv("KCONSOLE_DATA_DIR", str(tmp_path / "data"))  # the console processes' own files
    monkeypatch.setenv("KCONSOLE_CONFIG", str(tmp_path / "config.toml"))
    path = await screenshots.capture_web(tmp_path, CHROMIUM)
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", header[16:24])
    assert width >= 1000 and height >= 500
    path.unlink()
    monkeypatch.setattr(screenshots, "WEB_DRAWN", "a header the console never draws")
    with pytest.raises(RuntimeError, match="never drew"):
        await screenshots.capture_web(tmp_path, CHROMIUM, timeout=15)
    assert not path.exists()
