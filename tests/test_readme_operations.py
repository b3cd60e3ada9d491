"""The README lists every operation of botocore's Kinesis model, each with what uses it or why nothing does,
and an operation it says is used is one the code calls."""

from __future__ import annotations

import re
from pathlib import Path

import botocore.session

ROOT = Path(__file__).resolve().parent.parent


def readme_operations() -> dict[str, str]:
    text = (ROOT / "README.md").read_text()
    start = text.index("| operation | kconsole |")
    rows = {}
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("| "):
            break
        name, use = (cell.strip() for cell in line.strip("|").split("|", 1))
        rows[name] = use
    return rows


def test_every_operation_of_the_model_is_listed_once_with_its_use_or_reason():
    model = set(botocore.session.get_session().get_service_model("kinesis").operation_names)
    listed = readme_operations()
    assert set(listed) == model, (
        f"missing: {sorted(model - set(listed))}; not in the model: {sorted(set(listed) - model)}"
    )
    assert all(use for use in listed.values())


def test_an_operation_said_to_be_used_is_called_by_the_backend():
    """console/backend/kinesis*.py make every Kinesis call (the house rule), and subscribe.py the one over
    HTTP/2 (its target, Kinesis_20131202.SubscribeToShard): what they name is what is used."""
    modules = [
        *sorted((ROOT / "console" / "backend").glob("kinesis*.py")),
        ROOT / "console" / "backend" / "subscribe.py",
    ]
    assert len(modules) >= 3, modules  # the backend (kinesis.py), its call path and settings, and SubscribeToShard
    backend = "\n".join(module.read_text() for module in modules)
    for name, use in readme_operations().items():
        called = re.search(rf'[".]{name}"', backend) is not None
        declined = use.startswith(("declined", "not yet"))
        assert called != declined, (
            f"{name}: the README says {use!r}, but the backend {'calls' if called else 'never calls'} it"
        )
