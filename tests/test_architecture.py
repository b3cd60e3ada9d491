"""The house's layers, checked on the source: a package imports only packages below it, the domain
packages import nothing from Textual or aiobotocore, and no module imports itself back in a circle.

Imports are read with `ast` (every `import`/`from ... import`, including ones inside functions and
under TYPE_CHECKING), so a lazy import cannot hide a dependency that points the wrong way."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CONSOLE = Path(__file__).resolve().parents[1] / "console"

# Layers from the ground up. errors and userdirs (where kconsole's files live) are the shared base
# every layer may use, and config (the settings file, found through userdirs) stands on them beside
# keyspace and bounds (the limits on every number a user gives); read and
# backend stand side by side (neither imports the other), as do produce, heat and reshard.
LAYERS: dict[str, int] = {
    "errors": 0,
    "userdirs": 0,
    "words": 0,
    "__init__": 0,
    "keyspace": 1,
    "bounds": 1,
    "config": 1,
    "topology": 2,
    "read": 3,
    "backend": 3,
    "produce": 4,
    "heat": 4,
    "reshard": 4,
    "lifecycle": 4,
    "consumers": 4,
    "commands": 5,
    "ui": 5,
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

# The backend's calls that change a stream, its consumers, its channels or the account. Only the
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
        "update_max_record_size",
        "update_warm_throughput",
        "update_record_distribution",
        "update_account_settings",
        "tag_resource",
        "untag_resource",
        "put_resource_policy",
        "delete_resource_policy",
        "create_channel",
        "delete_channel",
        "register_stream_consumer",
        "deregister_stream_consumer",
        "split_shard",
        "merge_shards",
        "update_shard_count",
    }
)
FACES = {"commands", "ui", "cli"}
# Not an operator's change: the launcher builds the embedded server's demo stream (one split, so the
# lineage shows something) before the console opens.
NOT_A_CHANGE = {("console.ui.launch", "prepare_demo_stream")}


def changing_calls(path: Path, name: str) -> list[str]:
    """Where a face module names one of CHANGING_CALLS on anything (called, or handed on as a callable):
    `module:line name`. A method forwarding the call of its own name (a wrapper that is itself a
    backend, console.ui.launch.PrefetchingSource) is the backend's seam, not a change, and a command's
    parsed options (`args.enable_enhanced_monitoring`, the flag) are no call."""
    tree = ast.parse(path.read_text(), str(path))
    found: list[str] = []

    def visit(node: ast.AST, function: str | None) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function = node.name
        if (
            isinstance(node, ast.Attribute)
            and node.attr in CHANGING_CALLS
            and node.attr != function
            and not (isinstance(node.value, ast.Name) and node.value.id == "args")  # an option's value
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
# The launcher puts the console together: it alone opens a backend (open_backend, from its config)
# and hands the app what the protocol describes. Every other UI module sees only the protocol.
OPENS_THE_BACKEND = {
    "console.ui.launch": {"console.backend", "console.backend.BackendConfig", "console.backend.open_backend"}
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


def test_the_ui_names_the_protocol():
    naming = [m for m in UI_MODULES if "ConsoleBackend" in MODULES[m].read_text()]
    # The app takes it, and every panel that runs work on the backend holds one.
    assert {
        "console.ui.app",
        "console.ui.launch",
        "console.ui.panels.producer",
        "console.ui.panels.tail",
        "console.ui.panels.heat",
        "console.ui.panels.consumers",
    } <= set(naming)


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


@pytest.mark.parametrize(
    "implementation", ["console.backend.kinesis:KinesisBackend", "console.ui.launch:PrefetchingSource"]
)
def test_the_backend_and_the_prefetching_wrapper_implement_the_protocol(implementation):
    """Every call the protocol lists exists on both, taking the same parameters, and the wrapper
    forwards each one by name (no __getattr__ catching the rest)."""
    import importlib

    module_name, class_name = implementation.split(":")
    assert protocol_breaches(getattr(importlib.import_module(module_name), class_name)) == []


def test_the_protocol_check_sees_a_wrapper_that_falls_short():
    from console.ui.launch import PrefetchingSource

    class Forwarding(PrefetchingSource):
        def __getattr__(self, name):
            return getattr(self._source, name)

        async def get_records(self, shard_iterator, limit=100):  # another default
            return {}

        scan_pages = None  # not a call at all

    breaches = protocol_breaches(Forwarding)
    assert breaches[0] == "__getattr__" and "scan_pages" in breaches
    assert [b for b in breaches if b.startswith("get_records")] == ["get_records(self, shard_iterator, limit=100)"]
