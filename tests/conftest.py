from __future__ import annotations

import contextlib
import io
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from fastapi.testclient import TestClient

from backend.app import create_app
from backend.cache import AnalysisCache
from backend.ingest import InputFile
from backend.limits import Limits
from backend.queries import first_views
from backend.schema import PARSER_TABLES, STAGED_TABLES
from backend.server import config
from backend.store import Store

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples"
# The corpus beside the repository (../shared): CI has it, a clone of the repository alone does not. A test that reads
# it is marked `@needs_public` (or its module's `pytestmark = needs_public`) and skips without it; the seed excerpts
# it also holds are in samples/ (the same bytes), where the tests read them.
SHARED = REPO.parent / "shared"
PUBLIC = SHARED / "samples-public"
SEED = SAMPLES  # the kernel bug report's excerpts (../shared/seed-excerpts/*.txt), copied byte for byte
CORPORA = {"samples-public": "the public captures", "seed-excerpts": "the kernel bug report's excerpts"}


def needs_shared(corpus: str) -> pytest.MarkDecorator:
    """Marks a test (or, as `pytestmark`, a module) that reads ../shared/<corpus>: skipped when it is missing."""
    assert corpus in CORPORA, corpus
    return pytest.mark.needs_shared(corpus)


needs_public = needs_shared("samples-public")


def _missing(corpus: str) -> str:
    return f"needs ../shared/{corpus} ({CORPORA[corpus]}; see README's Development section)"


def pytest_configure(config):
    config.addinivalue_line("markers", "needs_shared(corpus): reads ../shared/<corpus>; skipped when it is missing")


def pytest_collection_modifyitems(config, items):
    # Prepended, the skip outranks pytest's own for a parametrization over a missing folder (an empty parameter set).
    for item in items:
        missing = [m.args[0] for m in item.iter_markers("needs_shared") if not (SHARED / m.args[0]).is_dir()]
        if missing:
            item.add_marker(pytest.mark.skip(reason=_missing(missing[0])), append=False)


def pytest_terminal_summary(terminalreporter):
    """One line per missing corpus, however many tests it skipped."""
    for corpus in CORPORA:
        reason = _missing(corpus)
        n = sum(
            1
            for r in terminalreporter.stats.get("skipped", [])
            if isinstance(r.longrepr, tuple) and r.longrepr[2].endswith(reason)
        )
        if n:
            tests = "1 test" if n == 1 else f"{n} tests"
            terminalreporter.write_line(f"{tests} skipped, as ../shared/{corpus} ({CORPORA[corpus]}) is not here")


@pytest.fixture
def store(tmp_path):
    """A fresh database per test."""
    s = Store(tmp_path / "test.duckdb")
    yield s
    s.close()


@pytest.fixture
def client(store):
    with TestClient(create_app(store, max_upload_bytes=1 << 20)) as c:
        yield c


def ingest_paths(store: Store, *paths: Path, name: str | None = None) -> dict:
    """One analysis of the files, as an upload makes it: ingested, then its first views stored (precompute)."""
    files = [InputFile(p.name, open(p, "rb"), p.stat().st_size) for p in paths]
    try:
        created = store.ingest(files, name)
    finally:
        for f in files:
            f.stream.close()
    first_views.precompute(store.db, AnalysisCache(), created["id"])
    return created


def ingest_bytes(store: Store, **named: bytes) -> dict:
    created = store.ingest([InputFile(n, io.BytesIO(b), len(b)) for n, b in named.items()])
    first_views.precompute(store.db, AnalysisCache(), created["id"])
    return created


def table_counts(store: Store) -> dict[str, int]:
    """Rows of every table an ingest writes: its analysis and sources, the parsers' staged rows, what is derived."""
    con = store.cursor()
    try:
        return {
            t: con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]
            for t in ("analyses", "sources", *sorted(PARSER_TABLES), "waits", "chains", "chain_links", *STAGED_TABLES)
        }
    finally:
        con.close()


@contextlib.contextmanager
def served_on_loopback(app, limits: Limits) -> Iterator[int]:
    """The port of `app` served by backend.server's uvicorn (its config with `limits`) on a free loopback port, in
    a thread, until the block ends."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(config(app, "127.0.0.1", port, limits))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(15)
