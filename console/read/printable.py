"""Text from a stream made safe for a terminal: what a producer wrote is shown, never obeyed.

Partition keys, payloads and keys typed by users can hold anything: ESC and BEL that open OSC
sequences (retitle the terminal, write the clipboard), CSI sequences (clear the screen), the C1
forms of those (U+009B is CSI and U+009D is OSC on many terminals), bidi overrides that reorder
what is shown (U+202E), lone surrogates that no terminal encoding can write. `printable(text)`
spells every character that `str.isprintable()` refuses as a visible escape (`\\x1b`, `\\u202e`,
`\\n`), so the result is one line of characters that only draw themselves. Printable text comes
back unchanged at the cost of one C-level scan.

`printable_json(serialized)` does the same for a JSON document written with `ensure_ascii=False`:
the refused characters (which JSON only allows inside strings) become `\\uXXXX` escapes, so the
document still parses to exactly the same value.

Markup is not text's business: the console shows stream text in `rich.text.Text` objects, which
are never parsed as markup, so `[bold]` and `[/]` in a key draw as themselves.
"""

from __future__ import annotations

from collections.abc import Callable

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_JSON_WHITESPACE = frozenset("\n\r\t")
_CACHE_LIMIT = 4096  # code points remembered per table; an adversary cycling through all of them costs no memory


def _visible_escape(character: str) -> str:
    code = ord(character)
    named = _NAMED.get(character)
    if named is not None:
        return named
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _json_escape(character: str) -> str:
    if character in _JSON_WHITESPACE:
        return character  # between values (inside strings the encoder has already escaped it)
    code = ord(character)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # JSON spells a character beyond the BMP as a UTF-16 surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


class _Table(dict[int, str]):
    """A `str.translate` table built lazily: printable characters map to themselves."""

    def __init__(self, escape: Callable[[str], str]) -> None:
        super().__init__()
        self._escape = escape

    def __missing__(self, code: int) -> str:
        character = chr(code)
        value = character if character.isprintable() else self._escape(character)
        if len(self) < _CACHE_LIMIT:
            self[code] = value
        return value


_TEXT_TABLE = _Table(_visible_escape)
_JSON_TABLE = _Table(_json_escape)


def printable(text: str | bytes) -> str:
    """`text` as one line that draws only itself: control, format, separator and unassigned characters
    (C0, DEL, C1, bidi overrides, line breaks, lone surrogates…) are spelled as escapes. Bytes are
    read as UTF-8; bytes that are not UTF-8 are spelled `\\xNN`."""
    if isinstance(text, (bytes, bytearray, memoryview)):
        text = bytes(text).decode("utf-8", "backslashreplace")
    if text.isprintable():
        return text
    return text.translate(_TEXT_TABLE)


def printable_json(serialized: str) -> str:
    """A JSON document (written with `ensure_ascii=False`) with every character `printable` would escape
    written as a JSON `\\uXXXX` escape instead: the same value, and nothing a terminal acts on."""
    if serialized.isprintable():
        return serialized
    return serialized.translate(_JSON_TABLE)
