"""The JSON API end to end on a fresh database per test, with real traces."""

from __future__ import annotations

import functools
import io
import re
import threading

import duckdb
import pytest

from parsers import blkparse
from tests.conftest import SAMPLES, SEED, ingest_paths, table_counts

SEED_FILE = SEED / "cfq-dispatch-starvation.blkparse.txt"
GOOD = b"  8,0    0        1     0.000000000   697  Q   W 223490 + 8 [kjournald]\n"


def upload(client, *files, name=None, progress=None):
    data = {"name": name} if name else {}
    url = "/api/analyses" + (f"?progress={progress}" if progress else "")
    return client.post(url, files=[("files", f) for f in files], data=data)


def test_upload_then_read_everything(client):
    r = upload(client, (SEED_FILE.name, SEED_FILE.read_bytes()), name="cfq starvation", progress="tok1")
    assert r.status_code == 201, r.text
    body = r.json()
    aid = body["id"]
    assert re.fullmatch(r"[A-Za-z0-9_-]{22,}", aid)  # >= 128 random bits, URL-safe
    assert body["url"] == f"/a/{aid}"
    assert [(s["filename"], s["format"], s["events"], s["skipped_lines"]) for s in body["sources"]] == [
        (SEED_FILE.name, "blkparse", 12, 0)
    ]
    assert client.get("/api/progress/tok1").json()["phase"] == "done"

    listed = client.get("/api/analyses").json()
    assert [(a["id"], a["name"], a["source_count"]) for a in listed] == [(aid, "cfq starvation", 1)]
    a = client.get(f"/api/analyses/{aid}").json()
    assert (a["t_min_ns"], a["t_max_ns"]) == (81092472813, 96718761435)
    assert a["sources"][0]["clock_offset_ns"] == 0
    assert a["sources"][0]["has_requests"] is True  # (the page's Dispatch tab)

    reqs = client.get(f"/api/analyses/{aid}/requests", params={"order": "i2d", "limit": 5}).json()
    assert len(reqs) == 1
    req = reqs[0]
    assert (req["comm"], req["pid"], req["sector"], req["nsect"], req["rwbs"], req["i2d_ns"], req["d2c_ns"]) == (
        "xfsaild/sda1",
        804,
        141698288,
        8,
        "WM",
        15626265317,
        None,
    )

    detail = client.get(f"/api/analyses/{aid}/requests/{req['source_id']}/{req['line']}").json()
    assert [e["action"] for e in detail["events"]] == ["A", "Q", "G", "I", "D"]
    assert [m["line"] for m in detail["messages"]] == [5, 6, 7, 8, 9, 10, 11]
    assert (detail["messages_total"], detail["messages_truncated"]) == (7, False)
    assert detail["messages"][3]["message"] == "cfq767A / slice expired t=1"

    by_proc = client.get(f"/api/analyses/{aid}/dispatch-summary", params={"by": "process"}).json()
    assert by_proc == [
        {
            "key": "xfsaild/sda1 (804)",
            "pid": 804,
            "comm": "xfsaild/sda1",
            "dev": None,
            "count": 1,
            "i2d": {
                "n": 1,
                "min": 15626265317,
                "avg": 15626265317.0,
                "p50": 15626265317,
                "p95": 15626265317,
                "p99": 15626265317,
                "max": 15626265317,
            },
            "d2c": {"n": 0, "min": None, "avg": None, "p50": None, "p95": None, "p99": None, "max": None},
            "q2c": {"n": 0, "min": None, "avg": None, "p50": None, "p95": None, "p99": None, "max": None},
            "btt": [  # btt's rows (per queued bio): the excerpt's one bio, Q G I D, no C
                {"metric": m, "n": 1, "min_ns": v, "avg_ns": float(v), "max_ns": v, "total_ns": v}
                for m, v in (("Q2G", 318), ("G2I", 22911), ("I2D", 15626265317))
            ],
        }
    ]
    lot = client.get(f"/api/analyses/{aid}/latency-over-time", params={"buckets": 10}).json()
    assert lot["series"]["i2d"] == [
        {
            "t_ns": 81092472813,
            "count": 1,
            "p50_ns": 15626265317,
            "max_ns": 15626265317,
            "max_source_id": req["source_id"],
            "max_line": 1,
        }
    ]


def test_demo_filters_and_orders(client, store):
    aid = ingest_paths(store, SAMPLES / "demo-cfq-starvation.blkparse.txt")["id"]
    worst = client.get(f"/api/analyses/{aid}/requests", params={"order": "i2d", "limit": 3}).json()
    assert worst[0]["comm"] == "xfsaild/sda1" and worst[0]["i2d_ns"] == 15626265317
    assert worst[0]["i2d_ns"] >= worst[1]["i2d_ns"] >= worst[2]["i2d_ns"]
    pg = client.get(f"/api/analyses/{aid}/requests", params={"order": "d2c", "pid": 2210, "limit": 50}).json()
    assert {r["comm"] for r in pg} == {"postgres"} and len(pg) == 50
    by_time = client.get(f"/api/analyses/{aid}/requests", params={"order": "time", "limit": 20}).json()
    assert [r["line"] for r in by_time] == sorted(r["line"] for r in by_time)
    t0 = worst[0]["i_ns"] - 1_000_000
    window = client.get(
        f"/api/analyses/{aid}/requests", params={"order": "time", "t0_ns": t0, "t1_ns": t0 + 2_000_000, "limit": 1000}
    ).json()
    assert window and all(t0 <= r["q_ns"] <= t0 + 2_000_000 for r in window if r["q_ns"] is not None)
    # the detail of a completed request: its phases, a merged bio, a requeue (lines checked in the file)
    full = next(
        r
        for r in client.get(f"/api/analyses/{aid}/requests", params={"order": "d2c", "limit": 1000}).json()
        if r["merged_bios"] and r["c_ns"] is not None
    )
    detail = client.get(f"/api/analyses/{aid}/requests/{full['source_id']}/{full['line']}")
    assert detail.status_code == 200, detail.text
    actions = [e["action"] for e in detail.json()["events"]]
    assert actions == ["Q", "G", "Q", "M", "I", "D", "C"]
    assert detail.json()["events"][-1]["pid"] is None and detail.json()["events"][-1]["error"] == 0
    requeued = client.get(f"/api/analyses/{aid}/requests", params={"order": "time", "limit": 10000}).json()
    (rq,) = [r for r in requeued if r["requeues"]]
    acts = [
        e["action"] for e in client.get(f"/api/analyses/{aid}/requests/{rq['source_id']}/{rq['line']}").json()["events"]
    ]
    assert (rq["comm"], acts) == ("xfsaild/sda1", ["A", "Q", "G", "I", "D", "R", "D", "C"])
    devs = client.get(f"/api/analyses/{aid}/dispatch-summary", params={"by": "device"}).json()
    assert [(d["key"], d["count"]) for d in devs] == [("8,0", 5000)]
    assert devs[0]["i2d"]["max"] == 15626265317
    lot = client.get(f"/api/analyses/{aid}/latency-over-time", params={"buckets": 200}).json()
    assert len(lot["series"]["i2d"]) <= 200 and sum(p["count"] for p in lot["series"]["i2d"]) == 5000
    top = max(lot["series"]["i2d"], key=lambda p: p["max_ns"])
    assert (top["max_ns"], top["max_line"]) == (15626265317, worst[0]["line"])


def test_errors_are_json_with_actionable_messages(client):
    assert client.get("/api/analyses/nope").status_code == 404
    assert "no analysis" in client.get("/api/analyses/nope/requests").json()["detail"]
    r = client.get("/api/analyses/x/requests", params={"order": "fast"})
    assert r.status_code == 422 and r.json()["detail"].startswith("invalid request: order")
    r = client.get("/api/analyses/x/requests", params={"limit": 0})
    assert r.status_code == 422
    assert client.get("/api/nothing").json()["detail"].startswith("no API endpoint")
    assert client.get("/api/analyses/x/requests/1/2").status_code == 404


def test_bad_uploads_leave_nothing(client, store):
    before = table_counts(store)
    cases = {
        "empty.txt": b"",
        "garbage.bin": bytes(range(256)) * 8,
        "prose.txt": b"Dear kernel developers,\nmy disk is slow.\n",
    }
    for name, data in cases.items():
        r = upload(client, (name, data))
        assert r.status_code == 422, (name, r.text)
        body = r.json()
        assert body["files"][0]["filename"] == name and name in body["detail"]
    r = upload(client, ("bad.txt", b"  8,0 0 1 0.1 1 Q W 1 + x [a]\n" * 3))
    assert r.status_code == 422
    assert r.json()["files"][0]["error"].startswith("no usable event in the file; first problem at line 1")
    # one good file and one bad: the whole upload is refused
    r = upload(client, ("good.txt", GOOD), ("bad.txt", b"\x00\x01\x02"))
    assert r.status_code == 422 and [f["filename"] for f in r.json()["files"]] == ["bad.txt"]
    r = client.post("/api/analyses", files=[])
    assert r.status_code == 422
    assert table_counts(store) == before


def test_truncated_last_line_is_reported(client):
    r = upload(client, ("t.txt", GOOD + b"  8,0    0        2     0.000000100   697  G   W 223490 + 8 [kjour"))
    assert r.status_code == 201
    src = r.json()["sources"][0]
    assert (src["events"], src["skipped_lines"], src["skipped_examples"][0]["line"]) == (1, 1, 2)


def test_upload_sha256_is_the_files_small_or_spooled_to_disk(store):
    """The SHA-256 an upload is listed with is that of its bytes, whether it stayed in memory or went to disk (the
    hash is read beside the parse: by position from a file, after the parse from memory)."""
    import hashlib

    from fastapi.testclient import TestClient

    from backend.app import create_app

    small = SEED_FILE.read_bytes()
    big = GOOD * (2 * 1024 * 1024 // len(GOOD))  # over the 1 MB an upload is kept in memory
    with TestClient(create_app(store, max_upload_bytes=4 << 20)) as client:
        for data in (small, big):
            r = upload(client, ("t.blkparse", data))
            assert r.status_code == 201, r.text
            (source,) = client.get(f"/api/analyses/{r.json()['id']}").json()["sources"]
            assert (source["bytes"], source["sha256"]) == (len(data), hashlib.sha256(data).hexdigest())


def test_upload_over_limit_is_413(client, store):
    r = upload(client, ("big.txt", GOOD * 20000))  # 1.4 MB > the 1 MiB limit of the test app
    assert r.status_code == 413 and "limit" in r.json()["detail"]
    assert table_counts(store)["analyses"] == 0


def test_persists_across_restart(tmp_path):
    from backend.store import Store

    s = Store(tmp_path / "p.duckdb")
    aid = ingest_paths(s, SEED_FILE)["id"]
    s.close()
    s = Store(tmp_path / "p.duckdb")
    con = s.cursor()
    assert con.execute(
        "SELECT max(i2d_ns) FROM blk_requests r JOIN sources x ON x.id = r.source_id WHERE x.analysis_id = ?", [aid]
    ).fetchall() == [(15626265317,)]
    s.close()


def _small_chunks(monkeypatch) -> None:
    """blkparse reads 64 KiB at a time: a sample makes dozens of batches per table, more than a table's queue holds."""
    monkeypatch.setattr(blkparse, "parse", functools.partial(blkparse.parse, chunk_bytes=64 << 10))


def test_two_ingests_at_once_and_reads_during_ingest(store, monkeypatch):
    _small_chunks(monkeypatch)  # many batches per table's insert
    demo = SAMPLES / "demo-cfq-starvation.blkparse.txt"
    results, errors = [], []

    def work():
        try:
            results.append(ingest_paths(store, demo))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    con = store.cursor()
    seen = []
    while any(t.is_alive() for t in threads):  # reads see only whole analyses
        n = con.execute(
            "SELECT count(*) FROM blk_requests r JOIN sources s ON s.id = r.source_id"
            " JOIN analyses a ON a.id = s.analysis_id"
        ).fetchall()[0][0]
        seen.append(n)
    for t in threads:
        t.join()
    assert not errors
    assert set(seen) <= {0, 5000, 10000}
    counts = con.execute(
        "SELECT s.analysis_id, count(*) FROM blk_requests r JOIN sources s ON s.id = r.source_id GROUP BY 1"
    ).fetchall()
    assert sorted(c for _, c in counts) == [5000, 5000]
    assert {r["id"] for r in results} == {a for a, _ in counts}


def test_progress_counts_bytes_and_events_all_the_way(store, monkeypatch):
    """The progress an ingest reports (the browser's bar polls it, the CLI prints it): bytes read and events parsed
    rise chunk by chunk through each file, the second file's counted after the first's, up to the files' sizes and
    events; then the derivation, then done."""
    from backend.ingest import InputFile, Progress

    _small_chunks(monkeypatch)
    seen = []

    class Recorded(Progress):
        def update(self, **kw):
            super().update(**kw)
            seen.append(self.as_dict())

    paths = [SAMPLES / "demo-cfq-starvation.blkparse.txt", SEED_FILE]
    files = [InputFile(p.name, open(p, "rb"), p.stat().st_size) for p in paths]
    try:
        created = store.ingest(files, progress=Recorded())
    finally:
        for f in files:
            f.stream.close()
    sizes, events = [f.size for f in files], [s["events"] for s in created["sources"]]
    parsing = [s for s in seen if s["phase"] == "parsing"]
    assert [s["phase"] for s in seen[len(parsing) :]] == ["deriving", "done"]
    assert {s["bytes_total"] for s in seen} == {sum(sizes)}
    read, counted = [s["bytes_read"] for s in parsing], [s["events"] for s in parsing]
    assert read == sorted(read) and counted == sorted(counted)  # never backwards
    assert len(set(read)) > sizes[0] // (64 << 10) and len(set(counted)) > 10  # chunk by chunk, not only at the end
    assert sizes[0] in read and read[-1] == seen[-1]["bytes_read"] == sum(sizes)
    assert {s["filename"] for s in parsing if s["bytes_read"] > sizes[0]} == {SEED_FILE.name}
    assert counted[-1] == seen[-1]["events"] == sum(events) and events[1] == 12


def test_failure_midway_leaves_nothing(store, monkeypatch):
    """A file that breaks midway, after many batches were inserted: nothing of it is written, nothing is visible."""
    _small_chunks(monkeypatch)
    before = table_counts(store)
    good = (SAMPLES / "demo-cfq-starvation.blkparse.txt").read_bytes()

    class Exploding(io.BytesIO):
        def readinto(self, b):
            if self.tell() > len(good) // 2:
                raise OSError("disk went away")
            return super().readinto(b)

    from backend.ingest import InputFile

    with pytest.raises(OSError):
        store.ingest([InputFile("a.txt", io.BytesIO(good), len(good)), InputFile("b.txt", Exploding(good), len(good))])
    assert table_counts(store) == before


def test_a_failed_insert_stops_the_ingest(store, monkeypatch):
    """An insert that fails while the parser goes on (here a batch its table cannot take) fails the ingest with its
    error at the next batch, instead of leaving the parser waiting on a queue no one reads; nothing is written."""
    _small_chunks(monkeypatch)
    parse, before = blkparse.parse, table_counts(store)

    def bad_requests(stream, report):
        for n, (table, batch) in enumerate(parse(stream, report)):
            yield table, (batch.drop_columns(["comm"]) if table == "blk_requests" and n > 20 else batch)

    monkeypatch.setattr(blkparse, "parse", bad_requests)
    with pytest.raises(duckdb.InvalidInputException, match="32 columns where 33 were expected"):
        ingest_paths(store, SAMPLES / "demo-cfq-starvation.blkparse.txt")
    assert table_counts(store) == before


def test_streams_end_in_an_error_when_the_parser_fails(store):
    """A parser that fails midway: each table's insert ends in an error and writes nothing (none of its batches
    already read by DuckDB is committed)."""
    import pyarrow as pa

    from backend.ingest.streams import TableStreams

    schema = pa.schema([("line", pa.int64()), ("t_ns", pa.int64())])
    con = store.cursor()
    con.execute("CREATE TABLE t_streamed (source_id INTEGER, line BIGINT, t_ns BIGINT)")
    batch = pa.RecordBatch.from_arrays([pa.array(range(1000)), pa.array(range(1000))], schema=schema)
    with pytest.raises(ValueError, match="line 2001"):
        with TableStreams(store.db, 7, {"t_streamed": schema}) as streams:
            streams.put("t_streamed", batch)
            streams.put("t_streamed", batch)
            raise ValueError("line 2001: bad")
    assert con.execute("SELECT count(*) FROM t_streamed").fetchall() == [(0,)]
    # the same rows without a failure; a table that gets no rows gets no insert
    with TableStreams(store.db, 7, {"t_streamed": schema, "t_empty": schema}) as streams:
        streams.put("t_streamed", batch)
        streams.put("t_streamed", batch)
    assert list(streams.workers) == ["t_streamed"]
    assert con.execute("SELECT source_id, count(*), sum(line) FROM t_streamed GROUP BY 1").fetchall() == [
        (7, 2000, 2 * 499500)
    ]


def test_failure_after_the_summaries_were_committed_leaves_nothing(store, monkeypatch):
    """The timeline's summaries are written and committed beside the chains, before the analysis: an ingest that
    fails after them (here in the chains' insert) deletes them with the staged rows; nothing is visible. The
    same trace then ingests whole."""
    from backend.derive import chains

    xfs = SEED / "xfs-unwritten-stall.trace-cmd-report.txt"
    before = table_counts(store)

    def fails(*a):
        raise RuntimeError("chains lost")

    with monkeypatch.context() as m:
        m.setattr(chains, "insert_chains", fails)
        with pytest.raises(RuntimeError, match="chains lost"):
            ingest_paths(store, xfs)
    assert table_counts(store) == before
    ingest_paths(store, xfs)
    after = table_counts(store)
    assert all(
        after[t] > before[t]
        for t in (
            "analyses",
            "fg_call_rows",
            "fg_names",
            "waits",
            "chain_links",
            "task_slices",
            "tl_lanes",
            "tl_bins",
            "tl_meta",
            "cpu_slices",
        )
    )


def test_file_unreadable_when_hashed_leaves_nothing(store):
    """The SHA-256 reads each file again while the analysis is derived: a read that fails then fails the ingest
    with that error, and nothing is visible."""
    before = table_counts(store)
    good = (SAMPLES / "demo-cfq-starvation.blkparse.txt").read_bytes()

    class SecondReadFails(io.BytesIO):
        passes = 0

        def seek(self, *a):
            self.passes += 1
            return super().seek(*a)

        def readinto(self, b):
            if self.passes > 1:  # detection's seek(0), then the hash's
                raise OSError("disk went away")
            return super().readinto(b)

    from backend.ingest import InputFile

    with pytest.raises(OSError, match="disk went away"):
        store.ingest([InputFile("a.txt", SecondReadFails(good), len(good))])
    assert table_counts(store) == before


def test_rows_of_an_ingest_that_died_are_removed_at_start(tmp_path):
    from backend.store import Store

    s = Store(tmp_path / "d.duckdb")
    con = s.cursor()
    con.execute("INSERT INTO blk_events (source_id, line, t_ns, action) VALUES (999, 1, 0, 'P')")
    s.close()
    s = Store(tmp_path / "d.duckdb")
    assert s.cursor().execute("SELECT count(*) FROM blk_events").fetchall() == [(0,)]
    s.close()
