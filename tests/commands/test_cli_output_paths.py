"""A file a user names as output (`tail --out`, `copy --checkpoint`, the Tail tab's export) that exists and is
not a regular file is never replaced: a FIFO or character device is written to as a stream, anything else is
one line and exit 2 before anything is read. Every special file here is made in the test's own folder; none
of the machine's device files is ever touched."""

from __future__ import annotations

import json
import os
import socket
import stat
import threading
import time
from pathlib import Path

import pytest

from console.errors import BadInput
from console.read.export import ExportTarget, write_atomically
from tests.commands.test_cli_tail import kconsole
from tests.commands.test_cli_tail_window import NOWHERE, put_events


def a_socket_file(folder: Path) -> tuple[Path, socket.socket]:
    path = folder / "listening.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    return path, listener


def a_character_device(folder: Path) -> Path:
    """A character device of our own (the null device's numbers) under `folder`; root only."""
    if os.geteuid() != 0:
        pytest.skip("making a character device needs root")
    path = folder / "null-device"
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    return path


def drain_fifo(path: Path) -> tuple[threading.Thread, list[bytes]]:
    """A reader on the FIFO `path` in a thread, collecting what is written until the writer closes it."""
    received: list[bytes] = []

    def read() -> None:
        with open(path, "rb") as fifo:
            received.append(fifo.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader, received


async def test_tail_out_streams_into_a_fifo_and_a_device_and_never_replaces_them(
    kinesis, make_stream, local_kinesis, tmp_path
):
    stream = await make_stream(shards=1)
    await put_events(kinesis, stream, 0, 3)

    fifo = tmp_path / "records.fifo"
    os.mkfifo(fifo)
    reader, received = drain_fifo(fifo)
    code, _, err = await kconsole("tail", stream, "--out", str(fifo), endpoint=local_kinesis.endpoint_url)
    reader.join(10)
    assert code == 0, err
    assert stat.S_ISFIFO(os.stat(fifo).st_mode), "the FIFO was replaced"
    assert sorted(json.loads(line)["content"]["n"] for line in received[0].decode().splitlines()) == [0, 1, 2]

    device = a_character_device(tmp_path)
    code, _out, err = await kconsole("tail", stream, "--out", str(device), endpoint=local_kinesis.endpoint_url)
    assert code == 0, err
    assert stat.S_ISCHR(os.stat(device).st_mode), "the device was replaced by a regular file"
    assert not list(tmp_path.glob(".*.part"))


async def test_an_output_that_is_not_a_regular_file_is_refused_before_anything_is_read(tmp_path):
    sock, listener = a_socket_file(tmp_path)
    folder = tmp_path / "folder"
    folder.mkdir()
    fifo = tmp_path / "checkpoint.fifo"
    os.mkfifo(fifo)
    cases = [
        (["tail", "s", "--out", str(sock)], "is a socket"),
        (["tail", "s", "--out", str(folder)], "is a directory"),
        (["copy", "a", "b", "--from", "trim-horizon", "--yes", "--checkpoint", str(folder)], "is a directory"),
        (["copy", "a", "b", "--from", "trim-horizon", "--yes", "--checkpoint", str(fifo)], "is a FIFO"),
        (["copy", "a", "b", "--from", "trim-horizon", "--yes", "--checkpoint", str(sock)], "is a socket"),
    ]
    if os.geteuid() == 0:
        device = a_character_device(tmp_path)
        cases.append((["copy", "a", "b", "--from", "trim-horizon", "--yes", "--checkpoint", str(device)], "device"))
    try:
        for argv, expected in cases:
            started = time.monotonic()
            # Nothing listens at NOWHERE: a refusal that came after a read would be a connection error instead.
            code, _out, err = await kconsole(*argv, endpoint=NOWHERE)
            assert code == 2, (argv, err)
            assert expected in err and "never replaces" in err, (argv, err)
            assert len(err.strip().splitlines()) == 1, err
            assert time.monotonic() - started < 10
        assert stat.S_ISSOCK(os.stat(sock).st_mode) and folder.is_dir() and stat.S_ISFIFO(os.stat(fifo).st_mode)
        assert list(folder.iterdir()) == [] and not list(tmp_path.glob(".*.part"))
    finally:
        listener.close()


def test_the_tail_tabs_export_and_the_checkpoint_writer_keep_the_same_rule(tmp_path):
    """The Tail tab exports through ExportTarget and a copy checkpoint through write_atomically: the one rule."""
    sock, listener = a_socket_file(tmp_path)
    try:
        with pytest.raises(BadInput, match="never replaces"):
            ExportTarget(str(sock))
        with pytest.raises(BadInput, match="never replaces"):
            write_atomically(sock, b"{}", "--checkpoint")
        assert stat.S_ISSOCK(os.stat(sock).st_mode) and not list(tmp_path.glob(".*.part"))
    finally:
        listener.close()
    fifo = tmp_path / "export.fifo"
    os.mkfifo(fifo)
    reader, received = drain_fifo(fifo)
    target = ExportTarget(str(fifo))
    target.write(b"a line\n", 1)
    target.commit()
    reader.join(10)
    assert received == [b"a line\n"] and stat.S_ISFIFO(os.stat(fifo).st_mode)
    with pytest.raises(BadInput, match="nobody reads"):
        ExportTarget(str(fifo))  # no reader: refused after a moment, not a wait forever


async def test_put_refuses_a_huge_file_without_newlines_without_reading_it_whole(tmp_path):
    huge = tmp_path / "sparse.jsonl"
    with open(huge, "wb") as handle:
        handle.truncate(4 * 1024**3)  # 4 GiB of zeros, no newline, taking no disk space
    started = time.monotonic()
    code, _out, err = await kconsole("put", "s", "--file", str(huge), endpoint=NOWHERE)
    assert code == 2, err
    assert "line 1" in err and "too long" in err and len(err.strip().splitlines()) == 1, err
    assert time.monotonic() - started < 5, "the file was read to its end before line 1 was refused"
