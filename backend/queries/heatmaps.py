"""Latency heatmaps: time bins × log-scaled latency bins, counted in SQL (the events inside a box of one:
heatmap_events.py).

Metrics (what is counted, its latency, where it is placed in time, what each event is):
* i2d | d2c | q2c: block requests (`blk_requests`): I→D placed at I, D→C at D, Q→C at Q; filters pid, dev.
  An event is a request, identified by (source_id, line).
* func: function_graph calls of one function (`fg_calls`, `filter` = the function name, exact match) whose
  duration is known (the duration field of the exit line), placed at their entry; filter pid. An event is a
  call, identified by (source_id, line) of its entry; pid is its task.
* wait: the waits that are stalls (`stall_waits`: idle sleeps left out, see stalls.py), their duration placed at
  their start; `filter` = a lock_key (the
  object: `xfs_ilock`) or a lock label (`xfs_ilock via down_write`), none = every wait; filter pid. A wait
  still open at the end of the trace counts with its duration so far (a lower bound: end_known false).

Times are on the analysis timeline: a source's own time + its `sources.clock_offset_ns`; t0/t1 filter
and every time returned are such aligned times.

x: time bins of x_bin_ns = ceil((t1 - t0 + 1) / x_bins) over [t0, t1] (default: the span of the
metric's own placement times). y: latency bins with integer ns edges at equal steps in log10 from
the decade at or below the fastest latency (1 ns at least: nanoseconds when the device is that fast) to just above
the slowest (max + 1 ns), so every latency lies inside the bins; an event is in bin
y = the number of inner edges y_edges[1..y_bins-1] at or below its latency, so bin 0 also holds anything
below the lowest edge and the top bin holds the max. Edges are strictly increasing: when the latency
range holds fewer distinct ns than the bins asked for, y_bins is lowered. The SQL finds that number by a binary
search over the integer edges (sqlsearch.rank_case), so cells agree exactly with a box query on the edges.
Each non-empty cell has its count, its max and the event behind it (ties: the first in source, line
order). Beside it, exact percentiles (quantile_disc) of the latency over the same filter and window.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from . import heatindex, heatsummary, stored
from .catalogue import offsets as clock_offsets
from .catalogue import offsets_now, source_offsets
from .run import run
from .sqlsearch import rank_case

if TYPE_CHECKING:
    from ..cache import AnalysisCache

BLOCK_METRICS = ("i2d", "d2c", "q2c")
METRICS = (*BLOCK_METRICS, "func", "wait")
FLOOR_NS = 1  # the lowest edge is never below 1 ns (a latency of 0 is in bin 0)
QUANTILES = [0.5, 0.9, 0.99, 0.999, 0.9999]
INDEX_MAX_EVENTS = 5_000_000  # events an in-memory index may hold (~40 bytes each); more: SQL (indexable)


@dataclass(frozen=True)
class Spec:
    kind: str  # what an event is: request | call | wait
    table: str  # FROM clause, aliased `a`
    value: str  # the latency column of `a`
    at: str  # the column of `a` that places the event in time (the source's own clock)
    extra: tuple[str, ...]  # columns of `a` an event in a box also shows
    metric: str  # the metric's name in the API (a variant of a metric shares its name: spec_key)
    idle: bool = False  # waits: idle sleeps counted too (wait_kinds.py), not only the stalls


WAIT_EXTRA = ("comm", "lock", "lock_key", "end_known")
SPECS = {
    **{
        m: Spec("request", "blk_requests", f"{m}_ns", at, ("comm", "dev", "rwbs", "sector", "nsect"), m)
        for m, at in (("i2d", "i_ns"), ("d2c", "d_ns"), ("q2c", "q_ns"))
    },
    "func": Spec("call", "fg_calls", "duration_ns", "entry_ns", ("comm", "func"), "func"),
    "wait": Spec("wait", "stall_waits", "duration_ns", "start_ns", WAIT_EXTRA, "wait"),
    # every wait, idle sleeps too: the API's metric=wait with idle=true (spec_key), cached apart from the stalls
    "wait+idle": Spec("wait", "waits", "duration_ns", "start_ns", WAIT_EXTRA, "wait", True),
}


def spec_key(metric: str, idle: bool) -> str:
    """The SPECS key of an API metric: metric=wait with idle asked is every wait, idle sleeps too."""
    return "wait+idle" if metric == "wait" and idle else metric


def kind_of(metric: str) -> str:
    return SPECS[metric].kind


def events_from(
    metric: str, analysis_id: str, filter: str | None, pid: int | None, dev: str | None
) -> tuple[str, dict]:
    """FROM … WHERE of the metric's events of the analysis that have a latency and a time, with the filters.
    Exposes `a` (the event's row) and `s` (its source); the aligned time is `a.<at> + s.clock_offset_ns`."""
    spec = SPECS[metric]
    sql = (
        f" FROM {spec.table} a JOIN sources s ON s.id = a.source_id"
        f" WHERE s.analysis_id = $aid AND a.{spec.value} IS NOT NULL AND a.{spec.at} IS NOT NULL"
    )
    params: dict = {"aid": analysis_id}
    if metric == "func":
        sql += " AND a.func = $filter"
        params["filter"] = filter
    elif spec.kind == "wait" and filter:
        sql += " AND (a.lock_key = $filter OR a.lock = $filter)"
        params["filter"] = filter
    if pid is not None:
        sql += " AND a.pid = $pid"
        params["pid"] = pid
    if dev is not None and spec.kind == "request":
        sql += " AND a.dev = $dev"
        params["dev"] = dev
    return sql, params


def no_percentiles() -> dict:
    return {
        "count": 0,
        "p50_ns": None,
        "p90_ns": None,
        "p99_ns": None,
        "p999_ns": None,
        "p9999_ns": None,
        "max_ns": None,
    }


def decade_below(v: int) -> int:
    """The power of ten at or below v ns (FLOOR_NS at least): 281 -> 100, 1000 -> 1000."""
    return 10 ** (len(str(max(int(v), FLOOR_NS))) - 1)


def latency_edges(vmin: int, vmax: int, y_bins: int) -> list[int]:
    """y_bins + 1 (or fewer, see the module docstring) strictly increasing ns edges, equal steps in log10, from the
    decade at or below vmin to vmax + 1: the first bin starts below the fastest, the last ends above the slowest."""
    lo_exp = math.log10(decade_below(vmin))
    hi_exp = math.log10(max(vmax, decade_below(vmin)) + 1)
    n = y_bins
    while True:
        step = (hi_exp - lo_exp) / n
        edges = [round(10 ** (lo_exp + k * step)) for k in range(n + 1)]
        if n == 1 or all(b > a for a, b in zip(edges, edges[1:])):
            return edges
        n -= 1


def indexable(con, cache: AnalysisCache, analysis_id: str, metric: str, filter: str | None, pid=None, dev=None) -> bool:
    """Whether the metric's events with these filters fit an in-memory index (INDEX_MAX_EVENTS; counted once per
    key, kept in the cache). More (a 5 GiB blkparse upload has ~24 M requests) are binned in SQL at each read instead: the
    index would hold them all in the server's memory, and its load would pass the reads' row cap (a 422)."""
    if metric in BLOCK_METRICS and filter is None and pid is None and dev is None:
        return _block_events(con, cache, analysis_id)[BLOCK_METRICS.index(metric)] <= INDEX_MAX_EVENTS
    base, params = events_from(metric, analysis_id, filter, pid, dev if SPECS[metric].kind == "request" else None)
    key = (analysis_id, "heatmap-events", metric, filter, pid, dev)
    return cache.get(key, lambda: run(con, f"SELECT count(*){base}", params)[0][0]) <= INDEX_MAX_EVENTS


def _block_events(con, cache: AnalysisCache, analysis_id: str) -> list[int]:
    """How many of the analysis' requests have each of BLOCK_METRICS (events_from's rows), counted in one scan, once
    per analysis (kept in the cache): the heatmap's `indexable` and the metrics' counts."""
    counts = ", ".join(
        f"count(*) FILTER (WHERE a.{SPECS[m].value} IS NOT NULL AND a.{SPECS[m].at} IS NOT NULL)" for m in BLOCK_METRICS
    )
    return cache.get(
        (analysis_id, "heatmap-block-events"),
        lambda: list(
            run(
                con,
                f"SELECT {counts} FROM blk_requests a JOIN sources s ON s.id = a.source_id WHERE s.analysis_id = $aid",
                {"aid": analysis_id},
            )[0]
        ),
    )


def event_index(
    con, cache: AnalysisCache, analysis_id: str, metric: str, filter: str | None, pid=None, dev=None
) -> heatindex.Index:
    """The in-memory index of the metric's events with these filters, built on first use (a pid's or a device's
    events get an index of their own: the first call with a filter costs about what the SQL did, the next ones,
    zooming in, what the index costs)."""
    spec = SPECS[metric]
    dev = dev if spec.kind == "request" else None

    def load():
        base, params = events_from(metric, analysis_id, filter, pid, dev)
        return run(
            con,
            f"SELECT a.source_id AS sid, a.{spec.at} AS t, a.{spec.value} AS v, a.line AS line, a.pid AS pid{base}",
            params,
            shape="arrow",
        )

    return cache.index((analysis_id, metric, filter, pid, dev), lambda: heatindex.build(load()))


def prepare(con, cache: AnalysisCache, analysis_id: str, metric: str, filter: str | None = None) -> None:
    """Builds now what the metric's heatmaps of windows are read from (the index, or the grid summary past
    INDEX_MAX_EVENTS), unless it is kept already: the warm-up's, for the zooms after a first view."""
    if indexable(con, cache, analysis_id, metric, filter):
        event_index(con, cache, analysis_id, metric, filter)
    else:
        grid_summary(con, cache, analysis_id, metric, filter)


def grid_summary(
    con, cache: AnalysisCache, analysis_id: str, metric: str, filter: str | None
) -> heatsummary.Summary | None:
    """The grid summary (heatsummary.py) of the metric's events, built on first use per clock offsets (its
    buckets are in aligned time); None when a latency is negative or past heatsummary.V_BITS (then: SQL)."""
    spec = SPECS[metric]
    at, v = f"(a.{spec.at} + s.clock_offset_ns)", f"a.{spec.value}"
    base, params = events_from(metric, analysis_id, filter, None, None)
    offsets = clock_offsets(con, cache, analysis_id)
    t_lo, t_hi, vmin, vmax = cache.get(
        (analysis_id, "heatmap-summary-span", metric, filter, offsets),
        lambda: list(run(con, f"SELECT min({at}), max({at}), min({v}), max({v}){base}", params)[0]),
    )
    if t_lo is None or vmin < 0 or vmax >= 1 << heatsummary.V_BITS:
        return None
    width = max(1, -(-(t_hi - t_lo + 1) >> heatsummary.LOG_TB))
    q = {**params, "t0": t_lo, "w": width}

    def load():
        cells = run(
            con,
            f"SELECT tb, {heatsummary.bucket_sql('v')} AS lb, count(*)::BIGINT AS n, max(v) AS vmax,"
            " arg_max({'sid': sid, 'line': line, 'pid': pid}, (v, -sid, -line)) AS ref"
            f" FROM (SELECT ({at} - $t0) // $w AS tb, {v} AS v, a.source_id AS sid, a.line AS line, a.pid AS pid"
            f"{base}) GROUP BY ALL",
            {**q, "g": heatsummary.EDGES},
            shape="arrow",
            max_rows=1 << 31,
        )
        keys = run(
            con,
            f"SELECT (({at} - $t0) // $w) << {heatsummary.V_BITS} | {v} AS k{base}",
            q,
            shape="arrow",
            max_rows=1 << 40,
        )
        return [cells, keys]

    def make(loaded: list):
        cells, keys = loaded
        loaded.clear()  # each Arrow table freed once read (they are ~1/3 of the build's peak)
        col = keys.column("k")
        key = np.empty(len(col), np.int64)  # writable, filled chunk by chunk, then sorted in place
        at = 0
        for chunk in col.chunks:
            key[at : at + len(chunk)] = chunk.to_numpy()
            at += len(chunk)
        del keys, col
        key.sort()
        ref = cells.column("ref").combine_chunks()
        pid = ref.field("pid")
        rows = [cells.column(c).to_numpy().astype(np.int64, copy=False) for c in ("tb", "lb", "n", "vmax")]
        rows += [
            ref.field("sid").to_numpy(zero_copy_only=False).astype(np.int64),
            ref.field("line").to_numpy(zero_copy_only=False).astype(np.int64),
            pid.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64),
            pid.is_null().to_numpy(zero_copy_only=False),
        ]
        del cells, ref, pid
        return heatsummary.build(t_lo, t_hi, width, rows, key)

    return cache.index((analysis_id, metric, filter, "summary", offsets), lambda: make(load()))


def heatmap_summary(summary: heatsummary.Summary, metric: str, filter, x_bins: int, y_bins: int, t0, t1) -> dict | None:
    """The heatmap from the grid summary (bins snapped to its grid: heatsummary.py), or None when the window is
    too narrow for it."""
    lo = t0 if t0 is not None else summary.t0
    hi = t1 if t1 is not None else summary.t_last
    if hi < lo:
        return _empty(metric, filter, lo, hi, x_bins, y_bins)
    got = summary.heatmap(lo, hi, x_bins, y_bins)
    if got is None:
        return None
    if not got["n"]:  # as the SQL answers a window without events
        return _empty(metric, filter, lo, hi, x_bins, y_bins)
    empty = _empty(metric, filter, got["t0"], got["t1"], got["x_bins"], y_bins)
    kind = SPECS[metric].kind
    cells = [
        {"x": x, "y": y, "count": c, "max_ns": m, "max_ref": {"kind": kind, "source_id": s, "line": ln, "pid": p}}
        for x, y, c, m, s, ln, p in got["cells"]
    ]
    return _filled(empty, got["edges"], got["x_bin"], cells, percentiles_of(got["n"], got["quantiles"], got["vmax"]))


def _empty(metric: str, filter, lo, hi, x_bins: int, y_bins: int) -> dict:
    return {
        "metric": SPECS[metric].metric,
        "idle": SPECS[metric].idle,
        "filter": filter,
        "kind": SPECS[metric].kind,
        "t0_ns": lo,
        "t1_ns": hi,
        "x_bins": x_bins,
        "x_bin_ns": None,
        "y_bins": y_bins,
        "y_edges_ns": [],
        "cells": [],
        "percentiles": no_percentiles(),
    }


def percentiles_of(n: int, qs: list[int], vmax: int) -> dict:
    return {
        "count": n,
        "p50_ns": qs[0],
        "p90_ns": qs[1],
        "p99_ns": qs[2],
        "p999_ns": qs[3],
        "p9999_ns": qs[4],
        "max_ns": vmax,
    }


def _x_bin_ns(lo: int, hi: int, x_bins: int) -> int:
    """The time bins' width: ceil((hi - lo + 1) / x_bins) ns, at least 1."""
    return max(1, -(-(hi - lo + 1) // x_bins))


def _filled(empty: dict, edges: list[int], x_bin: int, cells: list[dict], percentiles: dict) -> dict:
    """A heatmap with events: `empty` (what _empty says of its window) with its bins, cells and percentiles."""
    return {
        **empty,
        "y_bins": len(edges) - 1,
        "x_bin_ns": x_bin,
        "y_edges_ns": edges,
        "cells": cells,
        "percentiles": percentiles,
    }


def heatmap(
    con,
    cache: AnalysisCache,
    analysis_id: str,
    metric: str,
    x_bins: int,
    y_bins: int,
    pid=None,
    dev=None,
    t0=None,
    t1=None,
    filter: str | None = None,
    live: bool = False,
) -> dict:
    """The heatmap, from the index (heatindex.py) unless live is asked (the SQL below: the reference the index
    is tested against). The whole analysis' (a tab's first) is kept per clock offsets (stored.py)."""
    if live:
        return heatmap_sql(con, analysis_id, metric, x_bins, y_bins, pid, dev, t0, t1, filter)
    if pid is None and dev is None and t0 is None and t1 is None:
        return stored.get(
            con,
            cache,
            analysis_id,
            "heatmap",
            (metric, filter, x_bins, y_bins),
            lambda: _whole(con, cache, analysis_id, metric, x_bins, y_bins, filter),
            timed=True,
        )
    return _heatmap(con, cache, analysis_id, metric, x_bins, y_bins, pid, dev, t0, t1, filter)


def _whole(con, cache: AnalysisCache, analysis_id: str, metric: str, x_bins: int, y_bins: int, filter) -> dict:
    """The whole analysis' heatmap. Being stored (a precompute's RecordingCache records it): binned in SQL
    (DuckDB, within its memory limit) unless the index is kept already: the same answer (the index is tested against
    the SQL), without an index built for it; on the benchmark's 2 M requests the index's build took ~320 MiB more
    at its peak and held ~200 MiB, beside the ingest's own. Else from the index (or grid summary), which the zooms
    then read."""
    if (
        cache.storing
        and not cache.index_kept((analysis_id, metric, filter, None, None))
        and indexable(con, cache, analysis_id, metric, filter)
    ):
        return heatmap_sql(con, analysis_id, metric, x_bins, y_bins, None, None, None, None, filter)
    return _heatmap(con, cache, analysis_id, metric, x_bins, y_bins, None, None, None, None, filter)


def _heatmap(
    con, cache: AnalysisCache, analysis_id: str, metric: str, x_bins: int, y_bins: int, pid, dev, t0, t1, filter
) -> dict:
    if not indexable(con, cache, analysis_id, metric, filter, pid, dev):
        summary = grid_summary(con, cache, analysis_id, metric, filter) if pid is None and dev is None else None
        found = heatmap_summary(summary, metric, filter, x_bins, y_bins, t0, t1) if summary else None
        return found or heatmap_sql(con, analysis_id, metric, x_bins, y_bins, pid, dev, t0, t1, filter)
    idx = event_index(con, cache, analysis_id, metric, filter, pid, dev)
    offsets = source_offsets(con, cache, analysis_id)
    lo, hi = t0, t1
    if lo is None or hi is None:
        span = idx.span(offsets) or (None, None)
        lo = lo if lo is not None else span[0]
        hi = hi if hi is not None else span[1]
    if lo is None or hi is None or hi < lo:
        return _empty(metric, filter, lo, hi, x_bins, y_bins)
    wins = idx.window(offsets, lo, hi)
    n, qs, vmin, vmax = idx.order_stats(wins, QUANTILES)
    if n == 0:
        return _empty(metric, filter, lo, hi, x_bins, y_bins)
    edges = latency_edges(vmin, vmax, y_bins)
    x_bin = _x_bin_ns(lo, hi, x_bins)
    kind = SPECS[metric].kind
    cells = [
        {"x": x, "y": y, "count": c, "max_ns": m, "max_ref": {"kind": kind, "source_id": s, "line": ln, "pid": p}}
        for x, y, c, m, s, ln, p in idx.cells(wins, offsets, lo, x_bin, x_bins, edges)
    ]
    return _filled(_empty(metric, filter, lo, hi, x_bins, y_bins), edges, x_bin, cells, percentiles_of(n, qs, vmax))


def heatmap_sql(
    con,
    analysis_id: str,
    metric: str,
    x_bins: int,
    y_bins: int,
    pid=None,
    dev=None,
    t0=None,
    t1=None,
    filter: str | None = None,
) -> dict:
    """The heatmap binned in SQL over the event table (filters pid and dev; the index's reference)."""
    spec = SPECS[metric]
    at, v = f"(a.{spec.at} + s.clock_offset_ns)", f"a.{spec.value}"
    base, params = events_from(metric, analysis_id, filter, pid, dev)
    # the statistics, and what says whether the slowest event of a cell can be found by one packed key (_PACKED)
    stats = (
        f"count(*), quantile_disc({v}, {QUANTILES}), min({v}), max({v}),"
        " min(a.source_id), max(a.source_id), min(a.line), max(a.line), count(a.line)"
    )
    if t0 is None and t1 is None:  # the whole span: its bounds and the statistics in one scan
        lo, hi, n, qs, vmin, vmax, *ids = run(con, f"SELECT min({at}), max({at}), {stats}{base}", params)[0]
        if lo is None:
            return _empty(metric, filter, lo, hi, x_bins, y_bins)
    else:
        if t0 is None or t1 is None:
            span = run(con, f"SELECT min({at}), max({at}){base}", params)[0]
            lo = t0 if t0 is not None else span[0]
            hi = t1 if t1 is not None else span[1]
        else:
            lo, hi = t0, t1
        if lo is None or hi is None or hi < lo:
            return _empty(metric, filter, lo, hi, x_bins, y_bins)
    empty = _empty(metric, filter, lo, hi, x_bins, y_bins)
    base += f" AND {at} BETWEEN $lo AND $hi" + own_bounds(con, analysis_id, spec, params, lo, hi)
    params.update(lo=lo, hi=hi)
    if t0 is not None or t1 is not None:
        n, qs, vmin, vmax, *ids = run(con, f"SELECT {stats}{base}", params)[0]
    if n == 0:
        return empty
    edges = latency_edges(vmin, vmax, y_bins)
    x_bin = _x_bin_ns(lo, hi, x_bins)
    sid_min, sid_max, line_min, line_max, lines = ids
    packed = vmin >= 0 and lines == n and 0 <= sid_min <= sid_max < _SID_END and 0 <= line_min <= line_max < _LINE_END
    cells_of = (
        f"SELECT (t - $lo) // $xbin AS x, {rank_case('v', edges[1:-1])} AS y, v, sid, line, pid FROM (SELECT {v} AS v,"
    )
    cells_of += f" {at} AS t, a.source_id AS sid, a.line, a.pid{base})"
    q = {**params, "xbin": x_bin}
    if packed:
        rows = [
            (
                x,
                y,
                c,
                k >> 64,
                {"source_id": _SID_END - 1 - (k >> 40) % _SID_END, "line": _LINE_END - 1 - k % _LINE_END, "pid": p},
            )
            for x, y, c, k, p in run(
                con,
                f"SELECT x, y, count(*), max(k) AS k, arg_max_null(pid, k) FROM (SELECT x, y, pid, {_PACKED} AS k"
                f" FROM ({cells_of})) GROUP BY 1, 2 ORDER BY 1, 2",
                q,
            )
        ]
    else:
        rows = run(
            con,
            "SELECT x, y, count(*), max(v), arg_max({'source_id': sid, 'line': line, 'pid': pid}, (v, -sid, -line))"
            f" FROM ({cells_of}) GROUP BY 1, 2 ORDER BY 1, 2",
            q,
        )
    cells = [
        {"x": x, "y": y, "count": c, "max_ns": m, "max_ref": {"kind": spec.kind, **ref}} for x, y, c, m, ref in rows
    ]
    return _filled(empty, edges, x_bin, cells, percentiles_of(n, qs, vmax))


# A cell's slowest event (ties: the first in source, line order) as the max of one key: the latency, then the source
# id and the line each taken from the end of its range (smaller comes first); a HUGEINT, when they fit (else
# arg_max over a struct, ~1.5x the CPU time: 0.17 vs 0.11 s for the bins of 2 M requests)
_SID_END, _LINE_END = 1 << 24, 1 << 40
_PACKED = f"(v::HUGEINT << 64) | (({_SID_END - 1} - sid)::HUGEINT << 40) | ({_LINE_END - 1} - line)"


def own_bounds(con, analysis_id: str, spec: Spec, params: dict, lo, hi) -> str:
    """The same window in the sources' own times, widened to hold every source's (a constant range of the
    event column: DuckDB's zone maps skip the row groups outside it; the aligned condition stays exact)."""
    offs = [off for _, off in offsets_now(con, analysis_id)]
    if not offs:
        return ""
    out = ""
    if lo is not None:
        out += f" AND a.{spec.at} >= $own_lo"
        params["own_lo"] = lo - max(offs)
    if hi is not None:
        out += f" AND a.{spec.at} <= $own_hi"
        params["own_hi"] = hi - min(offs)
    return out


def metrics(con, cache: AnalysisCache, analysis_id: str, limit: int = 50, idle: bool = False) -> dict:
    """What can be drawn for this analysis: the metrics with events (and how many), the functions with a
    known call duration (top `limit` by total duration) and the locks of the waits (by total wait; with idle,
    of every wait, idle sleeps too). Computed once per analysis, limit and idle (it holds no time: stored.py)."""
    key = (limit, idle) if idle else (limit,)
    return stored.get(
        con, cache, analysis_id, "heatmap-metrics", key, lambda: _metrics(con, cache, analysis_id, limit, idle), False
    )


def _metrics(con, cache: AnalysisCache, analysis_id: str, limit: int, idle: bool) -> dict:
    waits_table = SPECS[spec_key("wait", idle)].table
    counts = _block_events(con, cache, analysis_id)
    # the calls by function id first, named after (fg_calls, the view, would name each of millions of calls); their
    # count from the same groups (part 0), the functions after (part 1)
    calls, *rows = run(
        con,
        "WITH g AS MATERIALIZED (SELECT a.source_id, a.func_id, count(*) AS n, sum(a.duration_ns) AS tot,"
        " max(a.duration_ns) AS mx FROM fg_call_rows a JOIN sources s ON s.id = a.source_id WHERE s.analysis_id = $aid"
        " AND a.duration_ns IS NOT NULL AND a.entry_ns IS NOT NULL AND a.func_id IS NOT NULL GROUP BY ALL)"
        " SELECT * FROM (SELECT 0 AS part, NULL AS name, coalesce(sum(n), 0)::BIGINT, NULL::BIGINT AS total,"
        " NULL::BIGINT FROM g UNION ALL (SELECT 1, n.name, sum(g.n)::BIGINT, sum(g.tot)::BIGINT AS total, max(g.mx)"
        " FROM g JOIN fg_names n ON n.source_id = g.source_id AND n.id = g.func_id"
        " GROUP BY 2 ORDER BY total DESC, 2 LIMIT $limit)) ORDER BY part, total DESC, name",
        {"aid": analysis_id, "limit": limit},
    )
    calls = calls[2]
    waits = run(
        con,
        f"SELECT count(*) FROM {waits_table} a JOIN sources s ON s.id = a.source_id WHERE s.analysis_id = $aid",
        {"aid": analysis_id},
    )[0][0]
    found = [{"metric": m, "count": n} for m, n in zip(METRICS, (*counts, calls, waits)) if n]
    functions = [{"func": f, "calls": n, "total_ns": tot, "max_ns": mx} for _, f, n, tot, mx in rows]
    lock_rows = run(
        con,
        "SELECT a.lock_key, count(*), sum(a.duration_ns)::BIGINT AS total, max(a.duration_ns),"
        f" list(DISTINCT a.lock ORDER BY a.lock) FROM {waits_table} a JOIN sources s ON s.id = a.source_id"
        " WHERE s.analysis_id = $aid AND a.lock_key IS NOT NULL GROUP BY 1 ORDER BY total DESC, 1",
        {"aid": analysis_id},
    )
    locks = [
        {"lock_key": k, "waits": n, "total_ns": tot, "max_ns": mx, "locks": labels}
        for k, n, tot, mx, labels in lock_rows
    ]
    return {"metrics": found, "functions": functions, "locks": locks}
