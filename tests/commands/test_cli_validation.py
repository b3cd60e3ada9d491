"""Options that do not make sense together, or cannot name anything, are refused at parse time (exit 2,
one line), even by commands that stay offline; a password in --endpoint-url is never printed."""

from __future__ import annotations

import argparse
import json

import pytest

from console import cli
from console.backend import BackendConfig
from tests.conftest import free_port

SECRET = "s3cr3t-Pa55"


def run(argv, capsys):
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    "argv, words",
    [
        (
            ["predict", "k", "--local", "--endpoint-url", "http://127.0.0.1:1"],
            "--local and --endpoint-url cannot be used together",
        ),
        (
            ["keytree", "--endpoint-url", "http://127.0.0.1:1", "--local"],
            "--local and --endpoint-url cannot be used together",
        ),
        (["streams", "--endpoint-url", ""], "--endpoint-url must be an http:// or https:// URL; got ''"),
        (["predict", "k", "--endpoint-url", "ftp://127.0.0.1"], "--endpoint-url must be an http:// or https:// URL"),
        (["--stream", "bad name!", "--endpoint-url", "http://127.0.0.1:1"], "not a valid stream name: 'bad name!'"),
        (["--stream", "ok\n", "--endpoint-url", "http://127.0.0.1:1"], "not a valid stream name"),
    ],
)
def test_refused_at_parse_time(argv, words, capsys):
    code, _out, err = run([*argv, "--json"] if argv[0] != "--stream" else argv, capsys)
    assert code == 2, err
    assert words in err and err.count("\n") == 1


@pytest.mark.parametrize(
    "url",
    [
        f"http://user:{SECRET}@127.0.0.1:{{port}}",
        f"http://{SECRET}@127.0.0.1:{{port}}",
        f"user:{SECRET}@127.0.0.1:{{port}}",
        f"http://user:{SECRET}@127.0.0.1:99999",
    ],
)
def test_a_password_in_the_endpoint_url_never_reaches_an_error(url, capsys):
    code, out, err = run(["streams", "--json", "--endpoint-url", url.format(port=free_port())], capsys)
    assert code in (1, 2) and json.loads(out)["error"]
    assert SECRET not in out + err


def test_a_password_in_the_endpoint_url_is_dropped_and_the_server_still_answers(local_kinesis, capsys):
    url = local_kinesis.endpoint_url.replace("http://", f"http://user:{SECRET}@")
    code, out, err = run(["streams", "--json", "--endpoint-url", url], capsys)
    assert code == 0, err
    assert isinstance(json.loads(out), list) and SECRET not in out + err
    config = BackendConfig.from_args(argparse.Namespace(endpoint_url=url, region=None, profile=None, local=False))
    assert config.endpoint_url == local_kinesis.endpoint_url and SECRET not in config.label


@pytest.mark.parametrize(
    "argv",
    [
        ["tail", "newstream"],
        ["shards", "newstream"],
        ["--stream", "newstream", "streams"],
        ["predict", "k", "--stream", "newstream"],
        ["streams"],
    ],
)
def test_local_read_only_creates_no_stream(argv, capsys):
    """Read-only is total: not even the private embedded server gets a stream created."""
    code, out, err = run([*argv, "--local", "--read-only", "--json"], capsys)
    if argv == ["streams"]:  # lists what is there, which is nothing
        assert code == 0 and json.loads(out) == []
    else:
        assert code == 1 and json.loads(out)["error"]["code"] == "stream_not_found"
        assert "read-only mode (--read-only) creates no stream" in err
    assert "created stream" not in err


def test_a_region_the_embedded_server_lacks_is_one_line_at_once(capsys):
    """The embedded server answers every call in a region it does not serve with HTTP 500, which is retried
    for seconds: such a region is refused before the server is started; one it serves works."""
    import time

    started = time.monotonic()
    code, out, err = run(["streams", "--local", "--region", "mars-north-9"], capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert "the embedded server has no region 'mars-north-9'" in err
    assert time.monotonic() - started < 2
    code, out, err = run(["streams", "--local", "--region", "eu-west-1", "--json"], capsys)
    assert code == 0 and json.loads(out) == [], err
