"""The Tail tab's export (w): the records shown, or the whole From/To window read again, to a file in
one of `EXPORT_FORMATS` (JSON lines, CSV with the default columns, raw length-prefixed bytes), written
under a temporary name until complete, by console.read.export.ExportWriter as `kconsole tail --out` writes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from console.backend.protocol import ConsoleBackend
from console.errors import ConsoleError
from console.read.decoding import DecodedRecord
from console.read.export import ExportWriter
from console.read.positions import EndPosition
from console.read.tail import TailOptions, TailReader
from console.read.where import RecordFilter
from console.words import counted


def export_records(records: list[DecodedRecord], output: str, path: Path) -> int:
    """`records` to `path`, under a temporary name until done; how many were written."""
    writer = ExportWriter.to_path(output, str(path), option="the export file")
    try:
        writer.write_batch(records)
    except BaseException:
        writer.discard()
        raise
    writer.commit()
    return writer.records


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
        writer = ExportWriter.to_path(output, str(path), option="the export file")
    except ConsoleError as error:
        notify(f"could not export: {error.message}", severity="error")
        return
    try:
        notify(f"exporting {stream} from {options.start.describe()} to {end.describe()} to {path}")
        async for batch in TailReader(backend, stream, options).batches():
            writer.write_batch(batch.records)
    except BaseException as error:
        writer.discard()
        if isinstance(error, ConsoleError):
            notify(f"export stopped: {error.message}", severity="error")
            return
        raise
    writer.commit()
    notify(f"exported {counted(writer.records, 'record')} to {path}")
