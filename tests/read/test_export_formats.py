"""The export formats exist once (console.read.export): the CLI's `tail --out` and the console's
export dialog offer the same ones, named and suffixed alike."""

from __future__ import annotations

from console.cli import build_parser
from console.read.export import EXPORT_EXTENSIONS, EXPORT_FORMATS


def test_the_export_dialog_offers_exactly_what_tail_takes_with_the_extension_it_gives():
    from console.ui.screens.export import FORMATS

    args = build_parser().parse_args(["tail", "orders"])
    assert [output for _label, output in FORMATS] == list(args.export_formats) == list(EXPORT_FORMATS)
    assert all(label and label != output for label, output in FORMATS)  # a name a person reads
    assert set(EXPORT_EXTENSIONS) == set(EXPORT_FORMATS)


def _records() -> list:
    from console.read.decoding import decode_record

    payloads = [b'{"total": "=1+2", "note": "a\\u001b[31mred"}', b"plain\x07text", b"\x00\xff\x10"]
    return [
        record
        for index, data in enumerate(payloads)
        for record in decode_record(
            data, shard_id="shardId-000000000000", sequence_number=f"{index + 1:056d}", partition_key="k"
        )
    ]


def test_one_writer_neutralises_csv_formulas_and_control_characters_and_keeps_raw_bytes_exact(tmp_path):
    import csv
    import io

    from console.read.export import ExportWriter

    records = _records()
    stream = io.BytesIO()
    ExportWriter("csv", stream=stream, fields="key,data.total,data.note,data").write_batch(records)
    rows = list(csv.reader(io.StringIO(stream.getvalue().decode())))
    assert rows[0] == ["key", "data.total", "data.note", "data"]
    assert rows[1][1] == "'=1+2"  # a spreadsheet shows it as text, never runs it
    assert "\x1b" not in stream.getvalue().decode() and "\x07" not in stream.getvalue().decode()

    writer = ExportWriter.to_path("raw", str(tmp_path / "records.bin"))
    writer.write_batch(records)
    writer.commit()
    data, payloads = (tmp_path / "records.bin").read_bytes(), []
    while data:
        size = int.from_bytes(data[:4], "big")
        payloads.append(data[4 : 4 + size])
        data = data[4 + size :]
    assert payloads[1:] == [b"plain\x07text", b"\x00\xff\x10"]  # raw: the bytes as stored, unescaped

    directory = ExportWriter.to_path("raw", str(tmp_path / "each") + "/")
    directory.write_batch(records)
    directory.commit()
    assert sorted(path.read_bytes() for path in (tmp_path / "each").iterdir())[0] == b"\x00\xff\x10"


def test_an_empty_csv_window_still_has_its_header_and_nothing_lands_before_the_commit(tmp_path):
    from console.read.export import ExportWriter

    path = tmp_path / "window.csv"
    writer = ExportWriter.to_path("csv", str(path))
    writer.write_batch([])
    assert not path.exists()  # under a temporary name until complete
    writer.commit()
    assert path.read_text() == "arrival,shard_id,seq,sub_seq,key,kind,size,data\n"

    path.write_text("kept")
    interrupted = ExportWriter.to_path("jsonl", str(path))
    interrupted.write_batch(_records())
    interrupted.discard()
    assert path.read_text() == "kept" and [p.name for p in tmp_path.iterdir()] == ["window.csv"]


def test_a_path_that_is_not_a_regular_file_is_never_replaced_by_either_face(tmp_path):
    import pytest

    from console.errors import BadInput
    from console.read.export import ExportWriter

    (tmp_path / "taken").mkdir()
    for option in ("--out", "the export file"):
        with pytest.raises(BadInput, match="never replaces"):
            ExportWriter.to_path("jsonl", str(tmp_path / "taken"), option=option)
    with pytest.raises(BadInput, match="--fields picks the columns"):
        ExportWriter.to_path("jsonl", str(tmp_path / "new.jsonl"), fields="key")
    assert [p.name for p in tmp_path.iterdir()] == ["taken"]  # bad input made nothing
