"""The Tail tab's export (w): the records shown, or the whole From/To window read again, to a file in
one of `EXPORT_FORMATS` (JSON lines, CSV with the default columns, raw length-prefixed bytes), written
under a temporary name until complete (console.read.export.ExportTarget)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from console.backend.protocol import ConsoleBackend
from console.errors import BadInput, ConsoleError
from console.read.decoding import DecodedRecord
from console.read.export import (
    EXPORT_FORMATS,
    CsvEncoder,
    ExportTarget,
    encode_jsonl,
    encode_length_prefixed,
    parse_fields,
)
from console.read.positions import EndPosition
from console.read.tail import TailOptions, TailReader
from console.read.where import RecordFilter
from console.words import counted


def write_export(target: ExportTarget, output: str, records: list[DecodedRecord], *, header: bool = False) -> None:
    """Records to an export file in one of `EXPORT_FORMATS` (raw: length-prefixed; CSV: the default columns)."""
    if output == "jsonl":
        target.write(b"".join(encode_jsonl(record) for record in records), len(records))
    elif output == "csv":
        encoder = CsvEncoder(parse_fields(None))
        target.write((encoder.header() if header else b"") + b"".join(encoder.encode(r) for r in records), len(records))
    elif output == "raw":
        target.write(b"".join(encode_length_prefixed(record) for record in records), len(records))
    else:
        raise BadInput(f"export formats are {', '.join(EXPORT_FORMATS)}; got {output!r}")


def export_records(records: list[DecodedRecord], output: str, path: Path) -> int:
    """`records` to `path`, under a temporary name until done; how many were written."""
    target = ExportTarget(str(path), directory=False, option="the export file")
    try:
        write_export(target, output, records, header=True)
    except BaseException:
        target.discard()
        raise
    target.commit()
    return len(records)


async def export_window(
    backend: ConsoleBackend,
    stream: str,
    options: TailOptions,
    where: RecordFilter | None,
    output: str,
    path: Path,
    notify: Callable[..., None],
) -> None:
    """The whole From/To window (To empty: until now), read again and filtered by `where`, to `path`;
    what happened is said through `notify`."""
    end = options.end if options.end.moment is not None else EndPosition(datetime.now(UTC))
    options = replace(options, follow=False, end=end, where=where)
    try:
        target = ExportTarget(str(path), directory=False, option="the export file")
    except ConsoleError as error:
        notify(f"could not export: {error.message}", severity="error")
        return
    header = output == "csv"
    try:
        notify(f"exporting {stream} from {options.start.describe()} to {end.describe()} to {path}")
        async for batch in TailReader(backend, stream, options).batches():
            write_export(target, output, batch.records, header=header)
            header = False
        if header:
            write_export(target, output, [], header=True)
    except BaseException as error:
        target.discard()
        if isinstance(error, ConsoleError):
            notify(f"export stopped: {error.message}", severity="error")
            return
        raise
    target.commit()
    notify(f"exported {counted(target.records, 'record')} to {path}")
