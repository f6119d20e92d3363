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
  percentiles beside them.

Every compared figure has a delta: a, b, b − a, (b − a) / a and a verdict for b: better / worse (lower latency,
fewer or shorter waits is better; a count of requests is neither), `same` within SAME_WITHIN of a.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import heatmaps, memo, requests, stalls
from .run import run

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


def _whole_or_range(con, side: Side, what: str, compute):
    """compute() over the side; kept (memo.py) for a whole analysis: its figures hold no time."""
    if side.t0 is None and side.t1 is None:
        return memo.get((side.analysis_id, what), compute)
    return compute()


def _process_groups(con, side: Side) -> list[dict]:
    """The dispatch summary's figures per command name (every pid of that name together) over the side's range."""
    return _whole_or_range(con, side, "compare-process", lambda: _process_rows(con, side))


def _process_rows(con, side: Side) -> list[dict]:
    scope, params = requests.requests_in_range(con, side.analysis_id, side.t0, side.t1)
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


def _device_groups(con, side: Side) -> list[dict]:
    """The dispatch summary per device (queries/requests.py: kept when the range holds the whole analysis)."""
    return [
        {"key": g["dev"], "pids": [], "count": g["count"], "i2d": g["i2d"], "d2c": g["d2c"], "q2c": g["q2c"]}
        for g in requests.dispatch_summary(con, side.analysis_id, "device", side.t0, side.t1)
    ]


def _dispatch_deltas(a: dict | None, b: dict | None) -> list[dict]:
    out = [delta("count", "requests", a and a["count"], b and b["count"], None)]
    for m in ("i2d", "d2c", "q2c"):
        for stat in LATENCY_STATS:
            out.append(delta(f"{m}.{stat}", "ns", a and a[m][stat], b and b[m][stat]))
    return out


def _strip(row: dict | None) -> dict | None:
    return None if row is None else {k: v for k, v in row.items() if k != "key"}


def dispatch(con, a: Side, b: Side, by: str, limit: int) -> dict:
    """Per device or per process (command name), both sides' figures and their deltas; the rows with most requests
    on either side first, at most `limit` (total: how many there were)."""
    groups = _device_groups if by == "device" else _process_groups
    a_rows = {g["key"]: g for g in groups(con, a)}
    b_rows = {g["key"]: g for g in groups(con, b)}
    pairs = _paired(a_rows, b_rows, lambda p: (-max(p[1]["count"] if p[1] else 0, p[2]["count"] if p[2] else 0), p[0]))
    return {
        "total": len(pairs),
        "rows": [
            {"key": k, "a": _strip(ra), "b": _strip(rb), "deltas": _dispatch_deltas(ra, rb)}
            for k, ra, rb in pairs[:limit]
        ],
    }


# ---- waits per lock ------------------------------------------------------------------------------------------------


def _lock_groups(con, side: Side) -> dict:
    """Per lock_key (None: waits on no known lock), the side's stall waits starting in its range: how many, their
    total, exact p50/p90/p99 and max duration, the lock labels seen."""
    rows = _whole_or_range(con, side, "compare-locks", lambda: _lock_rows(con, side))
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


def locks(con, a: Side, b: Side, limit: int) -> dict:
    """Per lock, both sides' stall waits and their deltas; the most waited-on (total, either side) first."""
    a_rows, b_rows = _lock_groups(con, a), _lock_groups(con, b)
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


def _heat_side(con, side: Side, metric: str):
    """(index, offsets, lo, hi, windows, (count, quantiles, min, max)) of the metric's events in the side's range
    cut to the metric's own first and last placement, or None when it has none."""
    idx = heatmaps.event_index(con, side.analysis_id, metric, None)
    offsets = heatmaps.source_offsets(con, side.analysis_id)
    first_last = idx.span(offsets)
    if first_last is None:
        return None
    lo = max(side.t0, first_last[0]) if side.t0 is not None else first_last[0]  # a range past the events: no
    hi = min(side.t1, first_last[1]) if side.t1 is not None else first_last[1]  # empty bins drawn before or after
    if hi < lo:
        return None
    wins = idx.window(offsets, lo, hi)
    stats = idx.order_stats(wins, heatmaps.QUANTILES)
    if stats[0] == 0:
        return None
    return idx, offsets, lo, hi, wins, stats


def _bin_width(length: int, x_bins: int) -> int:
    """The time-bin width that cuts `length` + 1 ns (an inclusive span) in at most x_bins bins."""
    return max(1, -(-(length + 1) // x_bins))


def _heat_cells(found, x_bin: int, edges: list[int]) -> dict:
    idx, offsets, lo, hi, wins, (n, qs, _, vmax) = found
    nx = max(1, -(-(hi - lo + 1) // x_bin))
    cells = [
        {"x": x, "y": y, "count": c, "max_ns": m, "max_ref": {"source_id": s, "line": ln, "pid": p}}
        for x, y, c, m, s, ln, p in idx.cells(wins, offsets, lo, x_bin, nx, edges)
    ]
    return {
        "t0_ns": lo,
        "t1_ns": hi,
        "x_bin_ns": x_bin,
        "x_bins": nx,
        "cells": cells,
        "percentiles": heatmaps.percentiles_of(n, qs, vmax),
    }


def heatmap_pair(con, a: Side, b: Side, metric: str, x_bins: int, y_bins: int, x_time: str = "shared") -> dict | None:
    """Both sides' heatmaps of the metric on one scale: latency edges over both sides' min and max, one colour
    maximum, and (x_time "shared") one time-bin width, the longer side in x_bins bins, or ("own") each side in
    x_bins bins of its own width; x is time since the side's start. Their exact percentiles and deltas. None when
    neither side has such events."""
    found = [_heat_side(con, s, metric) for s in (a, b)]
    there = [f for f in found if f is not None]
    if not there:
        return None
    vmin = min(f[5][2] for f in there)
    vmax = max(f[5][3] for f in there)
    edges = heatmaps.latency_edges(vmin, vmax, y_bins)
    longest = max(f[3] - f[2] for f in there)
    x_bin = _bin_width(longest, x_bins)
    sides = [
        None if f is None else _heat_cells(f, x_bin if x_time == "shared" else _bin_width(f[3] - f[2], x_bins), edges)
        for f in found
    ]
    empty = heatmaps.no_percentiles()
    pa, pb = ((s or {"percentiles": empty})["percentiles"] for s in sides)
    return {
        "metric": metric,
        "kind": heatmaps.kind_of(metric),
        "x_time": x_time,
        "x_bin_ns": x_bin,
        "x_bins": max(s["x_bins"] for s in sides if s),
        "y_bins": len(edges) - 1,
        "y_edges_ns": edges,
        "max_count": max((c["count"] for s in sides if s for c in s["cells"]), default=0),
        "a": sides[0],
        "b": sides[1],
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


def compare(con, a: Side, b: Side, names: tuple, x_bins: int, y_bins: int, limit: int, x_time: str = "shared") -> dict:
    """The whole comparison (the API's answer); x_time: the heatmaps' time bins (heatmap_pair). BadRange for a
    side's range that is reversed or holds nothing of its analysis."""
    spans = [span(con, s.analysis_id) for s in (a, b)]
    for name, side, whole in zip("ab", (a, b), spans):
        check_range(name, side, whole)
    by_device = dispatch(con, a, b, "device", 10_000)  # every device: the sides' request counts add them up
    by_process = dispatch(con, a, b, "process", limit)
    lock_rows = locks(con, a, b, 10_000)
    summary = [
        side_summary(con, s, n, whole, by_device["rows"], lock_rows["rows"], k)
        for s, n, whole, k in zip((a, b), names, spans, "ab")
    ]
    by_device["rows"] = by_device["rows"][:limit]
    lock_rows["rows"] = lock_rows["rows"][:limit]
    pairs = [heatmap_pair(con, a, b, m, x_bins, y_bins, x_time) for m in HEATMAP_METRICS]
    return {
        "a": summary[0],
        "b": summary[1],
        "same_analysis": a.analysis_id == b.analysis_id,
        "dispatch_by_device": by_device,
        "dispatch_by_process": by_process,
        "locks": lock_rows,
        "heatmaps": [p for p in pairs if p is not None],
    }
