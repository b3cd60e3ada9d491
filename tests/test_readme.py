"""Every line of the README's `sh` blocks runs as written, in order, against `kconsole local serve`.

The blocks run in one bash session in an empty directory, so a file one line writes is there for the
next, and an `export` holds for the rest. Only these lines are not run, each for its reason:
- the two set-up commands at the top (installing is what this suite runs inside);
- lines that open the live console, or run until Ctrl-C (`kconsole --local`, `kconsole web ...`, `kconsole mcp ...`,
  `kconsole local serve ...`, `streams --watch`, `tail --follow`): the shared server they describe is the
  one this test starts, on a free port that replaces the README's 4567;
- fish syntax (`... | source`), which bash does not speak.
Every other line must exit 0, or with the code its comment starts with as `# exits N`.

`kconsole` in those lines is tests/cli_zygote.py's stand-in, first on PATH: each call is a child forked
from one process that imported the CLI once, running what the installed script runs (the shared server
is started by the installed script itself). A hundred interpreter starts and CLI imports were most of
this test's time.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests import cli_zygote
from tests.conftest import free_port

README = Path(__file__).resolve().parent.parent / "README.md"
README_PORT = "4567"
NOT_RUN = (
    (re.compile(r"pip install"), "a set-up command"),
    (re.compile(r"^kconsole --local\b"), "opens the live console"),
    (re.compile(r"^kconsole web\b"), "serves the console until Ctrl-C"),
    (re.compile(r"^kconsole mcp\b"), "serves MCP on stdin/stdout until the client leaves"),
    (re.compile(r"^kconsole local serve\b"), "the shared server, which this test runs"),
    (re.compile(r"^kconsole streams\b.*--watch"), "refreshes until Ctrl-C"),
    (re.compile(r"^kconsole tail\b.*--follow"), "follows the stream until Ctrl-C"),
    (re.compile(r"\|\s*source\s*(#|$)"), "fish syntax"),
)
EXPECTED_EXIT = re.compile(r"#\s*exits (\d)\b")
# An example that looks for records (by key, filter or text) must find some: an earlier example
# writes them. A JSON tail prints each as a line of its own; a copy says how many it copied.
LOOKS_FOR_RECORDS = re.compile(r"^kconsole (tail|copy)\b.*\s--(key|where|grep)\b")


def readme_lines() -> list[str]:
    """The commands of every sh block, continuation lines joined, in README order."""
    lines: list[str] = []
    for block in re.findall(r"```sh\n(.*?)```", README.read_text(encoding="utf-8"), re.S):
        for line in block.replace("\\\n", " ").splitlines():
            if line.strip():
                lines.append(line.strip())
    return lines


def reason_not_run(line: str) -> str | None:
    return next((reason for pattern, reason in NOT_RUN if pattern.search(line)), None)


def expected_exit(line: str) -> int:
    found = EXPECTED_EXIT.search(line)
    return int(found.group(1)) if found else 0


def found_records(line: str, output: str) -> bool:
    if line.startswith("kconsole copy"):
        return re.search(r"^copied [1-9][\d,]* record", output, re.M) is not None
    if "--json" in line:
        return any(printed.startswith("{") for printed in output.splitlines())
    return any(printed and not printed.startswith(("tail:", "kconsole:")) for printed in output.splitlines())


def test_readme_has_no_optional_brackets_in_commands():
    """`[--flag]` in a command line is not something a shell can run: options are described in prose."""
    bad = [line for line in readme_lines() if re.search(r"\s\[[-A-Za-z]", line.split("#")[0])]
    assert bad == []


@pytest.mark.timeout(600)
def test_every_readme_line_runs_as_written(tmp_path):
    port = free_port()
    bin_dir = Path(sys.executable).parent
    home = tmp_path / "home"
    home.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    env = {key: value for key, value in os.environ.items() if not key.startswith(("AWS_", "KCONSOLE_"))}
    env.update(
        PATH=f"{cli_zygote.stand_in_path().parent}{os.pathsep}{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_STATE_HOME=str(home / ".state"),
        XDG_DATA_HOME=str(home / ".data"),
        AWS_ACCESS_KEY_ID="readme",
        AWS_SECRET_ACCESS_KEY="readme",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_EC2_METADATA_DISABLED="true",
        COLUMNS="120",
    )
    server = subprocess.Popen(
        [str(bin_dir / "kconsole"), "local", "serve", "--port", str(port), "--stream", "orders", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=work,
        text=True,
    )
    try:
        announced = json.loads(server.stdout.readline() or "{}")
        assert announced.get("endpoint_url") == f"http://127.0.0.1:{port}", server.stderr.read()
        ran, results = [], []
        script = ["set +e"]
        for index, line in enumerate(readme_lines()):
            if reason_not_run(line):
                continue
            command = line.replace(f"127.0.0.1:{README_PORT}", f"127.0.0.1:{port}")
            ran.append(line)
            script.append(
                f"started=$EPOCHREALTIME; {{ {command}\n}} > out.{index} 2>&1 < /dev/null; "
                f'echo "{index} $? $started $EPOCHREALTIME" >> exits'
            )
        subprocess.run(["bash", "-c", "\n".join(script)], cwd=work, env=env, timeout=400, check=False)
        exits, seconds = {}, {}
        for index, code, started, ended in (line.split() for line in (work / "exits").read_text().splitlines()):
            exits[index], seconds[index] = code, float(ended) - float(started)
        for index, line in enumerate(readme_lines()):
            if reason_not_run(line):
                continue
            code = int(exits.get(str(index), -1))
            output = (work / f"out.{index}").read_text(errors="replace") if (work / f"out.{index}").exists() else ""
            if code != expected_exit(line) or "Traceback" in output:
                results.append(f"{line!r} exited {code} after {seconds.get(str(index), 0):.1f} s:\n{output[-1500:]}")
            elif LOOKS_FOR_RECORDS.search(line) and not found_records(line, output):
                results.append(f"{line!r} found no records (no example before it writes them):\n{output[-1500:]}")
        assert len(ran) >= 30  # the examples really ran, not a README the patterns skipped whole
        assert results == [], "\n\n".join(results)
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()


@pytest.mark.parametrize(
    "line",
    [
        "kconsole --local",
        "kconsole web --local --port 8000",
        "kconsole mcp --local --stream orders",
        "kconsole completion fish | source         # in fish",
    ],
)
def test_the_lines_not_run_are_only_the_named_kinds(line):
    assert reason_not_run(line) is not None
    assert reason_not_run("kconsole streams") is None and shlex.split("kconsole streams")
