"""The precomputed read paths give exactly what the straightforward queries give.

* heatindex.Index (heatmaps and their boxes without a SQL scan) against a brute-force computation on random
  events with many latency ties, several sources and clock offsets, and against heatmap_sql / the SQL box on
  the samples (random windows, bins and boxes; blocks made tiny so that every code path runs);
* blk_top (/requests without filters) against the query over blk_requests;
* the dispatch summary kept after its first computation against the live query, with and without a window;
* waits and chains kept per clock offsets: a PATCH of an offset shows at once.
"""

from __future__ import annotations

import json
import random
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pytest

from backend.cache import AnalysisCache
from backend.queries import heatindex, heatmap_events, stalls
from backend.queries import heatmaps as heatmap
from backend.queries import requests as blk
from backend.queries.catalogue import offsets_now as clock_offsets
from tests.conftest import PUBLIC, SAMPLES, ingest_paths

DEMO = SAMPLES / "demo-cfq-starvation.blkparse.txt"
XFS = SAMPLES / "xfs-unwritten-stall.trace-cmd-report.txt"
EXT4 = (SAMPLES / "ext4-jbd2-commit.trace-cmd-report.txt", SAMPLES / "ext4-jbd2-commit.blkparse.txt")
INCIDENT = [SAMPLES / n for n in ("incident.blkparse.txt", "incident.trace-cmd-report.txt")]


@pytest.fixture(params=[10, 3], ids=["blocks-1024", "blocks-8"])
def block_bits(request, monkeypatch):
    """The index with its real block size, and with blocks of 8 events (whole blocks, cut blocks, many of both)."""
    monkeypatch.setattr(heatindex, "LOG_BLOCK", request.param)
    monkeypatch.setattr(heatindex, "BLOCK", 1 << request.param)
    return request.param


@pytest.fixture
def cache():
    """What a server would remember, fresh for each test (nothing built under another test's block size)."""
    return AnalysisCache()


# ---- the index against brute force ----------------------------------------------------------------------------


def _events(rng: np.random.Generator, n: int, sources=(3, 7)) -> pa.Table:
    sid = rng.choice(np.asarray(sources), n)
    line = np.empty(n, np.int64)
    for s in sources:  # lines unique within a source
        m = sid == s
        line[m] = rng.permutation(np.arange(1, 4 * n))[: m.sum()]
    v = rng.choice([5, 800, 1000, 1001, 65_000, 65_001, 2_000_000, 3_000_000_000], n)  # many ties
    v = np.where(rng.random(n) < 0.3, rng.integers(1, 10**7, n), v)
    t = rng.integers(0, 10**9, n)
    t[: n // 10] = 500_000_000  # ties in time too
    pid = pa.array(rng.integers(1, 50, n), mask=rng.random(n) < 0.1)
    return pa.table({"sid": pa.array(sid, pa.int32()), "t": t, "v": v, "line": line, "pid": pid})


def _brute(tb: pa.Table, offsets: dict, lo: int, hi: int, x_bins: int, y_bins: int) -> dict:
    rows = [r for r in tb.to_pylist() if lo <= r["t"] + offsets[r["sid"]] <= hi]
    if not rows:
        return {"count": 0}
    vals = sorted(r["v"] for r in rows)
    n = len(vals)
    pct = [
        vals[max(0, -(-Fraction(str(q)).numerator * n // Fraction(str(q)).denominator) - 1)] for q in heatmap.QUANTILES
    ]
    edges = heatmap.latency_edges(vals[0], vals[-1], y_bins)
    inner = edges[1:-1]
    x_bin = max(1, -(-(hi - lo + 1) // x_bins))
    cells: dict = {}
    for r in rows:
        key = ((r["t"] + offsets[r["sid"]] - lo) // x_bin, sum(1 for e in inner if e <= r["v"]))
        best = cells.get(key)
        cand = (-r["v"], r["sid"], r["line"])
        if best is None:
            cells[key] = [1, cand, r]
        else:
            best[0] += 1
            if cand < best[1]:
                best[1], best[2] = cand, r
    return {
        "count": n,
        "pct": pct,
        "min": vals[0],
        "max": vals[-1],
        "edges": edges,
        "x_bin": x_bin,
        "cells": [(x, y, c, r["v"], r["sid"], r["line"], r["pid"]) for (x, y), (c, _, r) in sorted(cells.items())],
    }


def test_index_equals_brute_force(block_bits):
    rng = np.random.default_rng(7)
    tb = _events(rng, 3000)
    idx = heatindex.build(tb)
    offsets = {3: 0, 7: -123_456_789}
    span = idx.span(offsets)
    windows = [span, (span[0], span[0]), (span[1], span[1]), (span[0] - 10, span[1] + 10), (-(10**12), -(10**11))]
    r = random.Random(3)
    for _ in range(25):
        a = r.randint(span[0] - 10**6, span[1])
        windows.append((a, a + r.choice([1, 10**3, 10**6, 10**8, 10**9])))
    for lo, hi in windows:
        for x_bins, y_bins in ((120, 40), (7, 3), (1, 1), (1000, 200)):
            want = _brute(tb, offsets, lo, hi, x_bins, y_bins)
            wins = idx.window(offsets, lo, hi)
            n, qs, vmin, vmax = idx.order_stats(wins, heatmap.QUANTILES)
            assert n == want["count"], (lo, hi)
            if not n:
                continue
            assert (qs, vmin, vmax) == (want["pct"], want["min"], want["max"])
            edges = heatmap.latency_edges(vmin, vmax, y_bins)
            x_bin = max(1, -(-(hi - lo + 1) // x_bins))
            assert idx.cells(wins, offsets, lo, x_bin, x_bins, edges) == want["cells"], (lo, hi, x_bins, y_bins)


def test_index_boxes_equal_brute_force(block_bits):
    rng = np.random.default_rng(11)
    tb = _events(rng, 2000)
    idx = heatindex.build(tb)
    offsets = {3: 5_000, 7: 0}
    rows = tb.to_pylist()
    r = random.Random(5)
    for _ in range(60):
        t0 = r.choice([None, r.randint(0, 10**9)])
        t1 = r.choice([None, (t0 or 0) + r.choice([0, 10**5, 10**7, 10**9])])
        lat_min = r.choice([None, 0, 800, 1001, r.randint(1, 10**7)])
        lat_max = r.choice([None, 1000, 65_001, 3_000_000_000, r.randint(1, 10**7)])
        limit = r.choice([1, 5, 100, 1000])
        inside = [
            x
            for x in rows
            if (t0 is None or x["t"] + offsets[x["sid"]] >= t0)
            and (t1 is None or x["t"] + offsets[x["sid"]] <= t1)
            and (lat_min is None or x["v"] >= lat_min)
            and (lat_max is None or x["v"] < lat_max)
        ]
        inside.sort(key=lambda x: (-x["v"], x["sid"], x["line"]))
        count, ranks = idx.box(idx.window(offsets, t0, t1), lat_min, lat_max, limit)
        assert count == len(inside)
        assert list(zip(idx.sid[ranks].tolist(), idx.line[ranks].tolist())) == [
            (x["sid"], x["line"]) for x in inside[:limit]
        ]


def test_rank_order_fallback_for_huge_latencies():
    """Latencies too large to pack with the line into one key are ranked by lexsort: the same order."""
    tb = pa.table(
        {
            "sid": pa.array([1, 1, 2, 2], pa.int32()),
            "t": [1, 2, 3, 4],
            "v": [2**62, 2**62, 5, 2**62],
            "line": [9, 4, 1, 2],
            "pid": [1, 2, 3, 4],
        }
    )
    idx = heatindex.build(tb)
    assert idx.line.tolist() == [4, 9, 2, 1] and idx.sid.tolist() == [1, 1, 2, 2]


# ---- the index against the SQL on the samples ----------------------------------------------------------------


def _windows(h: dict, rng: random.Random, k: int = 12) -> list[tuple[int | None, int | None]]:
    lo, hi = h["t0_ns"], h["t1_ns"]
    out = [(None, None), (lo, hi), (lo - 5, None), (None, hi + 5), (lo, lo), (hi, hi), (hi + 1, hi + 10**9)]
    for _ in range(k):
        a = rng.randint(lo, hi)
        out.append((a, a + int((hi - lo) / 10 ** rng.uniform(0, 4))))
    return out


def _compare_heatmaps(con, cache, aid, metric, rng, filter=None, pid=None, dev=None):
    whole = heatmap.heatmap_sql(con, aid, metric, 120, 40, pid, dev, filter=filter)
    if whole["t0_ns"] is None:  # nothing with these filters
        assert heatmap.heatmap(con, cache, aid, metric, 120, 40, pid, dev, filter=filter) == whole
        return
    for t0, t1 in _windows(whole, rng):
        for x_bins, y_bins in ((120, 40), (9, 5), (1000, 200)):
            args = (con, aid, metric, x_bins, y_bins, pid, dev, t0, t1)
            got = heatmap.heatmap(con, cache, *args[1:], filter=filter)
            assert got == heatmap.heatmap_sql(*args, filter=filter), (t0, t1)
    for _ in range(15):  # boxes of cells, as the UI builds them
        x0 = rng.randrange(whole["x_bins"])
        box = {
            "t0": whole["t0_ns"] + x0 * whole["x_bin_ns"],
            "t1": whole["t0_ns"] + (x0 + rng.randint(1, 40)) * whole["x_bin_ns"] - 1,
            "lat_min": rng.choice([None] + whole["y_edges_ns"][1:-1]),
            "lat_max": rng.choice([None] + whole["y_edges_ns"][1:-1]),
            "limit": rng.choice([1, 10, 200]),
        }
        if box["lat_min"] is not None and box["lat_max"] is not None and box["lat_max"] <= box["lat_min"]:
            box["lat_max"] = None
        live = heatmap_events.events(con, cache, aid, metric, filter=filter, pid=pid, dev=dev, live=True, **box)
        assert heatmap_events.events(con, cache, aid, metric, filter=filter, pid=pid, dev=dev, **box) == live, box
    assert heatmap_events.events(con, cache, aid, metric, filter=filter, pid=pid, dev=dev) == heatmap_events.events(
        con, cache, aid, metric, filter=filter, pid=pid, dev=dev, live=True
    )


def test_block_heatmaps_equal_the_sql(store, block_bits, cache):
    aid = ingest_paths(store, DEMO)["id"]
    con = store.cursor()
    rng = random.Random(block_bits)
    for metric in ("i2d", "d2c", "q2c"):
        _compare_heatmaps(con, cache, aid, metric, rng)
    for pid, dev in ((311, None), (None, "8,0"), (804, "8,0"), (999999, None), (None, "9,9")):
        _compare_heatmaps(con, cache, aid, "i2d", rng, pid=pid, dev=dev)


def test_func_and_wait_heatmaps_equal_the_sql(store, block_bits, cache):
    rng = random.Random(1)
    for paths in ((XFS,), EXT4, INCIDENT):
        aid = ingest_paths(store, *paths)["id"]
        con = store.cursor()
        for func in [f["func"] for f in heatmap.metrics(con, cache, aid, limit=4)["functions"]]:
            _compare_heatmaps(con, cache, aid, "func", rng, filter=func)
        _compare_heatmaps(con, cache, aid, "wait", rng)
        for lock in heatmap.metrics(con, cache, aid)["locks"][:2]:
            _compare_heatmaps(con, cache, aid, "wait", rng, filter=lock["lock_key"])
        for (pid,) in con.execute(
            "SELECT DISTINCT pid FROM waits w JOIN sources s ON s.id = w.source_id"
            " WHERE s.analysis_id = ? ORDER BY pid LIMIT 2",
            [aid],
        ).fetchall():
            _compare_heatmaps(con, cache, aid, "wait", rng, pid=pid)
            func = heatmap.metrics(con, cache, aid, limit=1)["functions"][0]["func"]
            _compare_heatmaps(con, cache, aid, "func", rng, filter=func, pid=pid)


def test_several_sources_with_offsets_equal_the_sql(store, block_bits, cache):
    """Two blkparse sources in one analysis, moved apart: one index, each source's offset added at read."""
    aid = ingest_paths(store, DEMO, EXT4[1], INCIDENT[0])["id"]
    con = store.cursor()
    sids = [s for (s,) in con.execute("SELECT id FROM sources WHERE analysis_id = ? ORDER BY id", [aid]).fetchall()]
    rng = random.Random(9)
    for offsets in ((0, 0, 0), (0, 2_000_000_000, -7), (-5_000_000_000, 10**12, 3)):
        for sid, off in zip(sids, offsets):
            con.execute("UPDATE sources SET clock_offset_ns = ? WHERE id = ?", [off, sid])
        cache.forget(aid)  # as a PATCH does: the analysis' catalogue holds its offsets
        for metric in ("i2d", "q2c"):
            _compare_heatmaps(con, cache, aid, metric, rng)


def test_the_route_body_is_the_model(client, store):
    """The heatmap route sends the analysis' dict without validating it: it has the model's shape."""
    from pydantic import TypeAdapter

    from backend.api.heatmaps import Heatmap

    aid = ingest_paths(store, DEMO)["id"]
    for params in ({"metric": "i2d"}, {"metric": "q2c", "t0_ns": 1, "t1_ns": 2}, {"metric": "d2c", "pid": 311}):
        body = client.get(f"/api/analyses/{aid}/heatmap", params=params).json()
        assert TypeAdapter(Heatmap).validate_python(body).model_dump(mode="json") == body


# ---- requests, dispatch summary, waits and chains ----------------------------------------------------------


def test_requests_from_blk_top_equal_the_query(store):
    aid = ingest_paths(store, DEMO, EXT4[1])["id"]
    con = store.cursor()
    assert con.execute("SELECT count(*) FROM blk_top").fetchall()[0][0] > 0
    for order in ("i2d", "d2c", "q2c", "time"):
        for limit in (1, 100, blk.TOP, blk.TOP + 1, 10000):
            assert blk.requests(con, AnalysisCache(), aid, order, limit) == blk.requests_sql(con, aid, order, limit), (
                order,
                limit,
            )
    # filters and windows (each source's window in its own time)
    sids = [s for (s,) in con.execute("SELECT id FROM sources WHERE analysis_id = ? ORDER BY id", [aid]).fetchall()]
    con.execute("UPDATE sources SET clock_offset_ns = ? WHERE id = ?", [3_000_000_000, sids[1]])
    rng = random.Random(2)
    for _ in range(20):
        t0 = rng.choice([None, rng.randint(0, 40 * 10**9)])
        t1 = rng.choice([None, (t0 or 0) + rng.randint(0, 20 * 10**9)])
        kw = {"pid": rng.choice([None, 311, 804]), "dev": rng.choice([None, "8,0"]), "t0": t0, "t1": t1}
        order = rng.choice(["i2d", "d2c", "q2c", "time"])
        assert blk.requests(con, AnalysisCache(), aid, order, 50, **kw) == blk.requests_sql(
            con, aid, order, 50, **kw
        ), kw
    assert blk.requests(con, AnalysisCache(), aid, "i2d", 100) == blk.requests_sql(con, aid, "i2d", 100)


def test_requests_without_the_metric_follow_the_slowest(store):
    """Fewer requests with the metric than asked for: those without it come after, as the query orders them."""
    aid = ingest_paths(store, EXT4[1])["id"]
    con = store.cursor()
    for order in ("i2d", "d2c", "q2c"):
        assert blk.requests(con, AnalysisCache(), aid, order, 1000) == blk.requests_sql(con, aid, order, 1000)


def test_dispatch_summary_kept_equals_live(store, client, cache):
    aid = ingest_paths(store, DEMO, EXT4[1])["id"]
    con = store.cursor()
    span = client.get(f"/api/analyses/{aid}").json()
    for by in ("process", "device"):
        live = blk.dispatch_sql(con, AnalysisCache(), aid, by)
        btt = blk.btt_rows(con, AnalysisCache(), aid, by)  # btt's figures come with the whole trace's summary only
        whole = [{**g, "btt": btt.get(g["dev"] if by == "device" else g["pid"], [])} for g in live]
        assert any(g["btt"] for g in whole)
        assert blk.dispatch_summary(con, cache, aid, by) == whole  # computed
        assert blk.dispatch_summary(con, cache, aid, by) == whole  # kept
        # a window holding every request is the same summary; a narrower one is computed, without btt's figures
        assert blk.dispatch_summary(con, cache, aid, by, span["t_min_ns"], span["t_max_ns"]) == whole
        t0, t1 = span["t_min_ns"] + 10**9, span["t_min_ns"] + 9 * 10**9
        got = blk.dispatch_summary(con, cache, aid, by, t0, t1)
        assert got == blk.dispatch_sql(con, AnalysisCache(), aid, by, t0, t1) and got != live
        # against a straightforward query over the window (the old one: join, aligned time in the WHERE)
        rows = con.execute(
            "SELECT count(*), quantile_disc(r.i2d_ns, [0.5, 0.95, 0.99]), max(r.q2c_ns) FROM blk_requests r"
            " JOIN sources s ON s.id = r.source_id WHERE s.analysis_id = ? AND r.t_ns + s.clock_offset_ns BETWEEN ? AND ?",
            [aid, t0, t1],
        ).fetchall()[0]
        assert sum(g["count"] for g in got) == rows[0]
        if by == "device" and len(got) == 1:
            assert [got[0]["i2d"][k] for k in ("p50", "p95", "p99")] == rows[1] and got[0]["q2c"]["max"] == rows[2]


def test_waits_and_chains_follow_a_new_offset(client, store):
    aid = ingest_paths(store, *INCIDENT)["id"]
    url = f"/api/analyses/{aid}"
    ftrace = next(s["id"] for s in client.get(url).json()["sources"] if s["format"] == "ftrace")
    before = (client.get(f"{url}/waits").json(), client.get(f"{url}/chains").json())
    assert client.patch(f"{url}/sources/{ftrace}", json={"clock_offset_ns": 1_000_000_000}).status_code == 200
    waits, chains = client.get(f"{url}/waits").json(), client.get(f"{url}/chains").json()
    con = store.cursor()
    assert waits == stalls.waits(con, aid, "duration", 100) and chains == stalls.chains(con, AnalysisCache(), aid, 50)
    assert [w["start_ns"] for w in waits] != [w["start_ns"] for w in before[0]]
    # a change made behind the API's back (no PATCH) still gives the queries a new key: the offsets are part of it
    # (the HTTP read cache is dropped by PATCH, the server's only writer of offsets: backend/cache/)
    con.execute("UPDATE sources SET clock_offset_ns = 5 WHERE id = ?", [ftrace])
    moved = stalls.waits(con, aid, "duration", 100)
    assert [w["start_ns"] for w in moved] != [w["start_ns"] for w in waits]
    assert moved == stalls.waits(con, aid, "duration", 100)


# ---- flame graphs built from columns ---------------------------------------------------------------------------


def _random_stacks(rng: random.Random, n: int) -> list[tuple[list[str], int]]:
    names = ["a", "b", "c", "schedule", "down", "__down", "xfs_buf_lock", "other", "io_schedule", "d"]
    rows = []
    for _ in range(n):
        depth = rng.choice([0, 1, 2, 3, 5, 8, 12])
        rows.append(
            ([rng.choice(names[: rng.choice([2, 4, 10])]) for _ in range(depth)], rng.choice([1, 1, 2, 7, 1000]))
        )
    return rows


@pytest.mark.parametrize("seed", range(6))
def test_tree_from_columns_equals_build_tree(seed):
    from backend.queries import flame

    rng = random.Random(seed)
    rows = _random_stacks(rng, rng.choice([0, 1, 50, 400]))
    paths = pa.array([f for f, _ in rows], pa.list_(pa.string()))
    values = np.array([v for _, v in rows], np.int64)
    for invert in (False, True):
        for filt in (None, "down", "x", "nosuch"):
            for frac in (1 / 3840, 0.01, 0.2):
                tree, total, distinct, matched = flame.build_tree_columns(
                    paths, values, invert=invert, filter=filt, min_fraction=frac
                )
                assert tree == flame.build_tree(rows, invert=invert, filter=filt, min_fraction=frac)
                assert total == sum(v for _, v in rows)
                assert distinct == len({tuple(f) for f, _ in rows})
                assert matched == sum(v for f, v in rows if filt is None or any(filt in x for x in f))


def test_flamegraph_equals_the_merged_stacks(store, client):
    from backend.queries import offcpu

    files = [
        SAMPLES / "xfs-open-stall.offcputime.txt",
        SAMPLES / "incident.offcputime.txt",
        SAMPLES / "ext4-jbd2-commit.offwaketime.txt",
    ]
    files += sorted((PUBLIC / "offcputime").glob("*.txt")) + sorted((PUBLIC / "offwaketime").glob("*.txt"))  # if any
    aid = ingest_paths(store, *files)["id"]
    con = store.cursor()
    for side in ("target", "waker"):
        for kw in (
            {},
            {"invert": True},
            {"unit": "stacks"},
            {"by_task": False, "filter": "schedule"},
            {"filter": "xfs", "invert": True},
            {"comm": "supervise"},
            {"pid": 1},
            {"source": 1},
        ):
            assert offcpu.flamegraph(con, aid, side=side, **kw) == offcpu.flamegraph_rows(con, aid, side=side, **kw), kw
    # the route: kept after the first call, the same body, leaves without `children`
    first = client.get(f"/api/analyses/{aid}/flamegraph", params={"invert": True}).json()
    assert client.get(f"/api/analyses/{aid}/flamegraph", params={"invert": True}).json() == first

    def full(node):
        return {**node, "children": [full(c) for c in node.get("children", [])]}

    assert full(first["root"]) == offcpu.flamegraph_rows(con, aid, invert=True)["root"]


def _lot_reference(con, aid, buckets, pid=None, dev=None, t0=None, t1=None):
    """latency-over-time as one query per metric over blk_requests joined with sources (aligned times)."""
    extra, params = "", {"aid": aid}
    for cond, k, v in (("r.pid = $pid", "pid", pid), ("r.dev = $dev", "dev", dev)):
        if v is not None:
            extra += f" AND {cond}"
            params[k] = v
    lo, hi = con.execute(
        "SELECT min(r.t_ns + s.clock_offset_ns), max(coalesce(r.c_ns, r.d_ns, r.t_ns) + s.clock_offset_ns)"
        f" FROM blk_requests r JOIN sources s ON s.id = r.source_id WHERE s.analysis_id = $aid{extra}",
        params,
    ).fetchall()[0]
    lo, hi = (t0 if t0 is not None else lo), (t1 if t1 is not None else hi)
    bucket = max(1, -(-(hi - lo + 1) // buckets))
    out = {}
    for m, at in (("i2d", "i_ns"), ("d2c", "d_ns")):
        out[m] = con.execute(
            f"SELECT $lo + (r.{at} + s.clock_offset_ns - $lo) // $bucket * $bucket, count(*),"
            f" quantile_disc(r.{m}_ns, 0.5), max(r.{m}_ns) FROM blk_requests r JOIN sources s ON s.id = r.source_id"
            f" WHERE s.analysis_id = $aid AND r.{m}_ns IS NOT NULL AND r.{at} + s.clock_offset_ns BETWEEN $lo AND $hi{extra}"
            " GROUP BY 1 ORDER BY 1",
            {**params, "lo": lo, "hi": hi, "bucket": bucket},
        ).fetchall()
    return lo, hi, bucket, out


def test_latency_over_time_equals_the_query(store, client, cache):
    aid = ingest_paths(store, DEMO, EXT4[1])["id"]
    con = store.cursor()
    sids = [s for (s,) in con.execute("SELECT id FROM sources WHERE analysis_id = ? ORDER BY id", [aid]).fetchall()]
    rng = random.Random(4)
    for off in (0, 4_000_000_000):
        con.execute("UPDATE sources SET clock_offset_ns = ? WHERE id = ?", [off, sids[1]])
        cache.forget(aid)  # as a PATCH does: the analysis' catalogue holds its offsets
        calls = [{}, {}, {"pid": 311}, {"dev": "8,0"}]
        for _ in range(6):
            t0 = rng.randint(0, 30 * 10**9)
            calls.append({"t0": t0, "t1": t0 + rng.randint(1, 10**10)})
        for kw in calls:
            got = blk.latency_over_time(con, cache, aid, 37, **kw)
            lo, hi, bucket, want = _lot_reference(con, aid, 37, **kw)
            assert (got["t0_ns"], got["t1_ns"], got["bucket_ns"]) == (lo, hi, bucket)
            for m in ("i2d", "d2c"):
                assert [(p["t_ns"], p["count"], p["p50_ns"], p["max_ns"]) for p in got["series"][m]] == want[m], kw
                for p in got["series"][m]:  # the request named holds the max
                    v = con.execute(
                        f"SELECT {m}_ns FROM blk_requests WHERE source_id = ? AND line = ?",
                        [p["max_source_id"], p["max_line"]],
                    ).fetchall()
                    assert v == [(p["max_ns"],)]


def test_more_events_than_an_index_holds_are_binned_in_sql(store, monkeypatch, cache):
    """Past INDEX_MAX_EVENTS (a 5 GiB blkparse upload: ~24 M requests, whose index load passed the reads' row cap
    and answered 422) no index is built: a pid's or a device's heatmap and the boxes are the SQL's, the whole
    metric's is the grid summary's (tests/test_heatsummary.py)."""

    aid = ingest_paths(store, DEMO)["id"]
    con = store.cursor()
    monkeypatch.setattr(heatmap, "INDEX_MAX_EVENTS", 10)
    con.execute("DELETE FROM first_views")  # the whole heatmap stored at ingest, under the threshold as it was
    args = (con, aid, "i2d", 120, 40)
    assert heatmap.heatmap(con, cache, *args[1:], pid=311) == heatmap.heatmap_sql(*args, pid=311)
    assert heatmap_events.events(con, cache, aid, "i2d", limit=5) == heatmap_events.events(
        con, cache, aid, "i2d", limit=5, live=True
    )
    assert cache.indexes.used_bytes() == 0  # no index built
    assert heatmap.heatmap(con, cache, *args[1:])["percentiles"] == heatmap.heatmap_sql(*args)["percentiles"]
    assert cache.index_kept((aid, "i2d", None, "summary", clock_offsets(con, aid)))  # the grid summary, kept
    assert cache.indexes.used_bytes() == heatmap.grid_summary(con, cache, aid, "i2d", None).nbytes  # and only it


def test_windowed_chains_equal_the_query(client, store):
    """A window's chains come from the analysis' built chains (stalls.BuiltChains): the same chains, in rank
    order, as the SQL over chain_links finds (the first link's wait overlapping the window), with the whole
    analysis' links, across a PATCH of an offset; the body has the model's shape."""
    from pydantic import TypeAdapter

    from backend.api.stalls import Chain

    aid = ingest_paths(store, *INCIDENT, *EXT4)["id"]
    url = f"/api/analyses/{aid}"
    con = store.cursor()
    whole = {c["id"]: c for c in client.get(f"{url}/chains", params={"limit": 1000}).json()}
    assert len(whole) > 3
    ftrace = next(s["id"] for s in client.get(url).json()["sources"] if s["format"] == "ftrace")
    rng = random.Random(11)
    for offset in (0, 2_000_000_000):
        if offset:
            assert client.patch(f"{url}/sources/{ftrace}", json={"clock_offset_ns": offset}).status_code == 200
            whole = {c["id"]: c for c in client.get(f"{url}/chains", params={"limit": 1000}).json()}
        lo = min(c["links"][0]["start_ns"] for c in whole.values())
        hi = max(c["links"][0]["end_ns"] for c in whole.values())
        for _ in range(25):
            t0 = rng.choice([None, rng.randint(lo - 10**9, hi)])
            t1 = rng.choice([None, (t0 if t0 is not None else lo) + rng.randint(0, (hi - lo) // 3)])
            limit = rng.choice([1, 3, 50])
            params = (
                {"limit": limit} | ({"t0_ns": t0} if t0 is not None else {}) | ({"t1_ns": t1} if t1 is not None else {})
            )
            got = client.get(f"{url}/chains", params=params).json()
            assert TypeAdapter(list[Chain]).validate_python(got) is not None
            want = [
                cid
                for (cid,) in con.execute(
                    "SELECT c.chain_id FROM chains c JOIN chain_links l ON l.analysis_id = c.analysis_id"
                    " AND l.chain_id = c.chain_id AND l.pos = 0 JOIN sources s ON s.id = l.source_id"
                    " WHERE c.analysis_id = $aid AND ($t0::BIGINT IS NULL OR l.end_ns + s.clock_offset_ns >= $t0)"
                    " AND ($t1::BIGINT IS NULL OR l.start_ns + s.clock_offset_ns <= $t1) ORDER BY c.chain_id LIMIT $n",
                    {"aid": aid, "t0": t0, "t1": t1, "n": limit},
                ).fetchall()
            ]
            assert [c["id"] for c in got] == want, (t0, t1, limit)
            assert got == [whole[cid] for cid in want]


@pytest.mark.parametrize("texts", [10_000, 0])
def test_windowed_waits_equal_the_query(client, store, monkeypatch, texts):
    """A window's waits found among the ranked waits (stall_windows.RankedWaits), their texts kept or read by their
    ids, are what the SQL search answers (stalls.waits): both orders, idle sleeps or not, overlapping or starting,
    across a PATCH; the body has the model's shape."""
    from pydantic import TypeAdapter

    from backend.api.stalls import Wait
    from backend.queries import stall_windows

    monkeypatch.setattr(stall_windows, "WAIT_TEXTS", texts)
    aid = ingest_paths(store, *INCIDENT, *EXT4)["id"]
    url = f"/api/analyses/{aid}"
    con = store.cursor()
    span = client.get(url).json()
    lo, hi = span["t_min_ns"], span["t_max_ns"]
    ftrace = next(s["id"] for s in span["sources"] if s["format"] == "ftrace")
    rng = random.Random(12)
    for offset in (0, -3_000_000_000):
        if offset:
            assert client.patch(f"{url}/sources/{ftrace}", json={"clock_offset_ns": offset}).status_code == 200
            lo, hi = lo + offset, hi
        for _ in range(30):
            t0 = rng.choice([None, rng.randint(lo - 10**9, hi)])
            t1 = rng.choice([None, (t0 if t0 is not None else lo) + rng.randint(0, (hi - lo) // 2)])
            kw = {
                "order": rng.choice(["duration", "start"]),
                "limit": rng.choice([1, 7, 100]),
                "idle": rng.choice([False, True]),
                "starting": rng.choice([False, True]) and t0 is not None,
            }
            want = stalls.waits(
                con, aid, kw["order"], kw["limit"], t0=t0, t1=t1, idle=kw["idle"], starting=kw["starting"]
            )
            params = {k: v for k, v in {**kw, "t0_ns": t0, "t1_ns": t1}.items() if v is not None}
            params["starting"] = str(params["starting"]).lower()
            params["idle"] = str(params["idle"]).lower()
            got = client.get(f"{url}/waits", params=params).json()
            assert got == json.loads(json.dumps(want)), (t0, t1, kw)
            assert TypeAdapter(list[Wait]).validate_python(got) is not None
    assert any(stalls.waits(con, aid, "duration", 5, t0=lo, t1=hi))  # the windows held waits
