"""Every read goes through backend.queries.run.run: a statement past its time limit is interrupted (503 through the
API), a result past its row cap refused (422); neither hangs nor fills the memory."""

from __future__ import annotations

import threading
import time

import pytest

from backend.queries import run as query


def test_a_slow_read_is_interrupted_at_its_deadline(store):
    con = store.cursor()
    try:
        start = time.monotonic()
        with pytest.raises(query.QueryTimeout, match="longer than 0.2 s"):
            query.run(con, "SELECT count(*) FROM range(100000000000) a, range(100) b", seconds=0.2)
        assert time.monotonic() - start < 5
        assert query.run(con, "SELECT 42") == [(42,)]  # the cursor goes on working
    finally:
        con.close()


def test_reads_past_the_row_cap_are_refused_in_every_shape(store):
    con = store.cursor()
    try:
        for shape in ("rows", "dicts", "arrow", "numpy"):
            with pytest.raises(query.TooManyRows, match="more than 10 rows"):
                query.run(con, "SELECT * FROM range(11)", shape=shape, max_rows=10)
        assert query.run(con, "SELECT range AS n FROM range(?)", [10], shape="dicts", max_rows=10)[9] == {"n": 9}
        assert query.run(con, "SELECT range AS n FROM range($k)", {"k": 3}, shape="arrow").num_rows == 3
    finally:
        con.close()


def test_deadlines_of_concurrent_reads_are_their_own(store):
    """A quick read beside one that times out is not interrupted."""
    errors: list[Exception] = []

    def slow():
        con = store.cursor()
        try:
            query.run(con, "SELECT count(*) FROM range(100000000000) a, range(100) b", seconds=0.3)
        except query.QueryTimeout as e:
            errors.append(e)
        finally:
            con.close()

    t = threading.Thread(target=slow)
    t.start()
    con = store.cursor()
    try:
        for _ in range(50):
            assert query.run(con, "SELECT count(*) FROM range(100000)", seconds=10) == [(100000,)]
    finally:
        con.close()
    t.join()
    assert len(errors) == 1


def test_a_finished_read_leaves_its_connection_to_no_one(store):
    """The watchdog holds a connection only while its query runs: one it kept until the deadline outlived the cursor
    (and, its thread being a daemon, the process: DuckDB's bindings printed each as leaked at exit)."""
    con = store.cursor()
    try:
        for seconds in (30, 0.5, 3600):
            assert query.run(con, "SELECT 42", seconds=seconds) == [(42,)]
        with query.deadline(con, 30):
            con.execute("SELECT 1").fetchall()
        assert not store.deadlines.holds(con.raw)
    finally:
        con.close()


def test_the_api_answers_a_read_stopped_by_its_limits_with_503_or_422(client, monkeypatch):
    from backend.queries import analyses

    slow = "SELECT count(*) FROM range(100000000000) a, range(100) b"
    monkeypatch.setattr(analyses, "analyses", lambda con, *args, **kw: query.run(con, slow, seconds=0.2))
    r = client.get("/api/analyses")
    assert r.status_code == 503 and "narrow the time window" in r.json()["detail"]
    monkeypatch.setattr(
        analyses, "analyses", lambda con, *args, **kw: query.run(con, "SELECT * FROM range(3)", max_rows=2)
    )
    r = client.get("/api/analyses")
    assert (
        r.status_code == 422
        and r.json()["detail"] == "the result has more than 2 rows: narrow the time window or the filters"
    )
