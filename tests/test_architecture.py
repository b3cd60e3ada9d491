"""The house's layers, checked on the source: a package imports only packages below it, the domain
packages import nothing from Textual or aiobotocore, and no module imports itself back in a circle.

Imports are read with `ast` (every `import`/`from ... import`, including ones inside functions and
under TYPE_CHECKING), so a lazy import cannot hide a dependency that points the wrong way."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

CONSOLE = Path(__file__).resolve().parents[1] / "console"

# Layers from the ground up. errors and userdirs (where kconsole's files live) are the shared base
# every layer may use, as is patches (every patch of a library's internals, used from the backend and
# the CLI alike), and config (the settings file, found through userdirs) stands on them beside
# keyspace and bounds (the limits on every number a user gives); read and
# backend stand side by side (neither imports the other), as do produce, heat and reshard. The embedded
# server (localserver) stands below the backend, which launches it.
LAYERS: dict[str, int] = {
    "errors": 0,
    "userdirs": 0,
    "words": 0,
    "patches": 0,
    "acting": 0,
    "document_sink": 0,
    "processes": 0,
    "__init__": 0,
    "keyspace": 1,
    "bounds": 1,
    "config": 1,
    "topology": 2,
    "localserver": 2,
    "read": 3,
    "backend": 3,
    "produce": 4,
    "heat": 4,
    "reshard": 4,
    "lifecycle": 4,
    "consumers": 4,
    "commands": 5,
    "ui": 5,
    "mcp_server": 5,
    "cli": 6,
}
DOMAIN = {"keyspace", "topology", "read", "produce", "heat", "reshard", "lifecycle", "consumers"}
FOREIGN_TO_DOMAIN = ("textual", "rich", "aiobotocore", "botocore")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(CONSOLE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, name: str | None = None) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    name = name or module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            # `from console.heat import rates` imports the module console.heat.rates
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return found


MODULES = {module_name(p): p for p in CONSOLE.rglob("*.py")}
GRAPH = {name: {i for i in imports_of(path) if i in MODULES and i != name} for name, path in MODULES.items()}


def top_package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_top_level_module_has_a_layer():
    assert {top_package(m) for m in MODULES} <= set(LAYERS), "a new package needs a place in LAYERS"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down(module):
    upward = upward_imports(module, GRAPH)
    assert not upward, f"{module} imports from its own layer or above: {upward}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if top_package(m) in DOMAIN))
def test_domain_imports_no_textual_or_aws_sdk(module):
    foreign = sorted(i for i in imports_of(MODULES[module]) if i.split(".")[0] in FOREIGN_TO_DOMAIN)
    assert not foreign, f"{module} is domain code but imports {foreign}"


def test_no_import_circles():
    # Tarjan's strongly connected components over the module graph; any component of two or more
    # modules is a circle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for module in sorted(GRAPH):
        if module not in index:
            visit(module)
    assert not circles, f"import circles: {circles}"


def upward_imports(module: str, graph: dict[str, set[str]]) -> list[str]:
    own = top_package(module)
    return sorted(
        i for i in graph[module] if top_package(i) not in (own, "__init__") and LAYERS[top_package(i)] >= LAYERS[own]
    )


def test_the_check_sees_an_upward_and_a_sideways_import(tmp_path):
    # The checker itself must be able to fail: a keyspace module importing the UI, and a read module
    # importing the backend beside it, are both caught.
    fake = tmp_path / "probe.py"
    fake.write_text("from ...ui import app\nimport console.backend.kinesis\n")
    found = imports_of(fake, "console.keyspace.sub.probe")
    assert found >= {"console.ui", "console.ui.app", "console.backend.kinesis"}
    graph = {"console.keyspace.probe": found, "console.read.probe": {"console.backend.kinesis"}}
    assert upward_imports("console.keyspace.probe", graph) == [
        "console.backend.kinesis",
        "console.ui",
        "console.ui.app",
    ]
    assert upward_imports("console.read.probe", graph) == ["console.backend.kinesis"]


# ---- one implementation per change --------------------------------------------------------------

# The backend's calls that change a stream, its consumers, its channels, the account, a lease table or
# an event source mapping. Only the
# domain makes them (console.lifecycle.actions.run, console.reshard's executor): the command line and
# the console prepare and run a change through it, so a rule one face enforces holds in the other.
CHANGING_CALLS = frozenset(
    {
        "create_stream",
        "delete_stream",
        "increase_retention",
        "decrease_retention",
        "update_stream_mode",
        "start_encryption",
        "stop_encryption",
        "enable_enhanced_monitoring",
        "disable_enhanced_monitoring",
        "update_max_record_size",
        "update_warm_throughput",
        "update_record_distribution",
        "update_account_settings",
        "tag_resource",
        "untag_resource",
        "put_resource_policy",
        "delete_resource_policy",
        "create_channel",
        "update_channel",
        "delete_channel",
        "create_event_source_mapping",
        "set_event_source_mapping_enabled",
        "create_lease_table",
        "put_item_if_absent",
        "update_item_if",
        "put_table_items",
        "register_stream_consumer",
        "deregister_stream_consumer",
        "split_shard",
        "merge_shards",
        "update_shard_count",
    }
)
FACES = {"commands", "ui", "mcp_server", "cli"}
# Not an operator's change: the launcher builds the embedded server's demo stream (one split, so the
# lineage shows something) before the console opens, and `kconsole demo lease-table` writes example data into the embedded server's DynamoDB (never a remote one).
NOT_A_CHANGE = {("console.ui.launch", "prepare_demo_stream"), ("console.commands.demo", "_lease_table")}


def changing_calls(path: Path, name: str) -> list[str]:
    """Where a face module names one of CHANGING_CALLS on anything (called, or handed on as a callable):
    `module:line name`. A method forwarding the call of its own name (a wrapper that is itself a
    backend) is the backend's seam, not a change, and a command's
    parsed options (`args.enable_enhanced_monitoring` or `options.enable_enhanced_monitoring`, the
    flag) are no call."""
    tree = ast.parse(path.read_text(), str(path))
    found: list[str] = []

    def visit(node: ast.AST, function: str | None) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function = node.name
        if (
            isinstance(node, ast.Attribute)
            and node.attr in CHANGING_CALLS
            and node.attr != function
            and not (isinstance(node.value, ast.Name) and node.value.id in ("args", "options"))  # an option's value
            and (name, function) not in NOT_A_CHANGE
        ):
            found.append(f"{name}:{node.lineno} {node.attr}")
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(tree, None)
    return found


@pytest.mark.parametrize("module", sorted(m for m in MODULES if top_package(m) in FACES))
def test_no_face_makes_a_change_itself(module):
    made = changing_calls(MODULES[module], module)
    assert not made, f"{module} calls the backend's changing calls itself (console.lifecycle.actions runs them): {made}"


def test_the_check_sees_a_face_making_a_change(tmp_path):
    fake = tmp_path / "probe.py"
    fake.write_text(
        "async def delete(kinesis, stream):\n"
        "    await kinesis.delete_stream(stream)\n"
        "def later(kinesis):\n"
        "    return lambda: kinesis.tag_resource('arn', {})\n"
        "class Wrapper:\n"
        "    async def merge_shards(self, stream, a, b):\n"
        "        await self._source.merge_shards(stream, a, b)\n"
        "    async def enable(self, stream):\n"
        "        return self._source.enable_enhanced_monitoring\n"
        "def flag(args):\n"
        "    return args.enable_enhanced_monitoring\n"
    )
    assert changing_calls(fake, "console.ui.probe") == [
        "console.ui.probe:2 delete_stream",
        "console.ui.probe:4 tag_resource",
        "console.ui.probe:9 enable_enhanced_monitoring",
    ]


# ---- the UI's one seam to the backend -----------------------------------------------------------

PROTOCOL = "console.backend.protocol"
# The launcher puts the console together: it alone opens a backend (open_backend, from its config,
# with the stream to make on the embedded server, made once the server answers) and hands the app what the protocol describes.
# Every other UI module sees only the protocol.
OPENS_THE_BACKEND = {
    "console.ui.launch": {
        "console.backend",
        "console.backend.BackendConfig",
        "console.backend.LocalStream",
        "console.backend.make_local_streams",
        "console.backend.open_backend",
    }
}
UI_MODULES = sorted(m for m in MODULES if top_package(m) == "ui")


def backend_imports_beyond_the_protocol(module: str, found: set[str]) -> list[str]:
    allowed = OPENS_THE_BACKEND.get(module, set())
    return sorted(
        i
        for i in found
        if (i == "console.backend" or i.startswith("console.backend."))
        and i != PROTOCOL
        and not i.startswith(PROTOCOL + ".")
        and i not in allowed
    )


@pytest.mark.parametrize("module", UI_MODULES)
def test_ui_reaches_the_backend_only_through_the_protocol(module):
    path = MODULES[module]
    beyond = backend_imports_beyond_the_protocol(module, imports_of(path))
    assert not beyond, f"{module} imports the backend beyond {PROTOCOL}: {beyond}"
    # Named in no annotation, docstring or comment either: the UI knows the seam, not the class behind it.
    assert "KinesisBackend" not in path.read_text(), f"{module} names KinesisBackend; it should name ConsoleBackend"


def protocols_named(module: str) -> set[str]:
    """The protocols of the seam a UI module imports (ConsoleBackend, or a role)."""
    tree = ast.parse(MODULES[module].read_text())
    return {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == PROTOCOL
        for alias in node.names
        if alias.name == "ConsoleBackend" or alias.name.endswith(("Backend", "Reads", "Sources"))
    }


def test_the_ui_names_the_protocol():
    # The app takes the whole of it; every panel that runs work on the backend holds one, by its role.
    assert "ConsoleBackend" in protocols_named("console.ui.app")
    for panel in ("producer", "tail", "heat", "consumers", "readers"):
        assert protocols_named(f"console.ui.panels.{panel}"), f"the {panel} panel names no protocol of the seam"


def test_one_name_for_the_backend_in_the_ui():
    """The object the console reaches the backend through is `backend` everywhere in console/ui: an
    attribute, a parameter or a field of that type named otherwise (`source`, `kinesis`) is a breach."""
    breaches = []
    for module in UI_MODULES:
        for node in ast.walk(ast.parse(MODULES[module].read_text())):
            if isinstance(node, ast.Attribute) and node.attr in ("source", "kinesis"):
                breaches.append(f"{module}:{node.lineno} .{node.attr}")
            if isinstance(node, ast.arg) and node.arg in ("source", "kinesis"):
                breaches.append(f"{module}:{node.lineno} {node.arg}")
    assert not breaches, breaches


# AWS's wire shapes (DescribeStreamSummary's StreamDescriptionSummary, ListShards' Shards, ...) stay in
# the backend and the domain: the UI works on the project's models. A UI module indexes no AWS field
# (a subscript or a .get/.pop/.setdefault/`in` with a PascalCase string: "KeyId", "Shards") and calls no
# accessor that builds a model from a wire dict (from_api, from_listing, put_records_entry).
AWS_FIELD = re.compile(r"^[A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)*$")
WIRE_ACCESSORS = {"from_api", "from_listing", "put_records_entry"}


def wire_reads(path: Path, name: str) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    found: list[str] = []

    def field(node: ast.AST | None) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and AWS_FIELD.match(node.value):
            return node.value
        return None

    for node in ast.walk(tree):
        key = None
        if isinstance(node, ast.Subscript):
            key = field(node.slice)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("get", "pop", "setdefault")
            and node.args
        ):
            key = field(node.args[0])
        elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
            key = field(node.left)
        if key is not None:
            found.append(f"{name}:{node.lineno} {key!r}")
        accessor = (
            node.attr
            if isinstance(node, ast.Attribute)
            else node.id
            if isinstance(node, ast.Name)
            else node.name
            if isinstance(node, ast.alias)
            else None
        )
        if accessor in WIRE_ACCESSORS:
            found.append(f"{name}:{getattr(node, 'lineno', 0)} {accessor}")
    return sorted(found, key=lambda where: int(where.split(":")[1].split()[0]))


@pytest.mark.parametrize("module", UI_MODULES)
def test_the_ui_reads_no_aws_wire_shapes(module):
    found = wire_reads(MODULES[module], module)
    assert not found, f"{module} reads AWS's wire shapes; ask the backend for a model: {found}"


def test_the_wire_check_sees_each_kind_of_read(tmp_path):
    fake = tmp_path / "probe.py"
    fake.write_text(
        "from console.topology.model import Shard, put_records_entry\n"
        "async def key(backend, stream):\n"
        "    details = await backend.describe_stream_details(stream)\n"
        "    shards = [Shard.from_api(raw) for raw in details.get('Shards', [])]\n"
        "    if 'KeyId' in details:\n"
        "        return details['KeyId'], shards\n"
        "    return {'id': 1}['id'], Text('x', style='bold')\n"
    )
    assert wire_reads(fake, "console.ui.probe") == [
        "console.ui.probe:1 put_records_entry",
        "console.ui.probe:4 from_api",
        "console.ui.probe:4 'Shards'",
        "console.ui.probe:5 'KeyId'",
        "console.ui.probe:6 'KeyId'",
    ]


def test_the_seam_check_sees_a_ui_module_reaching_past_the_protocol(tmp_path):
    fake = tmp_path / "probe.py"
    fake.write_text(
        "from console.backend.protocol import ConsoleBackend\nfrom ...backend import kinesis\n"
        "from console.backend import open_backend\n"
    )
    found = imports_of(fake, "console.ui.panels.probe")
    assert backend_imports_beyond_the_protocol("console.ui.panels.probe", found) == [
        "console.backend",
        "console.backend.kinesis",
        "console.backend.open_backend",
    ]
    assert backend_imports_beyond_the_protocol("console.ui.launch", found) == ["console.backend.kinesis"]


def attributes_set_in_init(cls: type) -> set[str]:
    """The names `__init__` of the class (or of a base) assigns on self."""
    import inspect
    import textwrap

    names: set[str] = set()
    for klass in cls.__mro__[:-1]:
        init = vars(klass).get("__init__")
        if init is None:
            continue
        for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(init)))):
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    if (
                        isinstance(target, ast.Attribute)
                        and isinstance(target.value, ast.Name)
                        and target.value.id == "self"
                    ):
                        names.add(target.attr)
    return names


def protocol_methods() -> dict[str, object]:
    import inspect

    from console.backend.protocol import ConsoleBackend

    return {
        name: member
        for name, member in inspect.getmembers(ConsoleBackend)
        if not name.startswith("_") and (inspect.isfunction(member) or isinstance(member, property))
    }


def protocol_breaches(cls: type) -> list[str]:
    """How `cls` falls short of ConsoleBackend: a call missing or taking other parameters (names,
    kinds and defaults), async where the protocol is not or the other way round, or a __getattr__
    standing in for calls it does not name."""
    import inspect

    breaches = ["__getattr__"] if "__getattr__" in vars(cls) else []
    assigned = attributes_set_in_init(cls)
    if not hasattr(cls, "capabilities") and "capabilities" not in assigned:
        breaches.append("capabilities")
    for name, member in protocol_methods().items():
        found = inspect.getattr_static(cls, name, None)
        if isinstance(member, property):  # read-only: a property or a plain attribute serves
            if found is None and name not in assigned:
                breaches.append(name)
            continue
        if found is None:
            breaches.append(name)
            continue
        wanted = [(p.name, p.kind, p.default) for p in inspect.signature(member).parameters.values()]
        given = [(p.name, p.kind, p.default) for p in inspect.signature(found).parameters.values()]
        if given != wanted or inspect.iscoroutinefunction(found) != inspect.iscoroutinefunction(member):
            breaches.append(f"{name}{inspect.signature(found)}")
    return breaches


def test_the_backend_implements_the_protocol():
    """Every call the protocol lists exists on the backend, taking the same parameters."""
    from console.backend.kinesis import KinesisBackend

    assert protocol_breaches(KinesisBackend) == []


def test_the_protocol_check_sees_a_backend_that_falls_short():
    from console.backend.kinesis import KinesisBackend

    class Forwarding(KinesisBackend):
        def __getattr__(self, name):
            return getattr(self._client, name)

        async def get_records(self, shard_iterator, limit=100):  # another default  # noqa: ARG002 - the protocol's signature, with another default
            return {}

        scan_pages = None  # not a call at all

    breaches = protocol_breaches(Forwarding)
    assert breaches[0] == "__getattr__" and "scan_pages" in breaches
    assert [b for b in breaches if b.startswith("get_records")] == ["get_records(self, shard_iterator, limit=100)"]


# ---- EFO consumers cross the seam as a model ------------------------------------------------------

# ListStreamConsumers, DescribeStreamConsumer and RegisterStreamConsumer answer with the project's
# EfoConsumer (console.topology.model): outside the backend and the server only its `from_api` reads
# their fields, and the domain's change plans read back the request parameters they wrote themselves.
CONSUMER_WIRE_KEYS = {
    "Consumers",
    "Consumer",
    "ConsumerDescription",
    "ConsumerName",
    "ConsumerARN",
    "ConsumerStatus",
    "ConsumerCreationTimestamp",
}
READS_CONSUMER_WIRE_KEYS = {"console.topology.model", "console.lifecycle.actions"}


def consumer_wire_reads(path: Path, name: str) -> list[str]:
    return [where for where in wire_reads(path, name) if where.split(" ", 1)[1].strip("'") in CONSUMER_WIRE_KEYS]


@pytest.mark.parametrize(
    "module",
    sorted(
        m for m in MODULES if top_package(m) not in ("backend", "localserver") and m not in READS_CONSUMER_WIRE_KEYS
    ),
)
def test_efo_consumers_are_read_as_the_model(module):
    found = consumer_wire_reads(MODULES[module], module)
    assert not found, f"{module} reads the EFO consumer calls' wire fields; use EfoConsumer's: {found}"


def test_the_consumer_check_sees_a_wire_read(tmp_path):
    fake = tmp_path / "probe.py"
    fake.write_text(
        "async def arn(backend, stream_arn):\n"
        "    [first] = await backend.list_stream_consumers(stream_arn)\n"
        "    return first['ConsumerARN'], first.get('ConsumerStatus'), first['StreamARN']\n"
    )
    assert consumer_wire_reads(fake, "console.commands.probe") == [
        "console.commands.probe:3 'ConsumerARN'",
        "console.commands.probe:3 'ConsumerStatus'",
    ]


# ---- one way to open a backend --------------------------------------------------------------------

# open_backend (console.backend.clients, which alone builds the KinesisBackend) starts the embedded
# server on --local and makes the streams asked for there. The commands open it through
# console.commands._backend.with_backend; the console's launch, `kconsole local serve` and the MCP
# server (which serve the embedded server to others) call it themselves. No one else opens a backend.
OPENS_A_BACKEND = {
    "console.backend.clients",
    "console.commands._backend",
    "console.ui.launch",
    "console.commands.local",
    "console.mcp_server.server",
}


def backend_openings(path: Path, name: str) -> list[str]:
    """Where a module names open_backend, or calls KinesisBackend(...) itself."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        named = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if named == "open_backend" or (
            isinstance(node, ast.Call)
            and (getattr(node.func, "id", None) or getattr(node.func, "attr", None)) == "KinesisBackend"
        ):
            found.append(f"{name}:{node.lineno} {named or 'KinesisBackend(...)'}")
    return sorted(found, key=lambda where: int(where.split(":")[1].split()[0]))


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m not in OPENS_A_BACKEND))
def test_one_way_to_open_a_backend(module):
    found = backend_openings(MODULES[module], module)
    assert not found, f"{module} opens a backend itself; use with_backend (console.commands._backend): {found}"


def test_the_opening_check_sees_a_backend_opened_by_hand(tmp_path):
    fake = tmp_path / "probe.py"
    fake.write_text(
        "from console.backend import BackendConfig, open_backend\n"
        "from console.backend.kinesis import KinesisBackend\n"
        "async def run(args, client):\n"
        "    async with open_backend(BackendConfig.from_args(args)) as kinesis:\n"
        "        return KinesisBackend(kinesis.config, client)\n"
    )
    assert backend_openings(fake, "console.commands.probe") == [
        "console.commands.probe:4 open_backend",
        "console.commands.probe:5 KinesisBackend(...)",
    ]


# ---- the commands name the backend by its roles ------------------------------------------------

# A command's function taking the backend (`kinesis` or `backend`) names the role protocols of
# console.backend.protocol it uses, as the console's panels do: not Any, not the concrete class.
BACKEND_PARAMETERS = {"kinesis", "backend"}
UNTYPED_BACKEND_ALLOWED: set[str] = set()


def untyped_backend_parameters(path: Path, name: str) -> list[str]:
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for arg in node.args.posonlyargs + node.args.args + node.args.kwonlyargs:
            if arg.arg not in BACKEND_PARAMETERS:
                continue
            annotation = ast.unparse(arg.annotation) if arg.annotation is not None else "none"
            if annotation in ("none", "Any", "KinesisBackend", "'KinesisBackend'"):
                found.append(f"{name}:{node.lineno} {node.name}({arg.arg}: {annotation})")
    return found


@pytest.mark.parametrize(
    "module",
    sorted(m for m in MODULES if top_package(m) == "commands" and m not in UNTYPED_BACKEND_ALLOWED),
)
def test_commands_name_the_backend_by_its_roles(module):
    found = untyped_backend_parameters(MODULES[module], module)
    assert not found, f"{module} takes the backend untyped; name its role (console.backend.protocol): {found}"


def test_the_role_check_sees_an_untyped_backend(tmp_path):
    fake = tmp_path / "probe.py"
    fake.write_text(
        "async def a(kinesis: Any, stream: str): ...\n"
        "async def b(backend: KinesisBackend): ...\n"
        "async def c(kinesis): ...\n"
        "async def d(kinesis: StreamReads, source: Any): ...\n"
    )
    assert sorted(untyped_backend_parameters(fake, "console.commands.probe")) == [
        "console.commands.probe:1 a(kinesis: Any)",
        "console.commands.probe:2 b(backend: KinesisBackend)",
        "console.commands.probe:3 c(kinesis: none)",
    ]


# ---- the embedded server: its own package, one door to it -------------------------------------

LOCAL_SERVER = "console.localserver"
# The client starts the embedded server through this module alone (a child for --local, in-process
# for `kconsole local serve`); the rest of the client never learns moto, Flask or waitress exist.
LAUNCHER = "console.backend.launcher"


def local_server_importers(graph: dict[str, set[str]]) -> list[str]:
    """Modules outside the server's package, other than the launcher, that import from it."""
    return sorted(
        module
        for module, imported in graph.items()
        if not (module == LOCAL_SERVER or module.startswith(LOCAL_SERVER + "."))
        and module != LAUNCHER
        and any(i == LOCAL_SERVER or i.startswith(LOCAL_SERVER + ".") for i in imported)
    )


def test_only_the_launcher_imports_the_embedded_server():
    assert local_server_importers(GRAPH) == []
    assert any(i.startswith(LOCAL_SERVER + ".") for i in GRAPH[LAUNCHER]), "the launcher no longer starts it"


def test_the_embedded_server_imports_nothing_of_the_client():
    client = {"backend", "commands", "ui", "cli", "read", "produce", "heat", "reshard", "lifecycle", "consumers"}
    reaching = sorted(
        f"{module} -> {i}"
        for module in MODULES
        if top_package(module) == "localserver"
        for i in GRAPH[module]
        if top_package(i) in client
    )
    assert not reaching, reaching


def test_the_launcher_check_sees_another_module_reaching_the_server(tmp_path):
    fake = tmp_path / "probe.py"
    fake.write_text("from console.localserver.supervision import LocalKinesisServer\n")
    found = imports_of(fake, "console.commands.probe")
    graph = {
        "console.commands.probe": found,
        LAUNCHER: {"console.localserver.main"},
        "console.localserver.main": {"console.localserver.short_path"},
        "console.backend.kinesis": {"console.backend.launcher"},
    }
    assert local_server_importers(graph) == ["console.commands.probe"]


# ---- patches of a library's internals: console.patches, and the embedded server's moto modules --


def patching_modules() -> set[str]:
    from console.localserver.moto_compat import MOTO_MODULES

    return {"console.patches", *MOTO_MODULES}


# Textual's own event handlers (`_on_click`, `_on_focus`...) that widgets override and call through
# super(): the one kind of library internal overridden outside console.patches, each named here (and
# its shape checked in tests/test_patches.py), so a new one is a decision, not an accident.
TEXTUAL_HANDLER_OVERRIDES = {
    "console.ui.panels.lineage.LineageTree._on_click",
    "console.ui.widgets.cursor.CursorNavigation._on_focus",
    "console.ui.widgets.cursor.CursorNavigation._on_blur",
    "console.ui.widgets.ribbon.KeySpaceRibbon._on_click",
    "console.ui.widgets.shard_table.ShardTable._on_click",
}
# Private by name, public by documentation.
DOCUMENTED_PRIVATE_CALLS = {"os._exit"}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def own_private_names(paths: list[Path]) -> set[str]:
    """The private attribute names kconsole's own classes define (methods, class members, self._x):
    a private name outside this set belongs to a library."""
    names: set[str] = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        names.add(item.name)
                    elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                        names.add(item.target.id)
                    elif isinstance(item, ast.Assign):
                        names.update(t.id for t in item.targets if isinstance(t, ast.Name))
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    if (
                        isinstance(target, ast.Attribute)
                        and isinstance(target.value, ast.Name)
                        and target.value.id in ("self", "cls")
                    ):
                        names.add(target.attr)
    return {name for name in names if _private(name)}


def foreign_names(tree: ast.AST) -> dict[str, str]:
    """Names the module binds to a library (anything but console), by import or by assignment from
    one (`base = ssl.SSLContext`), with where each comes from ("ssl.SSLContext")."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] != "console":
                    names[alias.asname or alias.name.split(".")[0]] = (
                        alias.name if alias.asname else alias.name.split(".")[0]
                    )
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] != "console":
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    grown = True
    while grown:
        grown = False
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                origin = foreign_origin(node.value, names)
                if origin and node.targets[0].id not in names:
                    names[node.targets[0].id] = origin
                    grown = True
    return names


def foreign_origin(expr: ast.AST, names: dict[str, str]) -> str | None:
    """ "ssl.SSLContext.x" for `base.x` when base is bound to ssl.SSLContext; None for anything of ours."""
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if isinstance(expr, ast.Name) and expr.id in names:
        return ".".join([names[expr.id], *reversed(parts)])
    return None


def resolve(origin: str) -> object | None:
    """The object a dotted origin names (importing its module), or None where it cannot be found."""
    import importlib

    parts = origin.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            found = getattr(found, part, None)
            if found is None:
                return None
        return found
    return None


def library_patches(module: str, source: str, own: set[str]) -> list[str]:
    """Where `source` patches a library's internals: sets or deletes an attribute of a library's module
    or class (also through setattr), sets a private attribute that no class of ours defines,
    subclasses a library's private class, overrides a private method of a library's class, or calls a
    library's private method."""
    tree = ast.parse(source)
    names = foreign_names(tree)
    found: list[str] = []

    def note(node: ast.AST, what: str) -> None:
        found.append(f"{module}:{getattr(node, 'lineno', 0)} {what}")

    def ours(expr: ast.AST) -> bool:
        return isinstance(expr, ast.Name) and expr.id in ("self", "cls")

    for node in ast.walk(tree):
        targets: list[ast.AST] = []
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("setattr", "delattr")
            and node.args
        ):
            origin = foreign_origin(node.args[0], names)
            if origin:
                note(node, f"{node.func.id}({origin}, ...)")
        for target in targets:
            if not isinstance(target, ast.Attribute):
                continue
            origin = foreign_origin(target, names)
            if origin:
                note(node, f"sets {origin}")
            elif _private(target.attr) and not ours(target.value) and target.attr not in own:
                note(node, f"sets {ast.unparse(target)}, a library's private attribute")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _private(node.func.attr):
            receiver = node.func.value
            is_super = isinstance(receiver, ast.Call) and getattr(receiver.func, "id", None) == "super"
            origin = foreign_origin(node.func, names)
            if origin in DOCUMENTED_PRIVATE_CALLS or ours(receiver) or is_super:
                continue
            if origin or node.func.attr not in own:
                note(node, f"calls {origin or ast.unparse(node.func)}, a library's private method")
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                origin = foreign_origin(base, names)
                if origin is None:
                    continue
                if any(_private(part) for part in origin.split(".")):
                    note(node, f"class {node.name} subclasses {origin}")
                library_class = resolve(origin)
                for item in node.body:
                    if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) or not _private(item.name):
                        continue
                    if (
                        library_class is not None
                        and hasattr(library_class, item.name)
                        and f"{module}.{node.name}.{item.name}" not in TEXTUAL_HANDLER_OVERRIDES
                    ):
                        note(item, f"{node.name}.{item.name} overrides {origin}.{item.name}")
    return found


OWN_PRIVATE = own_private_names(sorted(MODULES.values()))


@pytest.mark.parametrize("module", sorted(set(MODULES) - patching_modules()))
def test_only_console_patches_patches_a_library(module):
    patched = library_patches(module, MODULES[module].read_text(), OWN_PRIVATE)
    assert not patched, f"a library's internals patched outside console.patches: {patched}"


def test_the_patch_check_sees_each_kind_of_patch():
    source = """
import argparse
import ssl
from aiobotocore.parsers import AioJSONParser
import aiohttp.connector as connector

class Lazy(argparse._SubParsersAction):
    pass

class Parser(AioJSONParser):
    def _handle_json_body(self, raw_body, shape):
        return self._parse_shape(shape, raw_body)

def patch(client, session):
    base = ssl.SSLContext
    base.set_default_verify_paths = print
    connector.TCPConnector._get_ssl_context = print
    setattr(argparse, "ArgumentParser", object)
    client._serializer = None
    session._register_internal_component("endpoint_resolver", None)
    self_made = Lazy
    self_made.common = []
"""
    found = sorted(line.split(" ", 1)[1] for line in library_patches("console.probe", source, set()))
    assert found == sorted(
        [
            "class Lazy subclasses argparse._SubParsersAction",
            "Parser._handle_json_body overrides aiobotocore.parsers.AioJSONParser._handle_json_body",
            "sets ssl.SSLContext.set_default_verify_paths",
            "sets aiohttp.connector.TCPConnector._get_ssl_context",
            "setattr(argparse, ...)",
            "sets client._serializer, a library's private attribute",
            "calls session._register_internal_component, a library's private method",
        ]
    ), found


def test_the_patch_check_leaves_our_own_attributes_alone(tmp_path):
    source = """
import os

class Tree:
    def _build(self):
        self._root = None

def grow(tree):
    tree._build()
    tree._root = 1
    os._exit(0)
"""
    path = tmp_path / "probe.py"
    path.write_text(source)
    own = own_private_names([path])
    assert own == {"_build", "_root"}
    assert library_patches("console.probe", source, own) == []
    # The same calls on names no class of ours defines are a library's.
    assert len(library_patches("console.probe", source.replace("_root", "_leaf"), own)) == 1


# ---- a module one reads whole ---------------------------------------------------------------------

# Past this a module holds more than one idea: split it along its seam rather than raise the bound.
MAX_MODULE_LINES = 620


def test_no_module_in_console_is_over_the_bound():
    long = {
        name: lines
        for name, path in MODULES.items()
        if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"
