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
    "errors": 0, "userdirs": 0, "__init__": 0,
    "keyspace": 1, "bounds": 1, "config": 1,
    "topology": 2,
    "read": 3, "backend": 3,
    "produce": 4, "heat": 4, "reshard": 4, "lifecycle": 4, "consumers": 4,
    "commands": 5, "ui": 5,
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
    return sorted(i for i in graph[module]
                  if top_package(i) not in (own, "__init__") and LAYERS[top_package(i)] >= LAYERS[own])


def test_the_check_sees_an_upward_and_a_sideways_import(tmp_path):
    # The checker itself must be able to fail: a keyspace module importing the UI, and a read module
    # importing the backend beside it, are both caught.
    fake = tmp_path / "probe.py"
    fake.write_text("from ...ui import app\nimport console.backend.kinesis\n")
    found = imports_of(fake, "console.keyspace.sub.probe")
    assert found >= {"console.ui", "console.ui.app", "console.backend.kinesis"}
    graph = {"console.keyspace.probe": found, "console.read.probe": {"console.backend.kinesis"}}
    assert upward_imports("console.keyspace.probe", graph) == ["console.backend.kinesis", "console.ui", "console.ui.app"]
    assert upward_imports("console.read.probe", graph) == ["console.backend.kinesis"]
