"""Exact heatmaps without a scan per call: an in-memory index of one metric's events (heatmap.py's reads).

Why: binning 2 M requests in SQL (time bin x log latency bin, count, max and the event behind it) takes
0.2-0.8 s a call on a 2-core machine, and a coarser precomputed histogram cannot give the exact cells of any
window (its bins are not the window's). This index answers the same questions with work that grows with the
number of cells, not of events, and gives exactly what the SQL gives (tests compare both on the samples).

An index holds the events of one (analysis, metric, filter): the rows heatmap._base selects, without a pid or
dev filter (those calls are answered in SQL). It is built on first use, one query and a few numpy sorts
(~0.3 s for 2 M requests), and kept in the AnalysisCache's indexes (backend/cache/, bounded in bytes by
STALLSCOPE_HEATMAP_CACHE_MB, default 512): the events of an analysis never change after its ingest, and every time in it is the source's
own (clock offsets are read per call and added then, so a PATCH of an offset needs no rebuild).

* Rank: events ordered by (latency desc, source_id, line); rank 0 is the slowest. The smallest rank of any set
  of events is its max with the tie-break the SQL uses (arg_max over (v, -source_id, -line)). A latency bin
  [e_y, e_y+1) is the rank range [R(e_y+1), R(e_y)), R(e) = how many events have a latency >= e.
* Per source, its events in own-time order (t, rank), cut into blocks of BLOCK events; `k` holds each
  block's ranks sorted (as block << bits | rank, so one searchsorted serves all blocks). A time window is an
  index range; an x bin is a sub-range: the blocks wholly inside it are counted per latency bin by binary
  search (count and smallest rank), the few events of the blocks cut by an x boundary one by one.
* Order statistics of a window (percentiles, min, max; the slowest events of a box): the coarse range holding
  the k-th smallest rank comes from per-block prefix counts of 256 rank ranges (Part.c); the window's ranks
  inside that range alone are then gathered (binary search per block) and partitioned.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..distinct import distinct

LOG_BLOCK = 10
BLOCK = (
    1 << LOG_BLOCK
)  # events per block, by measurement on 2 M requests: 1024 was the fastest of 256..2048 (by <= 25 %)
LOG_COARSE = 8  # ranks are also counted per block in 2^8 coarse ranges (Part.c): order statistics of a window


@dataclass(eq=False)
class Part:
    """One source's events, in its own-time order."""

    sid: int
    t: np.ndarray  # own times, ascending (int64)
    r: np.ndarray  # the rank of each (int64)
    k: np.ndarray  # per block of BLOCK events, its ranks ascending, as (block << bits) + rank (int64)
    c: np.ndarray  # c[b, g]: ranks below g << shift among blocks [0, b) (int32, (blocks + 1) x (COARSE + 1))


@dataclass(eq=False)
class Index:
    n: int  # events
    bits: int  # ranks (and thresholds up to n) fit in this many bits
    shift: int  # a rank's coarse range: rank >> shift (at most 2^LOG_COARSE of them)
    neg_v: np.ndarray  # -latency by rank: ascending
    sid: np.ndarray  # source id by rank
    line: np.ndarray  # line by rank
    pid: np.ndarray  # pid by rank (0 where null, see pid_null)
    pid_null: np.ndarray | None  # by rank: pid is null
    parts: list[Part] = field(default_factory=list)

    @property
    def nbytes(self) -> int:
        arrays = [self.neg_v, self.sid, self.line, self.pid] + ([self.pid_null] if self.pid_null is not None else [])
        for p in self.parts:
            arrays += [p.t, p.r, p.k, p.c]
        return sum(a.nbytes for a in arrays)

    # ---- reads ---------------------------------------------------------------------------------------------

    def span(self, offsets: dict[int, int]) -> tuple[int, int] | None:
        """First and last aligned time of the events."""
        ends = [(int(p.t[0]) + offsets[p.sid], int(p.t[-1]) + offsets[p.sid]) for p in self.parts if len(p.t)]
        if not ends:
            return None
        return min(e[0] for e in ends), max(e[1] for e in ends)

    def window(self, offsets: dict[int, int], lo: int | None, hi: int | None) -> list[tuple[Part, int, int]]:
        """Per source, the index range [a, b) of its events placed in [lo, hi] (aligned, inclusive; None: open)."""
        out = []
        for p in self.parts:
            off = offsets[p.sid]
            a = 0 if lo is None else int(np.searchsorted(p.t, lo - off, "left"))
            b = len(p.t) if hi is None else int(np.searchsorted(p.t, hi - off, "right"))
            if a < b:
                out.append((p, a, b))
        return out

    def latency(self, rank) -> np.ndarray | int:
        return -self.neg_v[rank]

    def _pieces(self, wins):
        """Per window: its part, its whole blocks [f0, f1) and the ranks of its other events."""
        out = []
        for p, a, b in wins:
            f0, f1 = -(-a >> LOG_BLOCK), b >> LOG_BLOCK
            if f0 < f1:
                rest = np.concatenate((p.r[a : f0 << LOG_BLOCK], p.r[f1 << LOG_BLOCK : b]))
            else:
                f0 = f1 = 0
                rest = p.r[a:b]
            out.append((p, f0, f1, rest))
        return out

    def _in_blocks(self, p: Part, f0: int, f1: int, lo: int, hi: int) -> np.ndarray:
        """The ranks in [lo, hi) of blocks [f0, f1), ascending per block."""
        base = np.arange(f0, f1, dtype=np.int64) << self.bits
        s, e = np.searchsorted(p.k, base + lo), np.searchsorted(p.k, base + hi)
        lens = e - s
        total = int(lens.sum())
        if not total:
            return np.empty(0, np.int64)
        idx = np.arange(total) - np.repeat(np.cumsum(lens) - lens - s, lens)
        return p.k[idx] - np.repeat(base, lens)

    def _count_below(self, pieces, x: int) -> int:
        """How many ranks of the windows are below x."""
        g = x >> self.shift
        n = 0
        for p, f0, f1, rest in pieces:
            if f0 < f1:
                n += int(p.c[f1, g] - p.c[f0, g]) + len(self._in_blocks(p, f0, f1, g << self.shift, x))
            n += int((rest < x).sum())
        return n

    def _select(self, pieces, ks: list[int]) -> dict[int, int]:
        """The k-th smallest rank (0-based) of the windows, for each k."""
        coarse = np.zeros(1 << LOG_COARSE, np.int64)
        for p, f0, f1, rest in pieces:
            if f0 < f1:
                coarse += np.diff(p.c[f1] - p.c[f0])
            coarse += np.bincount(rest >> self.shift, minlength=len(coarse))
        below = np.cumsum(coarse)  # ranks in coarse ranges <= g
        out: dict[int, int] = {}
        by_range: dict[int, list[int]] = {}
        for k in ks:
            by_range.setdefault(int(np.searchsorted(below, k, "right")), []).append(k)
        for g, group in by_range.items():
            lo, hi = g << self.shift, (g + 1) << self.shift
            found = [self._in_blocks(p, f0, f1, lo, hi) for p, f0, f1, _ in pieces if f0 < f1]
            found += [rest[(rest >= lo) & (rest < hi)] for _, _, _, rest in pieces]
            vals = np.concatenate(found)
            first = int(below[g - 1]) if g else 0
            part = np.partition(vals, sorted({k - first for k in group}))
            for k in group:
                out[k] = int(part[k - first])
        return out

    def order_stats(self, wins, quantiles: list[float]) -> tuple[int, list[int], int, int]:
        """count, the quantile_disc of each quantile (DuckDB's: the value at 0-based position ceil(q n) - 1 of
        the ascending values), min and max latency of the events in the windows. count 0: ([], None, None)."""
        m = sum(b - a for _, a, b in wins)
        if m == 0:
            return 0, [], None, None
        pos = [max(0, -(-f.numerator * m // f.denominator) - 1) for f in (Fraction(str(q)) for q in quantiles)]
        want = [m - 1 - j for j in pos] + [0, m - 1]  # k-th smallest rank (rank ascending = latency descending)
        if m == self.n:
            ranks = want
        else:
            got = self._select(self._pieces(wins), want)
            ranks = [got[k] for k in want]
        vals = [int(v) for v in self.latency(np.asarray(ranks, np.int64))]
        return m, vals[:-2], vals[-1], vals[-2]

    def thresholds(self, edges: list[int]) -> np.ndarray:
        """The rank ranges of the latency bins of these edges, rank-ascending: bin j = [T[j], T[j+1]) is
        latency bin y = len(edges) - 2 - j (bin 0 also holds anything below, the top bin anything above)."""
        inner = np.asarray(edges[1:-1], np.int64)
        at_or_above = np.searchsorted(self.neg_v, -inner, "right")  # events with latency >= each inner edge
        return np.concatenate(([0], at_or_above[::-1], [self.n])).astype(np.int64)

    def rank_range(self, lat_min: int | None, lat_max: int | None) -> tuple[int, int]:
        """Ranks of the events with lat_min <= latency < lat_max."""
        lo = 0 if lat_max is None else int(np.searchsorted(self.neg_v, -lat_max, "right"))
        hi = self.n if lat_min is None else int(np.searchsorted(self.neg_v, -lat_min, "right"))
        return lo, max(lo, hi)

    def cells(self, wins, offsets: dict[int, int], lo: int, x_bin: int, nx: int, edges: list[int]):
        """The non-empty cells (x, y, count, max latency, source_id, line, pid or None) of the events in the
        windows, x = (aligned time - lo) // x_bin, y by the edges; in x, y order."""
        T = self.thresholds(edges)
        nb = len(T) - 1
        count = np.zeros(nx * nb, np.int64)
        best = np.full(nx * nb, self.n, np.int64)
        for p, a, b in wins:
            self._part_cells(p, a, b, lo - offsets[p.sid], x_bin, nx, T, count, best)
        nz = np.flatnonzero(count)
        xs, js = nz // nb, nz % nb
        ys = nb - 1 - js
        order = np.lexsort((ys, xs))
        nz, xs, ys = nz[order], xs[order], ys[order]
        r = best[nz]
        pid_null = self.pid_null[r] if self.pid_null is not None else np.zeros(len(r), bool)
        return list(
            zip(
                xs.tolist(),
                ys.tolist(),
                count[nz].tolist(),
                self.latency(r).tolist(),
                self.sid[r].tolist(),
                self.line[r].tolist(),
                [None if n else v for v, n in zip(self.pid[r].tolist(), pid_null)],
            )
        )

    def _part_cells(
        self,
        p: Part,
        a: int,
        b: int,
        lo_source: int,
        x_bin: int,
        nx: int,
        T: np.ndarray,
        count: np.ndarray,
        best: np.ndarray,
    ) -> None:
        nb = len(T) - 1
        bounds = np.empty(nx + 1, np.int64)
        bounds[0], bounds[-1] = a, b
        if nx > 1:
            edges = lo_source + x_bin * np.arange(1, nx, dtype=np.int64)
            bounds[1:-1] = np.clip(np.searchsorted(p.t, edges, "left"), a, b)
        s, e = bounds[:-1], bounds[1:]
        fb0 = (s + BLOCK - 1) >> LOG_BLOCK
        fb1 = e >> LOG_BLOCK
        nfull = np.maximum(fb1 - fb0, 0)
        total = int(nfull.sum())
        if total:  # blocks wholly inside an x bin: per latency bin, count and smallest rank by binary search
            xs = np.repeat(np.arange(nx), nfull)
            blocks = np.arange(total) - np.repeat(np.cumsum(nfull) - nfull - fb0, nfull)
            base = blocks << self.bits
            pos = np.searchsorted(p.k, (base[:, None] + T[None, :]).ravel()).reshape(total, nb + 1)
            cnt = np.diff(pos, axis=1)
            first = p.k[np.minimum(pos[:, :-1], len(p.k) - 1)] - base[:, None]
            first = np.where(cnt > 0, first, self.n)
            starts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]])
            xg = xs[starts]
            c2, b2 = count.reshape(nx, nb), best.reshape(nx, nb)
            c2[xg] += np.add.reduceat(cnt, starts, axis=0)
            b2[xg] = np.minimum(b2[xg], np.minimum.reduceat(first, starts, axis=0))
        # the rest, event by event: an x bin's head and tail outside its whole blocks (all of it when it has none)
        head_end = np.where(nfull > 0, fb0 << LOG_BLOCK, e)
        tail_start = np.where(nfull > 0, fb1 << LOG_BLOCK, e)
        starts_ = np.concatenate((s, tail_start))
        lens = np.maximum(np.concatenate((head_end, e)) - starts_, 0)
        n = int(lens.sum())
        if n:
            xk = np.repeat(np.concatenate((np.arange(nx), np.arange(nx))), lens)
            idx = np.arange(n) - np.repeat(np.cumsum(lens) - lens - starts_, lens)
            rr = p.r[idx]
            cell = xk * nb + np.searchsorted(T, rr, "right") - 1
            count += np.bincount(cell, minlength=len(count))
            np.minimum.at(best, cell, rr)

    def box(self, wins, lat_min: int | None, lat_max: int | None, limit: int) -> tuple[int, np.ndarray]:
        """How many events of the windows have lat_min <= latency < lat_max, and the ranks of the `limit`
        slowest of them (ascending: slowest first, ties in source_id, line order)."""
        lo, hi = self.rank_range(lat_min, lat_max)
        if sum(b - a for _, a, b in wins) == self.n:
            return hi - lo, np.arange(lo, min(hi, lo + limit), dtype=np.int64)
        pieces = self._pieces(wins)
        skip = self._count_below(pieces, lo)
        count = self._count_below(pieces, hi) - skip
        if count == 0:
            return 0, np.empty(0, np.int64)
        last = self._select(pieces, [skip + min(limit, count) - 1])[skip + min(limit, count) - 1]
        found = [self._in_blocks(p, f0, f1, lo, last + 1) for p, f0, f1, _ in pieces if f0 < f1]
        found += [rest[(rest >= lo) & (rest <= last)] for _, _, _, rest in pieces]
        return count, np.sort(np.concatenate(found))


def _ints(column: pa.ChunkedArray) -> np.ndarray:
    return column.to_numpy().astype(np.int64, copy=False)


def build(table: pa.Table) -> Index:
    """The index of the rows sid, t (own time), v (latency), line, pid."""
    sid, t, v, line = (_ints(table.column(c)) for c in ("sid", "t", "v", "line"))
    pid_col = table.column("pid")
    pid_null = pid_col.is_null().to_numpy(zero_copy_only=False) if pid_col.null_count else None
    pid = _ints(pc.fill_null(pid_col, 0))
    n = len(v)
    if not n:
        sids = []
    elif sid.min() == sid.max():
        sids = [int(sid[0])]
    else:
        sids = distinct(sid).tolist()
    order = _rank_order(v, sid, line, sids)
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(n, dtype=np.int64)
    bits = max(1, n.bit_length())
    shift = max(0, bits - LOG_COARSE)
    parts = []
    for s in sids:
        if len(sids) == 1:
            ts, rs = t, rank
        else:
            m = sid == s
            ts, rs = t[m], rank[m]
        ts, rs = _time_order(ts, rs, bits)
        blocks = np.arange(len(ts), dtype=np.int64) >> LOG_BLOCK
        parts.append(Part(s, ts, rs, np.sort((blocks << bits) + rs), _coarse(blocks, rs >> shift)))
    sid_r = np.full(n, sids[0], np.int32) if len(sids) == 1 else _small(sid[order])
    return Index(
        n,
        bits,
        shift,
        -v[order],
        sid_r,
        _small(line[order]),
        _small(pid[order]),
        pid_null[order] if pid_null is not None else None,
        parts,
    )


def _coarse(blocks: np.ndarray, ranges: np.ndarray) -> np.ndarray:
    """c[b, g] = events of blocks [0, b) whose coarse range is below g."""
    nb, g = (int(blocks[-1]) + 1 if len(blocks) else 0), 1 << LOG_COARSE
    c = np.zeros((nb + 1, g + 1), np.int64)
    c[1:, 1:] = np.bincount(blocks * g + ranges, minlength=nb * g).reshape(nb, g).cumsum(0).cumsum(1)
    return c.astype(np.int32) if c[-1, -1] < 2**31 else c


def _small(a: np.ndarray) -> np.ndarray:
    """int32 when every value fits (halves the memory of ids and lines)."""
    if len(a) and np.iinfo(np.int32).min <= a.min() and a.max() <= np.iinfo(np.int32).max:
        return a.astype(np.int32)
    return a


def _rank_order(v: np.ndarray, sid: np.ndarray, line: np.ndarray, sids: list[int]) -> np.ndarray:
    """The permutation ordering events by (v desc, sid, line). One packed int64 key sorted when the three fit
    in 63 bits (the common case: ~10x faster than lexsort), else lexsort."""
    if not len(v):
        return np.empty(0, np.int64)
    vr = int(v.max()) - v
    lr = line - int(line.min())
    vb, lb = int(vr.max()).bit_length(), int(lr.max()).bit_length()
    sb = (len(sids) - 1).bit_length()
    if vb + sb + lb <= 63 and int(v.min()) >= 0:
        key = vr << (sb + lb) | lr
        if sb:
            key |= np.searchsorted(np.asarray(sids, np.int64), sid) << lb
        return np.argsort(key)
    return np.lexsort((line, sid, -v))


def _time_order(t: np.ndarray, r: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """t and r sorted by (t, r)."""
    if not len(t):
        return t, r
    t0 = int(t.min())
    tb = int(t.max() - t0).bit_length()
    if tb + bits <= 63:
        key = np.sort((t - t0) << bits | r)
        return (key >> bits) + t0, key & ((1 << bits) - 1)
    o = np.lexsort((r, t))
    return t[o], r[o]
