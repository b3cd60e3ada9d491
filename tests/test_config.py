"""The config file: each setting checked on its own, a bad value replaced by its default and named in
one line, and the safety setting (read_only) failing closed when present but unusable."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from console import cli
from console.config import Config, load_config, save_config
from tests.conftest import free_port


def config_of(tmp_path, text):
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return load_config(path)


def test_one_bad_value_keeps_the_others_and_is_named(tmp_path):
    config, warning = config_of(tmp_path, 'read_only = true\ninterval = "fast"\ntheme = "nord"\n')
    assert config == Config(interval=5.0, theme="nord", read_only=True)
    assert "interval must be a number of seconds from 0.2 to 3600 (got 'fast'); using 5.0" in warning
    assert "\n" not in warning


@pytest.mark.parametrize(
    "text",
    [
        'read_only = "yes"',
        "read_only = 1",
        "read_only = []",
        "read_only = tru",
        "read_only = true\ninterval = ",
        "read_only = false\nread_only = true",
    ],
)
def test_a_present_but_unusable_read_only_means_read_only(tmp_path, text):
    config, warning = config_of(tmp_path, text + "\n")
    assert config.read_only is True
    assert warning and "read" in warning and "\n" not in warning


def test_a_broken_file_without_read_only_uses_the_defaults(tmp_path):
    config, warning = config_of(tmp_path, "interval = 3\n[[[\n")
    assert config == Config() and warning.startswith("ignoring config")


def test_an_unreadable_file_fails_closed(tmp_path):
    path = tmp_path / "config.toml"
    path.mkdir()  # reading a directory fails with an OSError, as a file without permission does (even as root)
    config, warning = load_config(path)
    assert config.read_only is True and "read-only" in warning


def test_unknown_settings_are_named_and_good_ones_kept(tmp_path):
    config, warning = config_of(tmp_path, "interval = 2\nread_only = false\ncolour = 'red'\n")
    assert config == Config(interval=2.0) and warning.endswith("unknown setting colour ignored")


def test_saved_config_reads_back_whole(tmp_path):
    path = tmp_path / "c.toml"
    original = Config(interval=2.5, last_stream="orders.v1", theme='odd "quoted" theme', read_only=True)
    save_config(original, path)
    assert load_config(path) == (original, None)


def test_the_cli_reports_a_bad_config_and_keeps_read_only(tmp_path, monkeypatch, capsys):
    path = tmp_path / "config.toml"
    path.write_text('read_only = true\ninterval = "fast"\n', encoding="utf-8")
    monkeypatch.setenv("KCONSOLE_CONFIG", str(path))
    code = cli.main(
        [
            "produce",
            "orders",
            "--keys",
            "1",
            "--records-per-key",
            "1",
            "--json",
            "--endpoint-url",
            f"http://127.0.0.1:{free_port()}",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 1 and json.loads(out)["error"]["code"] == "read_only"
    warning, error = err.strip().splitlines()
    assert warning.startswith("kconsole: warning: config ") and "interval" in warning
    assert error.startswith("kconsole: error: ")


def test_an_offline_command_names_a_bad_config_too(tmp_path, monkeypatch, capsys):
    path = tmp_path / "config.toml"
    path.write_text("interval = -1\n", encoding="utf-8")
    monkeypatch.setenv("KCONSOLE_CONFIG", str(path))
    assert cli.main(["predict", "k"]) == 0
    assert capsys.readouterr().err.count("kconsole: warning: config") == 1


@pytest.mark.parametrize(
    "environment",
    [
        {"XDG_CONFIG_HOME": None},
        {"XDG_CONFIG_HOME": ""},
        {"XDG_CONFIG_HOME": "  "},
        {"XDG_CONFIG_HOME": "/srv/settings"},
        {"XDG_CONFIG_HOME": "relative/settings"},
        {"XDG_CONFIG_HOME": None, "HOME": "relative-home"},
        {"XDG_CONFIG_HOME": "/srv/settings", "HOME": ""},
    ],
)
def test_the_config_file_is_where_platformdirs_puts_it(monkeypatch, environment):
    # console.userdirs finds the file without importing platformdirs when the XDG rule is plain.
    import platformdirs

    from console.userdirs import APP_NAME, config_file

    monkeypatch.delenv("KCONSOLE_CONFIG", raising=False)
    for name, value in environment.items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    assert config_file() == os.path.join(platformdirs.user_config_dir(APP_NAME), "config.toml")


def test_the_config_costs_a_command_only_what_the_file_needs(tmp_path):
    # Every command looks for the config file: without one neither the config module nor tomllib is
    # loaded; with one, tomllib reads it.
    code = (
        "import sys; from console import cli; cli.main(['predict', 'k'])\n"
        "print(sorted(m for m in ('console.config', 'tomllib', 'platformdirs') if m in sys.modules))\n"
    )
    env = {**os.environ, "HOME": str(tmp_path), "KCONSOLE_CONFIG": ""}
    env.pop("XDG_CONFIG_HOME", None)

    def loaded() -> str:
        result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        return result.stdout.strip().splitlines()[-1]

    assert loaded() == "[]"
    path = tmp_path / ".config" / "kconsole" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text("interval = 2.0  # seconds\n")
    assert loaded() == "['console.config', 'tomllib']"


def test_what_save_config_writes_reads_back(tmp_path):
    path = tmp_path / "c.toml"
    save_config(Config(interval=0.25, last_stream="a-b_c.d", theme='odd "quoted" theme', key_format="hex"), path)
    config, warning = load_config(path)
    assert warning is None
    assert (config.interval, config.last_stream, config.theme, config.key_format) == (
        0.25,
        "a-b_c.d",
        'odd "quoted" theme',
        "hex",
    )
