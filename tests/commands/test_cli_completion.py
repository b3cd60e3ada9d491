"""Shell completion as the shell drives it: argcomplete's protocol (COMP_LINE in, candidates out)."""

from __future__ import annotations

import asyncio
import os
import sys
import time

import pytest

from console import cli


@pytest.mark.parametrize(
    "shell, marker", [("bash", "complete "), ("zsh", "#compdef kconsole"), ("fish", "complete --command kconsole")]
)
def test_completion_prints_the_script_for_each_shell(shell, marker, capsys):
    assert cli.main(["completion", shell]) == 0
    script = capsys.readouterr().out
    assert marker in script and "kconsole" in script


def test_an_unknown_shell_is_bad_input(capsys):
    assert cli.main(["completion", "tcsh"]) == 2
    assert "invalid choice: 'tcsh'" in capsys.readouterr().err


async def complete(line: str, tmp_path, cache_dir) -> tuple[list[str], float]:
    """What kconsole answers the shell for `line` with the cursor at its end."""
    answer = tmp_path / f"answer-{time.monotonic_ns()}"
    env = dict(
        os.environ,
        _ARGCOMPLETE="1",
        COMP_LINE=line,
        COMP_POINT=str(len(line)),
        _ARGCOMPLETE_STDOUT_FILENAME=str(answer),
        KCONSOLE_CACHE_DIR=str(cache_dir),
        AWS_EC2_METADATA_DISABLED="true",
    )
    began = time.monotonic()
    # _ARGCOMPLETE=1: the line's first word is the program, as the shell script sends it
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "console.cli", env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    await asyncio.wait_for(process.communicate(), 30)
    return answer.read_text().split("\013"), time.monotonic() - began


async def test_commands_and_stream_names_complete_and_the_names_are_cached(
    kinesis, make_stream, local_kinesis, tmp_path
):
    cache = tmp_path / "cache"
    words, _ = await complete("kconsole sha", tmp_path, cache)
    assert words == ["shards "]
    first = await make_stream(shards=1, prefix="compl")
    second = await make_stream(shards=1, prefix="compl")
    line = f"kconsole shards --endpoint-url {local_kinesis.endpoint_url} compl"
    words, _ = await complete(line, tmp_path, cache)
    assert {first, second} <= {word.strip() for word in words}
    assert all(word.strip().startswith("compl") for word in words)
    # Within the cache's minute the listing is not repeated: a stream deleted since is still offered.
    await kinesis.delete_stream(first)
    words, _ = await complete(line, tmp_path, cache)
    assert first in {word.strip() for word in words}
    # --stream of the console completes the same way
    words, _ = await complete(
        f"kconsole --endpoint-url {local_kinesis.endpoint_url} --stream {second[:-2]}", tmp_path, cache
    )
    assert [word.strip() for word in words] == [second]


async def test_an_unreachable_backend_or_local_completes_nothing_quickly(tmp_path):
    words, took = await complete("kconsole tail --endpoint-url http://127.0.0.1:9 x", tmp_path, tmp_path / "c")
    assert words == [""] and took < 10
    words, took = await complete("kconsole tail --local x", tmp_path, tmp_path / "c")
    assert words == [""] and took < 10
