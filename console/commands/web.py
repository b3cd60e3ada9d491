"""`kconsole web [--port P]`: the live console in a browser tab, served by textual-serve on 127.0.0.1.

Each browser tab runs its own `kconsole` console process with the options given here (--stream,
--local, --endpoint-url, --read-only, ...); Ctrl-C stops the server and every tab's process.

textual-serve asks a tab's console to quit when the tab closes and waits for it to end, for as long as
it takes; a console that cannot take the request (its loop blocked writing frames for a tab that stopped
reading, or busy) would run on with nobody to see it, and the server would wait for it at Ctrl-C. Here
each tab's console runs in a session of its own, is given STOP_GRACE_S to quit, and is then killed
(its embedded server follows its parent); at Ctrl-C or SIGTERM every tab is stopped so, and its
connection dropped if the browser does not take the close. A SIGKILLed server cannot do this: each
console then quits on the hang-up of its input (console.ui.browser_session).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import shlex
import socket
import sys
from dataclasses import dataclass
from typing import Any

from console.commands import Parents, Subparsers, command_help
from console.commands._mask_args import add_mask_arguments
from console.commands._options import options_from
from console.errors import BadInput

DEFAULT_PORT = 8000
STOP_GRACE_S = 3.0  # a tab's console asked to quit has this long before it is killed
HOST = "127.0.0.1"  # never another interface: whoever reaches the page drives the console

# Console options handed to each tab's process: (attribute, option, takes a value).
_FORWARDED = (
    ("stream", "--stream", True),
    ("interval", "--interval", True),
    ("shards", "--shards", True),
    ("local", "--local", False),
    ("endpoint_url", "--endpoint-url", True),
    ("region", "--region", True),
    ("profile", "--profile", True),
    ("read_only", "--read-only", False),
    ("cli_read_timeout", "--cli-read-timeout", True),
    ("cli_connect_timeout", "--cli-connect-timeout", True),
    ("mask_keys", "--mask-keys", False),
    ("no_mask", "--no-mask", False),
)


def register(subparsers: Subparsers, common: Parents) -> None:
    parser = subparsers.add_parser(
        "web",
        parents=common,
        help=command_help("web"),
        description=f"Serve the live console on http://{HOST}:PORT with textual-serve: each browser tab gets "
        "its own console, opened with the options given here (kconsole web --local, kconsole "
        "web --stream orders --read-only). Ctrl-C stops it.",
    )
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port on {HOST} (default {DEFAULT_PORT})")
    parser.add_argument("--stream", default=argparse.SUPPRESS, help="stream each tab opens")
    add_mask_arguments(parser)
    parser.set_defaults(handler=serve_web)


def console_command(args: Any) -> str:
    """The shell command each tab runs: this interpreter's kconsole with the console's options."""
    argv = [sys.executable, "-m", "console.cli"]
    for attribute, option, takes_value in _FORWARDED:
        value = getattr(args, attribute, None)
        if takes_value and value is not None:
            argv += [option, str(value)]
        elif not takes_value and value:
            argv.append(option)
    for rule in getattr(args, "mask_rules", None) or ():  # each tab's console masks as asked here
        argv += ["--mask", rule]
    return shlex.join(argv)


@dataclass(frozen=True)
class WebOptions:
    port: int = DEFAULT_PORT


def serve_web(args: argparse.Namespace) -> int:
    options = options_from(WebOptions, args)
    if getattr(args, "output", None) or getattr(args, "max_items", None) is not None:
        raise BadInput(
            "kconsole web serves the live console, which has no --json, --output, --query or --max-items", code="usage"
        )
    if not 1 <= options.port <= 65535:
        raise BadInput(f"--port must be from 1 to 65535; got {options.port}", code="usage")
    if getattr(args, "local", False):
        from console.backend.launcher import require_local_extra

        require_local_extra()  # say it here, not in every browser tab
    if args.no_mask and (args.mask_rules or args.mask_keys):
        raise BadInput("--mask or --mask-keys and --no-mask contradict each other: give one", code="usage")
    if args.mask_rules:
        from console.read.masking import MaskRuleError, parse_rules

        try:
            parse_rules(args.mask_rules)  # a bad rule is one line here, not an error page in every tab
        except MaskRuleError as problem:
            raise BadInput(str(problem)) from None
    _check_port_free(options.port)
    server = _web_server(console_command(args), options.port)
    server.serve()
    return 130  # textual-serve stops on Ctrl-C (or SIGTERM) only


def _check_port_free(port: int) -> None:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, port))
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                raise BadInput(
                    f"port {port} on {HOST} is already in use; pick another with --port", code="port_in_use"
                ) from None
            raise BadInput(f"cannot listen on {HOST}:{port}: {error.strerror or error}") from None


def _web_server(command: str, port: int) -> Any:
    """textual-serve's server, with each tab's console stopped for sure (see the module's docstring)."""
    from aiohttp import WSCloseCode, web
    from textual_serve.app_service import AppService
    from textual_serve.server import Server, to_int

    class TabConsole(AppService):
        """One tab's console: its own session, and a stop that ends it within STOP_GRACE_S."""

        async def start(self, width: int, height: int) -> None:
            self._process = process = await asyncio.create_subprocess_exec(
                *shlex.split(self.command),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self._build_environment(width=width, height=height),
                start_new_session=True,  # Ctrl-C reaches the server, which stops the tabs in order
            )
            self._stdin = process.stdin
            self._task = asyncio.create_task(self.run())

        async def stop(self) -> None:
            task, process = self._task, self._process
            if task is None or process is None:
                return
            self._task = None
            await self._download_manager.cancel_app_downloads(app_service_id=self.app_service_id)
            await self.send_meta({"type": "quit"})
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(process.wait()), STOP_GRACE_S)
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
            task.cancel()  # its output is for a tab that is gone; a browser not reading must not hold it
            with contextlib.suppress(asyncio.CancelledError):
                await task

    class WebServer(Server):
        def __init__(self) -> None:
            super().__init__(command, host=HOST, port=port, title="kconsole")
            self.tabs: dict[web.WebSocketResponse, tuple[TabConsole, asyncio.Transport | None]] = {}

        async def on_shutdown(self, _app: web.Application) -> None:
            await asyncio.gather(*(self._end_tab(websocket, *tab) for websocket, tab in list(self.tabs.items())))

        async def _end_tab(
            self, websocket: web.WebSocketResponse, tab: TabConsole, transport: asyncio.Transport | None
        ) -> None:
            await tab.stop()
            await _close(websocket, transport)

        async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
            """textual-serve's own handler, with TabConsole in place of its AppService."""
            websocket = web.WebSocketResponse(heartbeat=15)
            width = to_int(request.query.get("width", "80"), 80)
            height = to_int(request.query.get("height", "24"), 24)
            tab: TabConsole | None = None
            try:
                await websocket.prepare(request)

                async def close() -> None:  # the console said it exited
                    await _close(websocket, request.transport)

                tab = TabConsole(
                    self.command,
                    write_bytes=websocket.send_bytes,
                    write_str=websocket.send_str,
                    close=close,
                    download_manager=self.download_manager,
                    debug=self.debug,
                )
                self.tabs[websocket] = (tab, request.transport)
                await tab.start(width, height)
                await self._process_messages(websocket, tab)
            except asyncio.CancelledError:
                await _close(websocket, request.transport)
            except Exception as error:
                import logging

                logging.getLogger("textual-serve").exception(error)
            finally:
                self.tabs.pop(websocket, None)
                if tab is not None:
                    await tab.stop()
            return websocket

    async def _close(websocket: web.WebSocketResponse, transport: asyncio.Transport | None) -> None:
        """Close a tab's connection; one whose browser takes no more frames would hold the close, and the
        server's stop, for ever: it is dropped after a second."""
        try:
            await asyncio.wait_for(websocket.close(code=WSCloseCode.GOING_AWAY), 1.0)
        except (TimeoutError, ConnectionError):
            if transport is not None:
                transport.abort()

    return WebServer()
