"""The README's benchmark table and tests/benchmarks/readme_ranges.toml say the same: every range a
benchmark checks its run against (`_measure.emit` prints whether today's figure falls inside) is the one
the README prints in that benchmark's row, and the benchmark does check it."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "tests" / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

from _measure import readme_ranges  # noqa: E402 - the benchmarks' folder is not a package


def readme_rows() -> dict[str, list[str]]:
    """The README's benchmark table rows, by the script named in their first cell."""
    rows: dict[str, list[str]] = {}
    for line in (ROOT / "README.md").read_text().splitlines():
        found = re.match(r"\| `(bench_\w+\.py)` \|", line)
        if found:
            rows.setdefault(found.group(1), []).append(line)
    return rows


def test_the_readme_prints_every_range_in_its_benchmarks_row():
    rows = readme_rows()
    missing = [
        f"{entry.script} {entry.figure}: {entry.text}"
        for entry in readme_ranges()
        if not any(entry.text in row for row in rows.get(entry.script, []))
    ]
    assert not missing, f"README rows lack: {missing}"


def test_each_range_is_ordered_and_checked_by_its_benchmark():
    for entry in readme_ranges():
        assert float(entry.low) <= float(entry.high), entry
        source = (BENCHMARKS / entry.script).read_text()
        assert f'"benchmark": "{entry.benchmark}"' in source, entry
        assert "emit(" in source, f"{entry.script} prints its figures without checking the README's ranges"


def test_a_run_says_which_figures_fall_outside_the_readme(capsys):
    import json

    from _measure import emit

    startup = {entry.figure: entry for entry in readme_ranges() if entry.benchmark == "startup"}
    inside, outside = startup["help_ratio"], startup["predict_ratio"]
    emit({"benchmark": "startup", "help_ratio": float(inside.low), "predict_ratio": float(outside.high) + 1})
    printed = capsys.readouterr()
    line = json.loads(printed.out.strip().splitlines()[-1])
    assert line["readme_ranges"]["help_ratio"] == {"readme": inside.text, "today": float(inside.low), "inside": True}
    assert line["readme_ranges"]["predict_ratio"]["inside"] is False
    assert line["inside_readme_ranges"] is False
    assert f"outside the README's {outside.text}" in printed.err
