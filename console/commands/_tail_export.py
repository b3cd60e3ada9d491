"""`kconsole tail --output jsonl|csv|raw` (to --out FILE or stdout): which of the command's options an
export takes, and the progress lines on stderr while it writes. The writing itself is
console.read.export.ExportWriter, as the Tail tab's export writes."""

from __future__ import annotations

import argparse
import sys
import time

from console.commands._output import note
from console.errors import BadInput
from console.read.decoding import DecodedRecord
from console.read.export import EXPORT_FORMATS, ExportWriter
from console.read.tail import TailReader
from console.words import counted

PROGRESS_INTERVAL = 1.0  # seconds between export progress lines on stderr
SHARDS_IN_PROGRESS = 4  # shard positions named in a progress line


class TailExport:
    """Where `tail --output jsonl|csv|raw` writes: --out (a temporary name until the end) or stdout."""

    def __init__(self, output: str, path: str | None, fields: str | None) -> None:
        self.output = output
        self.path = path
        self.fields = fields
        self.writer: ExportWriter | None = None
        self._said_at = 0.0

    @classmethod
    def from_args(
        cls, args: argparse.Namespace, *, out: str | None, fields: str | None, follow: bool
    ) -> TailExport | None:
        """The export asked for, or None (records printed as text or --json documents); BadInput for an
        option an export does not take. --out without --output picks csv for a .csv name, else jsonl."""
        output = getattr(args, "output", None)
        if out is not None and output is None:
            output = args.output = "csv" if out.lower().endswith(".csv") else "jsonl"
        if output not in EXPORT_FORMATS:
            if out is not None:
                raise BadInput(f"--out writes --output jsonl, csv or raw, not {output}", code="usage")
            if fields is not None:
                raise BadInput("--fields picks the columns of --output csv", code="usage")
            return None
        if fields is not None and output != "csv":
            raise BadInput("--fields picks the columns of --output csv", code="usage")
        if getattr(args, "query", None) is not None:
            raise BadInput(
                f"--query shapes --json documents; --output {output} writes records as they are "
                "(filter them with --where)",
                code="usage",
            )
        if follow and out is not None:
            raise BadInput(
                "--out writes a file once the read ends, and --follow never ends: give --to, --last "
                "or neither (the stream's current end)",
                code="usage",
            )
        if out is None and output != "jsonl" and sys.stdout.isatty():
            raise BadInput(
                f"--output {output} writes bytes from the stream as they are, not for a terminal: "
                "give --out FILE, or pipe it",
                code="usage",
            )
        if not out and out is not None:
            raise BadInput("--out needs a file name", code="usage")
        return cls(output, out, fields)

    def open(self) -> None:
        """The file made (under its temporary name) or stdout taken: an unwritable --out is bad input
        before anything is read."""
        if self.path is not None:
            self.writer = ExportWriter.to_path(self.output, self.path, fields=self.fields)
        else:
            self.writer = ExportWriter(self.output, stream=sys.stdout.buffer, fields=self.fields)

    def write_batch(self, records: list[DecodedRecord]) -> None:
        assert self.writer is not None, "open() first"
        self.writer.write_batch(records)

    def progress(self, reader: TailReader, *, force: bool = False) -> None:
        if self.path is None or self.writer is None:
            return
        now = time.monotonic()
        if not force and now - self._said_at < PROGRESS_INTERVAL:
            return
        self._said_at = now
        positions = sorted(reader.positions.items())
        shown = ", ".join(f"{shard_id} at {position}" for shard_id, position in positions[:SHARDS_IN_PROGRESS])
        more = (
            f" (+{counted(len(positions) - SHARDS_IN_PROGRESS, 'shard')})"
            if len(positions) > SHARDS_IN_PROGRESS
            else ""
        )
        note(
            f"export: {counted(self.writer.records, 'record')}{decode_errors(reader)}, {self.writer.bytes:,} bytes to "
            f"{self.path}" + (f"; {shown}{more}" if shown else "")
        )

    def commit(self) -> None:
        if self.writer is None:
            return
        self.writer.commit()
        if self.path is not None:
            note(f"tail: wrote {counted(self.writer.records, 'record')} ({self.writer.bytes:,} bytes) to {self.path}")

    def discard(self) -> None:
        if self.writer is not None:
            self.writer.discard()


def decode_errors(reader: TailReader) -> str:
    """How many records could not be decoded (each shown as a decode-error line unless a filter left it out)."""
    count = reader.decode_errors
    return f", {counted(count, 'decode-error')}" if count else ""
