"""`kconsole predict`, `keytree` and `spread` as a user runs them: text, --json, bad input, a live stream."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from console.cli import main
from console.keyspace.hashkeys import HASH_SPACE, MAX_HASH_KEY, md5_hash_key


def run(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv: str):
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    assert len(out.strip().splitlines()) == 1
    return json.loads(out)


def assert_one_line_error(code: int, out: str, err: str, *, contains: str, as_json: bool = False) -> dict | None:
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("kconsole: error: ") and contains in err
    assert "Traceback" not in err
    if as_json:
        document = json.loads(out)
        assert document["error"]["message"] in err
        return document["error"]
    assert out == ""
    return None


# -- predict ---------------------------------------------------------------------------------------------


def test_predict_shows_three_versus_eleven_at_a_glance(capsys):
    code, out, _ = run(capsys, "predict", *map(str, range(1, 15)), "--shards", "2")
    assert code == 0
    assert "14 keys on 2 shards: max 11, min 3, mean 7.0, max/mean skew 1.57" in out
    bars = {
        line.split()[0]: line.split()[1] for line in out.splitlines() if line.startswith("shardId-") and "%" in line
    }
    assert bars == {"shardId-000000000000": "3", "shardId-000000000001": "11"}


def test_predict_json_rows_and_distribution(capsys):
    document = run_json(capsys, "predict", *map(str, range(1, 15)), "--shards", "2")
    assert document["source"] == {"shards": 2}
    rows = document["keys"]
    assert [row["key"] for row in rows] == [str(x) for x in range(1, 15)]
    assert all(row["hash_key"] == str(md5_hash_key(row["key"])) for row in rows)
    assert all(row["shard_index"] == (md5_hash_key(row["key"]) >= HASH_SPACE // 2) for row in rows)
    assert all(row["shard_id"] == f"shardId-00000000000{row['shard_index']}" for row in rows)
    dist = document["distribution"]
    assert [b["count"] for b in dist["buckets"]] == [3, 11]
    assert dist["skew"] == pytest.approx(11 / 7)


def test_predict_defaults_to_four_shards(capsys):
    document = run_json(capsys, "predict", "partition-key-0001")
    assert document["source"] == {"shards": 4}
    assert document["keys"] == [
        {
            "key": "partition-key-0001",
            "hash_key": "243789333289005976465737331408549979447",
            "shard_id": "shardId-000000000002",
            "shard_index": 2,
        }
    ]
    code, out, _ = run(capsys, "predict", "partition-key-0001")
    assert code == 0 and "shardId-000000000002" in out and "max/mean" not in out  # one key: no distribution


def test_predict_explicit_hash_key_overrides_md5(capsys):
    document = run_json(capsys, "predict", "anything", "--explicit-hash-key", str(MAX_HASH_KEY), "--shards", "3")
    assert document["keys"][0]["hash_key"] == str(MAX_HASH_KEY)
    assert document["keys"][0]["shard_id"] == "shardId-000000000002"
    alone = run_json(capsys, "predict", "--explicit-hash-key", "0")
    assert alone["keys"] == [{"key": None, "hash_key": "0", "shard_id": "shardId-000000000000", "shard_index": 0}]


def test_predict_reads_a_keys_file(capsys, tmp_path: Path):
    keys_file = tmp_path / "keys.txt"
    keys_file.write_text("\n".join(f"user-{i}" for i in range(500)) + "\n\n")
    document = run_json(capsys, "predict", "extra", "--keys-file", str(keys_file), "--shards", "8")
    assert len(document["keys"]) == 501 and document["keys"][0]["key"] == "extra"
    assert document["distribution"]["total"] == 501
    assert sum(b["count"] for b in document["distribution"]["buckets"]) == 501
    code, out, _ = run(capsys, "predict", "--keys-file", str(keys_file))
    assert code == 0 and "more rows (use --json for all)" in out and "500 keys on 4 shards" in out


@pytest.mark.parametrize(
    "argv, contains",
    [
        (["predict", "--shards", "0", "some-key"], "--shards must be a whole number from 1 to 100,000; got '0'"),
        (["predict", "--shards", "-3", "k"], "--shards must be a whole number"),
        (["predict", "--shards", "four", "k"], "got 'four'"),
        (["predict", "--shards", "100001", "k"], "from 1 to 100,000"),
        (["--shards", "0", "predict", "k"], "--shards must be a whole number"),
        (["predict"], "give at least one KEY"),
        (["predict", "k", "--explicit-hash-key", "-1"], "--explicit-hash-key must be a decimal integer"),
        (["predict", "k", "--explicit-hash-key", str(HASH_SPACE)], "--explicit-hash-key must be from 0"),
        (["predict", "x" * 257], "partition key must be 1 to 256 characters; got 257"),
        (["predict", ""], "partition key must be 1 to 256 characters; got an empty key"),
        (["predict", "k", "--keys-file", "/no/such/file"], "cannot read keys file '/no/such/file'"),
        (["predict", "k", "--shards", "2", "--stream", "s"], "not both"),
        (["predict", "k", "--stream", "bad name!"], "not a valid stream name"),
        (["predict", "k", "--bogus"], "unrecognized arguments: --bogus"),
        (["predict", "k", "--shards", "9" * 5000], "--shards must be a whole number"),  # past int()'s 4300 digits
        (["predict", "k", "--explicit-hash-key", "9" * 5000], "--explicit-hash-key must be from 0"),
        (["predict", "\udcff\udcfe"], "partition key is not valid UTF-8 text"),  # bytes like $'\xff\xfe' in a shell
    ],
)
def test_predict_bad_input_is_one_line_and_exit_2(capsys, argv, contains):
    assert_one_line_error(*run(capsys, *argv), contains=contains)
    error = assert_one_line_error(*run(capsys, *argv, "--json"), contains=contains, as_json=True)
    assert error["code"] in {"usage", "bad_input", "bad_stream_name"}


# -- keytree ---------------------------------------------------------------------------------------------


def test_keytree_replays_the_seed_example(capsys, tmp_path: Path):
    existing = tmp_path / "existing.txt"
    existing.write_text("0\n32\n# a comment\n\n9\n57\n")
    document = run_json(capsys, "keytree", "--space", "128", "--existing-file", str(existing), "--count", "8")
    assert document["keys"] == ["64", "96", "80", "112", "72", "48", "104", "16"]
    assert document["existing"] == 4
    balance = document["balance"]
    assert balance["total_keys"] == 12
    assert [lv["keys"] for lv in balance["levels"]] == [1, 2, 4, 2, 0, 0, 2, 1]
    assert balance["worst_imbalance"] == {"key": "16", "depth": 2, "left": 2, "right": 0, "difference": 2}


def test_keytree_in_the_kinesis_space_text(capsys):
    code, out, _ = run(capsys, "keytree", "--count", "7")
    assert code == 0
    keys = out.split(":\n", 1)[1].split("\n\n", 1)[0].split()
    assert keys == [str(k) for k in (2**127, 2**126, 3 * 2**126, 2**125, 5 * 2**125, 3 * 2**125, 7 * 2**125)]
    assert "worst imbalance: under 170141183460469231731687303715884105728 (depth 0): left 3, right 3" in out
    assert run_json(capsys, "keytree")["keys"] == [str(2**127)]


@pytest.mark.parametrize(
    "argv, contains",
    [
        (["keytree", "--count", "-1"], "--count must be a whole number from 0 to 1,000,000"),
        (["keytree", "--count", "lots"], "got 'lots'"),
        (["keytree", "--space", "100"], "--space must be a power of two"),
        (["keytree", "--space", "2**129"], "--space must be a power of two"),
        (["keytree", "--space", "4", "--count", "5"], "only 4 of the 4 keys are free"),
        (["keytree", "--existing-file", "/no/such"], "cannot read existing-keys file"),
        (["keytree", "--space", "9" * 5000], "--space must be a power of two"),
        (["keytree", "--count", "9" * 5000], "--count must be a whole number"),
    ],
)
def test_keytree_bad_input(capsys, argv, contains):
    assert_one_line_error(*run(capsys, *argv), contains=contains)
    assert_one_line_error(*run(capsys, *argv, "--json"), contains=contains, as_json=True)


def test_keytree_existing_file_errors_name_the_line(capsys, tmp_path: Path):
    bad = tmp_path / "bad.txt"
    bad.write_text("5\n\nfive\n")
    assert_one_line_error(
        *run(capsys, "keytree", "--existing-file", str(bad)), contains="line 3: 'five' is not a decimal"
    )
    bad.write_text(f"5\n{HASH_SPACE}\n")
    assert_one_line_error(*run(capsys, "keytree", "--existing-file", str(bad)), contains="line 2: key")
    bad.write_text("9" * 5000)
    assert_one_line_error(
        *run(capsys, "keytree", "--existing-file", str(bad)), contains="line 1 is longer than 4,096 bytes"
    )


# -- spread ----------------------------------------------------------------------------------------------


def test_spread_of_a_hot_key(capsys):
    sort_args = [arg for i in range(16) for arg in ("--sort-key", str(i))]
    document = run_json(capsys, "spread", "user.v1.User:abc", "--suffixes", "16", *sort_args)
    assert [row["suffix"] for row in document["sort_keys"]] == [
        12,
        14,
        13,
        6,
        6,
        5,
        12,
        11,
        13,
        5,
        12,
        15,
        13,
        5,
        14,
        14,
    ]
    assert document["sort_keys"][0]["partition_key"] == "user.v1.User:abc:12"
    assert len(document["suffixes"]) == 16 and document["source"] == {"shards": 4}
    for row in document["suffixes"]:
        assert row["hash_key"] == str(md5_hash_key(row["partition_key"]))
    assert document["by_suffix"]["max"] == 3 and document["by_shard"]["total"] == 16
    code, out, _ = run(capsys, "spread", "user.v1.User:abc", "--suffixes", "16", "--sort-key", "123")
    assert code == 0 and "user.v1.User:abc:11" in out and "sort keys per shard:" in out


def test_spread_sort_keys_file_and_shards(capsys, tmp_path: Path):
    sort_file = tmp_path / "sk.txt"
    sort_file.write_text("\n".join(f"id-{i}" for i in range(1000)))
    document = run_json(capsys, "spread", "hot", "--suffixes", "8", "--sort-keys-file", str(sort_file), "--shards", "2")
    assert document["by_suffix"]["total"] == 1000 and len(document["by_shard"]["buckets"]) == 2
    assert document["by_suffix"]["skew"] < 1.2  # xxh64 spreads 1000 ids evenly over 8 suffixes


@pytest.mark.parametrize(
    "argv, contains",
    [
        (["spread", "pk", "--suffixes", "12"], "suffix count must be a power of two"),
        (["spread", "pk", "--suffixes", "0"], "--suffixes must be a whole number"),
        (["spread", "pk"], "required: --suffixes"),
        (["spread", "pk", "--suffixes", "4", "--sort-key", ""], "sort key #1 is empty"),
        (["spread", "pk", "--suffixes", "4", "--shards", "0"], "--shards must be a whole number"),
        (["spread", "pk", "--suffixes", "4", "--sort-key", "a", "--sort-keys-file", "f"], "not allowed with argument"),
        (["spread", "pk", "--suffixes", str(1 << 17)], "--suffixes must be a whole number from 1 to 65,536"),
        (["spread", "k" * 255, "--suffixes", "4"], "with the suffix ':3' the sharded key would be 257"),
        (["spread", "pk", "--suffixes", "4", "--sort-key", "\udcff"], "sort key #1 is not valid UTF-8 text"),
    ],
)
def test_spread_bad_input(capsys, argv, contains):
    assert_one_line_error(*run(capsys, *argv), contains=contains)
    assert_one_line_error(*run(capsys, *argv, "--json"), contains=contains, as_json=True)


def test_empty_and_binary_input_files_are_one_line_errors(capsys, tmp_path: Path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n")
    binary = tmp_path / "binary.bin"
    binary.write_bytes(b"ok\n\xff\xfe\x00")
    for argv, contains in [
        (["predict", "--keys-file", str(empty)], f"keys file {str(empty)!r} holds no keys"),
        (["spread", "pk", "--suffixes", "4", "--sort-keys-file", str(empty)], "holds no sort keys"),
        (["predict", "--keys-file", str(binary)], "not UTF-8 text (byte 0xff at offset 3)"),
        (["keytree", "--existing-file", str(binary)], "not UTF-8 text (byte 0xff at offset 3)"),
    ]:
        assert_one_line_error(*run(capsys, *argv), contains=contains)
        assert_one_line_error(*run(capsys, *argv, "--json"), contains=contains, as_json=True)


def test_keys_file_on_stdin_that_is_not_utf8():
    result = subprocess.run(
        [sys.executable, "-m", "console.cli", "predict", "--keys-file", "-"],
        input=b"ok\n\xff\xfe\n",
        capture_output=True,
        timeout=60,
    )
    assert result.returncode == 2 and result.stdout == b""
    assert (
        result.stderr.decode() == "kconsole: error: cannot read keys file '-': not UTF-8 text (byte 0xff at offset 3)\n"
    )


def test_keytree_counts_a_repeated_existing_key_once(capsys, tmp_path: Path):
    existing = tmp_path / "existing.txt"
    existing.write_text("5\n5\n9\n")
    document = run_json(capsys, "keytree", "--space", "128", "--existing-file", str(existing))
    assert (document["existing"], document["duplicates"]) == (2, 1)
    assert document["balance"]["total_keys"] == 3  # 5, 9 and the one handed out
    code, out, _ = run(capsys, "keytree", "--space", "128", "--existing-file", str(existing))
    assert code == 0 and "after 2 existing (1 repeated line counted once):" in out


def test_local_predict_creates_the_stream_it_is_asked_about():
    result = subprocess.run(
        [sys.executable, "-m", "console.cli", "--local", "predict", "k", "--stream", "fresh", "--json"],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["source"]["stream"] == "fresh" and len(document["distribution"]["buckets"]) == 4
    assert document["keys"][0]["shard_id"] == f"shardId-{md5_hash_key('k') * 4 >> 128:012d}"  # an even 4-way split
    assert "created stream 'fresh' with 4 shards" in result.stderr
    # --shards N with --local --stream: the shard count the stream is created with, not a conflict
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "console.cli",
            "--local",
            "--shards",
            "8",
            "spread",
            "hot",
            "--suffixes",
            "2",
            "--stream",
            "fresh",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert result.returncode == 0, result.stderr
    assert len(json.loads(result.stdout)["suffixes_by_shard"]["buckets"]) == 8


# -- the installed script ------------------------------------------------------------------------------


def test_installed_kconsole_script_predicts_and_fails_cleanly():
    script = shutil.which("kconsole") or str(Path(sys.executable).with_name("kconsole"))
    done = subprocess.run([script, "predict", "--shards", "0", "some-key"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == "kconsole: error: --shards must be a whole number from 1 to 100,000; got '0'\n"
    done = subprocess.run(
        [script, "predict", "partition-key-0001", "--json"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0
    assert json.loads(done.stdout)["keys"][0]["shard_index"] == 2


# -- a live stream -----------------------------------------------------------------------------------------


async def test_predict_against_a_live_stream_names_the_shard_before_the_split(
    local_kinesis, kinesis, make_stream, capsys
):
    name = await make_stream(shards=2)
    await kinesis.split_shard(name, "shardId-000000000000", HASH_SPACE // 4)
    await kinesis.wait_for_active(name)
    keys = [str(x) for x in range(1, 15)]
    capsys.readouterr()
    code = await asyncio.to_thread(
        main, ["predict", *keys, "--stream", name, "--endpoint-url", local_kinesis.endpoint_url, "--json"]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    document = json.loads(out)
    assert document["source"]["stream"] == name
    open_shards = [s for s in await kinesis.all_shards(name) if s.is_open]
    for row in document["keys"]:
        hash_key = int(row["hash_key"])
        owner = next(s for s in open_shards if s.contains(hash_key))
        assert row["shard_id"] == owner.shard_id
        # Keys in the lower half moved from the split parent; the upper half never moved.
        assert row["previous_shard_id"] == ("shardId-000000000000" if hash_key < HASH_SPACE // 2 else None)
    assert document["distribution"]["total"] == 14 and len(document["distribution"]["buckets"]) == 3

    code = await asyncio.to_thread(
        main, ["predict", "9", "--stream", name, "--endpoint-url", local_kinesis.endpoint_url]
    )
    out, _ = capsys.readouterr()
    assert code == 0 and "BEFORE LAST RESHARD" in out and "shardId-000000000000" in out

    code = await asyncio.to_thread(
        main,
        [
            "spread",
            "hot",
            "--suffixes",
            "8",
            "--sort-key",
            "a",
            "--stream",
            name,
            "--endpoint-url",
            local_kinesis.endpoint_url,
            "--json",
        ],
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    document = json.loads(out)
    assert document["source"]["stream"] == name
    for row in document["suffixes"]:
        assert row["shard_id"] == next(s for s in open_shards if s.contains(int(row["hash_key"]))).shard_id
