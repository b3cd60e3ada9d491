"""The action log keeps every entry: whole lines, a torn last line never swallowing the next entry
(the 24-hour UpdateShardCount quota must not undercount), private to the user."""

from __future__ import annotations

import multiprocessing
import os
import stat

from console.reshard.actionlog import ActionLog

NOW = 1_800_000_000.0


def scale_entry(stream="orders"):
    return {"stream": stream, "backend": "local", "calls": {"UpdateShardCount": 1}}


def test_an_entry_after_a_torn_last_line_is_still_counted(tmp_path):
    log = ActionLog(tmp_path / "actions.jsonl")
    log.append(scale_entry(), now=NOW - 10)
    with log.path.open("a", encoding="utf-8") as handle:  # a crash in the middle of writing an entry
        handle.write('{"epoch": %r, "stream": "orders", "calls": {"UpdateSha' % (NOW - 5))
    log.append(scale_entry(), now=NOW)
    assert log.update_shard_count_calls("orders", "local", now=NOW) == 2
    assert log.path.read_text().count("\n") == 3  # the torn line is closed off, on its own


def test_an_entry_glued_to_a_torn_one_by_an_older_writer_is_recovered(tmp_path):
    log = ActionLog(tmp_path / "actions.jsonl")
    log.append(scale_entry(), now=NOW - 10)
    whole = log.path.read_text()
    log.path.write_text(whole + '{"epoch": 1, "str' + whole + "not json at all\n" + whole)
    assert log.update_shard_count_calls("orders", "local", now=NOW) == 3


def test_the_log_is_private_even_if_it_was_not_before(tmp_path):
    log = ActionLog(tmp_path / "data" / "actions.jsonl")
    log.append(scale_entry(), now=NOW)
    assert stat.S_IMODE(log.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(log.path.parent.stat().st_mode) == 0o700
    os.chmod(log.path, 0o644)
    log.append(scale_entry(), now=NOW)
    assert stat.S_IMODE(log.path.stat().st_mode) == 0o600


def _append_many(path, count):
    log = ActionLog(path)
    for n in range(count):
        log.append({**scale_entry(), "padding": "x" * (n * 97 % 5000)}, now=NOW)


def test_concurrent_writers_leave_only_whole_entries(tmp_path):
    path = tmp_path / "actions.jsonl"
    workers = [multiprocessing.get_context("fork").Process(target=_append_many, args=(path, 40)) for _ in range(6)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
    assert len(ActionLog(path).entries()) == 240
    assert ActionLog(path).update_shard_count_calls("orders", "local", now=NOW) == 240
