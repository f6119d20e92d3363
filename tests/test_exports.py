"""Exports of every view (Parquet, CSV: every row, as the views hold them), the Perfetto JSON trace (every wait,
request and chain link once, in a well-formed trace-event file), and a chain's bug-report text."""

from __future__ import annotations

import collections
import io
import json

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from backend.queries import export as export_queries
from backend.queries import views
from tests.conftest import SAMPLES, ingest_paths

INCIDENT = ["incident.blkparse.txt", "incident.trace-cmd-report.txt", "incident.offcputime.txt"]
EXT4 = ["ext4-jbd2-commit.trace-cmd-report.txt", "ext4-jbd2-commit.blkparse.txt", "ext4-jbd2-commit.offwaketime.txt"]


@pytest.fixture
def two(store):
    a = ingest_paths(store, *(SAMPLES / n for n in INCIDENT), name="incident: a <b>bad</b> name")["id"]
    b = ingest_paths(store, *(SAMPLES / n for n in EXT4))["id"]
    return a, b


def _view_rows(store, aid, view):
    con = store.cursor()
    try:
        return con.sql(f"SELECT * FROM ({views.select(view)})", params={"aid": aid}).to_arrow_table()
    finally:
        con.close()


@pytest.mark.parametrize("view", [v.name for v in views.VIEWS])
def test_every_view_exports_every_row_as_parquet_and_csv(client, store, two, view):
    a, _ = two
    want = _view_rows(store, a, views.BY_NAME[view])
    r = client.get(f"/api/analyses/{a}/export/{view}.parquet")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "application/vnd.apache.parquet"
    assert r.headers["content-disposition"] == f'attachment; filename="incident-a-b-bad-b-name-{view}.parquet"'
    got = pq.read_table(io.BytesIO(r.content))
    assert got.schema.names == want.schema.names
    keys = [(f.name, "ascending") for f in want.schema if not str(f.type).startswith("list")]
    assert got.sort_by(keys).to_pylist() == want.sort_by(keys).to_pylist()
    c = client.get(f"/api/analyses/{a}/export/{view}.csv")
    assert c.status_code == 200 and c.headers["content-type"].startswith("text/csv")
    lines = c.content.decode().splitlines()
    assert lines[0].split(",") == [f'"{n}"' for n in want.schema.names]
    assert pacsv.read_csv(io.BytesIO(c.content)).num_rows == want.num_rows


def test_csv_joins_a_stack_and_reads_back(client, two):
    a, _ = two
    got = pacsv.read_csv(io.BytesIO(client.get(f"/api/analyses/{a}/export/waits.csv").content)).to_pylist()
    api = client.get(f"/api/analyses/{a}/waits", params={"limit": 1, "idle": True}).json()[0]
    row = next(w for w in got if (w["source_id"], w["line"]) == (api["source_id"], api["line"]))
    assert row["stack"] == export_queries.LIST_SEP.join(api["stack"])
    assert row["duration_ns"] == api["duration_ns"] and row["start_ns"] == api["start_ns"]


def test_exports_of_one_analysis_hold_none_of_another(client, two):
    a, b = two
    sa = {
        r["id"]
        for r in pq.read_table(io.BytesIO(client.get(f"/api/analyses/{a}/export/sources.parquet").content)).to_pylist()
    }
    sb = {s["id"] for s in client.get(f"/api/analyses/{b}").json()["sources"]}
    assert sa and not sa & sb
    calls = pq.read_table(io.BytesIO(client.get(f"/api/analyses/{a}/export/calls.parquet").content))
    assert set(calls.column("source_id").to_pylist()) <= sa


def test_an_unknown_view_or_format_is_404_saying_what_exists(client, two):
    a, _ = two
    for bad in ("analyses.csv", "waits.xlsx", "waits", "../waits.csv", "WAITS.csv"):
        r = client.get(f"/api/analyses/{a}/export/{bad}")
        assert r.status_code == 404, bad
    assert "requests, bios" in client.get(f"/api/analyses/{a}/export/nope.csv").json()["detail"]
    assert client.get("/api/analyses/nope/export/waits.csv").status_code == 404


def test_a_large_view_streams_in_batches(store, two, monkeypatch):
    a, _ = two
    monkeypatch.setattr(export_queries, "BATCH", 1000)
    chunks = list(export_queries.stream(store.cursor(), a, "calls", "parquet"))
    assert len(chunks) > 10  # a row group per 1000 calls, each written out as it comes
    assert pq.read_table(io.BytesIO(b"".join(chunks))).num_rows == 11245
    assert max(len(c) for c in chunks) < 64 * 1024


# ---- Perfetto --------------------------------------------------------------------------------------------------------


def test_perfetto_trace_holds_every_wait_request_and_chain_link_once(client, store, two):
    a, _ = two
    r = client.get(f"/api/analyses/{a}/export/perfetto.json")
    assert r.status_code == 200 and r.headers["content-disposition"].endswith('perfetto.json"')
    trace = json.loads(r.content)
    ev = trace["traceEvents"]
    for e in ev:  # the trace-event format: each event's required fields, of their types
        assert e["ph"] in {"X", "B", "b", "e", "s", "f", "M"}
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int) and isinstance(e["name"], str)
        assert isinstance(e.get("args", {}), dict)
        if e["ph"] != "M":
            assert isinstance(e["ts"], (int, float)) and isinstance(e["cat"], str)
        else:
            assert e["name"] in {"process_name", "thread_name", "thread_sort_index", "process_sort_index"}
        if e["ph"] == "X":
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0
        if e["ph"] in "be":
            assert isinstance(e["id2"]["local"], str)
        if e["ph"] in "sf":
            assert isinstance(e["id"], str) and (e["ph"] == "s" or e["bp"] == "e")
    con = store.cursor()
    try:
        waits = con.execute(f"SELECT source_id, line FROM ({views.select(views.BY_NAME['waits'])})",
                            {"aid": a}).fetchall()  # fmt: skip
        reqs = con.execute(f"SELECT source_id, line FROM ({views.select(views.BY_NAME['requests'])})",
                           {"aid": a}).fetchall()  # fmt: skip
        deps = con.execute("SELECT count(*) FROM chain_links WHERE analysis_id = ? AND relation IS NOT NULL",
                           [a]).fetchall()[0][0]  # fmt: skip
    finally:
        con.close()
    got_waits = collections.Counter((e["args"]["source_id"], e["args"]["line"]) for e in ev if e.get("cat") == "wait")
    assert got_waits == collections.Counter(waits)
    outer = [e for e in ev if e["ph"] == "b" and e["cat"] == "block" and "args" in e]
    assert collections.Counter(e["id2"]["local"] for e in outer) == collections.Counter(f"{s}:{n}" for s, n in reqs)
    begins = collections.Counter((e["id2"]["local"], e["name"]) for e in ev if e["ph"] == "b")
    ends = collections.Counter((e["id2"]["local"], e["name"]) for e in ev if e["ph"] == "e")
    assert begins == ends  # every async slice closed
    starts = [e for e in ev if e["ph"] == "s"]
    finishes = {e["id"]: e for e in ev if e["ph"] == "f"}
    assert len(starts) == deps == trace["metadata"]["flows"]
    assert {e["id"] for e in starts} == set(finishes)
    # chain 1: file_writer <- file_reader <- xfsconvertd/0 <- xfslogd/0, each a flow into the waiter's wait
    flows = sorted((e for e in starts if e["id"].startswith("1.")), key=lambda e: e["id"])
    assert [(e["pid"], finishes[e["id"]]["pid"]) for e in flows] == [(3274, 3271), (421, 3274), (419, 421)]
    names = {e["pid"]: e["args"]["name"] for e in ev if e["name"] == "process_name"}
    assert names[3271] == "file_writer (3271)" and "block 8,0" in names.values()
    assert trace["metadata"]["waits"] == len(waits) and trace["metadata"]["requests"] == len(reqs)


def test_perfetto_slices_nest_on_every_thread(client, two):
    """Perfetto drops slices that overlap without nesting: on each thread, X slices nest or follow each other."""
    a, _ = two
    ev = json.loads(client.get(f"/api/analyses/{a}/export/perfetto.json").content)["traceEvents"]
    by_thread = collections.defaultdict(list)
    for e in ev:
        if e["ph"] == "X" and e["cat"] in ("wait", "chain"):
            by_thread[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
    for spans in by_thread.values():
        spans.sort(key=lambda s: (s[0], -s[1]))
        open_ends: list[float] = []
        for start, end in spans:
            while open_ends and open_ends[-1] <= start + 1e-9:
                open_ends.pop()
            assert not open_ends or end <= open_ends[-1] + 1e-9, (start, end, open_ends[-1])
            open_ends.append(end)


def test_perfetto_trace_holds_every_call_and_the_request_phases(client, store, two):
    """Every call once (a return-less call open until the end, B), each wait's stack and lock in its args, and a
    request of the incident's chain 1 with its phases on its device's track, in exact µs."""
    a, _ = two
    trace = json.loads(client.get(f"/api/analyses/{a}/export/perfetto.json").content)
    ev = trace["traceEvents"]
    con = store.cursor()
    try:
        calls = con.execute(
            f"SELECT source_id, line, exit_ns IS NULL FROM ({views.select(views.BY_NAME['calls'])})"
            " WHERE entry_ns IS NOT NULL AND pid IS NOT NULL",
            {"aid": a},
        ).fetchall()
        waits = {
            (s, n): (stack, lock)
            for s, n, stack, lock in con.execute(
                f"SELECT source_id, line, stack, lock FROM ({views.select(views.BY_NAME['waits'])})", {"aid": a}
            ).fetchall()
        }
    finally:
        con.close()
    got = collections.Counter(
        (e["args"]["source_id"], e["args"]["line"], e["ph"] == "B") for e in ev if e.get("cat") == "call"
    )
    assert got == collections.Counter(calls) and len(calls) == 11245 == trace["metadata"]["calls"]
    for e in ev:
        if e.get("cat") == "wait":
            stack, lock = waits[(e["args"]["source_id"], e["args"]["line"])]
            assert e["args"]["stack"] == stack and e["args"]["lock"] == lock
            assert e["name"] == (lock or f"off CPU ({e['args']['state'] or '?'})")
    # chain 1's block request (the report text's): WM 141698288 + 8 of xfsaild/sda1, I2D 3.718 s, D2C 5.617 ms
    req = [e for e in ev if e.get("cat") == "block" and e["name"] == "WM 141698288+8 xfsaild/sda1"]
    assert [e["ph"] for e in req] == ["b", "e"]
    rid = req[0]["id2"]["local"]
    phases = {(e["name"], e["ph"]): e["ts"] for e in ev if e.get("id2", {}).get("local") == rid}
    args = req[0]["args"]
    assert (
        phases[("I2D (scheduler)", "b")] == args["i_ns"] / 1000
        and phases[("I2D (scheduler)", "e")] == args["d_ns"] / 1000
    )
    assert phases[("D2C (device)", "e")] == args["c_ns"] / 1000 == req[1]["ts"]
    assert args["i2d_ns"] == 3_718_391_995 and round(args["d2c_ns"] / 1e6, 3) == 5.617
    devices = {e["pid"] for e in ev if e.get("cat") == "block"}
    names = {e["pid"]: e["args"]["name"] for e in ev if e["name"] == "process_name"}
    assert sorted(names[p] for p in devices) == ["block 8,0"] and trace["metadata"]["devices"] == 1


def test_perfetto_trace_streams_a_batch_at_a_time(store, two, monkeypatch):
    from backend.queries import perfetto

    a, _ = two
    whole = b"".join(perfetto.stream(store.cursor(), a, "x"))
    monkeypatch.setattr(perfetto, "BATCH", 500)
    chunks = list(perfetto.stream(store.cursor(), a, "x"))
    assert b"".join(chunks) == whole  # the same text, in more, smaller pieces
    assert len(chunks) > 30 and max(len(c) for c in chunks) < 1 << 20  # 500 rows each (a wait: ~1 KB)
    trace = json.loads(whole)
    assert len(trace["traceEvents"]) == 24149  # the incident's tasks, waits, calls, requests and flows


def test_perfetto_trace_escapes_whatever_a_trace_names(client, store, two):
    """Names are a trace's bytes: quotes, backslashes, control characters, markup and non-ASCII come back as they
    were, in well-formed JSON (the JSON text is built in SQL: every string through to_json)."""
    a, _ = two
    hostile = 'x"y\\z\n\x01\t</script><b>é→'
    con = store.cursor()
    try:
        con.execute(
            "UPDATE wait_rows SET lock = $h, comm = $h, evidence = $h WHERE source_id IN"
            " (SELECT id FROM sources WHERE analysis_id = $aid)",
            {"h": hostile, "aid": a},
        )
        con.execute("UPDATE blk_requests SET comm = $h, rwbs = $h WHERE source_id IN"
                    " (SELECT id FROM sources WHERE analysis_id = $aid)", {"h": hostile, "aid": a})  # fmt: skip
    finally:
        con.close()
    client.app.state.cache.forget(a)  # the rows changed under the server: nothing kept from before
    trace = json.loads(client.get(f"/api/analyses/{a}/export/perfetto.json").content)
    waits = [e for e in trace["traceEvents"] if e.get("cat") == "wait"]
    assert waits and all(e["name"] == e["args"]["lock"] == e["args"]["evidence"] == hostile for e in waits)
    outer = [e for e in trace["traceEvents"] if e.get("cat") == "block" and "args" in e]
    assert outer and all(e["args"]["comm"] == e["args"]["rwbs"] == hostile for e in outer)
    assert all(e["name"].startswith(hostile) and e["name"].endswith(hostile) for e in outer)


def test_perfetto_trace_of_an_analysis_without_events_is_well_formed(client, store):
    from tests.conftest import ingest_bytes

    a = ingest_bytes(store, **{"one.offcputime.txt": (SAMPLES / "xfs-open-stall.offcputime.txt").read_bytes()})["id"]
    trace = json.loads(client.get(f"/api/analyses/{a}/export/perfetto.json").content)
    assert trace["traceEvents"] == [] and trace["metadata"]["waits"] == 0


# ---- the bug-report text ---------------------------------------------------------------------------------------------


def test_a_chain_reads_as_a_bug_report(client, two):
    a, _ = two
    r = client.get(f"/api/analyses/{a}/chains/1/report.txt")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    text = r.text
    assert all(len(line) <= 80 for line in text.splitlines())
    assert text.isascii() and all(ch == "\n" or 32 <= ord(ch) < 127 for ch in text)
    assert text.splitlines()[0] == "Stall: file_writer (pid 3271) blocked 2.304 s on xfs_ilock via down_write"
    for expected in (
        "file_writer (pid 3271) waited 2.304 s on xfs_ilock via down_write, woken by",
        "-> xfsconvertd/0 (pid 421) waited 3.722 s on xfs_buf_lock via down,",
        "block request 8,0 WM 141698288 + 8 of xfsaild/sda1 (pid 804): I2D",
        "[2] incident.trace-cmd-report.txt (ftrace)",
        "evidence (incident.trace-cmd-report.txt): switched out (D) at line 8656,",
        "      D  12.780580813 s (+3.718 s)  line 7204  dispatched to the device",
        "      C  12.786197813 s (+5.617 ms)  line 7205  completed",
        "      phases: Q2G 651 ns, G2I 5.785 us, I2D 3.718 s, D2C 5.617 ms, Q2C 3.724 s",
        "    stack (innermost first):\n      schedule\n      rwsem_down_write_failed\n      down_write\n      xfs_ilock",
    ):
        assert expected in text, expected
    assert client.get(f"/api/analyses/{a}/chains/100000/report.txt").status_code == 404
    assert client.get(f"/api/analyses/{a}/chains/0/report.txt").status_code == 422


def test_report_text_is_ascii_whatever_the_trace_names(store):
    from backend.queries.report import ascii_text, duration

    assert ascii_text("kworker/0:1H\x1b[31m→µs é <b>") == "kworker/0:1H?[31m->us e <b>"
    assert [duration(n) for n in (512, 6400, 5_617_000, 2_304_170_000, 123_456_000_000)] == [
        "512 ns", "6.400 us", "5.617 ms", "2.304 s", "123.5 s"]  # fmt: skip


# ---- inert CSV (issue 34) --------------------------------------------------------------------------------------------

HOSTILE = ["=cmd|' /C calc'!A0", "+SUM(1)", "-2+3+cmd|' /C calc'!A0", "@SUM(A1)", "\t=1+1", "\r=1+1"]
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _is_number(text: str) -> bool:
    import re

    from backend.inert_csv import NUMBER

    return re.match(NUMBER, text) is not None


def _make_every_text_hostile(client, store, aid: str) -> int:
    """Every VARCHAR column of every table row of the analysis set to a formula (one of HOSTILE, by column)."""
    con = store.cursor()
    n = 0
    try:
        tables = con.execute(
            "SELECT table_name, list(column_name ORDER BY column_index) FILTER (data_type = 'VARCHAR'),"
            " bool_or(column_name = 'source_id'), bool_or(column_name = 'analysis_id') FROM duckdb_columns()"
            " WHERE NOT internal AND table_name IN (SELECT table_name FROM duckdb_tables()) GROUP BY 1"
        ).fetchall()
        for table, text_columns, by_source, by_analysis in tables:
            if not text_columns or not (by_source or by_analysis) or table in ("analyses", "edit_keys"):
                continue
            where = (
                "source_id IN (SELECT id FROM sources WHERE analysis_id = $aid)" if by_source else "analysis_id = $aid"
            )
            for i, column in enumerate(text_columns):
                if column in ("id", "analysis_id", "format", "clock", "files", "alignment", "notes"):
                    continue  # keys and JSON the views parse
                con.execute(f"UPDATE {table} SET {column} = $h WHERE {where} AND {column} IS NOT NULL",
                            {"h": HOSTILE[(n + i) % len(HOSTILE)], "aid": aid})  # fmt: skip
                n += 1
        names = con.execute("SELECT count(*) FROM fg_names").fetchone()[0]
        if names:
            con.execute("UPDATE fg_names SET name = $h", {"h": HOSTILE[0]})
    finally:
        con.close()
    client.app.state.cache.forget(aid)  # the rows changed under the server: nothing kept from before
    return n


@pytest.mark.parametrize("view", [v.name for v in views.VIEWS])
def test_every_csv_export_is_inert_with_hostile_names_in_every_text_column(client, store, two, view):
    import csv

    a, _ = two
    assert _make_every_text_hostile(client, store, a) > 10
    want = _view_rows(store, a, views.BY_NAME[view])
    text_columns = [f.name for f in want.schema if pa.types.is_string(f.type) or pa.types.is_list(f.type)]
    r = client.get(f"/api/analyses/{a}/export/{view}.csv")
    assert r.status_code == 200, r.text
    rows = list(csv.DictReader(io.StringIO(r.content.decode(), newline="")))
    assert len(rows) == want.num_rows
    hostile_seen = 0
    for row in rows:
        for name, cell in row.items():
            assert not (cell.startswith(FORMULA_START) and not _is_number(cell)), (view, name, cell)
            if name in text_columns and cell[1:] in HOSTILE:
                assert cell.startswith("'")
                hostile_seen += 1
    if want.num_rows and text_columns:
        assert hostile_seen, view
    for f in want.schema:  # numbers stay numbers
        if pa.types.is_integer(f.type):
            got = [None if row[f.name] == "" else int(row[f.name]) for row in rows]
            assert sorted(got, key=lambda v: (v is None, v)) == sorted(
                want.column(f.name).to_pylist(), key=lambda v: (v is None, v)
            )


def test_inert_csv_cells_keep_numbers_and_quote_formulas():
    from backend import inert_csv

    batch = pa.record_batch(
        {
            "text": ["=cmd|' /C calc'!A0", "-12", "+3.5e-2", "@x", "\tx", "\rx", 'a,"b"', "", None, "-", "plain"],
            "n": [1, -2, None, 4, 5, 6, 7, 8, 9, 10, -11],
        }
    )
    out = io.BytesIO()
    with pacsv.CSVWriter(out, batch.schema) as writer:
        writer.write_batch(inert_csv.inert_batch(batch))
    lines = out.getvalue().decode().split("\n")
    assert lines[1:4] == ["\"'=cmd|' /C calc'!A0\",1", '"-12",-2', '"+3.5e-2",']
    assert lines[4:7] == ['"\'@x",4', '"\'\tx",5', '"\'\rx",6']
    assert lines[7:12] == ['"a,""b""",7', '"",8', ",9", '"\'-",10', '"plain",-11']
    assert [inert_csv.cell(v) for v in ("=1", "-1", -1, None, "@", "")] == ['"\'=1"', "-1", "-1", "", '"\'@"', '""']
    assert inert_csv.line(["a", "=b", 'c"d']) == 'a,"\'=b","c""d"'


def test_the_command_lines_csv_is_inert(store, two, capsys):
    from backend import cli

    a, _ = two
    path = str(store.path)
    store.close()
    sql = "SELECT '=cmd|'' /C calc''!A0' AS name, -5 AS n, '-7' AS t, '@SUM(A1)' AS a"
    assert cli.main(["sql", "--db", path, "--format", "csv", a, sql]) == 0
    assert capsys.readouterr().out == "name,n,t,a\n\"'=cmd|' /C calc'!A0\",-5,-7,\"'@SUM(A1)\"\n"
