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
from backend.ingest import InputFile
from backend.limits import Limits
from backend.schema import PARSER_TABLES, STAGED_TABLES
from backend.server import config
from backend.store import Store

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
SEED = SHARED / "seed-excerpts"
PUBLIC = SHARED / "samples-public"
SAMPLES = REPO / "samples"


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
    files = [InputFile(p.name, open(p, "rb"), p.stat().st_size) for p in paths]
    try:
        return store.ingest(files, name)
    finally:
        for f in files:
            f.stream.close()


def ingest_bytes(store: Store, **named: bytes) -> dict:
    return store.ingest([InputFile(n, io.BytesIO(b), len(b)) for n, b in named.items()])


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
