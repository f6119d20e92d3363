"""Heatmaps of more events than an index may hold (heatmaps.INDEX_MAX_EVENTS): a summary on a fixed grid.

Why: past 5 M events (a 5 GiB blkparse upload has ~24 M requests) heatindex.Index would hold ~40 bytes an event
in the server's memory, and binning in SQL scans every event of the window at each read (p95 0.9 s on random
windows of 24 M requests). A summary answers from work that grows with the cells of the window, not its events.

The grid, in aligned time (built per clock offsets: a PATCH makes a new key): time buckets of width W0 =
ceil(span / 2^LOG_TB) from the first event, and fixed log latency buckets `lb` with edges G_j = round(GRID_FLOOR_NS *
10^(j / PER_DECADE)) (lb(v) = how many of G_1 .. G_{J-1} are <= v: bucket 0 also holds anything below 100 ns; the
grid starts there: below, integer edges 32 to a decade would repeat).

* Cells: per (time bucket, lb), the count and the slowest event (latency, source, line, pid; ties: the first in
  source, line order, as heatmap_sql's arg_max), at level 0 and at coarser levels of FANOUT buckets each.
* K: every event's latency, sorted by (level-0 time bucket, latency), packed as bucket << 44 | latency: the
  order statistics (percentiles, min, max) of any set of whole buckets, exactly. Level-0 rows are K's groups in
  order (lb grows with the latency), so the latencies of one lb over a window are slices of K found without a
  search in it (a binary search per bucket in K's 10 M values took 5 ms a quantile: most of a wide window's time).

A heatmap is answered on this grid: its window starts at a bucket boundary of the coarsest level whose bucket
is no wider than the asked time bin, its time bin is a whole number of those buckets (at most twice the asked
one) and its latency edges are grid edges (every bin the same number of lb, at most y_bins bins), from the decade at
or below the fastest event's bucket to the edge above the slowest's (as heatmaps.latency_edges). Every count,
slowest event and percentile is exact for those bins (tests compare them with the SQL over the same window and
boxes); the events behind a cell are read by the exact box query. A window narrower than x_bins level-0 buckets
is binned in SQL (it holds few events).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

LOG_TB = 15  # level-0 time buckets over the span: 32768 (at 16384, windows of 0.4-0.7 % were the SQL's)
FANOUT = 4  # level L + 1 buckets hold FANOUT level-L buckets
PER_DECADE = 32  # latency buckets per decade
GRID_FLOOR_NS = 100  # G_0: the grid's lowest edge
DECADES = 13  # from 100 ns: the top bucket starts at 10^15 ns (above: the top bucket)
V_BITS = 44  # a latency of K (below 2^44 ns, ~4.9 h: more and the analysis is binned in SQL)
J = PER_DECADE * DECADES + 1  # latency buckets 0 .. J - 1


def grid_edge(j: int) -> int:
    return round(GRID_FLOOR_NS * 10 ** (j / PER_DECADE))


EDGES = [grid_edge(j) for j in range(J + 1)]


@dataclass(eq=False)
class Level:
    width: int  # ns per time bucket
    tb: np.ndarray  # rows sorted by (tb, lb)
    lb: np.ndarray
    count: np.ndarray
    best: np.ndarray  # the slowest event's place in the level-0 order (vmax desc, sid, line) of level-0 rows


@dataclass(eq=False)
class Summary:
    t0: int  # aligned time of the first event: bucket b is [t0 + b * width, t0 + (b + 1) * width)
    t_last: int  # aligned time of the last event
    n: int
    key: np.ndarray  # K (see the module docstring)
    sid: np.ndarray  # by level-0 order: the slowest event of each level-0 row
    line: np.ndarray
    pid: np.ndarray
    pid_null: np.ndarray
    vmax0: np.ndarray
    levels: list[Level] = field(default_factory=list)
    kpos: np.ndarray | None = None  # per level-0 row: where its latencies start in K (rows are K's groups, in order)
    by_lb: np.ndarray | None = None  # level-0 rows ordered by (lb, tb); lb j's are by_lb[lb_start[j]:lb_start[j+1]]
    lb_start: np.ndarray | None = None

    @property
    def nbytes(self) -> int:
        arrays = [self.key, self.sid, self.line, self.pid, self.pid_null, self.vmax0, self.kpos, self.by_lb]
        for lv in self.levels:
            arrays += [lv.tb, lv.lb, lv.count, lv.best]
        return sum(a.nbytes for a in arrays)

    def level_for(self, x_bin: int) -> int | None:
        """The coarsest level whose bucket is no wider than x_bin (None: even level 0's is wider)."""
        found = None
        for i, lv in enumerate(self.levels):
            if lv.width <= x_bin:
                found = i
        return found

    def heatmap(self, lo: int, hi: int, x_bins: int, y_bins: int) -> dict | None:
        """The bins, cells and order statistics of the events placed in [lo, hi] snapped to the grid (see the
        module docstring), or None when the window is narrower than x_bins level-0 buckets."""
        want = max(1, -(-(hi - lo + 1) // x_bins))
        li = self.level_for(want)
        if li is None:
            return None
        w = self.levels[li].width
        c0 = (lo - self.t0) // w  # first bucket (may be before the first event)
        t0 = self.t0 + c0 * w
        m = -(-(-(-(hi - t0 + 1) // x_bins)) // w)  # buckets per time bin: at most x_bins bins from t0 to hi
        x_bin = m * w
        nx = max(1, -(-(hi - t0 + 1) // x_bin))
        out = {"t0": t0, "t1": t0 + nx * x_bin - 1, "x_bins": nx, "x_bin": x_bin, "n": 0}
        st = self.stats(li, c0, c0 + nx * m)
        if st is None:
            return out
        a, b = st["lb_range"]
        a = decade_bucket(a)
        step = -(-(b - a + 1) // y_bins)
        edges = grid_edges(a, b, step)
        cells = self.cells(li, c0, m, nx, a, step, len(edges) - 1)
        out.update(n=st["n"], quantiles=st["quantiles"], vmin=st["vmin"], vmax=st["vmax"], edges=edges, cells=cells)
        return out

    def stats(self, li: int, c0: int, c1: int) -> dict | None:
        """The order statistics of the events in level li's buckets [c0, c1) (None: none there): n, quantiles
        (QUANTILES), vmin, vmax, and lb_range, the first and last latency bucket holding some."""
        lv = self.levels[li]
        i0, i1 = np.searchsorted(lv.tb, [c0, c1])
        if i0 >= i1:
            return None
        hist = np.bincount(lv.lb[i0:i1].astype(np.int64), weights=lv.count[i0:i1], minlength=J).astype(np.int64)
        n = int(hist.sum())
        scale = FANOUT**li
        qpos = [max(0, -(-f.numerator * n // f.denominator) - 1) for f in (Fraction(str(q)) for q in QUANTILES)]
        got = self._kth(hist, c0 * scale, c1 * scale, [*qpos, 0, n - 1])  # level-0 buckets
        used = np.flatnonzero(hist)
        return {
            "n": n,
            "quantiles": got[:-2],
            "vmin": got[-2],
            "vmax": got[-1],
            "lb_range": (int(used[0]), int(used[-1])),
        }

    def cells(self, li: int, c0: int, m: int, nx: int, a: int, step: int, ny: int) -> list[tuple]:
        """The non-empty cells (x, y, count, max, sid, line, pid) of level li's buckets from c0 in nx time bins of
        m buckets and ny latency bins of `step` latency buckets from bucket a (grid_edges(a, ., step); buckets
        below a in bin 0, above the last bin in it), in x, y order."""
        lv = self.levels[li]
        i0, i1 = np.searchsorted(lv.tb, [c0, c0 + nx * m])
        xs = (lv.tb[i0:i1] - c0) // m
        ys = np.clip((lv.lb[i0:i1].astype(np.int64) - a) // step, 0, ny - 1)
        cell = xs * ny + ys
        count = np.bincount(cell, weights=lv.count[i0:i1], minlength=nx * ny).astype(np.int64)
        best = np.full(nx * ny, np.iinfo(np.int64).max, np.int64)
        np.minimum.at(best, cell, lv.best[i0:i1])
        nz = np.flatnonzero(count)  # x, y order
        r = best[nz]
        pid_null = self.pid_null[r]
        return list(
            zip(
                (nz // ny).tolist(),
                (nz % ny).tolist(),
                count[nz].tolist(),
                self.vmax0[r].tolist(),
                self.sid[r].tolist(),
                self.line[r].tolist(),
                [None if nl else p for p, nl in zip(self.pid[r].tolist(), pid_null.tolist())],
            )
        )

    def _kth(self, hist: np.ndarray, b0: int, b1: int, ks: list[int]) -> list[int]:
        """The k-th smallest latency (0-based) of the events in level-0 buckets [b0, b1), for each k: the latency
        bucket holding it from hist (the window's events per lb), then that bucket's latencies of the window."""
        below = np.cumsum(hist)
        lv = self.levels[0]
        want: dict[int, list[int]] = {}
        for k in ks:
            want.setdefault(int(np.searchsorted(below, k, "right")), []).append(k)
        got: dict[int, int] = {}
        for j, group in want.items():
            rows = self.by_lb[self.lb_start[j] : self.lb_start[j + 1]]  # lb j's level-0 rows, by bucket
            a, b = np.searchsorted(lv.tb[rows], [b0, b1])
            rows = rows[a:b]
            s, lens = self.kpos[rows], lv.count[rows]
            idx = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens - s, lens)
            first = int(below[j - 1]) if j else 0
            at = sorted({k - first for k in group})
            vals = np.partition(self.key[idx] & ((1 << V_BITS) - 1), at)
            for k in group:
                got[k] = int(vals[k - first])
        return [got[k] for k in ks]


QUANTILES = [0.5, 0.9, 0.99, 0.999, 0.9999]  # heatmaps.QUANTILES (checked by a test)


def decade_bucket(a: int) -> int:
    """The grid bucket that starts the decade holding bucket a (bins start at the decade below the fastest)."""
    return a - a % PER_DECADE


def grid_edges(a: int, b: int, step: int) -> list[int]:
    """The latency edges of bins of `step` grid buckets each from bucket a, the last holding bucket b."""
    ny = -(-(b - a + 1) // step)
    return [EDGES[a + k * step] if a + k * step <= J else grid_edge(a + k * step) for k in range(ny + 1)]


def lb_of(v: int) -> int:
    """The grid latency bucket of a latency (lb: how many of G_1 .. G_{J-1} are at most v)."""
    return int(np.searchsorted(EDGES[1:J], v, "right"))


def bucket_sql(v: str) -> str:
    """SQL of lb(v): log10 binning corrected by one bucket against the integer edges ($g, 1-based)."""
    y0 = (
        f"least({J - 1}, greatest(0, floor((log10(greatest({v}, 1)) - {math.log10(GRID_FLOOR_NS):g}) * {PER_DECADE})))"
        "::INTEGER"
    )
    return (
        f"(SELECT y0 - (y0 > 0 AND {v} < $g[y0 + 1])::INTEGER + (y0 < {J - 1} AND {v} >= $g[y0 + 2])::INTEGER"
        f" FROM (SELECT {y0} AS y0))"
    )


def build(t0: int, t_last: int, width: int, rows, key: np.ndarray) -> Summary:
    """The summary from level-0 rows (tb, lb, count, vmax, sid, line, pid; numpy arrays, any order) and K."""
    tb, lb, count, vmax, sid, line, pid, pid_null = rows
    order = np.lexsort((lb, tb))
    tb, lb, count, vmax, sid, line, pid, pid_null = (a[order] for a in (tb, lb, count, vmax, sid, line, pid, pid_null))
    rank_order = np.lexsort((line, sid, -vmax))  # the slowest first; ties in source, line order
    rank = np.empty(len(tb), np.int64)
    rank[rank_order] = np.arange(len(tb), dtype=np.int64)
    levels = [Level(width, tb, lb, count, rank)]
    while len(levels[-1].tb) and levels[-1].tb[-1] > 0:
        prev = levels[-1]
        ctb = prev.tb // FANOUT
        o = np.lexsort((prev.lb, ctb))
        ctb, clb, ccount, cbest = ctb[o], prev.lb[o], prev.count[o], prev.best[o]
        starts = np.flatnonzero(np.r_[True, (ctb[1:] != ctb[:-1]) | (clb[1:] != clb[:-1])])
        best = np.minimum.reduceat(cbest, starts)
        levels.append(
            Level(
                prev.width * FANOUT,
                ctb[starts],
                clb[starts],
                np.add.reduceat(ccount, starts),
                best,
            )
        )
    by_lb = np.lexsort((tb, lb))
    lb_start = np.searchsorted(lb[by_lb], np.arange(J + 1))
    for lv in levels:  # held for the analysis' life: the narrowest type that holds each column
        lv.lb, lv.best = lv.lb.astype(np.int16), _small(lv.best)
    # level-0 rows' slowest events by rank (the cells name them)
    return Summary(
        t0,
        t_last,
        int(count.sum()),
        key,
        _small(sid[rank_order]),
        _small(line[rank_order]),
        _small(pid[rank_order]),
        pid_null[rank_order],
        vmax[rank_order],
        levels,
        np.concatenate(([0], np.cumsum(count)[:-1])).astype(np.int64),
        _small(by_lb),
        lb_start,
    )


def _small(a: np.ndarray) -> np.ndarray:
    """int32 when every value fits (ids, lines, pids and row numbers: half the memory)."""
    if len(a) and np.iinfo(np.int32).min <= a.min() and a.max() <= np.iinfo(np.int32).max:
        return a.astype(np.int32)
    return a
