"""console.bounds: the one place the CLI and the console bound the numbers a user gives."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from console import bounds
from console.errors import BadInput


@given(st.text(max_size=60))
def test_whole_number_accepts_exactly_the_digits_in_range(text):
    stripped = text.strip().replace("_", "")
    valid = stripped.isascii() and stripped.isdigit() and 1 <= int(stripped) <= 10_000
    try:
        value = bounds.scale_target(text)
    except BadInput as error:
        assert not valid
        assert error.exit_code == 2 and "\n" not in error.message
    else:
        assert valid and value == int(stripped)


def test_a_number_longer_than_int_can_parse_is_refused_by_its_length():
    with pytest.raises(BadInput, match="from 1 to 100,000"):
        bounds.shard_count("9" * 100_000)


@pytest.mark.parametrize("text", ["0", "-1", "nan", "inf", "-inf", "1e9", "", "x", "86400.5"])
def test_timeouts_are_finite_above_zero_and_at_most_a_day(text):
    with pytest.raises(BadInput, match="--timeout must be a number of seconds above 0"):
        bounds.timeout(text)


def test_accepted_values_come_back_typed():
    assert bounds.timeout("0.5") == 0.5 and bounds.shard_count(" 12 ") == 12
    assert bounds.retention_window("3600", what="--sample-seconds") == 3600.0
    parse = bounds.argtype(bounds.whole_number, "--n", low=0, high=3)
    assert parse("3") == 3 and parse.__name__ == "--n"
    with pytest.raises(BadInput, match="--n must be a whole number from 0 to 3"):
        parse("4")


def _line_at_a_time(data: bytes, *, max_bytes: int, max_lines: int, max_line_bytes: int) -> list[str] | str:
    """The reading rule spelled out one line at a time: the lines, or the first error message."""
    lines, total, position = [], 0, 0
    while position < len(data):
        end = data.find(b"\n", position, position + max_line_bytes + 1)
        raw = data[position : end + 1] if end >= 0 else data[position : position + max_line_bytes + 1]
        position += len(raw)
        total += len(raw)
        number = len(lines) + 1
        if len(raw) > max_line_bytes:
            return f": line {number:,} is longer than {max_line_bytes:,} bytes"
        if number > max_lines or total > max_bytes:
            return f" is longer than {max_lines:,} lines"
        try:
            lines.append(raw.decode("utf-8").rstrip("\n").removesuffix("\r"))
        except UnicodeDecodeError as error:
            return f"not UTF-8 text (byte 0x{raw[error.start]:02x} at offset {total - len(raw) + error.start})"
    return lines


@given(
    st.lists(st.sampled_from([b"ab", b"\n", b"\r\n", b"\xc3\xa9", b"\xff", b"xyzxyzxyz", b""]), max_size=40),
    st.integers(1, 12),
    st.integers(1, 30),
    st.integers(1, 80),
    st.integers(1, 16),
)
def test_lines_read_a_block_at_a_time_fail_where_a_line_at_a_time_read_would(
    tmp_path_factory, pieces, max_line_bytes, max_lines, max_bytes, block
):
    import console.bounds

    data = b"".join(pieces)
    path = tmp_path_factory.mktemp("lines") / "f"
    path.write_bytes(data)
    expected = _line_at_a_time(data, max_bytes=max_bytes, max_lines=max_lines, max_line_bytes=max_line_bytes)
    original, console.bounds.READ_CHUNK_BYTES = console.bounds.READ_CHUNK_BYTES, block
    try:
        got = console.bounds.read_text_lines(
            str(path), what="", max_bytes=max_bytes, max_lines=max_lines, max_line_bytes=max_line_bytes
        )
    except BadInput as error:
        got = error.message
    finally:
        console.bounds.READ_CHUNK_BYTES = original
    if isinstance(expected, str):
        assert isinstance(got, str) and expected in got, (got, expected)
    else:
        assert got == expected
