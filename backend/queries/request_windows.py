"""What a window of the Requests view is found from in memory: one analysis' block requests as columns (kept in the
AnalysisCache's answers per clock offsets: a PATCH moves the times, and forgets). A window's latency over time and
dispatch summary are then computed with numpy over the window's rows (binary search on the times, one sort), not by
a query: on a server answering 30 readers at once each such query cost 3-4 ms of CPU, mostly DuckDB's own per
query work on a few thousand rows.

The answers are the SQL's (queries/requests.py: `latency_sql`, `dispatch_sql`), value for value: counts, min, max,
exact discrete quantiles with DuckDB's rule for a DECIMAL fraction (`_quantile_index`), averages as a float; where
several requests share a bucket's max, the one named is the first by (source_id, line) (the SQL's arg_max names any
of them). Tests compare both on every sample with requests.

The figures: 11 numbers per request (~90 bytes; ~180 MB for 2 M requests, counted against the answers' budget)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..limits import TIME_MAX, TIME_MIN
from ..schema.tables import REQUEST_COLUMNS, aligned_by
from .catalogue import catalogue
from .run import run

if TYPE_CHECKING:
    from ..cache import AnalysisCache

METRICS = ("i2d", "d2c", "q2c")
REQUEST_TEXTS = 20_000  # an analysis of at most this many requests keeps their JSON texts (~0.6 kB each)
_NULL = np.iinfo(np.int64).min  # a missing time or latency (none is: every time lies within +-2^62)


@dataclass(eq=False)
class RequestColumns:
    """An analysis' block requests, as columns (aligned times); _NULL where a value is missing."""

    sid: np.ndarray
    line: np.ndarray
    t: np.ndarray  # start, aligned: the rows are in this order
    i: np.ndarray
    d: np.ndarray
    i2d: np.ndarray
    d2c: np.ndarray
    q2c: np.ndarray
    pid: np.ndarray
    comm: np.ndarray  # per row: its task name's code in comms (-1: none)
    dev: np.ndarray  # per row: its device's code in devs
    comms: list[str]
    devs: list[str]
    texts: list[bytes] | None  # per row: its JSON as /requests answers it, when at most REQUEST_TEXTS rows
    sources: tuple[tuple[int, int], ...]  # (id, clock offset) of the sources read

    @property
    def nbytes(self) -> int:
        arrays = (self.sid, self.line, self.t, self.i, self.d, self.i2d, self.d2c, self.q2c, self.pid)
        texts = sum(len(t) + 40 for t in self.texts) if self.texts is not None else 0
        return sum(a.nbytes for a in arrays) + self.comm.nbytes + self.dev.nbytes + texts

    def _between(self, at: np.ndarray, lo: int, hi: int) -> np.ndarray:
        return np.flatnonzero((at != _NULL) & (at >= lo) & (at <= hi))

    def first(self, order: str, limit: int, lo: int, hi: int) -> np.ndarray:
        """The rows of the first `limit` requests starting in [lo, hi] in /requests' `order`: slowest first by
        i2d/d2c/q2c (missing last), or by time; ties by (source_id, line)."""
        rows = self._between(self.t, lo, hi)
        sid, line = self.sid[rows], self.line[rows]
        if order == "time":
            by = np.lexsort((line, sid, self.t[rows]))
        else:
            v = getattr(self, order)[rows]
            by = np.lexsort((line, sid, -v, v == _NULL))  # -_NULL wraps, but those rows are sorted last anyway
        return rows[by[:limit]]

    def latency(self, lo: int, hi: int, buckets: int) -> dict:
        """I2D (placed at I) and D2C (at D) per time bucket of [lo, hi]: count, p50, max and the request behind
        it, as `latency_sql` answers."""
        bucket = max(1, -(-(hi - lo + 1) // buckets))
        series: dict[str, list] = {}
        for metric, placed in (("i2d", self.i), ("d2c", self.d)):
            values = getattr(self, metric)
            rows = self._between(placed, lo, hi)
            rows = rows[values[rows] != _NULL]
            start = lo + (placed[rows] - lo) // bucket * bucket
            v = values[rows]
            # by bucket, then value; among equal values the largest (source, line) first, so a bucket's last row is
            # its max with the smallest (source, line)
            order = np.lexsort((-self.line[rows], -self.sid[rows].astype(np.int64), v, start))
            start, v, rows = start[order], v[order], rows[order]
            firsts = np.flatnonzero(np.r_[True, start[1:] != start[:-1]]) if len(start) else np.empty(0, np.int64)
            counts = np.diff(np.r_[firsts, len(start)])
            p50 = v[firsts + _quantile_index(counts, 5, 10)]
            last = firsts + counts - 1
            series[metric] = [
                {"t_ns": t, "count": n, "p50_ns": m, "max_ns": x, "max_source_id": s, "max_line": ln}
                for t, n, m, x, s, ln in zip(
                    start[firsts].tolist(),
                    counts.tolist(),
                    p50.tolist(),
                    v[last].tolist(),
                    self.sid[rows[last]].tolist(),
                    self.line[rows[last]].tolist(),
                )
            ]
        return {"t0_ns": lo, "t1_ns": hi, "bucket_ns": bucket, "series": series}

    def dispatch(self, by: str, lo: int, hi: int) -> list[dict]:
        """Per process (pid, comm) or device, over the requests starting in [lo, hi]: the rows `dispatch_sql`
        reads (count, and n/min/avg/p50/p95/p99/max of each metric), in its order."""
        rows = self._between(self.t, lo, hi)
        keys = (self.pid[rows], self.comm[rows]) if by == "process" else (self.dev[rows],)
        grouped = np.lexsort(keys[::-1])
        rows, keys = rows[grouped], tuple(k[grouped] for k in keys)
        change = np.zeros(len(rows), bool)
        change[:1] = True
        for k in keys:
            change[1:] |= k[1:] != k[:-1]
        firsts = np.flatnonzero(change)
        out = []
        for a, b in zip(firsts.tolist(), np.r_[firsts[1:], len(rows)].tolist()):
            at = rows[a:b]
            if by == "process":
                pid, comm = int(self.pid[at[0]]), int(self.comm[at[0]])
                row = {"pid": None if pid == _NULL else pid, "comm": None if comm < 0 else self.comms[comm]}
            else:
                dev = int(self.dev[at[0]])
                row = {"dev": None if dev < 0 else self.devs[dev]}
            row["count"] = b - a
            for m in METRICS:
                v = getattr(self, m)[at]
                v = np.sort(v[v != _NULL])
                n = len(v)
                row[f"{m}_ns_n"] = n
                row[f"{m}_ns_min"] = int(v[0]) if n else None
                row[f"{m}_ns_avg"] = _sum(v) / n if n else None
                row[f"{m}_ns_q"] = (
                    [int(v[_quantile_index(n, integral, 100)]) for integral in (50, 95, 99)] if n else None
                )
                row[f"{m}_ns_max"] = int(v[-1]) if n else None
            out.append(row)
        keys = ("pid", "comm") if by == "process" else ("dev",)
        out.sort(
            key=lambda r: (
                _desc_nulls_last(r["q2c_ns_max"]),
                _desc_nulls_last(r["i2d_ns_max"]),
                -r["count"],
                *(_asc_nulls_last(r[k]) for k in keys),
            )
        )
        return out


def _quantile_index(n, integral: int, scaling: int):
    """The 0-based index, in n sorted values, of DuckDB's quantile_disc at the DECIMAL fraction integral/scaling:
    max(1, n - floor(n (scaling - integral) / scaling)) - 1, in integers (n: an int or an array)."""
    return np.maximum(1, n - (n * (scaling - integral)) // scaling) - 1


def _sum(v: np.ndarray) -> int:
    """The exact sum of int64 values (numpy's would wrap past 2^63)."""
    if not len(v) or len(v) * max(abs(int(v[0])), abs(int(v[-1]))) < 1 << 62:  # v sorted
        return int(v.sum())
    return sum(v.tolist())


def _desc_nulls_last(v) -> tuple:
    return (1, 0) if v is None else (0, -v)


def _asc_nulls_last(v) -> tuple:
    return (1, "") if v is None else (0, v)


def request_columns(con, cache: AnalysisCache, analysis_id: str) -> RequestColumns:
    found = catalogue(con, cache, analysis_id)
    sources = tuple(found.request_sources()) if found else ()
    return cache.shared(
        (analysis_id, "request-columns", sources),
        lambda: _read_columns(con, sources),
        lambda cols: cols.nbytes,
    )


def first_texts(con, cache: AnalysisCache, analysis_id: str, order: str, limit: int, t0, t1) -> list[bytes]:
    """The JSON texts of /requests' first `limit` requests in `order` starting in [t0, t1] (None: open): kept, or
    read by their ids."""
    cols = request_columns(con, cache, analysis_id)
    rows = cols.first(order, limit, TIME_MIN if t0 is None else t0, TIME_MAX if t1 is None else t1)
    if cols.texts is not None:
        return [cols.texts[k] for k in rows.tolist()]
    keys = list(zip(cols.sid[rows].tolist(), cols.line[rows].tolist()))
    got = {
        (r["source_id"], r["line"]): json.dumps(r).encode()
        for r in _rows(
            con,
            cols.sources,
            " JOIN (SELECT unnest($ks) AS ks, unnest($kl) AS kl) k ON r.source_id = k.ks AND r.line = k.kl",
            {"ks": [k[0] for k in keys], "kl": [k[1] for k in keys]},
        )
    }
    return [got[k] for k in keys]


# a source's requests with its clock offset (o.off), for the sources given as $ids and $offs
_FROM = "FROM blk_requests r JOIN (SELECT unnest($ids) AS sid, unnest($offs) AS off) o ON o.sid = r.source_id"


def _sources(sources: tuple[tuple[int, int], ...]) -> dict:
    """_FROM's parameters (a source id no table holds when there are none)."""
    return {"ids": [s for s, _ in sources] or [0], "offs": [o for _, o in sources] or [0]}


def _rows(con, sources: tuple[tuple[int, int], ...], join: str, params: dict, order: str = "") -> list[dict]:
    """Requests of the sources (id, clock offset) as /requests answers them (times aligned)."""
    return run(
        con,
        f"SELECT {aligned_by(REQUEST_COLUMNS, 'o.off')} {_FROM}{join}{order}",
        {**_sources(sources), **params},
        shape="dicts",
        max_rows=1 << 40,
    )


def _read_columns(con, sources: tuple[tuple[int, int], ...]) -> RequestColumns:
    null = str(_NULL)
    got = run(
        con,
        "SELECT r.source_id AS sid, r.line, r.t_ns + o.off AS t,"
        f" coalesce(r.i_ns + o.off, {null}) AS i, coalesce(r.d_ns + o.off, {null}) AS d,"
        f" coalesce(r.i2d_ns, {null}) AS i2d, coalesce(r.d2c_ns, {null}) AS d2c, coalesce(r.q2c_ns, {null}) AS q2c,"
        f" coalesce(r.pid, {null}) AS pid, r.comm, r.dev"
        f" {_FROM} ORDER BY t, r.source_id, r.line",
        _sources(sources),
        shape="arrow",
        max_rows=1 << 40,
    )
    names = ("sid", "line", "t", "i", "d", "i2d", "d2c", "q2c", "pid")
    col = {k: np.asarray(got.column(k).to_numpy(zero_copy_only=False), np.int64) for k in names}
    comm = got.column("comm").combine_chunks().dictionary_encode()
    dev = got.column("dev").combine_chunks().dictionary_encode()
    return RequestColumns(
        **col,
        comm=np.asarray(comm.indices.fill_null(-1).to_numpy(zero_copy_only=False), np.int64),
        dev=np.asarray(dev.indices.fill_null(-1).to_numpy(zero_copy_only=False), np.int64),
        comms=comm.dictionary.to_pylist(),
        devs=dev.dictionary.to_pylist(),
        texts=None
        if got.num_rows > REQUEST_TEXTS
        else [
            json.dumps(r).encode() for r in _rows(con, sources, "", {}, " ORDER BY r.t_ns + o.off, r.source_id, r.line")
        ],
        sources=sources,
    )
