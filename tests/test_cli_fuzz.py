"""A fuzzer over the CLI's argument vectors: whatever a user types, kconsole answers with exit code
0, 1, 2 or 130 and never a traceback or an "internal error".

Commands run in-process through console.cli.main, each under a short alarm. Nothing can reach AWS:
every vector gets --endpoint-url naming a closed port on 127.0.0.1 right after the command's name,
AWS_ENDPOINT_URL points the SDK there too, any other host name fails to resolve (and fails the case),
and `local serve` (which would listen until stopped) is refused by that --endpoint-url; `web` and
`mcp`, which serve until stopped whatever they are given, are left out.
The grammar is read from the parser itself, so a new command or option is fuzzed without a change here.
300 cases run in CI; set KCONSOLE_SLOW=1 and run `-m slow` for thousands more.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import signal
import socket
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from console import cli
from tests.conftest import free_port

CASE_SECONDS = 20  # one case; connection refused on 127.0.0.1 answers in milliseconds
ALLOWED_EXIT_CODES = {0, 1, 2, 130}


def _commands() -> dict[tuple[str, ...], list[argparse.Action]]:
    """Every command path (("plan", "scale"), ...) with its arguments, read from the parser."""
    found = {}

    def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        found[path] = [
            a
            for a in parser._actions
            if not isinstance(a, argparse._SubParsersAction) and not {"-h", "--version"} & set(a.option_strings)
        ]
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    walk(child, (*path, name))

    parser = cli.build_parser()
    for action in parser._actions:  # the CLI builds command parsers on use; the fuzzer wants them all
        if hasattr(action, "load_all"):
            action.load_all()
    walk(parser, ())
    # `web` and `mcp` serve until stopped, whatever they are given: they have nothing to answer with.
    return {path: actions for path, actions in found.items() if path[:1] not in (("web",), ("mcp",))}


COMMANDS = _commands()
EVERY_OPTION = sorted({s for actions in COMMANDS.values() for a in actions for s in a.option_strings})

# Values at and around every bound, malformed numbers, hostile text and awkward paths.
NUMBERS = [
    "0",
    "1",
    "2",
    "3",
    "4",
    "8",
    "-1",
    "-5",
    "0.5",
    "1e9",
    "1e308",
    "nan",
    "inf",
    "-inf",
    "10000",
    "10001",
    "100000",
    "100001",
    "500",
    "501",
    "65535",
    "65536",
    "99999999999",
    "9" * 5000,
    "0x10",
    "1_000",
    " 7 ",
    "",
]
HASH_KEYS = ["0", "1", str(2**127), str(2**128 - 1), str(2**128), "-1", "midpoint", "MIDPOINT"]
WORDS = [
    "orders",
    "bad name!",
    "a" * 129,
    "a" * 257,
    "shardId-000000000000",
    "shardId-000000000001",
    "x\x1b[2Jy",
    "[bold red]x[/]",
    "[/]",
    "\u202e\u009b",
    "é",
    "latest",
    "trim-horizon",
    "2026-11-23T10:00:00Z",
    "49590338271490256608559692538361571095921575989136588898",
    "-",
    "--",
]
PATHS = ["keys.txt", "binary.bin", "empty.txt", "missing.txt", "a-directory", "-"]


def value_tokens(directory: str) -> st.SearchStrategy[str]:
    paths = [p if p == "-" else os.path.join(directory, p) for p in PATHS]
    return st.one_of(
        st.sampled_from(NUMBERS),
        st.sampled_from(HASH_KEYS),
        st.sampled_from(WORDS),
        st.sampled_from(paths),
        st.text(max_size=12),
    )


def plausible(action: argparse.Action, directory: str) -> st.SearchStrategy[str]:
    """A value of the kind the option takes, so a vector gets past parsing and into the command."""
    if (action.type is not None and "Path" in repr(action.type)) or "file" in action.dest:
        return st.just(os.path.join(directory, "keys.txt"))
    if action.type in (int, float) or (
        action.type is not None and getattr(action.type, "__name__", "").startswith("-")
    ):
        return st.sampled_from(["1", "2", "4", "8", "16"])
    if action.dest in ("shard", "adjacent"):
        return st.sampled_from(["shardId-000000000000", "shardId-000000000001"])
    return st.sampled_from(["orders", "k1", "1", "4", "midpoint", "us-east-1"])


@st.composite
def argument_vectors(draw, directory: str) -> list[str]:
    """Mostly what a user might type for one command (its own options, a choice from the listed
    ones, a stream name), with values drawn from the edges; now and then a foreign option or token."""
    path = draw(st.sampled_from(sorted(COMMANDS)))
    actions = COMMANDS[path]
    values = value_tokens(directory)
    argv = list(path)
    for action in (a for a in actions if not a.option_strings):
        if draw(st.integers(0, 9)):
            count = draw(st.integers(0, 3)) if action.nargs in ("*", "+") else 1
            argv += [
                draw(st.sampled_from(["orders", "k1", "user-7"]) if draw(st.booleans()) else values)
                for _ in range(count)
            ]
    options = [a for a in actions if a.option_strings]
    chosen = [a for a in options if a.required and draw(st.integers(0, 9))]
    chosen += [draw(st.sampled_from(options)) for _ in range(draw(st.integers(0, 4)))] if options else []
    for action in chosen:
        argv.append(draw(st.sampled_from(action.option_strings)))
        if action.nargs == 0:
            continue
        if action.choices and draw(st.integers(0, 4)):
            argv.append(draw(st.sampled_from(sorted(action.choices))))
        elif draw(st.booleans()):
            argv.append(draw(plausible(action, directory)))
        elif draw(st.integers(0, 9)):
            argv.append(draw(values))
    if not draw(st.integers(0, 19)):
        argv.append(draw(st.sampled_from(EVERY_OPTION)))
    if not draw(st.integers(0, 19)):  # now and then a stray token anywhere
        argv.insert(draw(st.integers(0, len(argv))), draw(values))
    return argv


class CaseTimeout(BaseException):
    """Raised by the alarm; a BaseException, so main's last-resort handler cannot swallow it."""


@pytest.fixture(scope="module")
def fuzz_directory(tmp_path_factory):
    directory = tmp_path_factory.mktemp("fuzz")
    (directory / "keys.txt").write_text("alpha\nbeta\n\ngamma\n", encoding="utf-8")
    (directory / "binary.bin").write_bytes(b"\xff\xfe\x00\x80" * 64)
    (directory / "empty.txt").write_text("", encoding="utf-8")
    (directory / "a-directory").mkdir()
    return str(directory)


FOREIGN_HOSTS: list[str] = []  # host names a case tried to resolve other than 127.0.0.1


@pytest.fixture
def offline(fuzz_directory, monkeypatch):
    closed = f"http://127.0.0.1:{free_port()}"
    resolve = socket.getaddrinfo

    def local_only(host, *args, **kwargs):  # the transport boundary: no name but 127.0.0.1 is looked up
        if host not in ("127.0.0.1", b"127.0.0.1"):
            FOREIGN_HOSTS.append(str(host))
            raise socket.gaierror(socket.EAI_NONAME, f"the fuzzer resolves only 127.0.0.1, not {host}")
        return resolve(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", local_only)
    for name in (
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_KINESIS",
        "AWS_ENDPOINT_URL_STS",
        "AWS_ENDPOINT_URL_CLOUDWATCH",
        "AWS_ENDPOINT_URL_DYNAMODB",
    ):
        monkeypatch.setenv(name, closed)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "fuzz")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fuzz")
    monkeypatch.setenv("KCONSOLE_CONFIG", os.path.join(fuzz_directory, "config.toml"))
    monkeypatch.setenv("KCONSOLE_DATA_DIR", os.path.join(fuzz_directory, "data"))
    monkeypatch.delenv("KCONSOLE_DEBUG", raising=False)
    return closed


@contextlib.contextmanager
def _empty_stdin():
    """An empty, non-terminal stdin (with .buffer, as a pipe has): `-` files read nothing, and a
    confirmation prompt refuses rather than waiting."""
    previous = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(b""), encoding="utf-8")
    try:
        yield
    finally:
        sys.stdin = previous


def run_case(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()

    def alarm(_signum, _frame):
        raise CaseTimeout(f"{CASE_SECONDS} s: {argv!r}")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(CASE_SECONDS)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), _empty_stdin():
            try:
                code = cli.main(argv)
            except SystemExit as done:  # --help and --version exit through argparse
                code = done.code if isinstance(done.code, int) else (0 if done.code is None else 2)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return code, err.getvalue()


def check(argv: list[str], endpoint: str) -> None:
    # Right after the command's name, where no drawn option or `--` can swallow it.
    command = max((len(path) for path in COMMANDS if tuple(argv[: len(path)]) == path), default=0)
    argv = [*argv[:command], "--endpoint-url", endpoint, *argv[command:]]
    FOREIGN_HOSTS.clear()
    code, err = run_case(argv)
    assert not FOREIGN_HOSTS, (argv, FOREIGN_HOSTS)
    assert code in ALLOWED_EXIT_CODES, (argv, code, err)
    assert "Traceback" not in err and "internal error" not in err, (argv, err)
    if code in (1, 2):
        errors = [line for line in err.splitlines() if line.startswith("kconsole: error:")]
        assert len(errors) == 1, (argv, err)


@pytest.mark.timeout(900)
def test_no_argument_vector_gives_a_traceback(offline, fuzz_directory):
    @settings(
        max_examples=300,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(argument_vectors(fuzz_directory))
    def case(argv):
        check(argv, offline)

    case()


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("KCONSOLE_SLOW"), reason="the long fuzz run: KCONSOLE_SLOW=1 pytest -m slow")
@pytest.mark.timeout(0)
def test_no_argument_vector_gives_a_traceback_long_run(offline, fuzz_directory):
    @settings(
        max_examples=int(os.environ.get("KCONSOLE_FUZZ_EXAMPLES", "5000")),
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(argument_vectors(fuzz_directory))
    def case(argv):
        check(argv, offline)

    case()


def test_the_fuzzer_can_fail(offline, monkeypatch):
    """A handler that raises what nobody planned for is caught by the check (as main's last line of
    defence turns it into "internal error")."""
    from console.commands import keyspace

    def broken(_args):
        raise RecursionError("deep")

    monkeypatch.setattr(keyspace, "keytree_command", broken)
    with pytest.raises(AssertionError, match="internal error"):
        check(["keytree"], offline)


def test_the_fuzzer_notices_a_case_that_reaches_for_another_host(offline, monkeypatch):
    from console.backend import config

    # A command that ignored --endpoint-url would look up AWS's own host name.
    monkeypatch.setattr(config, "validate_endpoint_url", lambda _url: "http://kinesis.us-east-1.amazonaws.com")
    with pytest.raises(AssertionError, match="amazonaws"):
        check(["streams", "--region", "us-east-1"], offline)
