"""The grid summary (heatmaps past INDEX_MAX_EVENTS: heatsummary.py) equals the SQL on real captures.

The summary is forced (INDEX_MAX_EVENTS = 0) on small grids (so that every level and the SQL fallback of narrow
windows run); each answer is checked against the SQL over its own window and bins: the percentiles against
heatmap_sql's quantile_disc over [t0_ns, t1_ns], each cell's count and slowest event against the SQL box of its
time bin and latency bin (bin 0 open below, the top bin open above), and the counts' sum against the window's.
"""

from __future__ import annotations

import random

import pytest

from backend.cache import AnalysisCache
from backend.queries import heatmap_events, heatsummary
from backend.queries import heatmaps as heatmap
from tests.conftest import SAMPLES, ingest_paths

DEMO = SAMPLES / "demo-cfq-starvation.blkparse.txt"
XFS = SAMPLES / "xfs-unwritten-stall.trace-cmd-report.txt"
EXT4_BLK = SAMPLES / "ext4-jbd2-commit.blkparse.txt"
INCIDENT_BLK = SAMPLES / "incident.blkparse.txt"


@pytest.fixture(params=[4, 9], ids=["tb-16", "tb-512"])
def forced(request, monkeypatch):
    monkeypatch.setattr(heatmap, "INDEX_MAX_EVENTS", 0)
    monkeypatch.setattr(heatsummary, "LOG_TB", request.param)
    return AnalysisCache()  # nothing kept from another test's settings


def _check(con, cache, aid: str, metric: str, x_bins: int, y_bins: int, t0=None, t1=None, filter=None) -> bool:
    """Checks one answer; False when it came from the SQL (a window too narrow for the grid)."""
    got = heatmap.heatmap(con, cache, aid, metric, x_bins, y_bins, t0=t0, t1=t1, filter=filter)
    summary = heatmap.grid_summary(con, cache, aid, metric, filter)
    assert summary is not None
    by_grid = summary.heatmap(
        t0 if t0 is not None else summary.t0, t1 if t1 is not None else summary.t_last, x_bins, y_bins
    )
    if by_grid is None:  # the SQL answered, exactly as before
        assert got == heatmap.heatmap_sql(con, aid, metric, x_bins, y_bins, t0=t0, t1=t1, filter=filter)
        return False
    if not by_grid["n"]:  # no event in the grid's window: the SQL's empty answer
        assert got == heatmap.heatmap_sql(con, aid, metric, x_bins, y_bins, t0=t0, t1=t1, filter=filter)
        return True
    lo, hi, nx, xb = got["t0_ns"], got["t1_ns"], got["x_bins"], got["x_bin_ns"]
    if t0 is not None:
        assert lo <= t0 and hi >= t1
    assert nx <= x_bins and got["y_bins"] <= y_bins
    ref = heatmap.heatmap_sql(con, aid, metric, nx, y_bins, t0=lo, t1=hi, filter=filter)
    assert got["percentiles"] == ref["percentiles"]
    if not got["percentiles"]["count"]:
        assert got["cells"] == []
        return True
    assert xb == ref["x_bin_ns"]
    edges = got["y_edges_ns"]
    assert all(b > a for a, b in zip(edges, edges[1:])) and len(edges) == got["y_bins"] + 1
    assert sum(c["count"] for c in got["cells"]) == got["percentiles"]["count"]
    ny = got["y_bins"]
    for c in got["cells"]:
        total, rows = heatmap_events._box_sql(
            con,
            aid,
            metric,
            filter,
            None,
            None,
            lo + c["x"] * xb,
            min(hi, lo + (c["x"] + 1) * xb - 1),
            edges[c["y"]] if c["y"] > 0 else None,
            edges[c["y"] + 1] if c["y"] < ny - 1 else None,
            1,
        )
        assert total == c["count"], c
        top = rows[0]
        assert (c["max_ns"], c["max_ref"]["source_id"], c["max_ref"]["line"], c["max_ref"]["pid"]) == (
            top["latency_ns"],
            top["source_id"],
            top["line"],
            top["pid"],
        ), c
    return True


def _random_windows(con, cache, aid, metric, rng, filter=None, n=12):
    lo, hi = heatmap.heatmap_sql(con, aid, metric, 10, 10, filter=filter)["t0_ns"], None
    hi = heatmap.heatmap_sql(con, aid, metric, 10, 10, filter=filter)["t1_ns"]
    grid = 0
    grid += _check(con, cache, aid, metric, rng.choice([6, 40, 120]), rng.choice([4, 40]), filter=filter)
    for _ in range(n):
        w = max(1, int((hi - lo) / 10 ** rng.uniform(0, 3)))
        t0 = lo + rng.randint(-w // 4, hi - lo)
        grid += _check(con, cache, aid, metric, rng.choice([3, 7, 40, 120]), rng.choice([1, 3, 40]), t0, t0 + w, filter)
    return grid


def test_block_heatmaps_from_the_summary_equal_the_sql(store, forced):
    aid = ingest_paths(store, DEMO)["id"]
    con = store.cursor()
    rng = random.Random(3)
    assert sum(_random_windows(con, forced, aid, m, rng) for m in ("i2d", "d2c", "q2c")) > 1


def test_several_sources_with_offsets(store, forced):
    aid = ingest_paths(store, DEMO, EXT4_BLK, INCIDENT_BLK)["id"]
    con = store.cursor()
    sids = [s for (s,) in con.execute("SELECT id FROM sources WHERE analysis_id = ? ORDER BY id", [aid]).fetchall()]
    rng = random.Random(5)
    for offsets in ((0, 0, 0), (0, 2_000_000_000, -7)):
        for sid, off in zip(sids, offsets):
            con.execute("UPDATE sources SET clock_offset_ns = ? WHERE id = ?", [off, sid])
        forced.forget(aid)  # as a PATCH does: the analysis' catalogue holds its offsets
        assert _random_windows(con, forced, aid, "i2d", rng, n=6) > 0


def test_wait_and_func_heatmaps_from_the_summary(store, forced):
    aid = ingest_paths(store, XFS)["id"]
    con = store.cursor()
    rng = random.Random(7)
    _random_windows(con, forced, aid, "wait", rng, n=6)
    func = heatmap.metrics(con, forced, aid, limit=1)["functions"][0]["func"]
    _random_windows(con, forced, aid, "func", rng, filter=func, n=6)


def test_windows_outside_the_events(store, forced):
    aid = ingest_paths(store, DEMO)["id"]
    con = store.cursor()
    whole = heatmap.heatmap_sql(con, aid, "i2d", 10, 10)
    lo, hi = whole["t0_ns"], whole["t1_ns"]
    span = hi - lo
    for t0, t1 in (
        (lo - 10 * span, lo - 5 * span),
        (hi + span, hi + 2 * span),
        (lo - span, hi + span),
        (-(2**62), 2**62),
    ):
        _check(con, forced, aid, "i2d", 120, 40, t0, t1)


def test_quantiles_are_the_heatmaps():
    assert heatsummary.QUANTILES == heatmap.QUANTILES
