"""The SQL console: answers over one analysis' views, and every way out of its sandbox tried and refused."""

from __future__ import annotations

import duckdb
import pytest

from backend.queries import sql as sql_queries
from backend.queries import sql_worker, views
from tests.conftest import SAMPLES, ingest_paths

INCIDENT = ["incident.blkparse.txt", "incident.trace-cmd-report.txt", "incident.offcputime.txt"]
EXT4 = ["ext4-jbd2-commit.trace-cmd-report.txt", "ext4-jbd2-commit.blkparse.txt", "ext4-jbd2-commit.offwaketime.txt"]


@pytest.fixture
def two(store):
    a = ingest_paths(store, *(SAMPLES / n for n in INCIDENT))["id"]
    b = ingest_paths(store, *(SAMPLES / n for n in EXT4))["id"]
    return a, b


def q(client, aid, sql, **kw):
    return client.post(f"/api/analyses/{aid}/query", json={"sql": sql, **kw})


def test_a_question_no_view_asked_answered_as_the_api_would(client, two):
    a, _ = two
    r = q(
        client,
        a,
        "SELECT pid, comm, count(*) AS n, max(duration_ns) AS longest FROM waits"
        " WHERE lock LIKE 'xfs_buf_lock%' AND NOT idle GROUP BY ALL ORDER BY longest DESC",
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert [c["name"] for c in body["columns"]] == ["pid", "comm", "n", "longest"]
    assert [c["type"] for c in body["columns"]] == ["BIGINT", "VARCHAR", "BIGINT", "BIGINT"]
    api = client.get(f"/api/analyses/{a}/waits", params={"lock": "xfs_buf_lock", "limit": 1000}).json()
    want = {}
    for w in api:
        if w["lock"].startswith("xfs_buf_lock"):
            n, longest = want.get((w["pid"], w["comm"]), (0, 0))
            want[(w["pid"], w["comm"])] = (n + 1, max(longest, w["duration_ns"]))
    assert {(p, c): (n, m) for p, c, n, m in body["rows"]} == want
    assert body["truncated"] is False and body["elapsed_ms"] >= 0


def test_times_are_on_the_analysis_timeline_as_in_the_api(client, two):
    a, _ = two
    api = client.get(f"/api/analyses/{a}/requests", params={"order": "i2d", "limit": 3}).json()
    rows = q(
        client,
        a,
        "SELECT source_id, line, q_ns, i_ns, d_ns, c_ns, i2d_ns FROM requests"
        " ORDER BY i2d_ns DESC NULLS LAST, source_id, line LIMIT 3",
    ).json()["rows"]
    assert rows == [[r[k] for k in ("source_id", "line", "q_ns", "i_ns", "d_ns", "c_ns", "i2d_ns")] for r in api]
    chain = client.get(f"/api/analyses/{a}/chains", params={"limit": 1}).json()[0]
    links = q(
        client, a, "SELECT pid, lock, start_ns, duration_ns, relation FROM links WHERE chain_id = 1 ORDER BY pos"
    ).json()["rows"]
    assert links == [[lk[k] for k in ("pid", "lock", "start_ns", "duration_ns", "relation")] for lk in chain["links"]]


def test_other_analyses_are_not_reachable(client, store, two):
    a, b = two
    con = store.cursor()
    try:
        for view in views.VIEWS:  # each view holds exactly its analysis' rows
            want = con.execute(f"SELECT count(*) FROM ({views.select(view)})", {"aid": a}).fetchall()[0][0]
            got = q(client, a, f"SELECT count(*) FROM {view.name}").json()["rows"][0][0]
            assert got == want, view.name
        b_sources = [r[0] for r in con.execute("SELECT id FROM sources WHERE analysis_id = ?", [b]).fetchall()]
    finally:
        con.close()
    ids = q(client, a, "SELECT DISTINCT id FROM sources").json()["rows"]
    assert not {i for (i,) in ids} & set(b_sources)
    for stored in ("analyses", "blk_requests", "wait_rows", "fg_call_rows", "chain_link_rows", "edit_keys"):
        r = q(client, a, f"SELECT * FROM {stored}")
        assert r.status_code == 400 and "does not exist" in r.json()["detail"], stored
    r = q(client, a, "SELECT DISTINCT database_name FROM duckdb_tables()")
    [[name]] = r.json()["rows"]  # its copy alone
    assert name == a


ESCAPES = {
    # statements other than one SELECT: refused by DuckDB's parser's statement type, before anything runs
    "COPY waits TO '/tmp/stallscope-escape.csv'": (400, "COPY"),
    "COPY (SELECT 1) TO '/tmp/stallscope-escape.csv'": (400, "COPY"),
    "ATTACH '/tmp/other.duckdb' AS other": (400, "ATTACH"),
    "INSTALL httpfs": (400, "only a SELECT"),
    "LOAD httpfs": (400, "only a SELECT"),
    "SET enable_external_access = true": (400, "SET"),
    "RESET lock_configuration": (400, "only a SELECT"),
    "PRAGMA database_list": (400, "PRAGMA"),
    "CREATE TABLE t AS SELECT 1": (400, "CREATE"),
    "CREATE MACRO m() AS 1": (400, "CREATE"),
    "DROP TABLE waits": (400, "DROP"),
    "INSERT INTO waits SELECT * FROM waits": (400, "INSERT"),
    "EXPORT DATABASE '/tmp/stallscope-escape'": (400, "EXPORT"),
    "CALL pragma_version()": (400, "CALL"),
    "SELECT 1; COPY waits TO '/tmp/stallscope-escape.csv'": (400, "one statement at a time"),
    "SELECT 1; SELECT 2": (400, "one statement at a time"),
    "USE system": (400, "only a SELECT"),
    "DETACH DATABASE x": (400, "only a SELECT"),
    "": (400, "no SQL"),
    # a SELECT that reaches for files, the network or extensions: refused inside DuckDB
    "SELECT * FROM read_csv('/etc/passwd')": (403, "no file, network or extension access"),
    "SELECT * FROM read_text('/etc/passwd')": (403, "no file, network or extension access"),
    "SELECT * FROM read_blob('/etc/hostname')": (403, "no file, network or extension access"),
    "SELECT * FROM '/etc/passwd'": (400, "does not exist"),
    "SELECT * FROM '/etc/hosts.csv'": (403, "no file, network or extension access"),
    "SELECT * FROM glob('/*')": (403, "no file, network or extension access"),
    "SELECT * FROM read_parquet('https://example.com/x.parquet')": (403, "no file, network or extension access"),
    "SELECT * FROM read_json_auto('/proc/self/environ')": (403, "no file, network or extension access"),
    "SELECT * FROM duckdb_extensions()": (403, "no file, network or extension access"),
    # SQL run from inside a SELECT
    "SELECT * FROM query('SET enable_external_access = true')": (403, "refused (query)"),
    "SELECT * FROM query('ATTACH ''/tmp/x.duckdb''')": (403, "refused (query)"),
}


@pytest.mark.parametrize("sql,expected", ESCAPES.items(), ids=list(ESCAPES))
def test_sandbox_escapes_are_refused_with_a_clear_4xx(client, two, sql, expected, tmp_path):
    a, _ = two
    r = q(client, a, sql)
    status, says = expected
    assert r.status_code == status, r.text
    assert says in r.json()["detail"]


def test_the_configuration_is_locked_and_nothing_was_written(client, store, two):
    a, _ = two
    assert q(client, a, "SELECT 1").status_code == 200
    [path] = sql_queries.copies_dir(store.path).glob(f"{a}.*.duckdb")
    copy = sql_worker.open_copy(str(path), "256MB")  # as the worker opens it
    rows = copy.execute(
        "SELECT name, value FROM duckdb_settings() WHERE name IN ('enable_external_access',"
        " 'lock_configuration', 'threads', 'autoload_known_extensions', 'autoinstall_known_extensions',"
        " 'python_enable_replacements') ORDER BY name",
    ).fetchall()
    copy.close()
    assert dict(rows) == {
        "autoinstall_known_extensions": "false",
        "autoload_known_extensions": "false",
        "enable_external_access": "false",
        "lock_configuration": "true",
        "python_enable_replacements": "false",
        "threads": "1",
    }
    import os

    assert not os.path.exists("/tmp/stallscope-escape.csv")


def test_a_long_query_is_interrupted_and_the_next_one_runs(client, two, monkeypatch):
    a, _ = two
    from backend.api.sql import console

    con = type("R", (), {"app": client.app})
    console(con).seconds = 0.5
    r = q(client, a, "SELECT count(*) FROM range(100000000000) x, range(100) y")
    assert r.status_code == 503 and "interrupted" in r.json()["detail"]
    assert q(client, a, "SELECT count(*) FROM waits").status_code == 200


def test_the_row_cap_cuts_and_says_so(client, two):
    a, _ = two
    body = q(client, a, "SELECT line FROM calls ORDER BY line", max_rows=10).json()
    assert body["truncated"] is True and len(body["rows"]) == 10
    assert [r[0] for r in body["rows"]] == sorted(r[0] for r in body["rows"])
    assert q(client, a, "SELECT 1", max_rows=0).status_code == 422
    assert q(client, a, "SELECT 1", max_rows=10**9).status_code == 422


def test_the_memory_limit_stops_a_query_with_a_message(client, two):
    a, _ = two
    r = q(client, a, "SELECT list(x) FROM range(200000000) t(x)")
    assert r.status_code == 400 and "memory" in r.json()["detail"]


def test_values_of_every_kind_come_back_as_json(client, two):
    a, _ = two
    r = q(
        client,
        a,
        "SELECT 1.5::DECIMAL(4,2) AS d, 'nan'::DOUBLE AS nan, DATE '2024-01-02' AS day,"
        " INTERVAL 3 SECOND AS i, '\\x00\\xff'::BLOB AS b, [1, 2] AS l, {'a': 1} AS s, NULL AS n,"
        " '<b>x</b>' AS html",
    )
    body = r.json()
    assert body["rows"] == [[1.5, "nan", "2024-01-02", "00:00:03", "00ff", [1, 2], {"a": 1}, None, "<b>x</b>"]]
    assert [c["type"] for c in body["columns"]][:4] == ["DECIMAL(4,2)", "DOUBLE", "DATE", "INTERVAL"]


def test_an_unknown_analysis_is_404_and_bad_sql_says_what_duckdb_said(client, two):
    a, _ = two
    assert q(client, "nope", "SELECT 1").status_code == 404
    r = q(client, a, "SELEC 1")
    assert r.status_code == 400 and "syntax error" in r.json()["detail"]
    r = q(client, a, "SELECT nosuch FROM waits")
    assert r.status_code == 400 and "nosuch" in r.json()["detail"]


def test_the_views_list_their_columns(client):
    got = client.get("/api/sql/views").json()
    assert [v["name"] for v in got] == [v.name for v in views.VIEWS]
    waits = next(v for v in got if v["name"] == "waits")
    assert {"name": "stack", "type": "VARCHAR[]"} in waits["columns"]
    assert {"name": "duration_ns", "type": "BIGINT"} in waits["columns"]


def test_a_clock_offset_change_makes_a_new_copy(client, two):
    a, _ = two
    before = q(client, a, "SELECT min(start_ns) FROM waits").json()["rows"][0][0]
    src = next(s for s in client.get(f"/api/analyses/{a}").json()["sources"] if s["format"] == "ftrace")
    r = client.patch(f"/api/analyses/{a}/sources/{src['id']}", json={"clock_offset_ns": src["clock_offset_ns"] + 1000})
    assert r.status_code == 200, r.text
    assert q(client, a, "SELECT min(start_ns) FROM waits").json()["rows"][0][0] == before + 1000


def test_the_sandbox_alone_refuses_what_the_statement_check_would(store, two):
    """Without the statement check (layer 2), the engine's settings still refuse writes and file access."""
    a, _ = two
    console = sql_queries.Console(store.path)
    con = store.cursor()
    try:
        path = console.snapshot(con, a)
        cur = sql_worker.open_copy(str(path), "256MB")
        for sql in (
            "COPY waits TO '/tmp/stallscope-escape.csv'",
            "ATTACH '/tmp/x.duckdb'",
            "SET enable_external_access = true",
            "CREATE TABLE t AS SELECT 1",
            "INSTALL httpfs",
            "LOAD httpfs",
            "SELECT * FROM read_csv('/etc/passwd')",
        ):
            with pytest.raises(duckdb.Error):
                cur.execute(sql)
        cur.close()
    finally:
        con.close()
        console.close()


def test_deleting_an_analysis_deletes_its_copy(client, store, two):
    a, b = two
    assert q(client, a, "SELECT 1").status_code == 200
    assert q(client, b, "SELECT 1").status_code == 200
    copies = sql_queries.copies_dir(store.path)
    assert len(list(copies.glob(f"{a}.*.duckdb"))) == 1
    assert client.delete(f"/api/analyses/{a}").status_code == 204
    assert not list(copies.glob(f"{a}.*.duckdb")) and len(list(copies.glob(f"{b}.*.duckdb"))) == 1
    assert q(client, a, "SELECT 1").status_code == 404


def test_the_command_line_runs_sql_and_prints_a_report(store, two, capsys):
    from backend import cli

    a, _ = two
    path = str(store.path)
    store.close()
    assert (
        cli.main(
            [
                "sql",
                "--db",
                path,
                "--format",
                "csv",
                a,
                "SELECT comm, count(*) AS n FROM waits WHERE lock LIKE 'xfs_ilock%' GROUP BY 1 ORDER BY 1",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "comm,n" and len(out) > 1
    assert cli.main(["sql", "--db", path, a, "COPY waits TO '/tmp/x.csv'"]) == 1
    assert "only a SELECT" in capsys.readouterr().err
    assert cli.main(["sql", "--db", path, a, "SELECT pid, lock FROM waits ORDER BY duration_ns DESC LIMIT 2"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["pid", "lock"] and set(table[1]) <= {"-", " "} and len(table) == 4
    assert cli.main(["report", "--db", path, a, "1"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("Stall: file_writer (pid 3271) blocked 2.304 s")
    assert cli.main(["report", "--db", path, "nope"]) == 2
    assert cli.main(["views", "--db", path]) == 0
    assert "waits: " in capsys.readouterr().out
