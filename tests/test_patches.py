"""console.patches: each library internal it patches is still there in the shape it is patched in (so
a library release that changes one fails here, not in kconsole), each patch does what it says, and
KCONSOLE_NO_PATCHES turns them all off with kconsole still working.

The Textual handlers a few widgets override (tests/test_architecture.py names them) are checked here too.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import subprocess
import sys

import pytest

from console import patches


def parameters(function) -> list[str]:
    return list(inspect.signature(function).parameters)


# ---- each internal, as it is patched ------------------------------------------------------------


def test_lazy_subparsers_internals():
    # LazySubParsers subclasses the private class add_subparsers makes, keeps its name -> parser map,
    # and overrides add_parser and __call__ with their arguments.
    action = argparse._SubParsersAction
    assert isinstance(argparse.ArgumentParser().add_subparsers(), action)
    assert parameters(action.add_parser)[:2] == ["self", "name"]
    assert parameters(action.__call__) == ["self", "parser", "namespace", "values", "option_string"]
    made = action(option_strings=[], prog="p", parser_class=argparse.ArgumentParser)
    made.add_parser("x")
    assert isinstance(made._name_parser_map, dict) and "x" in made._name_parser_map


def test_deferred_tls_internals():
    import ssl

    import aiohttp.connector as connector

    # A C method of SSLContext, shadowed on the class during the import, then deleted to show it again.
    assert "set_default_verify_paths" in vars(ssl.SSLContext) or "set_default_verify_paths" in vars(ssl._SSLContext)
    assert "set_default_verify_paths" not in vars(ssl.SSLContext)
    assert isinstance(connector._SSL_CONTEXT_VERIFIED, ssl.SSLContext)
    assert isinstance(connector._SSL_CONTEXT_UNVERIFIED, ssl.SSLContext)
    # Once import_aiohttp ran in this process, the method is its wrapper, which reports aiohttp's own.
    assert parameters(connector.TCPConnector._get_ssl_context) == ["self", "req"]


def test_lean_endpoints_internals():
    from botocore.session import Session

    session = Session()
    assert parameters(Session._register_internal_component) == ["self", "name", "component"]
    session._register_internal_component("endpoint_resolver", "probe")
    assert session._get_internal_component("endpoint_resolver") == "probe"


def test_plain_answers_internals():
    from aiobotocore.parsers import AioJSONParser, AioResponseParserFactory
    from botocore.parsers import JSONParser

    # The override stands in for the method botocore's JSON parser reads every answer's body with.
    assert parameters(AioJSONParser._handle_json_body) == ["self", "raw_body", "shape"]
    assert "_handle_json_body" in vars(JSONParser)
    assert parameters(AioJSONParser._parse_body_as_json) == ["self", "body_contents"]
    assert parameters(AioJSONParser._parse_shape) == ["self", "shape", "node"]
    factory = AioResponseParserFactory()
    assert isinstance(factory._defaults, dict)
    assert parameters(AioResponseParserFactory.create_parser) == ["self", "protocol_name"]


async def test_plain_puts_internals():
    from aiobotocore.session import AioSession

    async with AioSession().create_client(
        "kinesis", region_name="us-east-1", aws_access_key_id="a", aws_secret_access_key="b"
    ) as client:
        serializer = client._serializer
        assert parameters(serializer.serialize_to_request) == ["parameters", "operation_model"]
        patches.wrap_serializer(client, lambda inner: ("wrapped", inner))
        assert client._serializer == ("wrapped", serializer)


@pytest.mark.parametrize("handler", ["_on_click", "_on_focus", "_on_blur"])
def test_textual_handlers_the_widgets_override(handler):
    from textual.widget import Widget

    assert parameters(getattr(Widget, handler)) == ["self", "event"]


# ---- the switch ---------------------------------------------------------------------------------


def test_the_switch_turns_off_all_or_the_named(monkeypatch):
    monkeypatch.delenv(patches.SWITCH, raising=False)
    assert all(patches.enabled(name) for name in patches.PATCHES)
    monkeypatch.setenv(patches.SWITCH, "1")
    assert not any(patches.enabled(name) for name in patches.PATCHES)
    monkeypatch.setenv(patches.SWITCH, "deferred_tls, plain_puts")
    assert [name for name in patches.PATCHES if not patches.enabled(name)] == ["deferred_tls", "plain_puts"]
    with pytest.raises(ValueError):
        patches.enabled("no_such_patch")


def test_every_patch_is_listed_in_the_modules_table():
    for name in patches.PATCHES:
        assert f"\n  {name} " in patches.__doc__, name


def kconsole(*args: str, switch: str | None) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if key != patches.SWITCH}
    if switch is not None:
        env[patches.SWITCH] = switch
    return subprocess.run(
        [sys.executable, "-m", "console.cli", *args], env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    "args",
    [["predict", "abc", "--shards", "4", "--json"], ["--help"], ["keytree", "--count", "3", "--json"]],
    ids=["predict", "help", "keytree"],
)
def test_the_cli_answers_the_same_without_patches(args):
    patched, plain = kconsole(*args, switch=None), kconsole(*args, switch="1")
    assert plain.returncode == patched.returncode == 0, plain.stderr
    if args == ["--help"]:  # every command listed either way
        from console.commands import COMMANDS

        assert all(f"    {name} " in plain.stdout for name in COMMANDS)
    else:
        assert plain.stdout == patched.stdout


async def test_the_cli_reads_a_stream_without_patches(local_kinesis, make_stream):
    """The whole client without a patch: aiohttp and botocore as they come, a stream's shards listed
    (ListShards through botocore's own parser) and records put (its own serializer)."""
    name = await make_stream(2)
    endpoint = ["--endpoint-url", local_kinesis.endpoint_url, "--region", "us-east-1"]
    put = subprocess.run(
        [sys.executable, "-m", "console.cli", "put", name, "--key-field", "k", *endpoint, "--json"],
        input='{"k": "a", "v": 1}\n{"k": "b", "v": 2}\n',
        env={**os.environ, patches.SWITCH: "1", "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert put.returncode == 0, put.stderr
    shards = kconsole("shards", name, *endpoint, "--json", switch="1")
    assert shards.returncode == 0, shards.stderr
    assert len(json.loads(shards.stdout)["shards"]) == 2


# ---- deferred_tls, as it behaves ----------------------------------------------------------------

CHILD = """
import asyncio, json, ssl
from console.patches import import_aiohttp

import_aiohttp()
import aiohttp
import aiohttp.connector as connector

before = connector._SSL_CONTEXT_VERIFIED.cert_store_stats()["x509_ca"]
plain = ssl.create_default_context()  # outside the import: loads its certificates as always


async def https_attempt():
    async with aiohttp.ClientSession() as session:
        try:
            await session.get("https://127.0.0.1:9/")  # nothing listens: the context is chosen, then refused
        except aiohttp.ClientError:
            pass


asyncio.run(https_attempt())
print(json.dumps({
    "before": before,
    "after": connector._SSL_CONTEXT_VERIFIED.cert_store_stats()["x509_ca"],
    "expected": plain.cert_store_stats()["x509_ca"],
    "verify_mode": int(connector._SSL_CONTEXT_VERIFIED.verify_mode),
    "check_hostname": connector._SSL_CONTEXT_VERIFIED.check_hostname,
    "restored": "set_default_verify_paths" not in vars(ssl.SSLContext),
}))
"""


def test_the_default_contexts_load_their_certificates_when_first_chosen_for_https():
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["restored"]
    assert seen["before"] == 0
    assert seen["after"] == seen["expected"]
    assert seen["verify_mode"] == 2 and seen["check_hostname"]  # CERT_REQUIRED, as aiohttp makes it
