"""kconsole for tests that run it as a process many times: one process imports the CLI once, then
forks a child per call, which runs `console.cli.entry` (what the installed `kconsole` script runs) with
the caller's arguments, environment, working directory, stdin, stdout and stderr.

`stand_in_path()` is a `kconsole` executable (run it, or put its folder first on PATH) that hands its
arguments and its three standard descriptors to this test process's zygote (`python -m
tests.cli_zygote SOCKET`) and ends as the child does. A call then costs a fork instead of an
interpreter start and the CLI's imports (most of a short command's time). Each child is a process of
its own: a call run in the background goes on beside the next ones, and a signal sent to the stand-in
reaches it. What a child cannot see: interpreter settings read at start-up (PYTHON* variables, -X
options), which are the zygote's; a test about those runs `python -m console.cli` itself.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import os
import pkgutil
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

LENGTH_BYTES = 8
ROOT = Path(__file__).resolve().parent.parent


def stand_in(socket_path: str) -> str:
    """The `kconsole` executable: a bare interpreter (-I -S: neither the site nor the environment's
    PYTHON* settings) that needs only the standard library. It passes on SIGINT, SIGTERM and SIGHUP to
    the child and ends as the child did (killed by its signal, or with its exit code)."""
    return f"""#!{sys.executable} -IS
import json, os, signal, socket, sys
payload = json.dumps({{"argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ)}}).encode()
zygote = socket.socket(socket.AF_UNIX)
zygote.connect({socket_path!r})
socket.send_fds(zygote, [len(payload).to_bytes({LENGTH_BYTES}, "big")], [0, 1, 2])
zygote.sendall(payload)


def receive():
    data = b""
    while len(data) < 4:
        chunk = zygote.recv(4 - len(data))
        if not chunk:
            sys.stderr.write("kconsole: the CLI zygote ended before the call did\\n")
            sys.exit(70)
        data += chunk
    return int.from_bytes(data, "big", signed=True)


child = receive()
for passed_on in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(passed_on, lambda number, _: os.kill(child, number))
status = receive()
if status < 0:
    signal.signal(-status, signal.SIG_DFL)
    os.kill(os.getpid(), -status)
sys.exit(status)
"""


_shared: tuple[subprocess.Popen, Path] | None = None
_starting = threading.Lock()


def stand_in_path() -> Path:
    """This test process's stand-in (a file named kconsole, alone in its folder), its zygote started on
    first use and killed, with any child still running, when the process exits."""
    global _shared
    with _starting:
        if _shared is None or _shared[0].poll() is not None:
            _shared = _start()
        return _shared[1]


def _start() -> tuple[subprocess.Popen, Path]:
    folder = Path(tempfile.mkdtemp(prefix="kconsole-"))  # short: a Unix socket's path is 107 bytes at most
    socket_path = folder / "zygote"
    log = (folder / "zygote.log").open("wb")
    zygote = subprocess.Popen(
        [sys.executable, "-m", "tests.cli_zygote", str(socket_path)],
        cwd=ROOT,
        stdin=subprocess.PIPE,  # its end, when this process ends however it does, ends the zygote too
        stdout=log,
        stderr=log,
        start_new_session=True,
    )
    log.close()
    atexit.register(_stop, zygote, folder)
    deadline = time.monotonic() + 60
    while True:
        try:
            with socket.socket(socket.AF_UNIX) as probe:
                probe.connect(str(socket_path))
            break
        except OSError as refused:
            if zygote.poll() is not None or time.monotonic() > deadline:
                _stop(zygote, folder)
                raise RuntimeError(f"the CLI zygote did not start: {_tail(folder)}") from refused
            time.sleep(0.05)
    executable = folder / "kconsole"
    executable.write_text(stand_in(str(socket_path)), encoding="utf-8")
    executable.chmod(0o755)
    return zygote, executable


def _tail(folder: Path) -> str:
    with contextlib.suppress(OSError):
        return (folder / "zygote.log").read_text(errors="replace")[-1500:]
    return "no log"


def _stop(zygote: subprocess.Popen, folder: Path) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(zygote.pid, signal.SIGKILL)
    zygote.wait()
    if zygote.stdin is not None:
        zygote.stdin.close()
    shutil.rmtree(folder, ignore_errors=True)


def _preload() -> None:
    """What commands import when they run, imported once here so that no child imports it again."""
    import console.cli

    parser = console.cli.build_parser()
    for action in parser._actions:  # the CLI builds command parsers on use
        if hasattr(action, "load_all"):
            action.load_all()
    import console.commands

    for module in pkgutil.iter_modules(console.commands.__path__, "console.commands."):
        with contextlib.suppress(ImportError):
            importlib.import_module(module.name)
    for name in ("console.backend", "aiobotocore.session", "botocore.session", "rich.console"):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


def _receive(connection: socket.socket) -> tuple[dict, list[int]]:
    data, descriptors, _, _ = socket.recv_fds(connection, LENGTH_BYTES, 3)
    length = int.from_bytes(data, "big")
    payload = b""
    while len(payload) < length:
        chunk = connection.recv(length - len(payload))
        if not chunk:
            raise ConnectionError("the caller left mid-request")
        payload += chunk
    return json.loads(payload), descriptors


def _run_child(call: dict, descriptors: list[int]) -> None:
    """In the forked child: become the caller's kconsole, then exit as the installed script does."""
    os.chdir(call["cwd"])
    os.environ.clear()
    os.environ.update(call["env"])
    for target, descriptor in enumerate(descriptors):
        os.dup2(descriptor, target)
        os.close(descriptor)
    sys.argv = ["kconsole", *call["argv"]]
    from console.cli import entry

    entry()
    sys.exit(0)  # entry exits itself; never back into the zygote's loop


def serve(socket_path: str) -> None:
    _preload()
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(socket_path)
    listener.listen(64)
    wake_read, wake_write = socket.socketpair()
    wake_read.setblocking(False)
    wake_write.setblocking(False)
    signal.set_wakeup_fd(wake_write.fileno())
    signal.signal(signal.SIGCHLD, lambda *_: None)  # only to wake the selector
    waiting: dict[int, socket.socket] = {}  # child pid -> the connection its exit code goes back on
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(wake_read, selectors.EVENT_READ)
    selector.register(sys.stdin.fileno(), selectors.EVENT_READ)
    while True:
        for key, _ in selector.select():
            if key.fileobj is wake_read:
                with contextlib.suppress(BlockingIOError):
                    while wake_read.recv(4096):
                        pass
            elif key.fileobj == sys.stdin.fileno():
                if not os.read(sys.stdin.fileno(), 4096):  # the test process is gone
                    return
            elif key.fileobj is listener:
                _fork_a_call(listener, selector, waiting, (wake_read, wake_write))
            elif not key.fileobj.recv(1):  # the stand-in is gone (killed): its child goes with it
                selector.unregister(key.fileobj)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(key.data, signal.SIGKILL)
        while waiting:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            connection = waiting.pop(pid)
            with contextlib.suppress(KeyError):
                selector.unregister(connection)
            with contextlib.suppress(OSError):
                connection.sendall(os.waitstatus_to_exitcode(status).to_bytes(4, "big", signed=True))
            connection.close()


def _fork_a_call(
    listener: socket.socket,
    selector: selectors.BaseSelector,
    waiting: dict[int, socket.socket],
    wake: tuple[socket.socket, socket.socket],
) -> None:
    connection, _ = listener.accept()
    try:
        call, descriptors = _receive(connection)
    except (OSError, ValueError):
        connection.close()
        return
    pid = os.fork()
    if pid == 0:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        selector.close()
        for own in (listener, *wake, connection, *waiting.values()):
            own.close()
        _run_child(call, descriptors)  # exits through SystemExit: atexit handlers run
    for descriptor in descriptors:  # the caller's pipes close when the child is done with them
        os.close(descriptor)
    with contextlib.suppress(OSError):
        connection.sendall(pid.to_bytes(4, "big", signed=True))
    waiting[pid] = connection
    selector.register(connection, selectors.EVENT_READ, pid)


if __name__ == "__main__":
    serve(sys.argv[1])
