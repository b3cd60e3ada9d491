"""kconsole for a shell script that runs it a hundred times: one process imports the CLI once, then
forks a child per call, which runs `console.cli.entry` (what the installed `kconsole` script runs) with
the caller's arguments, environment, working directory, stdin, stdout and stderr.

`python tests/cli_zygote.py SOCKET` listens on the Unix socket; `stand_in(SOCKET)` is the text of a
`kconsole` executable to put first on PATH, which hands its arguments and its three standard
descriptors over the socket and exits with the child's exit code. A call then costs a fork instead of
an interpreter start and the CLI's imports (most of a short command's time). Each child is a process of
its own, so a call run in the background (`&`) goes on beside the next ones.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import pkgutil
import selectors
import signal
import socket
import sys

LENGTH_BYTES = 8


def stand_in(socket_path: str) -> str:
    """The `kconsole` executable: a bare interpreter (-I -S: neither the site nor the environment's
    PYTHON* settings) that needs only the standard library."""
    return f"""#!{sys.executable} -IS
import json, os, socket, sys
payload = json.dumps({{"argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ)}}).encode()
with socket.socket(socket.AF_UNIX) as zygote:
    zygote.connect({socket_path!r})
    socket.send_fds(zygote, [len(payload).to_bytes({LENGTH_BYTES}, "big")], [0, 1, 2])
    zygote.sendall(payload)
    code = zygote.recv(4)
if len(code) != 4:
    sys.stderr.write("kconsole: the CLI zygote ended before the call did\\n")
    sys.exit(70)
status = int.from_bytes(code, "big", signed=True)
sys.exit(128 - status if status < 0 else status)
"""


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
    while True:
        for key, _ in selector.select():
            if key.fileobj is wake_read:
                with contextlib.suppress(BlockingIOError):
                    while wake_read.recv(4096):
                        pass
                continue
            connection, _ = listener.accept()
            try:
                call, descriptors = _receive(connection)
            except (OSError, ValueError):
                connection.close()
                continue
            pid = os.fork()
            if pid == 0:
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                selector.close()
                for own in (listener, wake_read, wake_write, connection, *waiting.values()):
                    own.close()
                _run_child(call, descriptors)  # exits through SystemExit: atexit handlers run
                return
            for descriptor in descriptors:  # the caller's pipes close when the child is done with them
                os.close(descriptor)
            waiting[pid] = connection
        while waiting:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            connection = waiting.pop(pid)
            with contextlib.suppress(OSError):
                connection.sendall(os.waitstatus_to_exitcode(status).to_bytes(4, "big", signed=True))
            connection.close()


if __name__ == "__main__":
    serve(sys.argv[1])
