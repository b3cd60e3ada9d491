"""aiohttp imported without loading CA certificates it does not use.

When aiohttp's connector module is first imported it builds two default SSL contexts (verified and
unverified), each loading the system's CA certificates: about 30 ms of every command's start-up.
aiobotocore never uses them: it hands each connector a context of its own (console.backend.clients
builds none for a plain http:// endpoint). So the import runs with certificate loading put off: the
two contexts are made exactly as aiohttp makes them, minus the certificates, which are loaded the first
time aiohttp picks one of them for a connection. Anything else that loads default certificates while
the import runs gets them right after it, and an aiohttp whose defaults look different is left as it
built them.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

_loading = threading.Lock()


def import_aiohttp() -> None:
    """Import aiohttp (and its connector) with its default contexts' certificates put off."""
    if "aiohttp.connector" in sys.modules:
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
    pending = list(put_off)
    choose = connector.TCPConnector._get_ssl_context

    def get_ssl_context(self: Any, request: Any) -> Any:
        context = choose(self, request)
        if pending and any(context is waiting for waiting in pending):
            with _loading:
                while pending:
                    pending.pop().set_default_verify_paths()
        return context

    connector.TCPConnector._get_ssl_context = get_ssl_context  # type: ignore[method-assign,assignment]
