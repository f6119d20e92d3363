"""The latency heatmap API on the demo trace: real counts, the xfsaild outlier, exact percentiles."""
from __future__ import annotations

import math

import numpy as np
import pytest

from tests.conftest import SAMPLES, ingest_paths

DEMO = SAMPLES / "demo-cfq-starvation.blkparse.txt"
XFSAILD_I2D_NS = 15626265317
AT = {"i2d": "i_ns", "d2c": "d_ns", "q2c": "q_ns"}


@pytest.fixture
def demo(store):
    return ingest_paths(store, DEMO)["id"]


def _values(store, metric, where="", params=()):
    con = store.cursor()
    try:
        return con.execute(
            f"SELECT {metric}_ns, {AT[metric]}, source_id, line, pid FROM blk_requests"
            f" WHERE {metric}_ns IS NOT NULL AND {AT[metric]} IS NOT NULL{where}", list(params)).fetchall()
    finally:
        con.close()


def _disc(values, q):
    """quantile_disc: the smallest value with at least q of the values at or below it."""
    v = np.sort(np.asarray(values, dtype=np.int64))
    return int(v[max(0, math.ceil(q * len(v)) - 1)])


@pytest.mark.parametrize("metric", ["i2d", "d2c", "q2c"])
def test_counts_and_percentiles(client, store, demo, metric):
    rows = _values(store, metric)
    r = client.get(f"/api/analyses/{demo}/heatmap", params={"metric": metric, "x_bins": 50, "y_bins": 30})
    assert r.status_code == 200, r.text
    h = r.json()
    assert h["metric"] == metric and h["x_bins"] == 50 and h["y_bins"] == 30
    assert len(h["y_edges_ns"]) == 31
    assert h["y_edges_ns"] == sorted(h["y_edges_ns"]) and h["y_edges_ns"][0] >= 1000
    # the default window is the span of the metric's own timestamps
    assert (h["t0_ns"], h["t1_ns"]) == (min(r[1] for r in rows), max(r[1] for r in rows))
    assert sum(c["count"] for c in h["cells"]) == len(rows) == h["percentiles"]["count"]
    assert all(0 <= c["x"] < 50 and 0 <= c["y"] < 30 and c["count"] > 0 for c in h["cells"])
    vals = [r[0] for r in rows]
    p = h["percentiles"]
    assert p == {"count": len(vals), "p50_ns": _disc(vals, 0.5), "p90_ns": _disc(vals, 0.9),
                 "p99_ns": _disc(vals, 0.99), "p999_ns": _disc(vals, 0.999), "p9999_ns": _disc(vals, 0.9999),
                 "max_ns": max(vals)}
    # every cell's max sits inside its latency bin and is the max of the requests placed in it
    for c in h["cells"][:200]:
        lo, hi = h["y_edges_ns"][c["y"]], h["y_edges_ns"][c["y"] + 1]
        assert (c["y"] == 0 or c["max_ns"] >= lo - 1) and c["max_ns"] <= hi + 1


def test_xfsaild_outlier_is_the_top_cell(client, store, demo):
    h = client.get(f"/api/analyses/{demo}/heatmap", params={"metric": "i2d"}).json()
    assert h["percentiles"]["count"] == 5000
    assert h["percentiles"]["max_ns"] == XFSAILD_I2D_NS
    assert h["y_edges_ns"][-1] == XFSAILD_I2D_NS
    top = [c for c in h["cells"] if c["y"] == h["y_bins"] - 1]
    assert len(top) == 1
    cell = top[0]
    con = store.cursor()
    try:
        sid, line, i_ns, comm = con.execute(
            "SELECT source_id, line, i_ns, comm FROM blk_requests WHERE i2d_ns = ?", [XFSAILD_I2D_NS]).fetchall()[0]
    finally:
        con.close()
    assert comm == "xfsaild/sda1"
    assert (cell["count"], cell["max_ns"], cell["max_source_id"], cell["max_line"]) == (1, XFSAILD_I2D_NS, sid, line)
    assert line == 9915
    assert cell["x"] == (i_ns - h["t0_ns"]) // h["x_bin_ns"]
    # the request behind it opens
    detail = client.get(f"/api/analyses/{demo}/requests/{sid}/{line}").json()
    assert detail["request"]["i2d_ns"] == XFSAILD_I2D_NS


def test_window_and_pid_filter(client, store, demo):
    t0, t1 = 11_000_000_000, 13_000_000_000
    h = client.get(f"/api/analyses/{demo}/heatmap",
                   params={"metric": "i2d", "t0_ns": t0, "t1_ns": t1, "pid": 804}).json()
    rows = _values(store, "i2d", " AND pid = ? AND i_ns BETWEEN ? AND ?", (804, t0, t1))
    assert rows and (h["t0_ns"], h["t1_ns"]) == (t0, t1)
    assert h["percentiles"]["count"] == len(rows) == sum(c["count"] for c in h["cells"])
    assert h["percentiles"]["max_ns"] == max(r[0] for r in rows) == XFSAILD_I2D_NS
    assert h["percentiles"]["p50_ns"] == _disc([r[0] for r in rows], 0.5)


def test_bounds_and_errors(client, demo):
    url = f"/api/analyses/{demo}/heatmap"
    assert client.get(url, params={"x_bins": 1000, "y_bins": 200}).status_code == 200
    assert client.get(url, params={"x_bins": 1001}).status_code == 422
    assert client.get(url, params={"y_bins": 201}).status_code == 422
    assert client.get(url, params={"x_bins": 0}).status_code == 422
    assert client.get(url, params={"metric": "q2d"}).status_code == 422
    assert client.get("/api/analyses/nope/heatmap").status_code == 404
    empty = client.get(url, params={"pid": 999999}).json()
    assert empty["cells"] == [] and empty["percentiles"]["count"] == 0 and empty["percentiles"]["max_ns"] is None
