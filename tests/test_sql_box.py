"""The SQL console in a box (issue 34): each query runs in a worker process with limits of its own, so that no query
grows the server's memory; answers are capped in bytes as well as rows and never show a server path."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import duckdb
import pytest

from backend.queries import sql as sql_queries
from tests.conftest import SAMPLES, ingest_paths

INCIDENT = ["incident.blkparse.txt", "incident.trace-cmd-report.txt", "incident.offcputime.txt"]


@pytest.fixture
def aid(store):
    return ingest_paths(store, *(SAMPLES / n for n in INCIDENT))["id"]


def q(client, aid, sql, **kw):
    return client.post(f"/api/analyses/{aid}/query", json={"sql": sql, **kw})


def rss_mb() -> float:
    """This process' resident memory (the server's, under TestClient), MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def test_a_huge_value_is_refused_without_growing_the_server(client, aid):
    assert q(client, aid, "SELECT 1").status_code == 200  # the worker started, the copy made
    before = rss_mb()
    started = time.monotonic()
    r = q(client, aid, "SELECT length(repeat('x', 2000000000))")
    took = time.monotonic() - started
    assert r.status_code in (400, 503), r.text
    assert "memory" in r.json()["detail"]
    assert took < sql_queries.SQL_SECONDS + 1
    assert rss_mb() - before <= 100
    assert q(client, aid, "SELECT count(*) FROM requests").status_code == 200  # the console goes on


def test_a_large_result_is_cut_at_the_byte_cap_and_says_so(client, aid):
    assert q(client, aid, "SELECT 1").status_code == 200
    before = rss_mb()
    started = time.monotonic()
    r = q(client, aid, "SELECT repeat('x', 10000) AS x FROM range(100000)", max_rows=100_000)
    took = time.monotonic() - started
    assert r.status_code == 200
    assert len(r.content) <= (16 << 20) + 4096
    body = r.json()
    assert body["truncated"] is True and 0 < len(body["rows"]) < 100_000
    assert all(row == ["x" * 10000] for row in body["rows"])
    assert took < sql_queries.SQL_SECONDS + 1
    assert rss_mb() - before <= 100
    small = q(client, aid, "SELECT repeat('x', 10) AS x FROM range(1000)", max_rows=100_000).json()
    assert small["truncated"] is False and len(small["rows"]) == 1000


def test_a_worker_that_does_not_answer_in_time_is_killed_and_replaced(client, aid):
    from backend.queries.sql_pool import WorkerFailed

    console = client.app.state.sql_console
    assert q(client, aid, "SELECT 1").status_code == 200
    con = client.app.state.store.cursor()
    try:
        path = console.snapshot(con, aid)
    finally:
        con.close()
    [pid] = console.workers.pids()
    slow = {"op": "query", "path": str(path), "sql": "SELECT count(*) FROM range(100000000000) x, range(100) y",
            "max_rows": 10, "max_bytes": 1 << 20, "seconds": 60}  # fmt: skip
    started = time.monotonic()
    with pytest.raises(WorkerFailed, match="timeout"):
        console.workers.ask(slow, 1.0, 1 << 20)  # the pool's deadline, before the worker's own
    assert time.monotonic() - started < 3
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # killed and reaped
    assert q(client, aid, "SELECT count(*) FROM waits").status_code == 200  # by its replacement
    assert pid not in console.workers.pids()


def test_the_workers_are_the_apps_and_stop_with_it(store, aid):
    from fastapi.testclient import TestClient

    from backend.app import create_app

    with TestClient(create_app(store)) as client:
        assert q(client, aid, "SELECT 1").status_code == 200
        pids = client.app.state.sql_console.workers.pids()
        assert pids
    for pid in pids:
        deadline = time.monotonic() + 5
        while True:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            assert time.monotonic() < deadline, "a worker outlived the app"
            time.sleep(0.05)


def test_no_answer_shows_a_server_path(client, store, aid):
    """Every function that shows a setting, a database or a file: refused, and no answer names the server's
    directories (the database's, the copies', the home directory)."""
    secret = [str(Path(store.path).resolve().parent), str(Path.home())]
    probe = duckdb.connect()
    table_functions = [
        name
        for (name,) in probe.execute(
            "SELECT DISTINCT function_name FROM duckdb_functions() WHERE function_type IN ('table', 'table_macro')"
            " AND (function_name LIKE 'duckdb_%' OR function_name LIKE 'pragma_%' OR function_name LIKE '%secret%')"
            " AND (parameters = [] OR parameters IS NULL)"
        ).fetchall()
    ]
    settings = [name for (name,) in probe.execute("SELECT name FROM duckdb_settings()").fetchall()]
    probe.close()
    asked = [f"SELECT * FROM {f}()" for f in table_functions] + [f"SELECT * FROM {f}" for f in table_functions]
    asked += [f"SELECT current_setting('{s}')" for s in settings]
    asked += ["SELECT * FROM duckdb_databases", "SELECT * FROM pragma_database_list", "SELECT getvariable('x')",
              "SELECT * FROM query_table('waits')", "SELECT list_transform([1], x -> current_setting('home_directory'))",
              "SELECT * FROM read_csv('x.csv')", "SELECT * FROM 'nosuch.parquet'"]  # fmt: skip
    refused = 0
    for sql in asked:
        r = q(client, aid, sql)
        assert r.status_code != 500, (sql, r.text)
        refused += r.status_code == 403
        for s in secret:
            assert s not in r.text, (sql, r.text[:300])
    assert refused >= len(settings)  # current_setting is refused whatever it names
    for sql in ("SELECT * FROM duckdb_settings()", "SELECT current_setting('temp_directory')",
                "SELECT * FROM duckdb_databases()"):  # fmt: skip
        r = q(client, aid, sql)
        assert r.status_code == 403 and "settings or files" in r.json()["detail"], sql


def test_the_command_line_reads_the_workers_answer(store, aid, capsys):
    from backend import cli

    path = str(store.path)
    store.close()
    assert cli.main(["sql", "--db", path, "--format", "json", aid, "SELECT 1 AS one"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == [[1]]


def _open_deleted_copies(pids: list[int], copies: Path) -> list[str]:
    """The files under `copies` that these processes hold open though they were deleted."""
    found = []
    for pid in pids:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith(str(copies)) and target.endswith("(deleted)"):
                found.append(target)
    return found


def test_a_7th_analysis_evicting_a_busy_copy_closes_and_deletes_it(client, store):
    """The first query to a 7th analysis, while a query runs on the least recently used copy, evicts that copy: no
    500, and once the query ended no process holds the deleted copy."""
    import threading

    ids = [ingest_paths(store, SAMPLES / "incident.offcputime.txt", name=f"a{i}")["id"] for i in range(7)]
    console = client.app.state.sql_console
    console.seconds = 10.0  # still running when its copy is evicted
    busy: dict = {}

    def long_query():  # on ids[0]: interrupted at the time limit, its copy evicted meanwhile
        busy["r"] = q(client, ids[0], "SELECT count(*) FROM range(100000000000) x, range(100) y")

    runner = threading.Thread(target=long_query)
    runner.start()
    time.sleep(0.5)
    for aid in ids[1:6]:  # 5 more copies, more recent than ids[0]'s
        assert q(client, aid, "SELECT 1").status_code == 200
    copies = sql_queries.copies_dir(store.path)
    assert len(list(copies.glob(f"{ids[0]}.*.duckdb"))) == 1
    r = q(client, ids[6], "SELECT count(*) FROM offcpu_stacks")  # a 7th: ids[0]'s copy goes
    assert r.status_code == 200, r.text
    assert not list(copies.glob(f"{ids[0]}.*.duckdb"))
    runner.join(30)
    assert busy["r"].status_code in (200, 503), busy["r"].text
    assert "internal error" not in busy["r"].text
    assert len(list(copies.glob("*.duckdb"))) == 6
    assert _open_deleted_copies([os.getpid(), *console.workers.pids()], copies) == []
    assert q(client, ids[0], "SELECT count(*) FROM offcpu_stacks").status_code == 200  # made again
