"""Screenshots (tests/screenshots.py) are written as every output file: a name that exists and is not a
regular file is never replaced; a regular one is replaced whole."""

from __future__ import annotations

import os
import stat

import pytest

from console.errors import BadInput
from tests import screenshots


def test_a_screenshot_never_replaces_what_is_not_a_regular_file(tmp_path):
    fifo = tmp_path / "web.png"
    os.mkfifo(fifo)
    with pytest.raises(BadInput, match="never replaces"):
        screenshots.save(fifo, b"\x89PNG")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and not list(tmp_path.glob(".*.part"))
    picture = tmp_path / "shards.svg"
    picture.write_bytes(b"old")
    screenshots.save(picture, b"<svg/>")
    assert picture.read_bytes() == b"<svg/>"
