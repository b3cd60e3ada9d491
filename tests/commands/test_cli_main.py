"""The entry point's promises: one line on stderr, a JSON error document with --json, the right exit code."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from console import cli


def run(argv, capsys):
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_usage_error_names_the_subcommand_once(capsys):
    code, _out, err = run(["predict", "--shards", "2", "--no-such-flag", "k"], capsys)
    assert code == 2
    assert err.count("kconsole") == 1 and err.strip().splitlines() == [err.strip()]
    assert "Traceback" not in err


def test_json_error_document_on_stdout(capsys):
    code, out, err = run(["keytree", "--count", "-1", "--json"], capsys)
    assert code == 2
    document = json.loads(out)
    assert set(document["error"]) == {"code", "message"}
    assert document["error"]["message"] in err


def test_unexpected_exception_is_one_line_not_a_traceback(capsys, monkeypatch):
    # A handler that fails in a way nobody planned for: main must still answer in one line.
    parser = cli.build_parser()
    args = parser.parse_args(["keytree", "--count", "3"])

    def broken(_args):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(cli, "build_parser", lambda: _ParserReturning(args, broken))
    monkeypatch.delenv("KCONSOLE_DEBUG", raising=False)
    code, out, err = run(["keytree", "--json"], capsys)
    assert code == 1
    assert "internal error: RuntimeError: disk on fire" in err and "Traceback" not in err
    assert json.loads(out)["error"]["code"] == "internal"


class _ParserReturning:
    def __init__(self, args, handler):
        args.handler = handler
        self.args = args

    def parse_args(self, _argv):
        return self.args


def test_installed_script_reports_bad_input_without_traceback():
    result = subprocess.run(
        [sys.executable, "-m", "console.cli", "predict", "--shards", "0", "some-key"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("kconsole: error:") and "Traceback" not in result.stderr


@pytest.mark.parametrize("argv", [["--version"]])
def test_version(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 0
    assert "kconsole" in capsys.readouterr().out


def test_predict_starts_without_the_network_or_ui_stack(tmp_path):
    # Offline commands must not pay for asyncio, aiobotocore or Textual at start-up: the CLI imports a
    # command's module only when that command runs. Nor, without a config file, for dataclasses
    # (inspect), tomllib, platformdirs or OpenSSL's hashlib: `predict` starts in a few times `python -c pass`.
    script = (
        "import sys; from console.cli import main; code = main(['predict', 'abc', '--shards', '4']); "
        "print(sorted(m for m in ('asyncio', 'aiobotocore', 'botocore', 'textual', 'dataclasses', 'tomllib', "
        "'platformdirs', '_hashlib') if m in sys.modules)); "
        "sys.exit(code)"
    )
    env = {**os.environ, "KCONSOLE_CONFIG": str(tmp_path / "absent.toml")}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 0, result.stderr
    assert "shardId-000000000002" in result.stdout
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_help_lists_every_command_without_importing_them():
    script = (
        "import sys; from console.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('console.commands.')))"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    from console.commands import COMMANDS

    for name, (_module, summary) in COMMANDS.items():
        assert name in result.stdout and summary.split()[0] in result.stdout
    assert result.stdout.strip().splitlines()[-1] == "[]"
