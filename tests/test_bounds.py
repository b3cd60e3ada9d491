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
