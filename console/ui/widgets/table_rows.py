"""DataTable rows kept in place across polls, and cells of outside text that draw only themselves
(shared by the Consumers and Readers tabs)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from console.read.printable import printable


def plain(value: object) -> Text:
    """A cell of text from outside (a lease table, a service's answer): escaped, never markup."""
    return Text(printable(str(value)))


def replace_rows(table: DataTable[Text], columns: tuple[str, ...], rows: dict[str, tuple[Text, ...]]) -> None:
    """Rows keyed by `rows`' keys: changed cells updated in place, gone rows removed, new rows added
    (the cursor stays on its row while the others change around it)."""
    present = {key.value for key in table.rows}
    for row_key in list(table.rows):
        if row_key.value not in rows:
            table.remove_row(row_key)
    for key, cells in rows.items():
        if key in present:
            for column, cell in zip(columns, cells):
                if table.get_cell(key, column) != cell:
                    table.update_cell(key, column, cell, update_width=True)
        else:
            table.add_row(*cells, key=key)
