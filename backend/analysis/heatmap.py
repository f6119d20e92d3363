"""Latency heatmaps: time bins × log-scaled latency bins, counted in SQL; the events inside a box of it.

Metrics (what is counted, its latency, where it is placed in time, what each event is):
* i2d | d2c | q2c: block requests (`blk_requests`): I→D placed at I, D→C at D, Q→C at Q; filters pid, dev.
  An event is a request, identified by (source_id, line).
* func: function_graph calls of one function (`fg_calls`, `filter` = the function name, exact match) whose
  duration is known (the duration field of the exit line), placed at their entry; filter pid. An event is a
  call, identified by (source_id, line) of its entry; pid is its task.
* wait: waits (`waits`, see stalls.py), their duration placed at their start; `filter` = a lock_key (the
  object: `xfs_ilock`) or a lock label (`xfs_ilock via down_write`), none = every wait; filter pid. A wait
  still open at the end of the trace counts with its duration so far (a lower bound: end_known false).

Times are on the analysis timeline: a source's own time + its `sources.clock_offset_ns`; t0/t1 filter
and every time returned are such aligned times.

x: time bins of x_bin_ns = ceil((t1 - t0 + 1) / x_bins) over [t0, t1] (default: the span of the
metric's own placement times). y: latency bins with integer ns edges at equal steps in log10 from
max(min latency, 1 µs) to the max latency (or a decade when they are equal); an event is in bin
y = the number of inner edges y_edges[1..y_bins-1] at or below its latency, so bin 0 also holds anything
below the lowest edge and the top bin holds the max. Edges are strictly increasing: when the latency
range holds fewer distinct ns than the bins asked for, y_bins is lowered. The SQL bins by log10 and then
corrects by one bin against the integer edges, so cells agree exactly with a box query on the edges.
Each non-empty cell has its count, its max and the event behind it (ties: the first in source, line
order). Beside it, exact percentiles (quantile_disc) of the latency over the same filter and window.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

BLOCK_METRICS = ("i2d", "d2c", "q2c")
METRICS = (*BLOCK_METRICS, "func", "wait")
FLOOR_NS = 1000  # the lowest edge is never below 1 µs
QUANTILES = [0.5, 0.9, 0.99, 0.999, 0.9999]


@dataclass(frozen=True)
class _Spec:
    kind: str  # what an event is: request | call | wait
    table: str  # FROM clause, aliased `a`
    value: str  # the latency column of `a`
    at: str  # the column of `a` that places the event in time (the source's own clock)
    extra: tuple[str, ...]  # columns of `a` an event in a box also shows


_SPECS = {
    **{m: _Spec("request", "blk_requests", f"{m}_ns", at, ("comm", "dev", "rwbs", "sector", "nsect"))
       for m, at in (("i2d", "i_ns"), ("d2c", "d_ns"), ("q2c", "q_ns"))},
    "func": _Spec("call", "fg_calls", "duration_ns", "entry_ns", ("comm", "func")),
    "wait": _Spec("wait", "waits", "duration_ns", "start_ns", ("comm", "lock", "lock_key", "end_known")),
}


def kind_of(metric: str) -> str:
    return _SPECS[metric].kind


def _base(metric: str, analysis_id: str, filter: str | None, pid: int | None, dev: str | None) -> tuple[str, dict]:
    """FROM … WHERE of the metric's events of the analysis that have a latency and a time, with the filters.
    Exposes `a` (the event's row) and `s` (its source); the aligned time is `a.<at> + s.clock_offset_ns`."""
    spec = _SPECS[metric]
    sql = (f" FROM {spec.table} a JOIN sources s ON s.id = a.source_id"
           f" WHERE s.analysis_id = $aid AND a.{spec.value} IS NOT NULL AND a.{spec.at} IS NOT NULL")
    params: dict = {"aid": analysis_id}
    if metric == "func":
        sql += " AND a.func = $filter"
        params["filter"] = filter
    elif metric == "wait" and filter:
        sql += " AND (a.lock_key = $filter OR a.lock = $filter)"
        params["filter"] = filter
    if pid is not None:
        sql += " AND a.pid = $pid"
        params["pid"] = pid
    if dev is not None and spec.kind == "request":
        sql += " AND a.dev = $dev"
        params["dev"] = dev
    return sql, params


def _empty_percentiles() -> dict:
    return {"count": 0, "p50_ns": None, "p90_ns": None, "p99_ns": None, "p999_ns": None, "p9999_ns": None,
            "max_ns": None}


def latency_edges(vmin: int, vmax: int, y_bins: int) -> list[int]:
    """y_bins + 1 (or fewer, see the module docstring) strictly increasing ns edges, equal steps in log10."""
    lo_exp = math.log10(max(vmin, FLOOR_NS))
    hi_exp = math.log10(vmax) if vmax > max(vmin, FLOOR_NS) else lo_exp + 1
    n = y_bins
    while True:
        step = (hi_exp - lo_exp) / n
        edges = [round(10 ** (lo_exp + k * step)) for k in range(n + 1)]
        if n == 1 or all(b > a for a, b in zip(edges, edges[1:])):
            return edges
        n -= 1


def heatmap(con, analysis_id: str, metric: str, x_bins: int, y_bins: int, pid=None, dev=None, t0=None, t1=None,
            filter: str | None = None) -> dict:
    spec = _SPECS[metric]
    at, v = f"(a.{spec.at} + s.clock_offset_ns)", f"a.{spec.value}"
    base, params = _base(metric, analysis_id, filter, pid, dev)
    if t0 is None or t1 is None:
        span = con.execute(f"SELECT min({at}), max({at}){base}", params).fetchall()[0]
        lo = t0 if t0 is not None else span[0]
        hi = t1 if t1 is not None else span[1]
    else:
        lo, hi = t0, t1
    empty = {"metric": metric, "filter": filter, "kind": spec.kind, "t0_ns": lo, "t1_ns": hi, "x_bins": x_bins,
             "x_bin_ns": None, "y_bins": y_bins, "y_edges_ns": [], "cells": [], "percentiles": _empty_percentiles()}
    if lo is None or hi is None or hi < lo:
        return empty
    base += f" AND {at} BETWEEN $lo AND $hi"
    params.update(lo=lo, hi=hi)
    n, qs, vmin, vmax = con.execute(
        f"SELECT count(*), quantile_disc({v}, {QUANTILES}), min({v}), max({v}){base}", params).fetchall()[0]
    if n == 0:
        return empty
    pct = {"count": n, "p50_ns": qs[0], "p90_ns": qs[1], "p99_ns": qs[2], "p999_ns": qs[3], "p9999_ns": qs[4],
           "max_ns": vmax}
    edges = latency_edges(vmin, vmax, y_bins)
    ny = len(edges) - 1
    lo_exp = math.log10(edges[0]) if edges[0] > 0 else 0.0
    step = (math.log10(edges[-1]) - lo_exp) / ny
    x_bin = max(1, -(-(hi - lo + 1) // x_bins))
    rows = con.execute(
        "SELECT x, y0 - (y0 > 0 AND v < $edges[y0 + 1])::INTEGER + (y0 < $ny - 1 AND v >= $edges[y0 + 2])::INTEGER AS y,"
        " count(*) AS count, max(v) AS max_ns,"
        " arg_max({'source_id': sid, 'line': line, 'pid': pid}, (v, -sid, -line)) AS ref"
        " FROM (SELECT (t - $lo) // $xbin AS x, v, sid, line, pid,"
        "  least($ny - 1, greatest(0, floor((log10(greatest(v, 1)) - $loexp) / $step)))::INTEGER AS y0"
        f"  FROM (SELECT {v} AS v, {at} AS t, a.source_id AS sid, a.line, a.pid{base}))"
        " GROUP BY 1, 2 ORDER BY 1, 2",
        {**params, "xbin": x_bin, "ny": ny, "loexp": lo_exp, "step": step, "edges": edges},
    ).fetchall()
    cells = [{"x": x, "y": y, "count": c, "max_ns": m, "max_ref": {"kind": spec.kind, **ref}}
             for x, y, c, m, ref in rows]
    return {**empty, "y_bins": ny, "x_bin_ns": x_bin, "y_edges_ns": edges, "cells": cells, "percentiles": pct}


def events(con, analysis_id: str, metric: str, *, filter: str | None = None, pid=None, dev=None, t0=None, t1=None,
           lat_min=None, lat_max=None, limit: int = 100) -> dict:
    """The events placed in [t0, t1] (aligned, inclusive) with lat_min <= latency < lat_max, slowest first
    (ties in source, line order), at most `limit`, and how many match in all."""
    spec = _SPECS[metric]
    at, v = f"(a.{spec.at} + s.clock_offset_ns)", f"a.{spec.value}"
    base, params = _base(metric, analysis_id, filter, pid, dev)
    for cond, name, value in ((f"{at} >= $t0", "t0", t0), (f"{at} <= $t1", "t1", t1),
                              (f"{v} >= $lat_min", "lat_min", lat_min), (f"{v} < $lat_max", "lat_max", lat_max)):
        if value is not None:
            base += f" AND {cond}"
            params[name] = value
    total = con.execute(f"SELECT count(*){base}", params).fetchall()[0][0]
    own_end = ", coalesce(a.exit_ns, a.entry_ns + a.duration_ns) AS _end" if spec.kind == "call" else ""
    cur = con.execute(
        f"SELECT a.source_id, a.line, a.pid, {at} AS t_ns, {v} AS latency_ns, a.{spec.at} AS _own"
        f"{''.join(f', a.{c}' for c in spec.extra)}{own_end}{base}"
        f" ORDER BY {v} DESC, a.source_id, a.line LIMIT $limit",
        {**params, "limit": limit},
    )
    names = [d[0] for d in cur.description]
    rows = [dict(zip(names, r)) for r in cur.fetchall()]
    out = []
    for r in rows:
        e = {"ref": {"kind": spec.kind, "source_id": r["source_id"], "line": r["line"], "pid": r["pid"]},
             "t_ns": r["t_ns"], "latency_ns": r["latency_ns"], "end_known": r.get("end_known", True),
             "comm": r["comm"], "dev": r.get("dev"), "rwbs": r.get("rwbs"), "sector": r.get("sector"),
             "nsect": r.get("nsect"), "func": r.get("func"), "lock": r.get("lock"), "lock_key": r.get("lock_key"),
             "wait": None, "chain_id": None, "link": None}
        out.append(e)
    if spec.kind == "call" and rows:
        _attach_waits_of_calls(con, rows, out)
    if spec.kind in ("call", "wait") and rows:
        _attach_chains(con, analysis_id, out)
    return {"metric": metric, "filter": filter, "kind": spec.kind, "count": total, "events": out}


def _attach_waits_of_calls(con, rows: list[dict], out: list[dict]) -> None:
    """Each call's longest wait of its task that began while the call ran (same source: its own times)."""
    found = con.execute(
        "SELECT k.i, arg_max({'line': w.line, 'pid': w.pid, 'lock': w.lock, 'lock_key': w.lock_key},"
        " (w.duration_ns, -w.line))"
        " FROM (SELECT unnest($i) AS i, unnest($sid) AS sid, unnest($pid) AS pid, unnest($t0) AS t0,"
        "  unnest($t1) AS t1) k"
        " JOIN waits w ON w.source_id = k.sid AND w.pid = k.pid AND w.start_ns BETWEEN k.t0 AND k.t1"
        " GROUP BY k.i",
        {"i": list(range(len(rows))), "sid": [r["source_id"] for r in rows], "pid": [r["pid"] for r in rows],
         "t0": [r["_own"] for r in rows], "t1": [r["_end"] for r in rows]},
    ).fetchall()
    for i, w in found:
        e = out[i]
        e["wait"] = {"kind": "wait", "source_id": e["ref"]["source_id"], "line": w["line"], "pid": w["pid"]}
        e["lock"], e["lock_key"] = w["lock"], w["lock_key"]


def _attach_chains(con, analysis_id: str, out: list[dict]) -> None:
    """The chain (and 1-based link) that explains each wait (a call's: the wait inside it): the link that is
    this wait, else the link it is also waiting with; the best-ranked chain when several."""
    keyed = [(i, e["wait"] if e["ref"]["kind"] == "call" else e["ref"]) for i, e in enumerate(out)]
    keyed = [(i, w) for i, w in keyed if w is not None]
    if not keyed:
        return
    found = con.execute(
        "WITH k AS (SELECT unnest($i) AS i, unnest($sid) AS sid, unnest($line) AS line),"
        " links AS ("
        "  SELECT chain_id, pos, source_id AS sid, wait_line AS line, 0 AS pref FROM chain_links"
        "  WHERE analysis_id = $aid AND wait_line IS NOT NULL"
        "  UNION ALL"
        "  SELECT chain_id, pos, (j->>'source_id')::INTEGER, (j->>'line')::BIGINT, 1"
        "  FROM chain_links, unnest(json_extract(also_waiting, '$[*]')) AS t(j) WHERE analysis_id = $aid)"
        " SELECT k.i, arg_min({'chain_id': l.chain_id, 'pos': l.pos}, (l.pref, l.chain_id, l.pos))"
        " FROM k JOIN links l ON l.sid = k.sid AND l.line = k.line GROUP BY k.i",
        {"aid": analysis_id, "i": [i for i, _ in keyed], "sid": [w["source_id"] for _, w in keyed],
         "line": [w["line"] for _, w in keyed]},
    ).fetchall()
    for i, c in found:
        out[i]["chain_id"], out[i]["link"] = c["chain_id"], c["pos"] + 1


def metrics(con, analysis_id: str, limit: int = 50) -> dict:
    """What can be drawn for this analysis: the metrics with events (and how many), the functions with a
    known call duration (top `limit` by total duration) and the locks of the waits (by total wait)."""
    counts = con.execute(
        "SELECT count(*) FILTER (WHERE a.i2d_ns IS NOT NULL AND a.i_ns IS NOT NULL),"
        " count(*) FILTER (WHERE a.d2c_ns IS NOT NULL AND a.d_ns IS NOT NULL),"
        " count(*) FILTER (WHERE a.q2c_ns IS NOT NULL AND a.q_ns IS NOT NULL)"
        " FROM blk_requests a JOIN sources s ON s.id = a.source_id WHERE s.analysis_id = $aid",
        {"aid": analysis_id}).fetchall()[0]
    calls = con.execute(
        "SELECT count(*) FROM fg_calls a JOIN sources s ON s.id = a.source_id WHERE s.analysis_id = $aid"
        " AND a.duration_ns IS NOT NULL AND a.entry_ns IS NOT NULL AND a.func IS NOT NULL",
        {"aid": analysis_id}).fetchall()[0][0]
    waits = con.execute("SELECT count(*) FROM waits a JOIN sources s ON s.id = a.source_id WHERE s.analysis_id = $aid",
                        {"aid": analysis_id}).fetchall()[0][0]
    found = [{"metric": m, "count": n} for m, n in zip(METRICS, (*counts, calls, waits)) if n]
    functions = [{"func": f, "calls": n, "total_ns": tot, "max_ns": mx} for f, n, tot, mx in con.execute(
        "SELECT a.func, count(*), sum(a.duration_ns)::BIGINT AS total, max(a.duration_ns)"
        " FROM fg_calls a JOIN sources s ON s.id = a.source_id WHERE s.analysis_id = $aid"
        " AND a.duration_ns IS NOT NULL AND a.entry_ns IS NOT NULL AND a.func IS NOT NULL"
        " GROUP BY 1 ORDER BY total DESC, 1 LIMIT $limit", {"aid": analysis_id, "limit": limit}).fetchall()]
    lock_rows = con.execute(
        "SELECT a.lock_key, count(*), sum(a.duration_ns)::BIGINT AS total, max(a.duration_ns),"
        " list(DISTINCT a.lock ORDER BY a.lock) FROM waits a JOIN sources s ON s.id = a.source_id"
        " WHERE s.analysis_id = $aid AND a.lock_key IS NOT NULL GROUP BY 1 ORDER BY total DESC, 1",
        {"aid": analysis_id}).fetchall()
    locks = [{"lock_key": k, "waits": n, "total_ns": tot, "max_ns": mx, "locks": labels}
             for k, n, tot, mx, labels in lock_rows]
    return {"metrics": found, "functions": functions, "locks": locks}
