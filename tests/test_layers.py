"""The backend's layers hold: each package of backend/ (api, queries, cache, derive, ingest, schema) and each
top-level module imports only what LAYERS allows it, which points downward (api -> queries -> schema; ingest ->
derive -> schema; the shared helpers at the bottom), so no two of them import each other. Every import counts: those
inside functions and those under `if TYPE_CHECKING:` (a type is a dependency too)."""

from __future__ import annotations

import importlib
from pathlib import Path

from tests.test_import_graph import _modules, circles, imports

REPO = Path(__file__).resolve().parents[1]

# the helpers every layer may use (and what each of them uses)
SHARED = {
    "db": set(),  # how every statement runs: its time limit, the write path
    "access": {"db"},
    "block_layers": set(),
    "disk": {"db"},
    "distinct": set(),  # np.unique's values without its hash table (derive and queries)
    "headers": set(),
    "inert_csv": set(),
    "ingest_pool": set(),
    "limits": set(),
    "locks": set(),
    "memory": set(),
    "wait_kinds": {"locks"},
}
# what each unit of backend/ may import besides SHARED
LAYERS = {
    "schema": set(),
    "derive": {"schema"},
    "ingest": {"derive", "schema"},
    "cache": set(),
    "queries": {"cache", "schema"},
    "store": {"ingest", "derive", "queries", "schema"},
    "warm": {"queries", "cache"},
    # the upload reads its files as they arrive (ingest.arrivals); a PATCH runs derive/pipeline.place_source
    "api": {"queries", "cache", "store", "ingest", "derive"},
    "app": {"api", "queries", "cache", "store", "warm"},
    "server": set(),
    "cli_ask": {"queries", "cache", "store"},
    "cli": {"app", "cli_ask", "server", "queries", "cache", "store", "ingest"},
    "openapi": {"app", "store"},
}


def unit(module: str) -> str:
    """backend.<unit>[...]: a package of backend/ or a top-level module."""
    return module.split(".")[1] if module.count(".") else module


def unit_graph() -> dict[str, set[str]]:
    """unit -> the units it imports, from every module of backend/."""
    modules = {m: p for m, p in _modules().items() if m.startswith("backend.")}
    graph: dict[str, set[str]] = {}
    for m, p in modules.items():
        graph.setdefault(unit(m), set()).update(
            unit(t) for t in imports(m, p, modules, type_checking=True) if unit(t) != unit(m)
        )
    return graph


def breaches(graph: dict[str, set[str]]) -> list[str]:
    """The imports LAYERS and SHARED do not allow (and the units they do not place)."""
    allowed = {**{u: deps | set(SHARED) for u, deps in LAYERS.items()}, **SHARED}
    out = [f"{u}: not placed in LAYERS or SHARED" for u in sorted(graph) if u not in allowed]
    out += [f"{u} imports {t}" for u in sorted(graph) if u in allowed for t in sorted(graph[u] - allowed[u])]
    return out


def test_every_backend_module_imports():
    for m in sorted(_modules()):
        if m.startswith("backend"):
            importlib.import_module(m)


def test_the_layers_point_downward():
    assert circles({u: deps | set(SHARED) for u, deps in LAYERS.items()} | SHARED) == []  # the allowed graph
    graph = unit_graph()
    assert {"api", "queries", "cache", "derive", "ingest", "schema", "store", "app"} <= graph.keys()
    assert "schema" in graph["derive"] and "derive" in graph["ingest"]  # the graph sees imports
    assert breaches(graph) == []
    assert circles(graph) == []


def test_a_breach_is_found(tmp_path):
    assert breaches({"schema": {"derive"}, "derive": {"schema"}}) == ["schema imports derive"]
    assert breaches({"cache": {"queries"}, "queries": {"cache"}}) == ["cache imports queries"]
    assert breaches({"plugins": set()}) == ["plugins: not placed in LAYERS or SHARED"]
    (tmp_path / "x.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import y\n")
    (tmp_path / "y.py").write_text("")
    modules = {"pkg.x": tmp_path / "x.py", "pkg.y": tmp_path / "y.py"}
    assert imports("pkg.x", modules["pkg.x"], modules, type_checking=True) == {"pkg.y"}  # a type is a dependency
