"""Before/after: two sides (an analysis, or a time range of one) read with the per-analysis queries and put next to
each other on one scale, with the change from side a (before) to side b (after).

A side is (analysis id, from, to): from/to in ns on that analysis' timeline, inclusive, None for open. An event
belongs to a side's range by where the per-analysis views place it: a block request by its start (as the dispatch
summary windows), a wait by its start, an I2D by its I and a D2C by its D (as the heatmaps do). Off-CPU stacks have
no time: they are compared whole (the diff flame graph, /flamegraph/diff).

* dispatch: per device (the dispatch summary, queries/requests.py) and per process, matched by command name (pids
  differ between captures; the pids of each side are listed);
* locks: per lock_key, the stall waits (the Stalls view's, queries/stalls.py) starting in the range;
* heatmaps: I2D, D2C and wait, counted from the heatmap index (queries/heatindex.py) with one set of latency edges
  over both sides, one colour maximum and one time-bin width (time since each side's start), or with x_time "own"
  each side's own width (a short capture beside a long one is drawn over the whole width); their exact
  percentiles beside them. Past heatmaps.INDEX_MAX_EVENTS events of the metric (a 5 GiB blkparse upload's ~10 M
  requests) a side is read from the grid summary the Dispatch heatmap reads (heatsummary.py), on its grid: the
  window from a bucket's start, time bins of whole buckets, grid latency edges (the other side binned on them),
  exact for those bins; before, its index was loaded through the reads' row cap and the comparison answered 422.

Every compared figure has a delta: a, b, b − a, (b − a) / a and a verdict for b: better / worse (lower latency,
fewer or shorter waits is better; a count of requests is neither), `same` within SAME_WITHIN of a.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import heatindex, heatmaps, heatsummary, requests, stalls
from .catalogue import offsets_now, source_offsets
from .run import run

if TYPE_CHECKING:
    from ..cache import AnalysisCache

SAME_WITHIN = 0.05  # |b − a| below 5 % of a: the same (timer and scheduling noise of a re-run)
HEATMAP_METRICS = ("i2d", "d2c", "wait")
LATENCY_STATS = ("avg", "p50", "p95", "p99", "max")
PERCENTILE_STATS = ("count", "p50_ns", "p90_ns", "p99_ns", "max_ns")


@dataclass(frozen=True)
class Side:
    analysis_id: str
    t0: int | None = None  # ns on the analysis timeline, inclusive; None: open
    t1: int | None = None


class BadRange(ValueError):
    """A side's range is empty or holds nothing of its analysis (the API answers 422 with the message)."""


# ---- the sides -----------------------------------------------------------------------------------------------------


def span(con, analysis_id: str) -> tuple[int | None, int | None]:
    """The first and last time of the analysis' sources on its timeline (None: no source has times)."""
    return tuple(
        run(
            con,
            "SELECT min(t_min_ns + clock_offset_ns), max(t_max_ns + clock_offset_ns) FROM sources"
            " WHERE analysis_id = ?",
            [analysis_id],
        )[0]
    )


def check_range(name: str, side: Side, whole: tuple[int | None, int | None]) -> None:
    """Raises BadRange when `side`'s range is reversed or misses the analysis' span `whole` entirely."""
    lo, hi = side.t0, side.t1
    if lo is not None and hi is not None and hi <= lo:
        raise BadRange(f"{name}_to ({hi}) must be after {name}_from ({lo}): ns on the analysis timeline")
    if lo is None and hi is None:
        return
    first, last = whole
    if first is None:
        raise BadRange(f"{name}_from/{name}_to: analysis {side.analysis_id!r} has no timed events to take a range of")
    if (lo is not None and lo > last) or (hi is not None and hi < first):
        raise BadRange(
            f"{name}'s range [{'…' if lo is None else lo}, {'…' if hi is None else hi}] holds nothing of analysis"
            f" {side.analysis_id!r},"
            f" whose events span [{first}, {last}] ns"
        )


def offcpu_totals(con, analysis_id: str) -> tuple[int, int]:
    """The analysis' off-CPU records and their µs off CPU (no time: a range does not apply)."""
    return tuple(
        run(
            con,
            "SELECT count(*), coalesce(sum(o.value_us), 0)::BIGINT FROM offcpu_stacks o"
            " JOIN sources s ON s.id = o.source_id WHERE s.analysis_id = ?",
            [analysis_id],
        )[0]
    )


# ---- deltas ----------------------------------------------------------------------------------------------------------


def delta(metric: str, unit: str, a, b, lower_is_better: bool | None = True) -> dict:
    """The change of one figure from a to b. lower_is_better None: a figure that is neither better nor worse."""
    diff = b - a if a is not None and b is not None else None
    rel = diff / a if diff is not None and a else None
    verdict = None
    if diff is not None and lower_is_better is not None:
        if diff == 0 or (rel is not None and abs(rel) < SAME_WITHIN):
            verdict = "same"
        else:
            verdict = "better" if (diff < 0) == lower_is_better else "worse"
    return {"metric": metric, "unit": unit, "a": a, "b": b, "abs": diff, "rel": rel, "verdict": verdict}


def _paired(a_rows: dict, b_rows: dict, order) -> list[tuple]:
    """(key, a row or None, b row or None) for every key of either side, in `order` of the pair."""
    keys = list(dict.fromkeys([*a_rows, *b_rows]))
    pairs = [(k, a_rows.get(k), b_rows.get(k)) for k in keys]
    return sorted(pairs, key=order)


# ---- dispatch ----------------------------------------------------------------------------------------------------


def _whole_or_range(cache: AnalysisCache, side: Side, what: str, compute):
    """compute() over the side; kept (in the cache) for a whole analysis: its figures hold no time."""
    if side.t0 is None and side.t1 is None:
        return cache.get((side.analysis_id, what), compute)
    return compute()


def _process_groups(con, cache: AnalysisCache, side: Side) -> list[dict]:
    """The dispatch summary's figures per command name (every pid of that name together) over the side's range."""
    return _whole_or_range(cache, side, "compare-process", lambda: _process_rows(con, cache, side))


def _process_rows(con, cache: AnalysisCache, side: Side) -> list[dict]:
    scope, params = requests.requests_in_range(con, cache, side.analysis_id, side.t0, side.t1)
    rows = run(
        con,
        f"SELECT coalesce(r.comm, '?') AS comm, list(DISTINCT r.pid ORDER BY r.pid) FILTER (WHERE r.pid IS NOT NULL)"
        f" AS pids, count(*) AS count, {requests.phase_stats_columns()}"
        f" FROM blk_requests r WHERE {scope} GROUP BY 1 ORDER BY 1",
        params,
        shape="dicts",
    )
    out = []
    for row in rows:
        item = {"key": row["comm"], "pids": row["pids"] or [], "count": row["count"]}
        item.update(requests.phase_stats(row))
        out.append(item)
    return out


def _device_groups(con, cache: AnalysisCache, side: Side) -> list[dict]:
    """The dispatch summary per device (queries/requests.py: kept when the range holds the whole analysis)."""
    return [
        {"key": g["dev"], "pids": [], "count": g["count"], "i2d": g["i2d"], "d2c": g["d2c"], "q2c": g["q2c"]}
        for g in requests.dispatch_summary(con, cache, side.analysis_id, "device", side.t0, side.t1)
    ]


def _dispatch_deltas(a: dict | None, b: dict | None) -> list[dict]:
    out = [delta("count", "requests", a and a["count"], b and b["count"], None)]
    for m in ("i2d", "d2c", "q2c"):
        for stat in LATENCY_STATS:
            out.append(delta(f"{m}.{stat}", "ns", a and a[m][stat], b and b[m][stat]))
    return out


def _strip(row: dict | None) -> dict | None:
    return None if row is None else {k: v for k, v in row.items() if k != "key"}


def dispatch(con, cache: AnalysisCache, a: Side, b: Side, by: str, limit: int) -> dict:
    """Per device or per process (command name), both sides' figures and their deltas; the rows with most requests
    on either side first, at most `limit` (total: how many there were)."""
    groups = _device_groups if by == "device" else _process_groups
    a_rows = {g["key"]: g for g in groups(con, cache, a)}
    b_rows = {g["key"]: g for g in groups(con, cache, b)}
    pairs = _paired(a_rows, b_rows, lambda p: (-max(p[1]["count"] if p[1] else 0, p[2]["count"] if p[2] else 0), p[0]))
    return {
        "total": len(pairs),
        "rows": [
            {"key": k, "a": _strip(ra), "b": _strip(rb), "deltas": _dispatch_deltas(ra, rb)}
            for k, ra, rb in pairs[:limit]
        ],
    }


# ---- waits per lock ------------------------------------------------------------------------------------------------


def _lock_groups(con, cache: AnalysisCache, side: Side) -> dict:
    """Per lock_key (None: waits on no known lock), the side's stall waits starting in its range: how many, their
    total, exact p50/p90/p99 and max duration, the lock labels seen."""
    rows = _whole_or_range(cache, side, "compare-locks", lambda: _lock_rows(con, side))
    return {r["lock_key"]: {k: v for k, v in r.items() if k != "lock_key"} for r in rows}


def _lock_rows(con, side: Side) -> list[dict]:
    where, params = stalls.wait_range(side.t0, side.t1, starting=True)  # the list a lock row links to
    params["aid"] = side.analysis_id
    rows = run(
        con,
        "SELECT w.lock_key, count(*), sum(w.duration_ns)::BIGINT, quantile_disc(w.duration_ns, [0.5, 0.9, 0.99]),"
        " max(w.duration_ns), list(DISTINCT w.lock ORDER BY w.lock) FILTER (WHERE w.lock IS NOT NULL),"
        " bool_and(w.end_known) FROM stall_waits w JOIN sources s ON s.id = w.source_id"
        f" WHERE s.analysis_id = $aid AND w.duration_ns IS NOT NULL{where} GROUP BY 1",
        params,
    )
    return [
        {
            "lock_key": key,
            "waits": n,
            "total_ns": total,
            "p50_ns": q[0],
            "p90_ns": q[1],
            "p99_ns": q[2],
            "max_ns": mx,
            "locks": labels or [],
            "ends_known": known,
        }
        for key, n, total, q, mx, labels, known in rows
    ]


def locks(con, cache: AnalysisCache, a: Side, b: Side, limit: int) -> dict:
    """Per lock, both sides' stall waits and their deltas; the most waited-on (total, either side) first."""
    a_rows, b_rows = _lock_groups(con, cache, a), _lock_groups(con, cache, b)
    pairs = _paired(
        a_rows,
        b_rows,
        lambda p: (-max(p[1]["total_ns"] if p[1] else 0, p[2]["total_ns"] if p[2] else 0), p[0] is None, p[0] or ""),
    )
    rows = []
    for key, ra, rb in pairs[:limit]:
        deltas = [delta("waits", "waits", ra and ra["waits"], rb and rb["waits"])]
        deltas += [
            delta(stat, "ns", ra and ra[stat], rb and rb[stat])
            for stat in ("total_ns", "p50_ns", "p90_ns", "p99_ns", "max_ns")
        ]
        rows.append({"lock_key": key, "a": ra, "b": rb, "deltas": deltas})
    return {"total": len(pairs), "rows": rows}


# ---- heatmaps on one scale -------------------------------------------------------------------------------------------


@dataclass(eq=False)
class _HeatSide:
    """One side's events of a metric in its window [lo, hi]: from an index of events (`idx`, exact), or past
    heatmaps.INDEX_MAX_EVENTS from the metric's grid summary (`grid`), as the Dispatch heatmap is: the window then
    starts on a bucket of level `level` (bucket c0), its time bins are whole buckets (heatsummary.py)."""

    lo: int
    hi: int
    idx: object = None  # heatindex.Index
    offsets: dict | None = None
    wins: list | None = None
    grid: object = None  # heatsummary.Summary
    level: int = -1  # -1: not snapped yet
    c0: int = 0
    stats: tuple = ()  # (count, quantiles, min, max)
    lb_range: tuple = ()  # a grid side's first and last latency bucket with events

    def start(self) -> int:
        return self.grid.t0 + self.c0 * self.grid.levels[self.level].width if self.level >= 0 else self.lo


def _clip(side: Side, first_last: tuple[int, int] | None) -> tuple[int, int] | None:
    """The side's range cut to the metric's first and last placement (no empty bins drawn before or after)."""
    if first_last is None:
        return None
    lo = max(side.t0, first_last[0]) if side.t0 is not None else first_last[0]
    hi = min(side.t1, first_last[1]) if side.t1 is not None else first_last[1]
    return (lo, hi) if lo <= hi else None


def _indexed(idx, offsets: dict, side: Side) -> _HeatSide | None:
    found = _clip(side, idx.span(offsets))
    if found is None:
        return None
    wins = idx.window(offsets, *found)
    stats = idx.order_stats(wins, heatmaps.QUANTILES)
    return _HeatSide(*found, idx=idx, offsets=offsets, wins=wins, stats=stats) if stats[0] else None


def _heat_side(con, cache: AnalysisCache, side: Side, metric: str) -> _HeatSide | None:
    """The metric's events in the side's range (None: none): from the analysis' index of them, or when it holds
    more than an index may, from the grid summary (its window set by _snap once the time bins are known), or
    when the grid cannot hold them (a latency past its bits), an index of the range's events."""
    offsets = source_offsets(con, cache, side.analysis_id)
    if heatmaps.indexable(con, cache, side.analysis_id, metric, None):
        return _indexed(heatmaps.event_index(con, cache, side.analysis_id, metric, None), offsets, side)
    grid = heatmaps.grid_summary(con, cache, side.analysis_id, metric, None)
    if grid is None:
        return _indexed(_range_index(con, side, metric, side.t0, side.t1), offsets, side)
    found = _clip(side, (grid.t0, grid.t_last))
    return None if found is None else _HeatSide(*found, grid=grid)


def _range_index(con, side: Side, metric: str, lo: int | None, hi: int | None):
    """An index (not kept) of the metric's events of the side's analysis placed in [lo, hi] (None: open): a range
    too narrow for the grid summary, whose few events the reads' row cap bounds."""
    spec = heatmaps.SPECS[metric]
    base, params = heatmaps.events_from(metric, side.analysis_id, None, None, None)
    at = f"(a.{spec.at} + s.clock_offset_ns)"
    if lo is not None:
        base += f" AND {at} >= $lo"
        params["lo"] = lo
    if hi is not None:
        base += f" AND {at} <= $hi"
        params["hi"] = hi
    base += heatmaps.own_bounds(con, side.analysis_id, spec, params, lo, hi)
    table = run(
        con,
        f"SELECT a.source_id AS sid, a.{spec.at} AS t, a.{spec.value} AS v, a.line AS line, a.pid AS pid{base}",
        params,
        shape="arrow",
    )
    return heatindex.build(table)


def _bin_width(length: int, x_bins: int) -> int:
    """The time-bin width that cuts `length` + 1 ns (an inclusive span) in at most x_bins bins."""
    return max(1, -(-(length + 1) // x_bins))


def _snap(con, side: Side, metric: str, h: _HeatSide, x_bin: int) -> _HeatSide | None:
    """A grid side with its window on the coarsest level whose bucket is at most x_bin (its first bucket: the one
    holding lo); a range narrower than that level-0 bucket's x_bins: an index of its events instead."""
    level = h.grid.level_for(x_bin)
    if level is None:
        offsets = dict(offsets_now(con, side.analysis_id))
        return _indexed(_range_index(con, side, metric, h.lo, h.hi), offsets, side)
    return _HeatSide(h.lo, h.hi, grid=h.grid, level=level, c0=(h.lo - h.grid.t0) // h.grid.levels[level].width)


def _widths(sides: list[_HeatSide | None], x_bins: int, x_time: str) -> list[int | None]:
    """Each side's time-bin width: shared, the one that cuts the longest side in x_bins bins (a grid side's
    window from its first bucket's start), a whole number of buckets on the grid sides (two ranges of one
    analysis: the same); own, each side's."""
    need = [None if h is None else _bin_width(h.hi - h.start(), x_bins) for h in sides]

    def whole(h: _HeatSide, width: int) -> int:
        w = h.grid.levels[h.level].width if h.level >= 0 else 1
        return -(-width // w) * w

    if x_time == "own":
        return [None if h is None else whole(h, n) if h.grid else n for h, n in zip(sides, need)]
    shared = max(n for n in need if n is not None)
    out = [None if h is None else whole(h, shared) if h.grid else None for h in sides]
    common = max([shared, *(x for x in out if x is not None)])
    return [None if h is None else x if h.grid else common for h, x in zip(sides, out)]


def _grid_stats(h: _HeatSide, x_bin: int) -> _HeatSide | None:
    """A snapped grid side with the order statistics of its window's buckets (None: no event there)."""
    m = x_bin // h.grid.levels[h.level].width
    nx = max(1, -(-(h.hi - h.start() + 1) // x_bin))
    st = h.grid.stats(h.level, h.c0, h.c0 + nx * m)
    if st is None:
        return None
    h.stats = (st["n"], st["quantiles"], st["vmin"], st["vmax"])
    h.lb_range = st["lb_range"]
    return h


def _heat_cells(h: _HeatSide, x_bin: int, edges: list[int], grid: tuple | None) -> dict:
    """The side's cells; `grid` (a, step): the edges are grid edges from latency bucket a, `step` buckets a bin."""
    n, qs, _, vmax = h.stats
    start = h.start()
    nx = max(1, -(-(h.hi - start + 1) // x_bin))
    if h.grid:
        found = h.grid.cells(h.level, h.c0, x_bin // h.grid.levels[h.level].width, nx, *grid, len(edges) - 1)
        t1 = start + nx * x_bin - 1
    else:
        found = h.idx.cells(h.wins, h.offsets, h.lo, x_bin, nx, edges)
        t1 = h.hi
    cells = [
        {"x": x, "y": y, "count": c, "max_ns": m, "max_ref": {"source_id": s, "line": ln, "pid": p}}
        for x, y, c, m, s, ln, p in found
    ]
    return {
        "t0_ns": start,
        "t1_ns": t1,
        "x_bin_ns": x_bin,
        "x_bins": nx,
        "cells": cells,
        "percentiles": heatmaps.percentiles_of(n, qs, vmax),
    }


def heatmap_pair(
    con, cache: AnalysisCache, a: Side, b: Side, metric: str, x_bins: int, y_bins: int, x_time: str = "shared"
) -> dict | None:
    """Both sides' heatmaps of the metric on one scale: latency edges over both sides' min and max, one colour
    maximum, and (x_time "shared") one time-bin width, the longer side in x_bins bins, or ("own") each side in
    x_bins bins of its own width; x is time since the side's start. Their exact percentiles and deltas. None when
    neither side has such events.

    A side of an analysis with more of the metric's events than an index may hold (heatmaps.INDEX_MAX_EVENTS) is
    read from the grid summary the Dispatch heatmap reads: its window starts on a grid bucket, its time bins are
    whole buckets and the latency edges are grid edges (heatsummary.py), exact for those bins."""
    sides = [_heat_side(con, cache, s, metric) for s in (a, b)]
    if all(h is None for h in sides):
        return None
    first = _widths(sides, x_bins, x_time)  # the grid sides' levels: their windows then start on a bucket
    sides = [
        _snap(con, s, metric, h, x) if h is not None and h.grid is not None else h
        for s, h, x in zip((a, b), sides, first)
    ]
    for _ in range(2):  # a grid side without events in its window once snapped: the widths again without it
        widths = _widths(sides, x_bins, x_time) if any(h is not None for h in sides) else []
        checked = [_grid_stats(h, x) if h is not None and h.grid is not None else h for h, x in zip(sides, widths)]
        if all(h is None for h in checked):
            return None
        if [h is None for h in checked] == [h is None for h in sides]:
            break
        sides = checked
    sides = checked
    there = [h for h in sides if h is not None]
    vmin = min(h.stats[2] for h in there)
    vmax = max(h.stats[3] for h in there)
    grid = None
    if any(h.grid is not None for h in there):  # edges the grid's buckets fall in whole
        lo_b = heatsummary.decade_bucket(min(h.lb_range[0] if h.grid else heatsummary.lb_of(h.stats[2]) for h in there))
        hi_b = max(h.lb_range[1] if h.grid else heatsummary.lb_of(h.stats[3]) for h in there)
        grid = (lo_b, -(-(hi_b - lo_b + 1) // y_bins))
        edges = heatsummary.grid_edges(lo_b, hi_b, grid[1])
    else:
        edges = heatmaps.latency_edges(vmin, vmax, y_bins)
    cells = [None if h is None else _heat_cells(h, x, edges, grid) for h, x in zip(sides, widths)]
    longest = max(there, key=lambda h: h.hi - h.start())
    x_bin = widths[next(i for i, h in enumerate(sides) if h is longest)]
    empty = heatmaps.no_percentiles()
    pa, pb = ((c or {"percentiles": empty})["percentiles"] for c in cells)
    return {
        "metric": metric,
        "kind": heatmaps.kind_of(metric),
        "x_time": x_time,
        "x_bin_ns": x_bin,
        "x_bins": max(c["x_bins"] for c in cells if c),
        "y_bins": len(edges) - 1,
        "y_edges_ns": edges,
        "max_count": max((c["count"] for s in cells if s for c in s["cells"]), default=0),
        "a": cells[0],
        "b": cells[1],
        "deltas": [_percentile_delta(metric, stat, pa[stat], pb[stat]) for stat in PERCENTILE_STATS],
    }


def _percentile_delta(metric: str, stat: str, a, b) -> dict:
    kind = heatmaps.kind_of(metric)
    if stat == "count":  # fewer waits is better; a number of requests is the workload, neither
        return delta(stat, f"{kind}s", a, b, True if kind == "wait" else None)
    return delta(stat, "ns", a, b)


# ---- the whole answer ------------------------------------------------------------------------------------------------


def side_summary(
    con, side: Side, name: str | None, whole: tuple, dispatch_rows: list[dict], lock_rows: list[dict], key: str
):
    """What a side is (`whole`: its analysis' span) and what kinds of data it has in its range."""
    first, last = whole
    stacks, offcpu_us = offcpu_totals(con, side.analysis_id)
    return {
        "analysis_id": side.analysis_id,
        "name": name,
        "from_ns": side.t0,
        "to_ns": side.t1,
        "span_ns": [first, last] if first is not None else None,
        "requests": sum(r[key]["count"] for r in dispatch_rows if r[key]),
        "waits": sum(r[key]["waits"] for r in lock_rows if r[key]),
        "offcpu_stacks": stacks,
        "offcpu_us": offcpu_us,
    }


def compare(
    con,
    cache: AnalysisCache,
    a: Side,
    b: Side,
    names: tuple,
    x_bins: int,
    y_bins: int,
    limit: int,
    x_time: str = "shared",
) -> dict:
    """The whole comparison (the API's answer); x_time: the heatmaps' time bins (heatmap_pair). BadRange for a
    side's range that is reversed or holds nothing of its analysis."""
    spans = [span(con, s.analysis_id) for s in (a, b)]
    for name, side, whole in zip("ab", (a, b), spans):
        check_range(name, side, whole)
    by_device = dispatch(con, cache, a, b, "device", 10_000)  # every device: the sides' request counts add them up
    by_process = dispatch(con, cache, a, b, "process", limit)
    lock_rows = locks(con, cache, a, b, 10_000)
    summary = [
        side_summary(con, s, n, whole, by_device["rows"], lock_rows["rows"], k)
        for s, n, whole, k in zip((a, b), names, spans, "ab")
    ]
    by_device["rows"] = by_device["rows"][:limit]
    lock_rows["rows"] = lock_rows["rows"][:limit]
    pairs = [heatmap_pair(con, cache, a, b, m, x_bins, y_bins, x_time) for m in HEATMAP_METRICS]
    return {
        "a": summary[0],
        "b": summary[1],
        "same_analysis": a.analysis_id == b.analysis_id,
        "dispatch_by_device": by_device,
        "dispatch_by_process": by_process,
        "locks": lock_rows,
        "heatmaps": [p for p in pairs if p is not None],
    }
