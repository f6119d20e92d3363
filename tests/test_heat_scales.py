"""Latency heatmaps' scales reach the data (issue 33, point 2): bins start at the decade at or below the fastest
value (nanoseconds when the device is that fast) and end above the slowest, in the analysis' heatmap, in compare
(one scale for both sides) and in the grid summary of large analyses. On the romeus loop-device dumps (I2D p50
281 ns) and on a synthetic NVMe-like capture written here."""

from __future__ import annotations

import numpy as np
import pytest

from backend.queries import heatmaps
from tests.conftest import PUBLIC, ingest_bytes, ingest_paths, needs_public

LOOP = PUBLIC / "blkparse-text" / "derived-romeus-loop0-dump-x0y1.blkparse.txt"  # 1024 requests on loop 7,0
LOOP_BINARY = PUBLIC / "blktrace-binary" / "romeus-blkparse-dump" / "trace_x_1_y_1.bin"  # another dump of it


def _values(store, aid: str, metric: str) -> list[int]:
    con = store.cursor()
    try:
        return [
            v
            for (v,) in con.execute(
                f"SELECT r.{metric}_ns FROM blk_requests r JOIN sources s ON s.id = r.source_id"
                f" WHERE s.analysis_id = ? AND r.{metric}_ns IS NOT NULL",
                [aid],
            ).fetchall()
        ]
    finally:
        con.close()


def _inside(edges: list[int], values: list[int]) -> None:
    """Every value lies inside the bins: from the first edge, below the last."""
    assert edges[0] <= min(values) and max(values) < edges[-1], (edges[0], min(values), max(values), edges[-1])
    assert all(b > a for a, b in zip(edges, edges[1:]))


def _bin_of(edges: list[int], v: int) -> tuple[int, int]:
    y = int(np.searchsorted(np.asarray(edges[1:-1]), v, "right"))
    return edges[y], edges[y + 1]


def nvme_like(n: int = 400) -> bytes:
    """A blkparse capture of n 4 KiB reads on an NVMe-like device 259,0: I->D 40-390 ns, D->C 6-30 µs."""
    rng = np.random.default_rng(33)
    lines, seq, t = [], 0, 1_000_000
    for k in range(n):
        sector = 1_000_000 + 8 * k
        i2d = int(rng.integers(40, 390))
        d2c = int(rng.integers(6_000, 30_000))
        for action, at in (("Q", t), ("G", t + 300), ("I", t + 600), ("D", t + 600 + i2d), ("C", t + 600 + i2d + d2c)):
            seq += 1
            s, ns = divmod(at, 1_000_000_000)
            pid = 0 if action == "C" else 4242
            tail = "[0]" if action == "C" else "[fio]"
            lines.append(f"259,0    1 {seq:8d} {s:5d}.{ns:09d} {pid:5d}  {action}   R {sector} + 8 {tail}")
        t += 50_000
    return ("\n".join(lines) + "\n").encode()


@pytest.fixture
def loop(store):
    return ingest_paths(store, LOOP, name="loop0")["id"]


@needs_public
def test_loop_device_i2d_lands_in_sub_microsecond_bins(client, store, loop):
    values = _values(store, loop, "i2d")
    h = client.get(f"/api/analyses/{loop}/heatmap", params={"metric": "i2d"}).json()
    edges = h["y_edges_ns"]
    assert (min(values), h["percentiles"]["p50_ns"]) == (253, 281)
    assert edges[0] == 100  # the decade below 253 ns (before: 1 µs, every request in the "1 µs" row)
    _inside(edges, values)
    lo, hi = _bin_of(edges, 281)
    assert hi <= 300 and lo >= 250  # p50 in a bin of its own, below 1 µs
    ys = {c["y"] for c in h["cells"]}
    assert len(ys) >= 10  # the requests spread over the rows
    for metric in ("d2c", "q2c"):
        got = client.get(f"/api/analyses/{loop}/heatmap", params={"metric": metric}).json()["y_edges_ns"]
        _inside(got, _values(store, loop, metric))
        assert got[0] == 1000  # D2C's fastest is 1.0-9.9 µs: its decade


@needs_public
def test_compare_of_two_loop_dumps_has_one_scale_reaching_both(client, store, loop):
    other = ingest_paths(store, LOOP_BINARY, name="loop0 x1y1")["id"]
    r = client.get("/api/compare", params={"a": loop, "b": other, "y_bins": 30})
    assert r.status_code == 200, r.text
    (i2d,) = [p for p in r.json()["heatmaps"] if p["metric"] == "i2d"]
    edges = i2d["y_edges_ns"]
    both = _values(store, loop, "i2d") + _values(store, other, "i2d")
    _inside(edges, both)
    assert edges[0] < 1000 and i2d["y_bins"] == 30  # not "30 latency bins 1.00 µs – 1.62 µs"


@needs_public
def test_grid_summary_starts_at_the_decade_below(client, store, loop, monkeypatch):
    """Past the index's events (a large analysis), the heatmap is read from the grid summary: its edges too start at
    the decade below the fastest and end above the slowest."""
    from backend.queries import heatsummary

    monkeypatch.setattr(heatmaps, "INDEX_MAX_EVENTS", 500)
    monkeypatch.setattr(heatsummary, "LOG_TB", 6)
    client.app.state.cache.forget()  # nothing kept under the server's limits
    h = client.get(f"/api/analyses/{loop}/heatmap", params={"metric": "i2d", "x_bins": 8, "y_bins": 20}).json()
    client.app.state.cache.forget()
    edges = h["y_edges_ns"]
    assert set(edges) <= {heatsummary.grid_edge(j) for j in range(heatsummary.J + 1)}  # the grid's
    assert edges[0] == 100
    _inside(edges, _values(store, loop, "i2d"))
    assert _bin_of(edges, 281)[1] < 1000


def test_synthetic_nvme_capture_in_nanoseconds(client, store):
    aid = ingest_bytes(store, **{"nvme.blkparse.txt": nvme_like()})["id"]
    i2d = _values(store, aid, "i2d")
    assert len(i2d) == 400 and min(i2d) < 100
    h = client.get(f"/api/analyses/{aid}/heatmap", params={"metric": "i2d"}).json()
    assert h["y_edges_ns"][0] == 10
    _inside(h["y_edges_ns"], i2d)
    d2c = client.get(f"/api/analyses/{aid}/heatmap", params={"metric": "d2c"}).json()
    assert d2c["y_edges_ns"][0] == 1000
    _inside(d2c["y_edges_ns"], _values(store, aid, "d2c"))
