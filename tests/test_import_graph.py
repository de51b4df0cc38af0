"""The package's import graph: no circles, and every import points down the layer order.

The graph is read from the source with :mod:`ast` (imports inside functions count; those under
``if TYPE_CHECKING:`` do not, since they never run), so a lazy import cannot hide a knot.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "redqueen"

#: Subpackages (and top-level modules) from the bottom up, as in DESIGN.md:
#: ``experiments -> environments -> (engine, verifiers, fitness, evo) -> genomes``; the settings
#: objects sit below them all (plain data every layer takes, importing no other layer).
#: A module may import its own subpackage and anything in a lower layer; subpackages in one
#: layer do not import each other (``evo`` never imports ``engine``).
LAYERS: list[set[str]] = [
    {"_params"},
    {"_registry", "assets"},
    {"settings"},
    {"genomes"},
    {"verifiers", "fitness"},
    {"engine", "evo", "tinycoder"},
    {"environments"},
    {"experiments"},
]


def _module_name(path: Path, package: Path) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, name: str, known: set[str]) -> set[str]:
    """Modules of the package that ``name`` (at ``path``) imports when it runs."""
    tree = ast.parse(path.read_text())
    skip = {
        id(node)
        for branch in ast.walk(tree)
        if isinstance(branch, ast.If) and "TYPE_CHECKING" in ast.unparse(branch.test)
        for node in ast.walk(branch)
    }
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {m for m in found if m in known and m != name and not name.startswith(m + ".")}


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module name -> the package's modules it imports."""
    paths = {_module_name(p, package): p for p in package.rglob("*.py")}
    known = set(paths)
    return {name: _imports(path, name, known) for name, path in paths.items()}


def _unit(module: str) -> str:
    """The subpackage (or top-level module) a module belongs to; ``""`` for the root."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _layer(unit: str) -> int:
    for index, units in enumerate(LAYERS):
        if unit in units:
            return index
    raise AssertionError(f"redqueen.{unit} has no place in LAYERS; add it where it belongs")


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Imports from a module to a subpackage in the same or a higher layer."""
    bad = []
    for module, targets in sorted(graph.items()):
        source = _unit(module)
        if not source:
            continue
        for target in sorted(targets):
            dest = _unit(target)
            if dest and dest != source and _layer(dest) >= _layer(source):
                bad.append(f"{module} -> {target}")
    return bad


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph()


def test_graph_sees_the_package(graph: dict[str, set[str]]) -> None:
    assert "redqueen.engine.distributed._learner" in graph
    assert "redqueen.engine._learner" in graph["redqueen.engine.distributed._learner"]
    assert {_unit(m) for m in graph} - {""} <= set().union(*LAYERS)


def test_no_import_circles(graph: dict[str, set[str]]) -> None:
    assert circles(graph) == []


def test_no_circles_between_subpackages(graph: dict[str, set[str]]) -> None:
    units: dict[str, set[str]] = {}
    for module, targets in graph.items():
        units.setdefault(_unit(module), set()).update(_unit(t) for t in targets)
    for unit, targets in units.items():
        targets.discard(unit)
    assert circles(units) == []


def test_imports_point_down_the_layers(graph: dict[str, set[str]]) -> None:
    assert upward_imports(graph) == []


def test_checks_catch_a_knot(tmp_path: Path) -> None:
    package = tmp_path / "redqueen"
    for unit in ("genomes", "engine"):
        (package / unit).mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "genomes" / "__init__.py").write_text("from redqueen.engine import run\n")
    (package / "engine" / "__init__.py").write_text(
        "def run():\n    from redqueen.genomes import LoRAGenome\n"
    )
    graph = import_graph(package)
    assert circles(graph) == [["redqueen.engine", "redqueen.genomes"]]
    assert upward_imports(graph) == ["redqueen.genomes -> redqueen.engine"]
