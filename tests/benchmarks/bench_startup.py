"""Cold start of the commands a user types, each a fresh process, against the floor of the same kind.

- `kconsole --help` and `kconsole predict abc --shards 4` against `python -c pass` of the same
  interpreter (the floor of any Python program here). Target: <= 3x.
- `kconsole streams --endpoint-url URL` (on `kconsole local serve`, two streams) against
  `aws kinesis list-streams --endpoint-url URL`: the AWS CLI (v1, from PyPI) in its own venv of the
  same interpreter, made once under the user's cache folder and reused. Target: <= 1.0x. (kconsole
  also asks DescribeStreamSummary for each stream, concurrently, to show status, mode, open shards,
  retention and encryption.) The secondary figure is botocore's ListStreams alone in a fresh process
  of the same interpreter, the AWS CLI's call without the CLI; it is also the peer when the AWS CLI
  cannot be installed (`streams_peer` says which).
- Launch of the console to its first shard row, in a 140x45 pseudo-terminal: `kconsole --endpoint-url URL
  --stream orders` (4 shards, on `kconsole local serve`) and `kconsole --local --stream launch --shards 4`
  (the embedded server started, the stream created on it), each against a one-line Textual app showing
  the same row, launched the same way in the same rounds. Targets: <= 2.5x on an endpoint, <= 3x with
  --local.
kconsole's modules are compiled to bytecode first, as an install leaves them (the AWS CLI's are).
Best of ROUNDS wall-clock runs per command, interleaved. Prints one JSON line of figures last.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import (
    Terminal,
    aws_environment,
    compiled_like_an_install,
    emit,
    fastest,
    kconsole_command,
    local_serve,
    run_process,
)

ROUNDS = 9
LIST_STREAMS = """
import sys, botocore.session
client = botocore.session.get_session().create_client(
    "kinesis", endpoint_url=sys.argv[1], region_name="us-east-1", aws_access_key_id="local",
    aws_secret_access_key="local")
print(client.list_streams()["StreamNames"])
"""


# The floor of any Textual program here: an app that shows the row the console's launch waits for.
FLOOR_APP = """
from textual.app import App
from textual.widgets import Static

class Floor(App):
    def compose(self):
        yield Static("shardId-000000000000")

Floor().run()
"""
FIRST_ROW = b"shardId-000000000000"
LAUNCH_TARGETS = {"launch_endpoint_ratio": 2.5, "launch_local_ratio": 3.0}


def launch_seconds(argv: list[str], env: dict) -> float:
    """Seconds from the process start to the first shard row on its pseudo-terminal."""
    terminal = Terminal(argv, env=env)
    try:
        return terminal.wait_for(FIRST_ROW)
    finally:
        terminal.close()


AWS_CLI_VENV = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kconsole-bench" / "awscli"


def aws_cli() -> str | None:
    """The `aws` of a venv holding only the AWS CLI, made once with this interpreter; None when pip
    cannot install it (no registry), and the benchmark falls back to botocore's call."""
    aws = AWS_CLI_VENV / "bin" / "aws"
    if not aws.exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(AWS_CLI_VENV)], check=True)
        installed = subprocess.run(
            [str(AWS_CLI_VENV / "bin" / "python"), "-m", "pip", "install", "-q", "awscli"], capture_output=True
        )
        if installed.returncode != 0 or not aws.exists():
            print(
                f"no AWS CLI ({installed.stderr.decode()[-200:]}); botocore's ListStreams is the peer", file=sys.stderr
            )
            return None
    return str(aws)


async def create_streams(endpoint: str) -> None:
    from console.backend import BackendConfig, open_backend

    async with open_backend(BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=endpoint)) as kinesis:
        for name in ("orders", "clicks"):
            await kinesis.ensure_stream(name, 4)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    rounds = parser.parse_args().rounds
    compiled_like_an_install()
    env = aws_environment()
    aws = aws_cli()
    with local_serve() as endpoint, tempfile.TemporaryDirectory() as folder:
        asyncio.run(create_streams(endpoint))
        # The console remembers the last stream and writes its action log: into this run's folder.
        env |= {
            "KCONSOLE_CONFIG": str(Path(folder) / "config.toml"),
            "KCONSOLE_DATA_DIR": str(Path(folder) / "data"),
            "KCONSOLE_CACHE_DIR": str(Path(folder) / "cache"),
        }
        script = Path(folder) / "list_streams.py"
        script.write_text(LIST_STREAMS)
        floor = Path(folder) / "floor.py"
        floor.write_text(FLOOR_APP)
        commands = {
            "python_pass": [sys.executable, "-c", "pass"],
            "help": [*kconsole_command(), "--help"],
            "predict": [*kconsole_command(), "predict", "abc", "--shards", "4"],
            "botocore_list_streams": [sys.executable, str(script), endpoint],
            "streams": [*kconsole_command(), "streams", "--endpoint-url", endpoint, "--region", "us-east-1"],
        }
        if aws is not None:
            commands["aws_list_streams"] = [
                aws,
                "kinesis",
                "list-streams",
                "--endpoint-url",
                endpoint,
                "--region",
                "us-east-1",
            ]
        launches = {
            "launch_floor": [sys.executable, str(floor)],
            "launch_endpoint": [
                *kconsole_command(),
                *("--endpoint-url", endpoint, "--region", "us-east-1", "--stream", "orders"),
            ],
            "launch_local": [*kconsole_command(), "--local", "--stream", "launch", "--shards", "4"],
        }
        runs: dict[str, list] = {name: [] for name in commands}
        launched: dict[str, list[float]] = {name: [] for name in launches}
        for _ in range(rounds):
            for name, argv in commands.items():
                runs[name].append(run_process(argv, env=env))
            for name, argv in launches.items():
                launched[name].append(launch_seconds(argv, env))
    best = {name: fastest(found).wall for name, found in runs.items()}
    best |= {name: min(seconds) for name, seconds in launched.items()}
    peer = "aws_list_streams" if aws is not None else "botocore_list_streams"
    figures = {
        "benchmark": "startup",
        "path": "fresh kconsole processes: --help; predict abc --shards 4; streams --endpoint-url URL; the console "
        "to its first shard row (--endpoint-url URL --stream orders; --local --stream launch --shards 4)",
        "baseline": "python -c pass (help, predict); aws kinesis list-streams --endpoint-url URL (streams); "
        "a one-line Textual app showing the same row (launch); secondary: botocore ListStreams in a fresh process",
        **{f"{name}_s": round(seconds, 4) for name, seconds in best.items()},
        "help_ratio": round(best["help"] / best["python_pass"], 2),
        "predict_ratio": round(best["predict"] / best["python_pass"], 2),
        "streams_peer": peer,
        "streams_ratio": round(best["streams"] / best[peer], 2),
        "streams_vs_botocore_ratio": round(best["streams"] / best["botocore_list_streams"], 2),
        "launch_endpoint_ratio": round(best["launch_endpoint"] / best["launch_floor"], 2),
        "launch_local_ratio": round(best["launch_local"] / best["launch_floor"], 2),
        "launch_rounds_s": {name: [round(seconds, 3) for seconds in found] for name, found in launched.items()},
        "targets": {"help_ratio": 3.0, "predict_ratio": 3.0, "streams_ratio": 1.0, **LAUNCH_TARGETS},
    }
    emit(figures)


if __name__ == "__main__":
    main()
