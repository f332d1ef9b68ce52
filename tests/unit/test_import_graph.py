"""The import graph against the layer order docs/architecture.md documents ("## Layers"): every
module of plugins/ and dags/ placed in exactly one layer, every import of ours (inside functions
and under TYPE_CHECKING included) going to the module's own layer or one below, and no import
cycle."""

from __future__ import annotations

import ast
import fnmatch
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "plugins" / "mysqlbench"
KNOWN_CYCLES: list[set[str]] = []  # the targets/ cycle went with the control protocol (issue 25, item 2)


def modules() -> dict[str, Path]:
    """Dotted name -> file, for the library, the UI plugin and the DAG files."""
    found = {}
    for path in [*PACKAGE.rglob("*.py"), REPO / "plugins" / "mysqlbench_ui.py", *(REPO / "dags").glob("*.py")]:
        parts = path.relative_to(REPO / "plugins" if path.is_relative_to(REPO / "plugins") else REPO).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of ours that ``name`` imports anywhere in its file (a name imported from a
    package counts as the package unless it is a module of it)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            wanted = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
            wanted = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        for target in wanted:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports_of(name, path, known) for name, path in known.items()}


def layers() -> list[tuple[str, list[str]]]:
    """(layer name, path globs) bottom to top, as docs/architecture.md lists them."""
    text = (REPO / "docs" / "architecture.md").read_text()
    section = text.split("## Layers\n", 1)[1].split("\n## ", 1)[0]
    found = [(m.group(1), re.findall(r"`([^`]+)`", m.group(2)))
             for m in re.finditer(r"^\d+\. \*\*([^*]+)\*\*(.*)$", section, re.M)]
    assert len(found) >= 5, section
    return found


def layer_of(known: dict[str, Path]) -> dict[str, int]:
    placed: dict[str, list[int]] = {}
    for index, (_, globs) in enumerate(layers()):
        for pattern in globs:
            full = pattern if pattern.startswith(("dags/", "plugins/")) else f"plugins/mysqlbench/{pattern}"
            for name, path in known.items():
                if fnmatch.fnmatch(path.relative_to(REPO).as_posix(), full):
                    placed.setdefault(name, []).append(index)
    unplaced = sorted(set(known) - set(placed))
    twice = {name: where for name, where in placed.items() if len(set(where)) > 1}
    assert not unplaced, f"modules in no layer of docs/architecture.md's '## Layers': {unplaced}"
    assert not twice, f"modules in more than one layer: {twice}"
    return {name: where[0] for name, where in placed.items()}


def cycles(edges: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(component)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_the_graph_is_read_whole():
    """The reader sees what it must: function-level, TYPE_CHECKING and relative imports, a
    package's module imported by name, and the DAG files."""
    edges = graph()
    assert "mysqlbench.flavor" in edges["mysqlbench.workloads.base"]  # under TYPE_CHECKING
    assert "mysqlbench.targets.lock" in edges["mysqlbench.workloads.lifecycle"]  # inside a function
    assert "mysqlbench.knobs" in edges["mysqlbench.workloads.slap.workload"]  # `from mysqlbench import x`
    assert "mysqlbench.studies.factory" in edges["dags.studies"]
    assert len(edges) > 80


def test_every_import_goes_to_its_own_layer_or_below():
    known = modules()
    layer = layer_of(known)
    names = [name for name, _ in layers()]
    against = sorted(f"{a} ({names[layer[a]]}) imports {b} ({names[layer[b]]})"
                     for a, targets in graph().items() for b in targets if layer[b] > layer[a])
    assert not against, "imports against docs/architecture.md's layer order:\n" + "\n".join(against)


def test_no_import_cycle():
    found = sorted(cycles(graph()), key=sorted)
    assert found == KNOWN_CYCLES, found
