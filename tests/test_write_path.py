"""One path for every statement (backend/db.py): the time limits belong to the Store that opened the database, not
to a module; a write past its deadline is rolled back whole; an export past its own limit ends as an error, never
as a file that looks complete."""

from __future__ import annotations

import ast
import importlib
import io
import threading

import duckdb
import httpx
import pyarrow.parquet as pq
import pytest

from backend import db
from backend.app import create_app
from backend.limits import Limits
from backend.queries import perfetto, views
from backend.queries import run as query
from tests.conftest import SAMPLES, ingest_paths, served_on_loopback
from tests.test_import_graph import _modules

SLOW = "SELECT count(*) FROM range(100000000000) a, range(100) b"
MANY_ROWS = "SELECT $aid AS aid, a.range AS n FROM range(100000000000) a"  # streams rows for ever, quickly


def test_no_module_holds_a_watchdog_or_a_connection():
    """The deadlines' thread is the Store's (started when it opens, stopped when it closes): no module of backend/
    keeps one, nor a thread or a connection, at import."""
    assert not hasattr(query, "_watchdog")
    for name in sorted(m for m in _modules() if m.startswith("backend")):
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            assert not isinstance(value, db.Deadlines | threading.Thread | duckdb.DuckDBPyConnection | db.Connection), (
                f"{name}.{attr}"
            )


def test_the_stores_deadlines_start_with_it_and_stop_with_it(tmp_path):
    from backend.store import Store

    store = Store(tmp_path / "x.duckdb")
    deadlines = store.deadlines
    assert deadlines.running and store.cursor().deadlines is deadlines
    store.close()
    assert not deadlines.running
    with pytest.raises(RuntimeError, match="not running"):
        deadlines.arm(duckdb.connect(), 1)


def test_a_statement_needs_a_connection_with_deadlines():
    with pytest.raises(TypeError, match="backend.db.Connection"):
        query.run(duckdb.connect(), "SELECT 1")


def test_a_transaction_past_its_deadline_is_rolled_back_whole(store):
    con = store.cursor()
    try:
        db.execute(con, "CREATE TABLE t (x INTEGER)")
        with pytest.raises(db.QueryTimeout, match="longer than 0.3 s.*nothing of it was written"):
            with db.transaction(con, seconds=0.3):
                db.execute(con, "INSERT INTO t VALUES (1), (2)")
                db.execute(con, SLOW)
        assert db.execute(con, "SELECT count(*) FROM t").fetchall() == [(0,)]
        with db.transaction(con):  # the connection goes on working
            db.execute(con, "INSERT INTO t VALUES (3)")
        assert db.execute(con, "SELECT x FROM t").fetchall() == [(3,)]
    finally:
        con.close()


def test_a_write_past_its_deadline_raises(store):
    con = store.cursor()
    try:
        with pytest.raises(db.QueryTimeout, match="STALLSCOPE_WRITE_SECONDS"):
            db.execute(con, SLOW, seconds=0.2)
    finally:
        con.close()


def test_a_stream_past_its_deadline_raises_between_batches(store):
    con = store.cursor()
    try:
        got = 0
        with pytest.raises(db.QueryTimeout, match="export is incomplete"):
            for b in query.stream(con, MANY_ROWS, {"aid": "x"}, batch=2048, seconds=0.3):
                got += b.num_rows
        assert got > 0  # it began
        assert query.run(con, "SELECT 42") == [(42,)]
    finally:
        con.close()


@pytest.fixture
def incident(store):
    return ingest_paths(store, SAMPLES / "incident.blkparse.txt", SAMPLES / "incident.trace-cmd-report.txt")["id"]


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_an_export_past_its_deadline_is_cut_off_not_complete(store, incident, monkeypatch, fmt):
    """Over a real socket: the response began (200, chunked), and ends without its last chunk, so that no client
    takes what it received for the whole file; a Parquet file's footer is missing."""
    monkeypatch.setattr(query, "EXPORT_SECONDS", 0.5)
    monkeypatch.setattr(views, "select", lambda view: MANY_ROWS)
    app = create_app(store, warm=False)
    received = io.BytesIO()
    with served_on_loopback(app, Limits()) as port:
        url = f"http://127.0.0.1:{port}/api/analyses/{incident}/export/requests.{fmt}"
        with pytest.raises(httpx.RemoteProtocolError, match="incomplete"):
            with httpx.stream("GET", url, timeout=30) as r:
                assert r.status_code == 200
                for chunk in r.iter_raw():
                    received.write(chunk)
    assert received.tell() > 0
    if fmt == "parquet":
        with pytest.raises(Exception):
            pq.read_table(io.BytesIO(received.getvalue()))


def test_a_perfetto_export_past_its_deadline_ends_before_its_json_does(store, incident, monkeypatch):
    monkeypatch.setattr(perfetto, "TASKS", "SELECT count(*)::VARCHAR FROM range(100000000000) a, range(100) b"
                        " WHERE $aid IS NOT NULL")  # fmt: skip
    body = []
    with pytest.raises(db.QueryTimeout, match="STALLSCOPE_EXPORT_SECONDS"):
        for piece in perfetto.stream(store.cursor(), incident, "x", seconds=0.3):
            body.append(piece)
    assert not b"".join(body).rstrip().endswith(b"}")


def test_every_statement_goes_through_db_or_run():
    """No module calls DuckDB's execute or sql itself but db.py and queries/run.py (the two paths) and the SQL
    console's worker (a user's statement, in its own process, under a db.deadline)."""
    own = {"backend.db", "backend.queries.run", "backend.queries.sql_worker"}
    direct = []
    for name, path in sorted(_modules().items()):
        if not name.startswith("backend") or name in own:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr in ("execute", "sql") and not (
                    isinstance(node.func.value, ast.Name) and node.func.value.id == "duckdb"
                ):
                    direct.append(f"{name}:{node.lineno}")
    assert direct == []


def test_duckdbs_memory_limit_is_lowered_while_waits_are_derived(store, monkeypatch):
    """While an ftrace source's waits are derived (their arrays in Python memory beside DuckDB's buffers), DuckDB's
    limit is DUCKDB_SHARE_WITH_WAITS of the configured one, then the configured one again: after the ingest, after a
    derivation that failed, and only once the last of two overlapping holders ends."""
    from backend.derive import pipeline, waits

    def limit() -> str:
        return store.db.raw.execute("SELECT current_setting('memory_limit')").fetchone()[0]

    configured, seen = limit(), []
    stage = waits.stage

    def watched(*args, **kwargs):
        seen.append(limit())
        return stage(*args, **kwargs)

    monkeypatch.setattr(waits, "stage", watched)
    ingest_paths(store, SAMPLES / "ext4-jbd2-commit.trace-cmd-report.txt")

    def mib(said: str) -> float:  # '488.2 MiB'
        number, unit = said.split()
        return float(number) * {"MiB": 1, "GiB": 1024}[unit]

    assert seen and abs(mib(seen[0]) - mib(configured) * pipeline.DUCKDB_SHARE_WITH_WAITS) < 0.2
    assert limit() == configured

    def failing(*args, **kwargs):
        seen.append(limit())
        raise RuntimeError("a failed derivation")

    monkeypatch.setattr(waits, "stage", failing)
    with pytest.raises(Exception, match="a failed derivation"):
        ingest_paths(store, SAMPLES / "ext4-jbd2-commit.trace-cmd-report.txt")
    assert seen[-1] != configured and limit() == configured

    con = store.cursor()
    with store.db.memory.lowered(store.db, 0.5):
        with con.memory.lowered(con, 0.5):
            held = limit()
        assert limit() == held != configured  # the other holder still runs
    assert limit() == configured
