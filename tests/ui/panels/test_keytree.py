"""The Key tree tab reads hash keys as the split prompt does: decimal, or hex with 0x."""

from console.ui.panels.keytree import parse_keys


def test_hex_and_decimal_keys_are_both_taken():
    keys, problems = parse_keys("0x10\n16\n# a comment\n0x80000000000000000000000000000000\n")
    assert keys == [16, 16, 2**127] and problems == []


def test_a_bad_line_is_named_by_its_number():
    keys, problems = parse_keys("1\n0xZZ\n")
    assert keys == [1] and problems == [problems[0]] and problems[0].startswith("line 2:")
