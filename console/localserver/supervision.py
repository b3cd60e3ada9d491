"""Start, wait for and stop the embedded local Kinesis child process (see main).

The child runs in its own session so a Ctrl-C in the terminal reaches only kconsole, which then stops
the child itself; the child also watches its stdin pipe and parent pid, so it dies with a crashed parent.

`supervise` watches the child while kconsole runs: a death that kconsole did not ask for is said at
once ("embedded server exited (signal 9); restarting"), the child is reaped, and a new one is started
on the same port, empty; the caller's `on_restarted` then recreates what it needs (the demo or named
stream) and says its records are gone.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import http.client
import importlib.util
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from typing import IO
from urllib.parse import urlsplit

from console.errors import BackendError

# What the embedded server's process imports; installed by the `local` extra, never by a lean install.
LOCAL_SERVER_MODULES = ("moto", "flask", "flask_cors", "waitress")
LOCAL_EXTRA_HINT = "pip install 'kconsole[local]'"

_live: set[LocalKinesisServer] = set()
_live_lock = threading.Lock()


def require_local_extra() -> None:
    """Refuse in one line, before any process starts, when the embedded server cannot run here."""
    missing = [name for name in LOCAL_SERVER_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise BackendError(
            f"the embedded local Kinesis needs {', '.join(missing).replace('_', '-')}, "
            f"which this install lacks: {LOCAL_EXTRA_HINT}",
            code="local_extra_missing",
        )


class LocalKinesisServer:
    """A moto server child process. `start()` returns its endpoint URL once it answers HTTP."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, patched: bool = True) -> None:
        self.host = host
        self.port = port
        self.patched = patched
        self.endpoint_url: str | None = None
        self.start_seconds: float | None = None
        self._process: subprocess.Popen | None = None
        self._log: IO[bytes] | None = None
        self._stopping = False
        self.restarts = 0

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def start(self, timeout: float = 30.0) -> str:
        require_local_extra()
        self._stopping = False
        began = time.monotonic()
        command = [
            sys.executable,
            "-m",
            "console.localserver.main",
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--parent-pid",
            str(os.getpid()),
        ]
        if not self.patched:
            command.append("--unpatched")
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - the server's log, kept while it runs
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self._process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            start_new_session=True,
            env=env,
        )
        with _live_lock:
            _live.add(self)
        try:
            self.endpoint_url = self._read_ready_line(began + timeout)
            self._wait_until_answering(began + timeout)
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - began
        return self.endpoint_url

    def _read_ready_line(self, deadline: float) -> str:
        assert self._process and self._process.stdout
        stdout = self._process.stdout
        with selectors.DefaultSelector() as selector:
            selector.register(stdout, selectors.EVENT_READ)
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise BackendError("the embedded local Kinesis did not start in time")
                if selector.select(min(remaining, 0.5)):
                    line = stdout.readline().decode(errors="replace").strip()
                    if line.startswith("READY "):
                        return line.split(" ", 1)[1]
                    if not line and self._process.poll() is not None:
                        raise BackendError(f"the embedded local Kinesis exited on start: {self._last_log_line()}")
                elif self._process.poll() is not None:
                    raise BackendError(f"the embedded local Kinesis exited on start: {self._last_log_line()}")

    def _wait_until_answering(self, deadline: float) -> None:
        parts = urlsplit(self.endpoint_url or "")
        while True:
            try:
                connection = http.client.HTTPConnection(parts.hostname or self.host, parts.port, timeout=1.0)
                connection.request("GET", "/moto-api/data.json")
                connection.getresponse().read()
                connection.close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise BackendError(f"the embedded local Kinesis at {self.endpoint_url} does not answer") from None
                time.sleep(0.05)

    def _last_log_line(self) -> str:
        if self._log is None:
            return "no output"
        self._log.seek(0)
        lines = [line for line in self._log.read().decode(errors="replace").splitlines() if line.strip()]
        return lines[-1] if lines else "no output"

    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def stop(self, timeout: float = 3.0) -> None:
        """SIGTERM, then SIGKILL to the child's process group if it does not go in time. Idempotent."""
        self._stopping = True
        process = self._process
        if process is not None and process.poll() is None:
            try:
                process.send_signal(signal.SIGTERM)
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout)
        if process is not None:
            for stream in (process.stdin, process.stdout):
                if stream:
                    stream.close()
        if self._log is not None:
            self._log.close()
            self._log = None
        with _live_lock:
            _live.discard(self)

    def exit_description(self) -> str | None:
        """How the child ended ("signal 9", "exit code 1"), reaping it; None while it runs."""
        if self._process is None or self._process.poll() is None:
            return None
        code = self._process.returncode
        return f"signal {-code}" if code < 0 else f"exit code {code}"

    def restart(self, timeout: float = 30.0) -> str:
        """A new, empty child on the same port (the clients keep their endpoint URL)."""
        if self.endpoint_url:
            self.port = urlsplit(self.endpoint_url).port or self.port
        self._discard_process()
        self.restarts += 1
        deadline = time.monotonic() + timeout
        while True:  # the old socket may linger a moment before the port is free again
            try:
                return self.start(timeout=max(1.0, deadline - time.monotonic()))
            except BackendError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def _discard_process(self) -> None:
        process = self._process
        if process is not None:
            with contextlib.suppress(ChildProcessError):
                process.wait(0)  # reap: no defunct child left behind
            for stream in (process.stdin, process.stdout):
                if stream:
                    stream.close()
        if self._log is not None:
            self._log.close()
            self._log = None

    async def supervise(
        self, on_event: Callable[[str], None], on_restarted: Callable[[], Awaitable[None]] | None = None
    ) -> None:
        """Until stopped: when the child dies unasked, say so, reap it, restart it on the same port
        and run `on_restarted`. Run it as a task; cancelling it stops the watching, not the server."""
        while True:
            await self._wait_for_exit()
            if self._stopping:
                return
            how = self.exit_description()
            on_event(f"embedded server exited ({how}); restarting")
            try:
                await asyncio.to_thread(self.restart)
            except BackendError as error:
                on_event(f"embedded server exited ({how}) and could not be restarted: {error.message}")
                return
            if on_restarted is not None:
                await on_restarted()

    async def _wait_for_exit(self) -> None:
        """Wake when the child exits: on its pidfd where Linux has one, else by polling."""
        process = self._process
        if process is None:
            return
        try:
            descriptor = os.pidfd_open(process.pid)
        except (AttributeError, OSError):
            while process.poll() is None:
                await asyncio.sleep(0.2)
            return
        loop = asyncio.get_running_loop()
        exited = loop.create_future()

        def on_exit() -> None:
            if not exited.done():
                exited.set_result(None)

        loop.add_reader(descriptor, on_exit)
        try:
            await exited
        finally:
            loop.remove_reader(descriptor)
            os.close(descriptor)
        process.poll()

    def __enter__(self) -> LocalKinesisServer:
        self.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()


@atexit.register
def _stop_all() -> None:
    """Last line of defence on interpreter exit (e.g. an exception escaping asyncio.run)."""
    with _live_lock:
        servers = list(_live)
    for server in servers:
        server.stop(timeout=1.0)
