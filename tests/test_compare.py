"""Before/after (/api/compare) on real captures: two public blkparse captures, one capture split into two time
ranges, and the waits of the XFS seed split at its first stall. Every side's figures are checked against the
per-analysis routes and a count of our own; the whole answers are goldens (tests/golden/compare, rewritten with
UPDATE_GOLDEN=1)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from backend.access import Access
from backend.api.compare import Comparison
from backend.app import create_app
from backend.queries.compare import delta
from tests.conftest import PUBLIC, SEED, ingest_paths, needs_public

GOLDEN = Path(__file__).resolve().parent / "golden" / "compare"
LOOP = PUBLIC / "blkparse-text" / "derived-romeus-loop0-dump-x0y1.blkparse.txt"  # 1024 requests on 7,0 in 31 ms
LVM = PUBLIC / "blkparse-text" / "derived-liuzel01-sda-lvm.blkparse.txt"  # 109 requests on 8,0 (LVM) in 110 s
XFS = SEED / "xfs-unwritten-stall.trace-cmd-report.txt"
XFS_SPLIT = 358613950000000  # after xfsconvertd's xfs_buf_lock wait, before the two xfs_ilock waits
XFS_ILOCKS_SPLIT = 358613965999999  # after flush-8:0's xfs_ilock wait began, before file_writer's
AT = {"i2d": "i_ns", "d2c": "d_ns"}


def _golden(name: str, value: dict) -> None:
    """The answer with its random analysis ids named by side, against the golden file."""
    ids = {
        value["a"]["analysis_id"]: "<a>",
        value["b"]["analysis_id"]: "<b>" if value["b"]["analysis_id"] != value["a"]["analysis_id"] else "<a>",
    }
    value = json.loads(
        json.dumps(value), object_hook=lambda d: {k: ids.get(v, v) if isinstance(v, str) else v for k, v in d.items()}
    )
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    assert value == json.loads(path.read_text())


@pytest.fixture
def loop(store):
    return ingest_paths(store, LOOP, name="loop0 blktst")["id"]


@pytest.fixture
def lvm(store):
    return ingest_paths(store, LVM, name="sda lvm")["id"]


@pytest.fixture
def xfs(store):
    return ingest_paths(store, XFS, name="xfs unwritten")["id"]


def _compare(client, **params) -> dict:
    r = client.get("/api/compare", params=params)
    assert r.status_code == 200, r.text
    body = r.json()
    Comparison.model_validate(body)  # the body is sent without validation: it must have the model's shape
    return body


def _by_metric(deltas: list[dict]) -> dict:
    return {d["metric"]: d for d in deltas}


def _reference_cells(store, aid: str, metric: str, lo: int, hi: int, x_bin: int, edges: list[int]) -> list[tuple]:
    """(x, y, count, max) of the metric's requests placed in [lo, hi], binned with these edges, counted here."""
    con = store.cursor()
    try:
        rows = con.execute(
            f"SELECT r.{metric}_ns, r.{AT[metric]} + s.clock_offset_ns FROM blk_requests r"
            f" JOIN sources s ON s.id = r.source_id WHERE s.analysis_id = ? AND r.{metric}_ns IS NOT NULL"
            f" AND r.{AT[metric]} + s.clock_offset_ns BETWEEN ? AND ?",
            [aid, lo, hi],
        ).fetchall()
    finally:
        con.close()
    cells: dict = {}
    inner = np.asarray(edges[1:-1])
    for v, t in rows:
        key = ((t - lo) // x_bin, int(np.searchsorted(inner, v, "right")))
        n, mx = cells.get(key, (0, 0))
        cells[key] = (n + 1, max(mx, v))
    return sorted((x, y, n, mx) for (x, y), (n, mx) in cells.items())


@needs_public
def test_two_captures_side_by_side(client, store, loop, lvm):
    body = _compare(client, a=loop, b=lvm, x_bins=8, y_bins=5)
    assert (body["a"]["name"], body["b"]["name"], body["same_analysis"]) == ("loop0 blktst", "sda lvm", False)
    assert (body["a"]["requests"], body["b"]["requests"]) == (1024, 109)
    # each side's device figures are its own dispatch summary's
    for side, aid in (("a", loop), ("b", lvm)):
        own = client.get(f"/api/analyses/{aid}/dispatch-summary", params={"by": "device"}).json()
        got = {r["key"]: r[side] for r in body["dispatch_by_device"]["rows"] if r[side]}
        assert got == {g["dev"]: {"pids": [], **{k: g[k] for k in ("count", "i2d", "d2c", "q2c")}} for g in own}
    # different devices: no row is on both sides, so no delta has both figures
    rows = body["dispatch_by_device"]["rows"]
    assert [(r["key"], r["a"] is not None, r["b"] is not None) for r in rows] == [
        ("7,0", True, False),
        ("8,0", False, True),
    ]
    assert all(d["abs"] is None and d["verdict"] is None for r in rows for d in r["deltas"])
    # one scale: the same edges for both sides, spanning both; each side's cells are its requests counted here
    for pair in body["heatmaps"]:
        if pair["metric"] == "wait":
            continue
        edges, x_bin = pair["y_edges_ns"], pair["x_bin_ns"]
        for side, aid in (("a", loop), ("b", lvm)):
            s = pair[side]
            got = [(c["x"], c["y"], c["count"], c["max_ns"]) for c in s["cells"]]
            assert got == _reference_cells(store, aid, pair["metric"], s["t0_ns"], s["t1_ns"], x_bin, edges)
            assert sum(c["count"] for c in s["cells"]) == s["percentiles"]["count"]
        assert pair["max_count"] == max(c["count"] for s in "ab" for c in pair[s]["cells"])
        # the latency deltas: the LVM disk is slower than the loop device in every percentile
        d = _by_metric(pair["deltas"])
        assert all(d[k]["verdict"] == "worse" for k in ("p50_ns", "p90_ns", "p99_ns", "max_ns"))
        assert d["count"]["verdict"] is None and d["count"]["abs"] == 109 - 1024
    assert [p["metric"] for p in body["heatmaps"]] == ["i2d", "d2c"]  # no waits on either side: no wait heatmap
    _golden("loop-vs-lvm.json", body)


@needs_public
def test_each_side_on_its_own_time_axis(client, store, loop, lvm):
    """x_time=own: the 31 ms capture beside the 110 s one gets as many time bins as the long one, of its own width;
    the latency edges stay those of the shared answer, the colour maximum the largest cell of either side."""
    shared = {p["metric"]: p for p in _compare(client, a=loop, b=lvm, x_bins=8, y_bins=5)["heatmaps"]}
    own = _compare(client, a=loop, b=lvm, x_bins=8, y_bins=5, x_time="own")
    for pair in own["heatmaps"]:
        base = shared[pair["metric"]]
        assert (pair["x_time"], base["x_time"]) == ("own", "shared")
        assert pair["y_edges_ns"] == base["y_edges_ns"] and pair["deltas"] == base["deltas"]
        assert base["a"]["x_bins"] == 1 and base["a"]["x_bin_ns"] == base["b"]["x_bin_ns"] == base["x_bin_ns"]
        for side, aid in (("a", loop), ("b", lvm)):
            s = pair[side]
            assert (s["t0_ns"], s["t1_ns"]) == (base[side]["t0_ns"], base[side]["t1_ns"])
            assert s["x_bins"] == 8 and s["x_bin_ns"] == -(-(s["t1_ns"] - s["t0_ns"] + 1) // 8)
            got = [(c["x"], c["y"], c["count"], c["max_ns"]) for c in s["cells"]]
            want = _reference_cells(
                store, aid, pair["metric"], s["t0_ns"], s["t1_ns"], s["x_bin_ns"], pair["y_edges_ns"]
            )
            assert got == want
        assert pair["x_bin_ns"] == pair["b"]["x_bin_ns"]  # the longer side's
        assert pair["max_count"] == max(c["count"] for s in "ab" for c in pair[s]["cells"])
    r = client.get("/api/compare", params={"a": loop, "x_time": "mine"})
    assert r.status_code == 422 and "x_time" in r.json()["detail"]


@needs_public
def test_one_capture_in_two_ranges(client, store, loop):
    whole = client.get(f"/api/analyses/{loop}").json()
    t0, t1 = whole["t_min_ns"], whole["t_max_ns"]
    mid = (t0 + t1) // 2
    body = _compare(client, a=loop, a_to=mid, b_from=mid + 1, x_bins=6, y_bins=4)
    assert body["same_analysis"] and body["b"]["analysis_id"] == loop
    assert (body["a"]["from_ns"], body["a"]["to_ns"], body["b"]["from_ns"], body["b"]["to_ns"]) == (
        None,
        mid,
        mid + 1,
        None,
    )
    # the two halves hold every request once (a request belongs to the half it starts in)
    assert body["a"]["requests"] + body["b"]["requests"] == 1024
    for side, window in (("a", {"t1_ns": mid}), ("b", {"t0_ns": mid + 1})):
        own = client.get(f"/api/analyses/{loop}/dispatch-summary", params={"by": "process", **window}).json()
        got = {r["key"]: r[side]["count"] for r in body["dispatch_by_process"]["rows"] if r[side]}
        want: dict = {}
        for g in own:  # per process: every pid of a command name together
            want[g["comm"]] = want.get(g["comm"], 0) + g["count"]
        assert got == want
    # the deltas are b − a and (b − a) / a of the figures shown
    for r in body["dispatch_by_process"]["rows"]:
        d = _by_metric(r["deltas"])
        if r["a"] and r["b"]:
            assert d["q2c.p99"]["abs"] == r["b"]["q2c"]["p99"] - r["a"]["q2c"]["p99"]
            assert d["q2c.p99"]["rel"] == pytest.approx(d["q2c.p99"]["abs"] / r["a"]["q2c"]["p99"])
    _golden("loop-halves.json", body)


def test_waits_per_lock_in_two_ranges(client, xfs):
    body = _compare(client, a=xfs, a_to=XFS_SPLIT, b_from=XFS_SPLIT + 1, x_bins=4, y_bins=3)
    rows = {r["lock_key"]: r for r in body["locks"]["rows"]}
    assert list(rows) == ["xfs_ilock", "xfs_buf_lock"]  # the larger total (either side) first
    ilock, buf = rows["xfs_ilock"], rows["xfs_buf_lock"]
    assert ilock["a"] is None and (ilock["b"]["waits"], ilock["b"]["total_ns"]) == (2, 637575836)
    assert ilock["b"]["locks"] == ["xfs_ilock via down_read", "xfs_ilock via down_write"]
    assert buf["b"] is None and (buf["a"]["waits"], buf["a"]["max_ns"]) == (1, 342495000)
    # the waits /waits lists on each lock, by the half they start in (/waits keeps those overlapping a window:
    # xfsconvertd's 342 ms wait on xfs_buf_lock began before the split and ends after it)
    for side, lo, hi in (("a", None, XFS_SPLIT), ("b", XFS_SPLIT + 1, None)):
        for key, r in rows.items():
            waits = client.get(f"/api/analyses/{xfs}/waits", params={"lock_key": key, "limit": 1000}).json()
            starts = [
                w["start_ns"]
                for w in waits
                if (lo is None or w["start_ns"] >= lo) and (hi is None or w["start_ns"] <= hi)
            ]
            assert (r[side]["waits"] if r[side] else 0) == len(starts)
            assert (r[side]["total_ns"] if r[side] else 0) == sum(
                w["duration_ns"] for w in waits if w["start_ns"] in starts
            )
    # the wait heatmaps: one set of edges over both halves (the analysis' own heatmap has the same three waits)
    (pair,) = body["heatmaps"]
    # from the decade below the fastest (316.7 ms) to just above the slowest (342.5 ms): all three in the top bin
    assert pair["metric"] == "wait" and pair["y_edges_ns"] == [100000000, 150736379, 227214560, 342495001]
    assert [(c["y"], c["count"]) for c in pair["a"]["cells"]] == [(2, 1)]
    assert [(c["y"], c["count"]) for c in pair["b"]["cells"]] == [(2, 2)]
    d = _by_metric(pair["deltas"])
    assert (d["count"]["abs"], d["count"]["verdict"], d["max_ns"]["verdict"]) == (1, "worse", "better")
    _golden("xfs-halves.json", body)


@pytest.mark.parametrize("split", [XFS_SPLIT, XFS_ILOCKS_SPLIT])
def test_lock_rows_count_what_their_links_list(client, xfs, split):
    """A lock row's waits are the list its link opens (the Stalls tab, the side's range, that lock, waits starting
    in the range: compareState.lockWaitsLink fills an open end with the analysis' span), in /waits and /waits/page."""
    body = _compare(client, a=xfs, a_to=split, b_from=split + 1)
    checked = 0
    for side in "ab":
        s = body[side]
        t0 = s["from_ns"] if s["from_ns"] is not None else s["span_ns"][0]
        t1 = s["to_ns"] if s["to_ns"] is not None else s["span_ns"][1]
        for r in body["locks"]["rows"]:
            link = {"lock_key": r["lock_key"], "t0_ns": t0, "t1_ns": t1, "starting": True}
            listed = client.get(f"/api/analyses/{xfs}/waits", params={**link, "limit": 1000}).json()
            paged = client.get(f"/api/analyses/{xfs}/waits/page", params={**link, "limit": 1000}).json()
            assert paged["items"] == listed and paged["next_cursor"] is None
            want = (r[side]["waits"], r[side]["total_ns"]) if r[side] else (0, 0)
            assert (len(listed), sum(w["duration_ns"] for w in listed)) == want, (side, r["lock_key"])
            checked += 1
    assert checked == 4
    # without `starting` the window keeps the waits begun before the split and still waiting after it in the after
    # side's list too: xfsconvertd's on xfs_buf_lock (both splits), flush-8:0's on xfs_ilock (the second)
    window = {"t0_ns": split + 1, "t1_ns": body["b"]["span_ns"][1]}
    for key, counted in (("xfs_buf_lock", []), ("xfs_ilock", ["file_writer"] * (split == XFS_ILOCKS_SPLIT))):
        overlapping = client.get(f"/api/analyses/{xfs}/waits", params={"lock_key": key, **window}).json()
        starting = client.get(f"/api/analyses/{xfs}/waits", params={"lock_key": key, **window, "starting": True})
        if split == XFS_SPLIT and key == "xfs_ilock":
            continue  # both xfs_ilock waits start after it: the two lists are one
        assert len(overlapping) == len(counted) + 1 and [w["comm"] for w in starting.json()] == counted


def test_same_analysis_whole_is_all_same(client, xfs):
    body = _compare(client, a=xfs)
    verdicts = {d["verdict"] for r in body["locks"]["rows"] for d in r["deltas"]}
    assert verdicts == {"same"}


def test_delta_rules():
    assert delta("p99", "ns", 100, 104)["verdict"] == "same"  # within 5 %
    assert delta("p99", "ns", 100, 106) == {
        "metric": "p99",
        "unit": "ns",
        "a": 100,
        "b": 106,
        "abs": 6,
        "rel": 0.06,
        "verdict": "worse",
    }
    assert delta("p99", "ns", 100, 50)["verdict"] == "better"
    assert delta("count", "requests", 100, 50, None)["verdict"] is None
    assert delta("p99", "ns", 0, 5)["rel"] is None and delta("p99", "ns", 0, 5)["verdict"] == "worse"
    assert delta("p99", "ns", None, 5)["abs"] is None


@needs_public
def test_unknown_ids_and_bad_ranges(client, loop):
    r = client.get("/api/compare", params={"a": "nosuch"})
    assert r.status_code == 404 and "'nosuch'" in r.json()["detail"]
    r = client.get("/api/compare", params={"a": loop, "b": "gone"})
    assert r.status_code == 404 and "'gone'" in r.json()["detail"]
    r = client.get("/api/compare", params={"a": loop, "a_from": 500, "a_to": 400})
    assert r.status_code == 422 and r.json()["detail"].startswith("a_to (400) must be after a_from (500)")
    r = client.get("/api/compare", params={"a": loop, "b_from": 10**15})
    assert r.status_code == 422 and "holds nothing of analysis" in r.json()["detail"]
    assert "span [0, 30926276] ns" in r.json()["detail"]
    r = client.get("/api/compare", params={"a": loop, "a_from": "soon"})
    assert r.status_code == 422 and "a_from" in r.json()["detail"]
    assert client.get("/api/compare").status_code == 422  # a is required


@needs_public
def test_shared_server_reads_by_link(store, loop, lvm):
    """On a shared server a comparison needs the two links, as reading each analysis does, not the token."""
    app = create_app(store, warm=False, access=Access(token="t" * 24))
    with TestClient(app, base_url="http://localhost") as c:
        assert c.get("/api/analyses").status_code == 401
        assert c.get("/api/compare", params={"a": loop, "b": lvm}).status_code == 200
        assert c.get("/api/compare", params={"a": loop, "b": "x" * 22}).status_code == 404


@needs_public
def test_widest_ranges_and_bins(client, loop, xfs):
    """The widest ranges the API takes, and one bin: the heatmaps start at the first event, nothing overflows."""
    lo, hi = -(1 << 62), (1 << 62) - 1
    for x_bins in (1, 400):
        body = _compare(client, a=loop, b=xfs, a_from=lo, a_to=hi, b_from=lo, b_to=hi, x_bins=x_bins, y_bins=1)
        i2d = next(p for p in body["heatmaps"] if p["metric"] == "i2d")
        own = client.get(f"/api/analyses/{loop}/heatmap", params={"metric": "i2d"}).json()
        assert (
            (i2d["a"]["t0_ns"], i2d["a"]["t1_ns"]) == (own["t0_ns"], own["t1_ns"])
            and i2d["b"] is None
            and len(i2d["y_edges_ns"]) == 2
        )
        assert sum(c["count"] for c in i2d["a"]["cells"]) == 1024


def test_the_compare_page_is_served(store, tmp_path):
    """/compare?… (a shared link) is the web UI's page, with the security headers every page has."""
    dist = tmp_path / "dist"
    (dist / "assets").mkdir(parents=True)
    (dist / "index.html").write_text("<!doctype html><title>Stallscope</title>")
    with TestClient(create_app(store, static_dir=dist, warm=False)) as c:
        r = c.get("/compare", params={"a": "x", "b": "y", "a_from": 5})
        assert r.status_code == 200 and "<title>Stallscope</title>" in r.text
        assert r.headers["x-frame-options"] == "DENY" and "script-src 'self'" in r.headers["content-security-policy"]


# ---- past the index's events: the grid summary -----------------------------------------------------------------------


@pytest.fixture
def small_cap(monkeypatch, client):
    """An index may hold 500 events and a read return 500 rows (5 M each in the server): the loop capture's 1024
    requests are then over both, as a 5 GiB upload's 10 M are; a grid of 64 time buckets (heatsummary.LOG_TB)."""
    from backend.queries import heatmaps, heatsummary
    from backend.queries import run as run_module

    monkeypatch.setattr(heatmaps, "INDEX_MAX_EVENTS", 500)
    monkeypatch.setitem(run_module.run.__kwdefaults__, "max_rows", 500)
    monkeypatch.setattr(heatsummary, "LOG_TB", 6)
    client.app.state.cache.forget()  # nothing kept under the server's limits
    yield
    client.app.state.cache.forget()


def _reference_stats(store, aid: str, metric: str, lo: int, hi: int) -> dict:
    """count, the quantiles and max of the metric's requests placed in [lo, hi], in SQL (as heatmap_sql)."""
    con = store.cursor()
    try:
        n, qs, vmax = con.execute(
            f"SELECT count(*), quantile_disc(r.{metric}_ns, [0.5, 0.9, 0.99]), max(r.{metric}_ns) FROM blk_requests r"
            f" JOIN sources s ON s.id = r.source_id WHERE s.analysis_id = ? AND r.{metric}_ns IS NOT NULL"
            f" AND r.{AT[metric]} + s.clock_offset_ns BETWEEN ? AND ?",
            [aid, lo, hi],
        ).fetchone()
    finally:
        con.close()
    return {"count": n, "p50_ns": qs[0], "p90_ns": qs[1], "p99_ns": qs[2], "max_ns": vmax}


def _check_sides(store, pair: dict, aids: dict) -> None:
    """Each side's cells are its requests in its window counted here with the pair's edges and its own bins, its
    percentiles those of the SQL over that window."""
    for side, aid in aids.items():
        s = pair[side]
        got = [(c["x"], c["y"], c["count"], c["max_ns"]) for c in s["cells"]]
        want = _reference_cells(store, aid, pair["metric"], s["t0_ns"], s["t1_ns"], s["x_bin_ns"], pair["y_edges_ns"])
        assert got == want
        p = s["percentiles"]
        assert {k: p[k] for k in ("count", "p50_ns", "p90_ns", "p99_ns", "max_ns")} == _reference_stats(
            store, aid, pair["metric"], s["t0_ns"], s["t1_ns"]
        )


@needs_public
def test_a_side_past_the_index_reads_the_grid_summary(client, store, loop, lvm, small_cap):
    """Side a has more requests than an index may hold (before: its index was loaded through the row cap, a 422):
    it is answered from the grid summary the Dispatch heatmap reads, its window from a grid bucket's start, its bins
    whole buckets, the latency edges grid edges (side b, from its index, binned on them too), exact for those bins."""
    from backend.queries import heatsummary

    r = client.get(f"/api/analyses/{loop}/heatmap", params={"metric": "i2d", "x_bins": 8})
    assert r.status_code == 200  # the Dispatch heatmap's path
    body = _compare(client, a=loop, b=lvm, x_bins=8, y_bins=5)
    assert [p["metric"] for p in body["heatmaps"]] == ["i2d", "d2c"]
    for pair in body["heatmaps"]:
        assert set(pair["y_edges_ns"]) <= set(heatsummary.EDGES) | {heatsummary.grid_edge(j) for j in range(999)}
        a, b = pair["a"], pair["b"]
        assert a["x_bin_ns"] == b["x_bin_ns"] == pair["x_bin_ns"]  # shared: one width
        assert a["x_bins"] <= 8 and b["x_bins"] <= 8
        assert a["percentiles"]["count"] == 1024  # every request: the window covers the capture
        _check_sides(store, pair, {"a": loop, "b": lvm})
    own = _compare(client, a=loop, b=lvm, x_bins=8, y_bins=5, x_time="own")
    for pair in own["heatmaps"]:
        assert pair["a"]["x_bins"] <= 8 and pair["b"]["x_bins"] == 8
        _check_sides(store, pair, {"a": loop, "b": lvm})


@needs_public
def test_two_ranges_past_the_index_one_grid(client, store, loop, small_cap):
    """Two ranges of one analysis past the index: both from its grid, one width; a range narrower than x_bins of the
    grid's buckets (on its own time axis) is read by an index of its own events (a few: within the row cap)."""
    whole = client.get(f"/api/analyses/{loop}").json()
    t0, t1 = whole["t_min_ns"], whole["t_max_ns"]
    mid = (t0 + t1) // 2
    body = _compare(client, a=loop, a_to=mid, b_from=mid + 1, x_bins=6, y_bins=4)
    for pair in body["heatmaps"]:
        assert pair["a"]["x_bin_ns"] == pair["b"]["x_bin_ns"] == pair["x_bin_ns"]
        _check_sides(store, pair, {"a": loop, "b": loop})
    narrow = t0 + (t1 - t0) // 40
    body = _compare(client, a=loop, a_to=narrow, b_from=mid + 1, x_bins=6, y_bins=4, x_time="own")
    for pair in body["heatmaps"]:
        a = pair["a"]
        assert a["t0_ns"] >= t0 and a["t1_ns"] <= narrow  # its own events' span, not snapped to the grid
        assert a["x_bin_ns"] == -(-(a["t1_ns"] - a["t0_ns"] + 1) // 6)
        _check_sides(store, pair, {"a": loop, "b": loop})
