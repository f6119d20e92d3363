"""Latency heatmap of block requests: time bins × log-scaled latency bins, counted in SQL.

x: time bins over [t0, t1] (default: the span of the metric's own timestamps — I for i2d, D for d2c,
Q for q2c). y: latency bins of equal width in log10 from max(min latency, 1 µs) to the max latency
(latencies under the lowest edge count in bin 0, the max is in the top bin; edges rounded to ns). Each
non-empty cell carries its count, its max and the request behind that max. Beside it, exact
percentiles (quantile_disc) of the metric over the same filter.
"""
from __future__ import annotations

import math

# metric -> the request's timestamp that places it in time
AT = {"i2d": "i_ns", "d2c": "d_ns", "q2c": "q_ns"}
FLOOR_NS = 1000  # the lowest edge is never below 1 µs
QUANTILES = [0.5, 0.9, 0.99, 0.999, 0.9999]


def heatmap(con, analysis_id: str, metric: str, x_bins: int, y_bins: int,
            pid=None, dev=None, t0=None, t1=None) -> dict:
    col, at = f"{metric}_ns", AT[metric]
    where = f" WHERE s.analysis_id = $aid AND r.{col} IS NOT NULL AND r.{at} IS NOT NULL"
    params: dict = {"aid": analysis_id}
    if pid is not None:
        where += " AND r.pid = $pid"
        params["pid"] = pid
    if dev is not None:
        where += " AND r.dev = $dev"
        params["dev"] = dev
    base = f" FROM blk_requests r JOIN sources s ON s.id = r.source_id{where}"
    if t0 is None or t1 is None:
        span = con.execute(f"SELECT min(r.{at}), max(r.{at}){base}", params).fetchall()[0]
        lo = t0 if t0 is not None else span[0]
        hi = t1 if t1 is not None else span[1]
    else:
        lo, hi = t0, t1
    empty = {"metric": metric, "t0_ns": lo, "t1_ns": hi, "x_bins": x_bins, "x_bin_ns": None, "y_bins": y_bins,
             "y_edges_ns": [], "cells": [],
             "percentiles": {"count": 0, "p50_ns": None, "p90_ns": None, "p99_ns": None, "p999_ns": None,
                             "p9999_ns": None, "max_ns": None}}
    if lo is None or hi is None or hi < lo:
        return empty
    base += f" AND r.{at} BETWEEN $lo AND $hi"
    params.update(lo=lo, hi=hi)
    n, qs, vmin, vmax = con.execute(
        f"SELECT count(*), quantile_disc(r.{col}, {QUANTILES}), min(r.{col}), max(r.{col}){base}", params
    ).fetchall()[0]
    if n == 0:
        return empty
    pct = {"count": n, "p50_ns": qs[0], "p90_ns": qs[1], "p99_ns": qs[2], "p999_ns": qs[3], "p9999_ns": qs[4],
           "max_ns": vmax}
    lo_exp = math.log10(max(vmin, FLOOR_NS))
    hi_exp = math.log10(vmax) if vmax > max(vmin, FLOOR_NS) else lo_exp + 1
    step = (hi_exp - lo_exp) / y_bins
    edges = [round(10 ** (lo_exp + k * step)) for k in range(y_bins + 1)]
    x_bin = max(1, -(-(hi - lo + 1) // x_bins))
    rows = con.execute(
        f"SELECT (r.{at} - $lo) // $xbin AS x,"
        f" least($ybins - 1, greatest(0, floor((log10(greatest(r.{col}, 1)) - $loexp) / $step)))::INTEGER AS y,"
        f" count(*) AS count, max(r.{col}) AS max_ns,"
        f" arg_max(r.source_id, r.{col}) AS max_source_id, arg_max(r.line, r.{col}) AS max_line"
        f"{base} GROUP BY 1, 2 ORDER BY 1, 2",
        {**params, "xbin": x_bin, "ybins": y_bins, "loexp": float(lo_exp), "step": step},
    )
    names = [d[0] for d in rows.description]
    cells = [dict(zip(names, r)) for r in rows.fetchall()]
    return {**empty, "x_bin_ns": x_bin, "y_edges_ns": edges, "cells": cells, "percentiles": pct}
