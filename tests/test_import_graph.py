"""No import circle among the modules of backend/, parsers/ and bench/: a static graph of their imports (ast), every
import statement of a module, those inside functions too (bench/binary.py and bench/run.py once imported each other
from inside functions: each worked only because the other was already loaded)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("backend", "parsers", "bench")


def _modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The module of ours that `name` (a module, or a name in one) is in."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _type_checking(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


def imports(module: str, path: Path, modules: dict[str, Path], type_checking: bool = False) -> set[str]:
    """The modules of ours that `module` imports, anywhere in it (under `if TYPE_CHECKING:` only with
    `type_checking`)."""
    out: set[str] = set()
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    todo: list[ast.AST] = [ast.parse(path.read_text(), str(path))]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import):
            out.update(_resolve(a.name, modules) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
            out.update(_resolve(f"{base}.{a.name}", modules) for a in node.names)
        if type_checking or not _type_checking(node):
            todo.extend(ast.iter_child_nodes(node))
    out.discard(None)
    out.discard(module)
    return out


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, edges = work[-1]
            for w in edges:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_no_import_circle():
    modules = _modules()
    assert {"backend.app", "parsers.detect", "bench.run", "bench.binary"} <= modules.keys()
    graph = {m: imports(m, p, modules) for m, p in modules.items()}
    assert "bench.inputs" in graph["bench.binary"]  # the graph sees imports
    assert circles(graph) == []


def test_a_circle_is_found():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_imports_inside_functions_count(tmp_path):
    (tmp_path / "x.py").write_text("def f():\n    from pkg import y\n")
    (tmp_path / "y.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.x import f\n")
    modules = {"pkg.x": tmp_path / "x.py", "pkg.y": tmp_path / "y.py"}
    assert imports("pkg.x", modules["pkg.x"], modules) == {"pkg.y"}
    assert imports("pkg.y", modules["pkg.y"], modules) == set()
