"""Every place kconsole patches a library's internals, listed, each for a measured reason. Nothing else
outside the embedded server (whose moto patches console.localserver.moto_compat lists) patches a
library: tests/test_architecture.py checks, and tests/test_patches.py checks that each internal
patched here is still there in the shape it is patched in, so a library release that changes one
fails a test rather than kconsole.

  lazy_subparsers  argparse._SubParsersAction, subclassed (and its _name_parser_map): a command's
                   parser built only when it is chosen, not the ~30 command modules imported;
                   `kconsole predict` 222-405 ms faster (CPU 278 ms less)
  deferred_tls     ssl.SSLContext.set_default_verify_paths while aiohttp.connector imports, and its
                   TCPConnector._get_ssl_context: aiohttp's two default contexts made without loading
                   CA certificates until one is used; `kconsole streams` 38-207 ms (CPU 97 ms)
  lean_endpoints   botocore's session._register_internal_component("endpoint_resolver"): endpoints.json
                   parsed to plain dicts, four services kept; `kconsole streams` 14-101 ms (CPU 46 ms)
  plain_answers    aiobotocore's AioJSONParser._handle_json_body (with its _parse_body_as_json and
                   _parse_shape) and its factory's _defaults: ListShards and PutRecords answers taken
                   as the JSON they are; 75-80 ms of CPU a 10,000-shard listing, 121-179 ms per 50,000
                   PutRecords entries
  plain_puts       a botocore client's _serializer: PutRecords written straight to JSON; 35-176 ms of
                   CPU per 50,000 records the producer sends

(Measured by tests/benchmarks/bench_patches.py, each with the patch and without, two runs on a 2-core
machine busy with other work.)

KCONSOLE_NO_PATCHES=1 turns every one off (the libraries run as they come, slower); a comma-separated
list of names (KCONSOLE_NO_PATCHES=deferred_tls,plain_puts) turns off those.
"""

from __future__ import annotations

import _thread  # threading's own lock, without importing threading (~1 ms) on every command's start
import argparse
import importlib
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

PATCHES = ("lazy_subparsers", "deferred_tls", "lean_endpoints", "plain_answers", "plain_puts")
SWITCH = "KCONSOLE_NO_PATCHES"


def enabled(name: str) -> bool:
    """Whether patch `name` applies in this process (see SWITCH)."""
    if name not in PATCHES:
        raise ValueError(f"no patch named {name!r}")
    value = os.environ.get(SWITCH, "").strip()
    if value in ("", "0"):
        return True
    if value == "1":
        return False
    return name not in {part.strip() for part in value.split(",")}


# ---- lazy_subparsers: argparse ------------------------------------------------------------------


class LazySubParsers(argparse._SubParsersAction):
    """Subcommands whose parsers are built on use: until its command is chosen, each is a placeholder
    that only carries its help line; choosing it imports the command's module, which registers the
    real parsers of its commands in the placeholders' stead."""

    common: list[argparse.ArgumentParser]

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._modules: dict[str, str] = {}  # command name -> module not imported yet

    def add_placeholder(self, name: str, module_name: str, *, help: str) -> None:
        self.add_parser(name, help=help, add_help=False)
        self._modules[name] = module_name

    def add_parser(self, name: str, **kwargs):
        if name in self._modules:  # the module is registering the real parser: replace the placeholder
            del self._modules[name], self._name_parser_map[name]
            kwargs.pop("help", None)  # the placeholder already lists it in --help
        return super().add_parser(name, **kwargs)

    def load_all(self) -> None:
        """Import every command's module: shell completion walks the whole grammar."""
        for module_name in dict.fromkeys(self._modules.values()):
            importlib.import_module(module_name).register(self, self.common)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        module_name = self._modules.get(values[0])
        if module_name is not None:
            importlib.import_module(module_name).register(self, self.common)
        super().__call__(parser, namespace, values, option_string)


def add_subcommands(
    parser: argparse.ArgumentParser,
    commands: dict[str, tuple[str, str]],
    common: list[argparse.ArgumentParser],
    **kwargs: Any,
) -> argparse._SubParsersAction:
    """The subcommands of `parser`, from {name: (module, help line)}: placeholders built on use
    (LazySubParsers), or without the patch every command module imported and registered now."""
    if not enabled("lazy_subparsers"):
        subparsers = parser.add_subparsers(**kwargs)
        for module_name in dict.fromkeys(module for module, _ in commands.values()):
            importlib.import_module(module_name).register(subparsers, common)
        return subparsers
    parser.register("action", "lazy_parsers", LazySubParsers)
    lazy = parser.add_subparsers(action="lazy_parsers", **kwargs)
    assert isinstance(lazy, LazySubParsers)
    lazy.common = common
    for name, (module_name, summary) in commands.items():
        lazy.add_placeholder(name, module_name, help=summary)
    return lazy


# ---- deferred_tls: ssl and aiohttp --------------------------------------------------------------

_loading = _thread.allocate_lock()


def import_aiohttp() -> None:
    """Import aiohttp (and its connector) without loading CA certificates it does not use.

    When aiohttp's connector module is first imported it builds two default SSL contexts (verified
    and unverified), each loading the system's CA certificates. aiobotocore never uses them: it hands
    each connector a context of its own (none for a plain http:// endpoint). So the import runs with
    certificate loading put off: the two contexts are made exactly as aiohttp makes them, minus the
    certificates, which are loaded the first time aiohttp picks one of them for a connection. Anything
    else that loads default certificates while the import runs gets them right after it, and an
    aiohttp whose defaults look different is left as it built them."""
    if "aiohttp.connector" in sys.modules:
        return
    if not enabled("deferred_tls"):
        import aiohttp.connector  # noqa: F401 - imported for its side: aiohttp as it comes

        return
    import ssl

    put_off: list[ssl.SSLContext] = []

    def put_off_loading(context: ssl.SSLContext) -> None:
        put_off.append(context)

    base = ssl.SSLContext
    with _loading:
        base.set_default_verify_paths = put_off_loading  # type: ignore[method-assign,assignment]  # shadows the C method
        try:
            import aiohttp.connector as connector
        finally:
            del base.set_default_verify_paths  # the C method again
    defaults = {id(connector._SSL_CONTEXT_VERIFIED), id(connector._SSL_CONTEXT_UNVERIFIED)}
    if {id(context) for context in put_off} != defaults or len(put_off) != 2:
        for context in put_off:  # not the two contexts this module knows: load them now, as built
            context.set_default_verify_paths()
        return
    import functools

    pending = list(put_off)
    choose = connector.TCPConnector._get_ssl_context

    @functools.wraps(choose)  # its signature stays aiohttp's (tests/test_patches.py reads it)
    def get_ssl_context(self: Any, request: Any) -> Any:
        context = choose(self, request)
        if pending and any(context is waiting for waiting in pending):
            with _loading:
                while pending:
                    pending.pop().set_default_verify_paths()
        return context

    connector.TCPConnector._get_ssl_context = get_ssl_context  # type: ignore[method-assign,assignment]


# ---- lean_endpoints: botocore's session ---------------------------------------------------------


def use_endpoint_resolver(session: Any, resolver: Callable[[Any], Any]) -> None:
    """Give `session` the endpoint resolver `resolver(session)` makes; botocore offers no public way."""
    if enabled("lean_endpoints"):
        session._register_internal_component("endpoint_resolver", resolver(session))


# ---- plain_answers: aiobotocore's JSON parser ---------------------------------------------------


def response_parser_factory(plain_answers: Mapping[str, Callable[[Any], bool]]) -> Any:
    """aiobotocore's response parsers, with an answer whose output shape is named in `plain_answers`
    taken as the JSON it is when its check says it already has that shape (what the model-driven
    parse, a Python call per member, would only copy). Anything else goes through the model."""
    from aiobotocore.parsers import AioJSONParser, AioResponseParserFactory

    if not enabled("plain_answers"):
        return AioResponseParserFactory()

    class PlainAnswersParser(AioJSONParser):
        def _handle_json_body(self, raw_body: Any, shape: Any) -> Any:
            parsed = self._parse_body_as_json(raw_body)
            plain = plain_answers.get(shape.name) if shape is not None else None
            if plain is not None and plain(parsed):
                return parsed
            return self._parse_shape(shape, parsed)  # what botocore's JSONParser does with every answer

    class ParserFactory(AioResponseParserFactory):
        def create_parser(self, protocol_name: str) -> Any:
            if protocol_name == "json":
                return PlainAnswersParser(**self._defaults)
            return super().create_parser(protocol_name)

    return ParserFactory()


# ---- plain_puts: a botocore client's serializer -------------------------------------------------


def wrap_serializer(client: Any, wrap: Callable[[Any], Any]) -> None:
    """Replace `client`'s request serializer with `wrap(its serializer)`: botocore takes no serializer
    from outside (the parser is a session component, the serializer is made per client)."""
    if enabled("plain_puts"):
        client._serializer = wrap(client._serializer)
