"""No import circles in the five packages, at module level or inside functions.

Every ``import`` statement counts wherever it stands (a function body, a ``try``), except inside
an ``if TYPE_CHECKING:`` block, which never runs. An import names the module it loads: for
``from a.b import c`` that is ``a.b.c`` when ``c`` is a module, otherwise ``a.b``. Loading
``a.b.c`` also runs the ``__init__`` of ``a`` and ``a.b``, so those count too, except the
importing module's own enclosing packages (already initialised by the time it runs).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("agent_contracts", "agent_core", "agent_executor", "agent_coordinator", "agentshape")


def _module_names() -> dict[str, Path]:
    names = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            names[".".join(parts)] = path
    return names


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import under ``node``, leaving out the body of ``if TYPE_CHECKING:``."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child
        elif isinstance(child, ast.If) and _is_type_checking(child.test):
            for other in child.orelse:
                yield from _import_nodes_in(other)
        else:
            yield from _import_nodes(child)


def _import_nodes_in(node: ast.stmt) -> Iterator[ast.Import | ast.ImportFrom]:
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node
    else:
        yield from _import_nodes(node)


def _base(module: str, path: Path, node: ast.ImportFrom) -> str:
    """The absolute module an ``ImportFrom`` reads from, relative imports resolved."""
    if node.level == 0:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    package = package[: len(package) - (node.level - 1)]
    return ".".join(package + ([node.module] if node.module else []))


def _edges(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    targets: set[str] = set()
    for node in _import_nodes(tree):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        else:
            base = _base(module, path, node)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                targets.add(submodule if submodule in known else base)
    loaded = {".".join(t.split(".")[:i]) for t in targets for i in range(1, t.count(".") + 2)}
    enclosing = {".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 1)}
    return {target for target in loaded - enclosing if target in known and target != module}


def _graph() -> dict[str, set[str]]:
    known = _module_names()
    return {module: _edges(module, path, known) for module, path in known.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (as a path back to its start) per strongly connected component with two or more."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(start: str) -> None:
        # Iterative Tarjan: the import graph is deep enough to make recursion a risk.
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(component)

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return [_path_through(graph, component) for component in components]


def _path_through(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A shortest cycle from the component's first module back to itself."""
    start = min(component)
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & component):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"no cycle through {start}")  # pragma: no cover - Tarjan guarantees one


def test_the_packages_have_no_import_cycles() -> None:
    cycles = [" -> ".join(cycle) for cycle in _cycles(_graph())]
    assert cycles == []


def test_the_walk_sees_imports_inside_functions_but_not_type_checking_blocks() -> None:
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import hidden\n"
        "def f():\n    import inside\n    from pkg import name\n"
    )
    assert [
        node.names[0].name if isinstance(node, ast.Import) else node.module
        for node in _import_nodes(tree)
    ] == ["typing", "inside", "pkg"]


def test_loading_a_module_counts_its_packages_but_not_the_importers_own(tmp_path: Path) -> None:
    source = tmp_path / "lifespan.py"
    source.write_text("from pkg.api.deps import Services\nfrom pkg.service import other\n")
    known = dict.fromkeys(
        ["pkg", "pkg.api", "pkg.api.deps", "pkg.service", "pkg.service.other"], source
    )
    edges = _edges("pkg.service.lifespan", source, known)
    assert edges == {"pkg.api", "pkg.api.deps", "pkg.service.other"}


def test_a_cycle_is_named_as_a_path_back_to_its_start() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c", "a"]]
