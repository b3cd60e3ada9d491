"""The linter, the formatter and the type checker, run as the README's test command runs everything.

Their settings live in pyproject.toml ([tool.ruff], [tool.mypy]); each runs from the checkout's root
with the interpreter running the tests, so the versions are the `test` extra's. A failure shows the
tool's own report.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_tool(*command: str) -> None:
    done = subprocess.run([sys.executable, "-m", *command], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{' '.join(command)} found problems:\n{done.stdout}{done.stderr}"


def test_ruff_finds_nothing():
    run_tool("ruff", "check", "--no-fix", "--output-format", "concise", ".")


def test_the_code_is_formatted():
    run_tool("ruff", "format", "--check", ".")


@pytest.mark.timeout(600)  # a first run with no cache checks every module: about a minute on two cores
def test_mypy_finds_nothing():
    run_tool("mypy")
