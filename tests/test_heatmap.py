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
            f" WHERE {metric}_ns IS NOT NULL AND {AT[metric]} IS NOT NULL{where}",
            list(params),
        ).fetchall()
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
    assert p == {
        "count": len(vals),
        "p50_ns": _disc(vals, 0.5),
        "p90_ns": _disc(vals, 0.9),
        "p99_ns": _disc(vals, 0.99),
        "p999_ns": _disc(vals, 0.999),
        "p9999_ns": _disc(vals, 0.9999),
        "max_ns": max(vals),
    }
    # every cell's max sits inside its latency bin and is the max of the requests placed in it
    for c in h["cells"][:200]:
        lo, hi = h["y_edges_ns"][c["y"]], h["y_edges_ns"][c["y"] + 1]
        assert (c["y"] == 0 or c["max_ns"] >= lo - 1) and c["max_ns"] <= hi + 1


def test_xfsaild_outlier_is_the_top_cell(client, store, demo):
    h = client.get(f"/api/analyses/{demo}/heatmap", params={"metric": "i2d"}).json()
    assert h["percentiles"]["count"] == 5000
    assert h["percentiles"]["max_ns"] == XFSAILD_I2D_NS
    assert h["y_edges_ns"][-1] == XFSAILD_I2D_NS + 1  # the last bin ends just above the slowest
    top = [c for c in h["cells"] if c["y"] == h["y_bins"] - 1]
    assert len(top) == 1
    cell = top[0]
    con = store.cursor()
    try:
        sid, line, i_ns, comm = con.execute(
            "SELECT source_id, line, i_ns, comm FROM blk_requests WHERE i2d_ns = ?", [XFSAILD_I2D_NS]
        ).fetchall()[0]
    finally:
        con.close()
    assert comm == "xfsaild/sda1"
    assert (cell["count"], cell["max_ns"]) == (1, XFSAILD_I2D_NS)
    assert cell["max_ref"] == {"kind": "request", "source_id": sid, "line": line, "pid": 804}
    assert line == 9915
    assert cell["x"] == (i_ns - h["t0_ns"]) // h["x_bin_ns"]
    # the request behind it opens
    detail = client.get(f"/api/analyses/{demo}/requests/{sid}/{line}").json()
    assert detail["request"]["i2d_ns"] == XFSAILD_I2D_NS


def test_window_and_pid_filter(client, store, demo):
    t0, t1 = 11_000_000_000, 13_000_000_000
    h = client.get(
        f"/api/analyses/{demo}/heatmap", params={"metric": "i2d", "t0_ns": t0, "t1_ns": t1, "pid": 804}
    ).json()
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


# ---- exact binning, boxes, function and wait heatmaps, clock offsets -------------------------------------------

XFS = SAMPLES / "xfs-unwritten-stall.trace-cmd-report.txt"
EXT4 = (SAMPLES / "ext4-jbd2-commit.trace-cmd-report.txt", SAMPLES / "ext4-jbd2-commit.blkparse.txt")


@pytest.fixture
def xfs(store):
    return ingest_paths(store, XFS)["id"]


@pytest.fixture
def ext4(store):
    return ingest_paths(store, *EXT4)["id"]


def _source_ids(client, aid) -> dict[str, int]:
    return {s["format"]: s["id"] for s in client.get(f"/api/analyses/{aid}").json()["sources"]}


def _ref(kind, sid, line, pid):
    return {"kind": kind, "source_id": sid, "line": line, "pid": pid}


def _pct(count, p50, p90, top):
    return {"count": count, "p50_ns": p50, "p90_ns": p90, "p99_ns": top, "p999_ns": top, "p9999_ns": top, "max_ns": top}


def _box(h, xa, xb, ya, yb) -> dict:
    """The events query of a range of cells, as the brush in the UI builds it."""
    lo, hi, xbin, edges = h["t0_ns"], h["t1_ns"], h["x_bin_ns"], h["y_edges_ns"]
    box = {"t0_ns": lo + xa * xbin, "t1_ns": min(lo + (xb + 1) * xbin - 1, hi)}
    if ya > 0:
        box["lat_min_ns"] = edges[ya]
    if yb < h["y_bins"] - 1:
        box["lat_max_ns"] = edges[yb + 1]
    return box


def test_block_cells_are_exactly_the_edges_bins(client, store, demo):
    """Every request is in the cell its integer edges say (the SQL bins by log10, then corrects by one)."""
    import bisect
    from collections import Counter

    for metric, y_bins in (("i2d", 40), ("d2c", 200), ("q2c", 7)):
        h = client.get(
            f"/api/analyses/{demo}/heatmap", params={"metric": metric, "x_bins": 90, "y_bins": y_bins}
        ).json()
        edges, inner = h["y_edges_ns"], h["y_edges_ns"][1:-1]
        assert h["y_bins"] == y_bins and all(b > a for a, b in zip(edges, edges[1:]))
        want = Counter(
            ((t - h["t0_ns"]) // h["x_bin_ns"], bisect.bisect_right(inner, v)) for v, t, *_ in _values(store, metric)
        )
        assert {(c["x"], c["y"]): c["count"] for c in h["cells"]} == dict(want)


def test_brushed_box_lists_the_events_of_its_cells(client, demo):
    url = f"/api/analyses/{demo}/heatmap"
    h = client.get(url, params={"metric": "i2d"}).json()
    for xa, xb, ya, yb in ((0, 119, 0, 39), (10, 50, 5, 20), (0, 0, 0, 0), (60, 119, 20, 39), (33, 71, 0, 12)):
        inside = sum(c["count"] for c in h["cells"] if xa <= c["x"] <= xb and ya <= c["y"] <= yb)
        r = client.get(f"{url}/events", params={"metric": "i2d", "limit": 1000, **_box(h, xa, xb, ya, yb)}).json()
        assert r["count"] == inside, (xa, xb, ya, yb)
        lat = [e["latency_ns"] for e in r["events"]]
        assert lat == sorted(lat, reverse=True) and len(lat) == min(inside, 1000)
    # the outlier's cell: the 15.6 s xfsaild write, which opens in the request detail
    top = next(c for c in h["cells"] if c["y"] == h["y_bins"] - 1)
    r = client.get(f"{url}/events", params={"metric": "i2d", **_box(h, top["x"], top["x"], top["y"], top["y"])}).json()
    assert r["count"] == 1 and r["kind"] == "request"
    (e,) = r["events"]
    assert e["ref"] == top["max_ref"] == _ref("request", 1, 9915, 804)
    assert (e["latency_ns"], e["comm"], e["dev"], e["rwbs"], e["end_known"]) == (
        XFSAILD_I2D_NS,
        "xfsaild/sda1",
        "8,0",
        "WM",
        True,
    )
    detail = client.get(f"/api/analyses/{demo}/requests/1/9915").json()["request"]
    assert e["t_ns"] == detail["i_ns"] and e["sector"] == detail["sector"] and e["nsect"] == detail["nsect"]
    # a box holds lat_min <= latency < lat_max: the max itself is outside [.., max)
    r = client.get(
        f"{url}/events", params={"metric": "i2d", "lat_min_ns": 15_000_000_000, "lat_max_ns": XFSAILD_I2D_NS}
    ).json()
    assert r == {"metric": "i2d", "idle": False, "filter": None, "kind": "request", "count": 0, "events": []}


def test_func_heatmap_golden(client, xfs, ext4):
    h = client.get(
        f"/api/analyses/{xfs}/heatmap", params={"metric": "func", "filter": "xfs_ilock", "x_bins": 4, "y_bins": 3}
    ).json()
    x = _source_ids(client, xfs)["ftrace"]
    assert h == {
        "metric": "func",
        "idle": False,
        "filter": "xfs_ilock",
        "kind": "call",
        "t0_ns": 358613942546000,
        "t1_ns": 358613968921000,
        "x_bins": 4,
        "x_bin_ns": 6593751,
        "y_bins": 3,
        "y_edges_ns": [100, 14685, 2156466, 316675181],  # from the decade below 895 ns to just above 316.7 ms
        "cells": [  # xfsconvertd's 895 ns xfs_ilock, file_writer's 316.7 ms one
            {"x": 0, "y": 0, "count": 1, "max_ns": 895, "max_ref": _ref("call", x, 7, 251)},
            {"x": 3, "y": 2, "count": 1, "max_ns": 316675180, "max_ref": _ref("call", x, 93, 30495)},
        ],
        "percentiles": _pct(2, 895, 316675180, 316675180),
    }
    # ext4: schedule, three calls with a duration (jbd2's last one is still open at the end: not counted)
    f = _source_ids(client, ext4)["ftrace"]
    h = client.get(
        f"/api/analyses/{ext4}/heatmap", params={"metric": "func", "filter": "schedule", "x_bins": 4, "y_bins": 3}
    ).json()
    assert (h["t0_ns"], h["t1_ns"], h["x_bin_ns"]) == (7341201400000, 7341204027000, 656751)
    assert h["y_edges_ns"] == [10000000, 11046667, 12202885, 13480121]
    assert h["cells"] == [
        {"x": 0, "y": 2, "count": 2, "max_ns": 13480120, "max_ref": _ref("call", f, 29, 312)},
        {"x": 3, "y": 0, "count": 1, "max_ns": 10865377, "max_ref": _ref("call", f, 60, 4251)},
    ]
    assert h["percentiles"] == _pct(3, 13271377, 13480120, 13480120)
    # pid filters calls too
    h = client.get(f"/api/analyses/{ext4}/heatmap", params={"metric": "func", "filter": "schedule", "pid": 4251}).json()
    assert [(c["count"], c["max_ref"]["line"]) for c in h["cells"]] == [(1, 60)]
    # an unknown function: an empty heatmap, not an error
    h = client.get(f"/api/analyses/{xfs}/heatmap", params={"metric": "func", "filter": "xfs_nosuch"}).json()
    assert h["cells"] == [] and h["percentiles"]["count"] == 0 and h["t0_ns"] is None


def test_wait_heatmap_golden(client, xfs, ext4):
    x = _source_ids(client, xfs)["ftrace"]
    url = f"/api/analyses/{xfs}/heatmap"
    h = client.get(url, params={"metric": "wait", "x_bins": 4, "y_bins": 3}).json()
    # the stalls: xfsconvertd (xfs_buf_lock) at 0 ms, flush-8:0 (21.8 ms) and file_writer (26.0 ms) on xfs_ilock;
    # file_reader's 246 µs sleep (S, no lock known) is an idle sleep, not drawn
    assert h == {
        "metric": "wait",
        "idle": False,
        "filter": None,
        "kind": "wait",
        "t0_ns": 358613942886000,
        "t1_ns": 358613968921000,
        "x_bins": 4,
        "x_bin_ns": 6508751,
        "y_bins": 3,
        "y_edges_ns": [100000000, 150736379, 227214560, 342495001],  # the decade below 316.7 ms to above 342.5 ms
        "cells": [
            {"x": 0, "y": 2, "count": 1, "max_ns": 342495000, "max_ref": _ref("wait", x, 61, 251)},
            {"x": 3, "y": 2, "count": 2, "max_ns": 320902000, "max_ref": _ref("wait", x, 72, 505)},
        ],
        "percentiles": _pct(3, 320902000, 342495000, 342495000),
    }
    # by lock: the object (lock_key) takes both primitives; a label takes just its own
    h = client.get(url, params={"metric": "wait", "filter": "xfs_ilock", "x_bins": 4, "y_bins": 3}).json()
    assert (h["t0_ns"], h["t1_ns"], h["y_edges_ns"]) == (
        358613964695000,
        358613968921000,
        [100000000, 147499588, 217561286, 320902001],
    )
    assert h["cells"] == [
        {"x": 0, "y": 2, "count": 1, "max_ns": 320902000, "max_ref": _ref("wait", x, 72, 505)},
        {"x": 3, "y": 2, "count": 1, "max_ns": 316673836, "max_ref": _ref("wait", x, 94, 30495)},
    ]
    h = client.get(url, params={"metric": "wait", "filter": "xfs_ilock via down_write"}).json()
    assert [(c["count"], c["max_ref"]["line"]) for c in h["cells"]] == [(1, 94)]
    assert h["percentiles"]["max_ns"] == 316673836
    # ext4: the two postgres backends behind jbd2
    f = _source_ids(client, ext4)["ftrace"]
    h = client.get(
        f"/api/analyses/{ext4}/heatmap",
        params={"metric": "wait", "filter": "wait_transaction_locked", "x_bins": 4, "y_bins": 3},
    ).json()
    assert h["y_edges_ns"] == [10000000, 10988418, 12074533, 13268001]
    assert h["cells"] == [
        {"x": 0, "y": 2, "count": 1, "max_ns": 13268000, "max_ref": _ref("wait", f, 45, 4242)},
        {"x": 3, "y": 0, "count": 1, "max_ns": 10862000, "max_ref": _ref("wait", f, 61, 4251)},
    ]
    assert h["percentiles"] == _pct(2, 10862000, 13268000, 13268000)


def _event_summary(e):
    return (
        e["ref"]["line"],
        e["ref"]["pid"],
        e["t_ns"],
        e["latency_ns"],
        e["end_known"],
        e["comm"],
        e["lock"],
        e["lock_key"],
        e["chain_id"],
        e["link"],
    )


def test_wait_events_in_a_box_lead_to_their_chain(client, xfs):
    x = _source_ids(client, xfs)["ftrace"]
    url = f"/api/analyses/{xfs}/heatmap/events"
    r = client.get(url, params={"metric": "wait"}).json()
    assert (r["count"], r["kind"]) == (3, "wait")  # file_reader's idle sleep (line 95, S, no lock) is no stall
    assert [_event_summary(e) for e in r["events"]] == [
        (61, 251, 358613942886000, 342495000, True, "xfsconvertd/7", "xfs_buf_lock via down", "xfs_buf_lock", 1, 2),
        # flush-8:0 is not a link of its own: it waits alongside file_writer (chain 1, link 1)
        (72, 505, 358613964695000, 320902000, False, "flush-8:0", "xfs_ilock via down_read", "xfs_ilock", 1, 1),
        (94, 30495, 358613968921000, 316673836, True, "file_writer", "xfs_ilock via down_write", "xfs_ilock", 1, 1),
    ]
    assert all(e["ref"]["source_id"] == x and e["ref"]["kind"] == "wait" and e["wait"] is None for e in r["events"])
    # a box: [t0, t1] inclusive, lat_min <= latency < lat_max
    r = client.get(
        url,
        params={
            "metric": "wait",
            "t0_ns": 358613964695000,
            "t1_ns": 358613968921000,
            "lat_min_ns": 316673836,
            "lat_max_ns": 320902000,
        },
    ).json()
    assert r["count"] == 1 and [e["ref"]["line"] for e in r["events"]] == [94]
    r = client.get(url, params={"metric": "wait", "filter": "xfs_ilock", "lat_min_ns": 300_000_000, "limit": 1}).json()
    assert r["count"] == 2 and [e["ref"]["line"] for e in r["events"]] == [72]


def test_call_events_lead_to_the_wait_inside_them(client, ext4):
    f = _source_ids(client, ext4)["ftrace"]
    r = client.get(f"/api/analyses/{ext4}/heatmap/events", params={"metric": "func", "filter": "schedule"}).json()
    assert (r["count"], r["kind"], r["filter"]) == (3, "call", "schedule")
    got = [(e["ref"], e["func"], e["latency_ns"], e["wait"], e["lock"], e["chain_id"], e["link"]) for e in r["events"]]
    assert got == [
        (_ref("call", f, 29, 312), "schedule", 13480120, _ref("wait", f, 30, 312), "__wait_on_buffer via I/O", 1, 2),
        (_ref("call", f, 44, 4242), "schedule", 13271377, _ref("wait", f, 45, 4242), "wait_transaction_locked", 1, 1),
        (_ref("call", f, 60, 4251), "schedule", 10865377, _ref("wait", f, 61, 4251), "wait_transaction_locked", 1, 1),
    ]
    assert [e["t_ns"] for e in r["events"]] == [7341201400000, 7341201619000, 7341204027000]


def test_clock_offsets_place_and_filter_on_the_analysis_timeline(client, store, ext4):
    ids = _source_ids(client, ext4)
    url = f"/api/analyses/{ext4}/heatmap"
    before = {
        m: client.get(url, params={"metric": m, **({"filter": "schedule"} if m == "func" else {})}).json()
        for m in ("d2c", "func", "wait")
    }
    events_before = client.get(f"{url}/events", params={"metric": "d2c"}).json()
    shift = {"blkparse": 2_500_000_000, "ftrace": -7_000_000}
    for fmt, off in shift.items():  # through the API, the server's only writer: it drops what was kept of the analysis
        r = client.patch(f"/api/analyses/{ext4}/sources/{ids[fmt]}", json={"clock_offset_ns": off})
        assert r.status_code == 200, r.text
    for m, fmt in (("d2c", "blkparse"), ("func", "ftrace"), ("wait", "ftrace")):
        after = client.get(url, params={"metric": m, **({"filter": "schedule"} if m == "func" else {})}).json()
        b = before[m]
        assert (after["t0_ns"], after["t1_ns"]) == (b["t0_ns"] + shift[fmt], b["t1_ns"] + shift[fmt])
        assert after["cells"] == b["cells"] and after["percentiles"] == b["percentiles"]
    events_after = client.get(f"{url}/events", params={"metric": "d2c"}).json()
    assert [e["t_ns"] for e in events_after["events"]] == [e["t_ns"] + 2_500_000_000 for e in events_before["events"]]
    # t0/t1 are aligned times: the window of the source's own times is now empty, the aligned one full
    own = (before["d2c"]["t0_ns"], before["d2c"]["t1_ns"])
    assert client.get(url, params={"metric": "d2c", "t0_ns": own[0], "t1_ns": own[1]}).json()["cells"] == []
    r = client.get(f"{url}/events", params={"metric": "d2c", "t0_ns": own[0], "t1_ns": own[1]}).json()
    assert r["count"] == 0
    aligned = {"t0_ns": own[0] + 2_500_000_000, "t1_ns": own[1] + 2_500_000_000}
    assert client.get(f"{url}/events", params={"metric": "d2c", **aligned}).json()["count"] == 4
    h = client.get(url, params={"metric": "d2c", **aligned}).json()
    assert sum(c["count"] for c in h["cells"]) == 4
    # a wait at its aligned start, and only there
    w = client.get(
        f"{url}/events",
        params={"metric": "wait", "t0_ns": 7341201620000 - 7_000_000, "t1_ns": 7341201620000 - 7_000_000},
    ).json()
    assert [(e["ref"]["line"], e["t_ns"]) for e in w["events"]] == [(45, 7341194620000)]


def test_metrics_to_pick_from(client, xfs, ext4, demo):
    m = client.get(f"/api/analyses/{xfs}/heatmap/metrics", params={"limit": 3}).json()
    assert m == {
        "metrics": [{"metric": "func", "count": 51}, {"metric": "wait", "count": 3}],  # stalls: no idle sleep
        "functions": [
            {"func": "xfs_ilock", "calls": 2, "total_ns": 316676075, "max_ns": 316675180},
            {"func": "xfs_iomap", "calls": 1, "total_ns": 316675750, "max_ns": 316675750},
            {"func": "down_write", "calls": 1, "total_ns": 316673836, "max_ns": 316673836},
        ],
        "locks": [
            {
                "lock_key": "xfs_ilock",
                "waits": 2,
                "total_ns": 637575836,
                "max_ns": 320902000,
                "locks": ["xfs_ilock via down_read", "xfs_ilock via down_write"],
            },
            {
                "lock_key": "xfs_buf_lock",
                "waits": 1,
                "total_ns": 342495000,
                "max_ns": 342495000,
                "locks": ["xfs_buf_lock via down"],
            },
        ],
    }
    m = client.get(f"/api/analyses/{ext4}/heatmap/metrics", params={"limit": 1}).json()
    assert m["metrics"] == [
        {"metric": "i2d", "count": 4},
        {"metric": "d2c", "count": 4},
        {"metric": "q2c", "count": 4},
        {"metric": "func", "count": 92},
        {"metric": "wait", "count": 3},
    ]  # jbd2's idle sleep: no
    assert m["functions"] == [{"func": "schedule", "calls": 3, "total_ns": 37616874, "max_ns": 13480120}]
    assert [(k["lock_key"], k["waits"]) for k in m["locks"]] == [
        ("wait_transaction_locked", 2),
        ("__wait_on_buffer", 1),
    ]  # not kjournald2: jbd2 idle, waiting for work
    m = client.get(f"/api/analyses/{demo}/heatmap/metrics").json()
    assert m["metrics"] == [
        {"metric": "i2d", "count": 5000},
        {"metric": "d2c", "count": 5000},
        {"metric": "q2c", "count": 5000},
    ]
    assert m["functions"] == [] and m["locks"] == []


def test_edges_stay_strictly_increasing_when_the_range_is_narrow():
    from backend.queries.heatmaps import latency_edges

    # from the decade at or below the fastest to just above the slowest (issue 33: before, from the fastest or 1 µs
    # to the slowest, so nanosecond latencies all fell in bin 0)
    assert latency_edges(1000, 1005, 200) == [1000, 1001, 1002, 1003, 1004, 1005, 1006]
    assert latency_edges(5000, 5000, 3) == [1000, 1710, 2924, 5001]  # one value: from its decade
    assert latency_edges(10, 20, 2) == [10, 14, 21]  # nanoseconds: their own bins
    assert latency_edges(0, 5, 4) == [1, 2, 3, 6]  # a latency of 0: bin 0, from 1 ns
    e = latency_edges(4463, 15626265317, 40)
    assert len(e) == 41 and e[0] == 1000 and e[-1] == 15626265318


@pytest.mark.parametrize(
    "params, message",
    [
        ({"metric": "func"}, "metric=func needs filter=<function name>"),
        ({"metric": "func", "filter": "  "}, "metric=func needs filter=<function name>"),
        ({"metric": "i2d", "filter": "xfs_ilock"}, "filter does not apply to metric=i2d"),
        ({"metric": "wait", "dev": "8,0"}, "dev does not apply to metric=wait"),
        ({"metric": "func", "filter": "schedule", "dev": "8,0"}, "dev does not apply to metric=func"),
        ({"metric": "lock"}, "metric: Input should be"),
        ({"metric": "wait", "x_bins": 0}, "x_bins"),
    ],
)
def test_bad_parameters_are_422_with_a_message(client, xfs, params, message):
    for path in ("heatmap", "heatmap/events"):
        if "x_bins" in params and path != "heatmap":
            continue
        r = client.get(f"/api/analyses/{xfs}/{path}", params=params)
        assert r.status_code == 422, (path, r.text)
        assert message in r.json()["detail"]


def test_bad_boxes_are_422(client, xfs):
    url = f"/api/analyses/{xfs}/heatmap/events"
    r = client.get(url, params={"metric": "wait", "t0_ns": 10, "t1_ns": 9})
    assert r.status_code == 422 and r.json()["detail"] == "t1_ns (9) is before t0_ns (10)"
    r = client.get(url, params={"metric": "wait", "lat_min_ns": 100, "lat_max_ns": 100})
    assert r.status_code == 422 and "must be above lat_min_ns" in r.json()["detail"]
    assert client.get(url, params={"metric": "wait", "lat_min_ns": -1}).status_code == 422
    assert client.get(url, params={"metric": "wait", "limit": 0}).status_code == 422
    assert client.get(url, params={"metric": "wait", "limit": 1001}).status_code == 422
    for path in ("heatmap/events", "heatmap/metrics"):
        r = client.get(f"/api/analyses/nope/{path}")
        assert r.status_code == 404 and "no analysis" in r.json()["detail"]
