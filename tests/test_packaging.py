"""The install itself: the `console` package imported is this project's, and a lean install (without
the `local` extra) refuses `--local` and `local serve` in one line that says what to install."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import console

ROOT = Path(__file__).resolve().parents[1]


def test_the_console_package_imported_is_this_project():
    # The import name `console` is generic: a PyPI package of that name installs the same top-level
    # package. If it shadows ours, every other test fails in confusing ways; this one says why.
    version = getattr(console, "__version__", None)
    assert version is not None, (
        f"the 'console' package imported from {console.__file__} is not kconsole's (no __version__): "
        "another package named 'console' shadows it; install kconsole in its own environment"
    )
    assert Path(console.__file__).resolve().parent == ROOT / "console", (
        f"'console' is imported from {console.__file__}, not this checkout ({ROOT / 'console'}); "
        "install kconsole in its own environment (pip install -e '.[test]')"
    )
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert version == project["version"], f"console.__version__ {version} != pyproject version {project['version']}"


def test_lean_dependencies_leave_the_embedded_server_to_the_local_extra():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = {
        requirement.split("[")[0].split(">")[0].split("=")[0].split("<")[0].strip().lower()
        for requirement in project["dependencies"]
    }
    assert not names & {"moto", "flask", "flask-cors", "waitress"}, names
    extras = project["optional-dependencies"]
    assert any(requirement.startswith("moto") for requirement in extras["local"])
    assert "kconsole[local]" in extras["test"], "the test extra must pull the embedded server"


def _cli_without(module: str, *argv: str) -> subprocess.CompletedProcess:
    """Run the CLI in a child where `module` cannot be imported (None in sys.modules is Python's own
    way to block an import), as on a lean install."""
    code = f"import sys; sys.modules[{module!r}] = None\nfrom console.cli import main; sys.exit(main({list(argv)!r}))"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)


def test_local_without_the_extra_says_what_to_install():
    result = _cli_without("moto", "--local", "--json", "streams")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "kconsole: error: the embedded local Kinesis needs moto, which this install lacks: "
        "pip install 'kconsole[local]'"
    ]
    assert json.loads(result.stdout)["error"]["code"] == "local_extra_missing"


def test_local_serve_without_flask_says_what_to_install():
    result = _cli_without("flask_cors", "local", "serve", "--port", "0")
    assert result.returncode == 1
    assert "flask-cors" in result.stderr and "pip install 'kconsole[local]'" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
