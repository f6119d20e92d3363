"""A window's dispatch summary and latency over time computed in memory (queries/request_windows.py) are the SQL's:
on the samples with block requests (blkparse, a lab recording's blktrace of two layers, a trace's own block events),
random windows (open ends too), both groupings, a source moved by a clock offset."""

from __future__ import annotations

import random

import pytest

from backend.cache import AnalysisCache
from backend.queries import request_windows
from backend.queries import requests as blk
from tests.conftest import SAMPLES, ingest_paths

LAB = SAMPLES / "real" / "ext4-jbd2"
CAPTURES = {
    "cfq demo": [SAMPLES / "demo-cfq-starvation.blkparse.txt"],
    "incident": [SAMPLES / n for n in ("incident.blkparse.txt", "incident.trace-cmd-report.txt")],
    "ext4 seed": [SAMPLES / "ext4-jbd2-commit.blkparse.txt", SAMPLES / "ext4-jbd2-commit.trace-cmd-report.txt"],
    "lab dm-0 + vdb": [LAB / "blktrace" / "dm-0.blktrace.0", LAB / "blktrace" / "vdb.blktrace.0"],
    "a trace.dat's own block events": [LAB / "trace.dat"],
}


def _same_dispatch(got: list[dict], want: list[dict]) -> None:
    assert [g["key"] for g in got] == [w["key"] for w in want]
    for g, w in zip(got, want):
        for m in ("i2d", "d2c", "q2c"):
            if w[m]["avg"] is not None:  # DuckDB divides in long double, then rounds: the last bit may differ
                assert g[m]["avg"] == pytest.approx(w[m]["avg"], rel=1e-15, abs=0)
                g[m]["avg"] = w[m]["avg"]
        assert g == w


@pytest.mark.parametrize("capture", list(CAPTURES))
def test_a_windows_dispatch_summary_and_latency_over_time_are_the_querys(store, capture):
    aid = ingest_paths(store, *CAPTURES[capture])["id"]
    con = store.cursor()
    cache = AnalysisCache()
    sids = [s for (s,) in con.execute("SELECT id FROM sources WHERE analysis_id = ? ORDER BY id", [aid]).fetchall()]
    rng = random.Random(7)
    for off in (0, 3_000_000_000):
        con.execute("UPDATE sources SET clock_offset_ns = ? WHERE id = ?", [off, sids[-1]])
        cache.forget(aid)  # as a PATCH does
        lo, hi = con.execute(
            "SELECT min(r.t_ns + s.clock_offset_ns), max(coalesce(r.c_ns, r.d_ns, r.t_ns) + s.clock_offset_ns)"
            " FROM blk_requests r JOIN sources s ON s.id = r.source_id WHERE s.analysis_id = ?",
            [aid],
        ).fetchall()[0]
        assert lo is not None, "the capture has block requests"
        cols = request_windows.request_columns(con, cache, aid)
        windows = [(lo, hi), (None, hi), (lo, None), (lo - 5, lo - 1)]
        for _ in range(12):
            a = rng.randint(lo, hi)
            windows.append((a, a + rng.randint(1, max(1, (hi - lo) // 2))))
        for t0, t1 in windows:
            for by in ("device", "process"):
                want = blk.dispatch_sql(con, cache, aid, by, t0, t1)
                got = blk._dispatch_items(
                    cols.dispatch(by, t0 if t0 is not None else -(1 << 62), t1 if t1 is not None else 1 << 62), by
                )
                _same_dispatch(got, want)
            if t0 is None or t1 is None:
                continue
            for buckets in (1, 37, 400):
                want = blk.latency_sql(con, cache, aid, buckets, t0=t0, t1=t1)
                got = cols.latency(t0, t1, buckets)
                assert {k: got[k] for k in ("t0_ns", "t1_ns", "bucket_ns")} == {
                    k: want[k] for k in ("t0_ns", "t1_ns", "bucket_ns")
                }
                for m in ("i2d", "d2c"):
                    keep = ("t_ns", "count", "p50_ns", "max_ns")
                    assert [{k: p[k] for k in keep} for p in got["series"][m]] == [
                        {k: p[k] for k in keep} for p in want["series"][m]
                    ], (t0, t1, buckets, m)
                    for p in got["series"][m]:  # the request named holds the bucket's max (ties: the first)
                        v = con.execute(
                            f"SELECT {m}_ns FROM blk_requests WHERE source_id = ? AND line = ?",
                            [p["max_source_id"], p["max_line"]],
                        ).fetchall()
                        assert v == [(p["max_ns"],)]


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 10, 19, 20, 21, 99, 100, 101, 1000, 1001])
def test_the_quantile_index_is_duckdbs(n):
    import duckdb

    con = duckdb.connect()
    for q, (integral, scaling) in {"0.5": (5, 10), "0.95": (95, 100), "0.99": (99, 100), "0.50": (50, 100)}.items():
        want = con.execute(f"SELECT quantile_disc(x, {q}) FROM range({n}) t(x)").fetchall()[0][0]
        assert request_windows._quantile_index(n, integral, scaling) == want, q
    lst = con.execute(f"SELECT quantile_disc(x, [0.5, 0.95, 0.99]) FROM range({n}) t(x)").fetchall()[0][0]
    assert [request_windows._quantile_index(n, i, 100) for i in (50, 95, 99)] == lst


@pytest.mark.parametrize("texts", [request_windows.REQUEST_TEXTS, 0])
@pytest.mark.parametrize("capture", ["incident", "lab dm-0 + vdb"])
def test_a_windows_requests_are_the_querys(client, store, monkeypatch, capture, texts):
    """/requests over a window: the first requests found in memory, their texts kept or read by their ids, are the
    query's rows in its order, with the model's shape, across a PATCH of an offset."""
    from pydantic import TypeAdapter

    from backend.api.requests import BlockRequest

    monkeypatch.setattr(request_windows, "REQUEST_TEXTS", texts)
    aid = ingest_paths(store, *CAPTURES[capture])["id"]
    url = f"/api/analyses/{aid}"
    con = store.cursor()
    cache = AnalysisCache()
    source = client.get(url).json()["sources"][-1]["id"]
    rng = random.Random(3)
    for offset in (0, 2_000_000_000):
        if offset:
            assert client.patch(f"{url}/sources/{source}", json={"clock_offset_ns": offset}).status_code == 200
            cache.forget(aid)  # this test's own, for the query's answer
        detail = client.get(url).json()
        lo, hi = detail["t_min_ns"], detail["t_max_ns"]
        for _ in range(10):
            t0 = rng.choice([None, rng.randint(lo, hi)])
            t1 = rng.choice([None, (t0 if t0 is not None else lo) + rng.randint(0, (hi - lo) // 2)])
            if t0 is None and t1 is None:
                t1 = hi
            for order in ("i2d", "d2c", "q2c", "time"):
                limit = rng.choice([1, 7, 100])
                params = {"order": order, "limit": limit} | {
                    k: v for k, v in (("t0_ns", t0), ("t1_ns", t1)) if v is not None
                }
                got = client.get(f"{url}/requests", params=params)
                assert got.status_code == 200
                TypeAdapter(list[BlockRequest]).validate_json(got.content)
                want = blk.requests(con, cache, aid, order, limit, t0=t0, t1=t1)
                assert got.json() == want, params


def test_the_summary_and_latency_bodies_are_their_models_exactly(client, store):
    """The dispatch summary and latency over time are sent without validation: each body, whole and windowed, is
    what its response model would send (no field missing, none more, the same values)."""
    from pydantic import TypeAdapter

    from backend.api.requests import DispatchGroup, LatencyOverTime

    aid = ingest_paths(store, *CAPTURES["incident"])["id"]
    url = f"/api/analyses/{aid}"
    detail = client.get(url).json()
    lo, hi = detail["t_min_ns"], detail["t_max_ns"]
    for window in ({}, {"t0_ns": lo + (hi - lo) // 3, "t1_ns": hi - (hi - lo) // 4}, {"t0_ns": lo + 1}):
        for path, model in (
            ("dispatch-summary?by=device", list[DispatchGroup]),
            ("dispatch-summary?by=process", list[DispatchGroup]),
            ("latency-over-time?buckets=50", LatencyOverTime),
        ):
            r = client.get(f"{url}/{path}", params=window)
            assert r.status_code == 200 and r.headers["content-type"] == "application/json"
            adapter = TypeAdapter(model)
            assert adapter.dump_python(adapter.validate_json(r.content), mode="json") == r.json(), (path, window)
