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
kconsole's modules are compiled to bytecode first, as an install leaves them (the AWS CLI's are).
Best of ROUNDS wall-clock runs per command, interleaved. Prints one JSON line of figures last.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import (
    aws_environment,
    compiled_like_an_install,
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
    compiled_like_an_install()
    env = aws_environment()
    aws = aws_cli()
    with local_serve() as endpoint:
        asyncio.run(create_streams(endpoint))
        with tempfile.TemporaryDirectory() as folder:
            script = Path(folder) / "list_streams.py"
            script.write_text(LIST_STREAMS)
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
            runs: dict[str, list] = {name: [] for name in commands}
            for _ in range(ROUNDS):
                for name, argv in commands.items():
                    runs[name].append(run_process(argv, env=env))
    best = {name: fastest(found).wall for name, found in runs.items()}
    peer = "aws_list_streams" if aws is not None else "botocore_list_streams"
    figures = {
        "benchmark": "startup",
        "path": "fresh kconsole processes: --help; predict abc --shards 4; streams --endpoint-url URL",
        "baseline": "python -c pass (help, predict); aws kinesis list-streams --endpoint-url URL (streams); "
        "secondary: botocore ListStreams in a fresh process",
        **{f"{name}_s": round(seconds, 4) for name, seconds in best.items()},
        "help_ratio": round(best["help"] / best["python_pass"], 2),
        "predict_ratio": round(best["predict"] / best["python_pass"], 2),
        "streams_peer": peer,
        "streams_ratio": round(best["streams"] / best[peer], 2),
        "streams_vs_botocore_ratio": round(best["streams"] / best["botocore_list_streams"], 2),
        "targets": {"help_ratio": 3.0, "predict_ratio": 3.0, "streams_ratio": 1.0},
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
