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
