"""Shared fixtures: the embedded local Kinesis (patched moto) and the kinesis-mock cross-check server.

local_kinesis   session: a running LocalKinesisServer (.endpoint_url)
kinesis         an open KinesisBackend on it
make_stream     async factory: name = await make_stream(shards=4) -> ACTIVE, unique, deleted afterwards
kinesis_mock    session: kinesis-mock (npm kinesis-local) on a free plain-HTTP port (.endpoint_url)
kconsole_child  async context: `python -m console.cli ARGV` as a child, killed if still running after
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import http.client
import inspect
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from console.backend import BackendConfig, open_backend
from console.localserver.supervision import LocalKinesisServer

KINESIS_MOCK_DIR = Path(__file__).parent / "kinesis-mock"
KINESIS_MOCK_MAIN = KINESIS_MOCK_DIR / "node_modules" / "kinesis-local" / "main.js"

# Tests never run on EC2; without this an empty credential chain waits for the metadata service.
os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")

# The suite never writes into the user's own kconsole folders: the action log, copy checkpoints,
# saved tails and the config go to a folder of this test process (children inherit it). A test
# about those folders sets its own.
_PRIVATE_HOME = Path(tempfile.mkdtemp(prefix="kconsole-tests-"))
os.environ.setdefault("KCONSOLE_DATA_DIR", str(_PRIVATE_HOME / "data"))
os.environ.setdefault("KCONSOLE_CONFIG", str(_PRIVATE_HOME / "config.toml"))


# What makes a test a unit test: no server, CLI run, Textual app or child process behind it. A test
# is not one when it lives in a folder or module that drives those (they start what they need
# themselves), carries the kinesis_mock mark, or when its own code or any fixture it uses reaches
# for one (SERVER_SIGNS). Unit tests are marked `unit`; `pytest --unit` runs only those, without even
# importing the other modules (README.md, Testing).
NOT_UNIT_FOLDERS = {"commands", "ui", "backend", "mcp_server", "benchmarks", "kinesis-mock"}
NOT_UNIT_MODULES = {
    "test_readme.py",
    "test_readme_operations.py",
    "test_lint.py",
    "test_packaging.py",
    "test_cli_fuzz.py",
    "test_config.py",
    "test_patches.py",
    "test_screenshot_files.py",
}
SERVER_SIGNS = (
    "local_kinesis",
    "kinesis_mock",
    "LocalKinesisServer",
    "getfixturevalue(",
    "run_test(",
    "subprocess",
    "kconsole_child",
    '"--local"',
)
TESTS = Path(__file__).parent


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--unit", action="store_true", help="run only the unit tests (marked `unit`): no server, CLI or app"
    )


def _driven(path: Path) -> bool:
    """In a folder or module whose tests drive the CLI, the app, a child process or the whole tree."""
    try:
        place = path.relative_to(TESTS).parts
    except ValueError:
        return False
    return bool(place) and (place[0] in NOT_UNIT_FOLDERS or place[-1] in NOT_UNIT_MODULES)


@functools.cache
def _reaches_a_server(function: Callable[..., object]) -> bool:
    try:
        source = inspect.getsource(function)
    except (OSError, TypeError):
        return True  # cannot tell: not a unit test
    return any(sign in source for sign in SERVER_SIGNS)


def _is_unit(item: pytest.Item) -> bool:
    if _driven(item.path) or item.get_closest_marker("kinesis_mock") or not isinstance(item, pytest.Function):
        return False
    functions = [item.function]
    for name in item.fixturenames:
        if name in ("local_kinesis", "kinesis_mock"):
            return False
        for definition in item._fixtureinfo.name2fixturedefs.get(name, ()):
            with contextlib.suppress(TypeError):  # a fixture from a plugin or pytest itself: not ours
                if Path(inspect.getfile(definition.func)).is_relative_to(TESTS):
                    functions.append(definition.func)
    return not any(_reaches_a_server(function) for function in functions)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    return True if config.getoption("--unit") and _driven(collection_path) else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    kept, dropped = [], []
    for item in items:
        if _is_unit(item):
            item.add_marker(pytest.mark.unit)
            kept.append(item)
        else:
            dropped.append(item)
    if config.getoption("--unit") and dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@contextlib.asynccontextmanager
async def kconsole_child(*argv: str):
    """kconsole as a shell runs it, with piped output; killed on the way out if it is still running."""
    import sys

    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "console.cli", *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    try:
        yield process
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def interrupt(process, timeout: float = 20.0) -> tuple[bytes, bytes]:
    """Ctrl-C for a child: SIGINT, then what it still prints until it exits."""
    process.send_signal(signal.SIGINT)
    return await asyncio.wait_for(process.communicate(), timeout)


def unique_stream_name(prefix: str = "t") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def local_kinesis():
    with LocalKinesisServer() as server:
        yield server


@pytest.fixture
async def kinesis(local_kinesis):
    config = BackendConfig(kind="local", region="us-east-1", endpoint_url=local_kinesis.endpoint_url)
    async with open_backend(config) as backend:
        yield backend


class StreamFactory:
    """Creates uniquely named streams on one backend and deletes them at teardown."""

    def __init__(self, backend) -> None:
        self.backend = backend
        self.created: list[str] = []

    async def __call__(self, shards: int = 4, *, prefix: str = "t") -> str:
        name = unique_stream_name(prefix)
        await self.backend.create_stream(name, shards)
        self.created.append(name)
        await self.backend.wait_for_active(name)
        return name

    async def cleanup(self) -> None:
        for name in self.created:
            with contextlib.suppress(Exception):  # a test may have deleted it already
                await self.backend.delete_stream(name)


@pytest.fixture
async def make_stream(kinesis):
    factory = StreamFactory(kinesis)
    yield factory
    await factory.cleanup()


@dataclass
class KinesisMockServer:
    endpoint_url: str
    process: subprocess.Popen


def _ensure_kinesis_mock_installed() -> None:
    if KINESIS_MOCK_MAIN.exists():
        return
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("kinesis-mock is not installed and npm is not available")
    subprocess.run(
        [npm, "install", "--no-audit", "--no-fund"],
        cwd=KINESIS_MOCK_DIR,
        check=True,
        stdout=subprocess.DEVNULL,
        timeout=300,
    )


def _unavailable(reason: str):
    """Skip locally, but fail loudly in CI where the cross-check must run."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"kinesis-mock unavailable in CI: {reason}")
    pytest.skip(f"kinesis-mock unavailable: {reason}")


@pytest.fixture(scope="session")
def kinesis_mock():
    node = shutil.which("node")
    if node is None:
        _unavailable("node is not installed")
    try:
        _ensure_kinesis_mock_installed()
    except (RuntimeError, subprocess.SubprocessError) as error:
        _unavailable(str(error))
    plain_port, tls_port = free_port(), free_port()
    env = dict(
        os.environ,
        KINESIS_MOCK_CERT_PATH=str(KINESIS_MOCK_MAIN.parent / "server.json"),
        KINESIS_MOCK_PLAIN_PORT=str(plain_port),
        KINESIS_MOCK_TLS_PORT=str(tls_port),
        AWS_REGION="us-east-1",
        LOG_LEVEL="ERROR",
        ROOT_LOG_LEVEL="ERROR",
        SHARD_LIMIT="200",
        # Short state changes keep the tests quick; UpdateShardCount stays long enough that a test
        # can meet the stream UPDATING (ResourceInUse) reliably.
        UPDATE_SHARD_COUNT_DURATION="500ms",
        **{
            f"{what}_DURATION": "50ms"
            for what in (
                "CREATE_STREAM",
                "DELETE_STREAM",
                "MERGE_SHARDS",
                "SPLIT_SHARD",
                "REGISTER_STREAM_CONSUMER",
                "DEREGISTER_STREAM_CONSUMER",
                "START_STREAM_ENCRYPTION",
                "STOP_STREAM_ENCRYPTION",
                "UPDATE_STREAM_MODE",
            )
        },
    )
    log = tempfile.TemporaryFile()  # noqa: SIM115 - the server's log, kept while it runs
    process = subprocess.Popen([node, str(KINESIS_MOCK_MAIN)], env=env, stdout=log, stderr=log, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                log.seek(0)
                _unavailable(f"exited on start: {log.read().decode(errors='replace')[-500:]}")
            try:
                connection = http.client.HTTPConnection("127.0.0.1", plain_port, timeout=1)
                connection.request("GET", "/healthcheck")
                connection.getresponse().read()
                connection.close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    _unavailable("did not answer within 60 s")
                time.sleep(0.1)
        yield KinesisMockServer(endpoint_url=f"http://127.0.0.1:{plain_port}", process=process)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(5)
        log.close()
