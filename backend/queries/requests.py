"""What the Dispatch view reads of block requests: the list (slowest first, or in time order), one request with its
trace lines, the per process/device summary and the latency over time. Filters are bound parameters; the ORDER BY
comes from a fixed table; exact percentiles with `quantile_disc`; a time window is compared in each source's own time
(offset passed as a parameter), so zone maps skip row groups."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from .. import block_layers
from ..limits import TIME_MAX, TIME_MIN
from ..schema.tables import REQUEST_COLUMNS, TOP, TOP_METRICS, aligned_by
from . import paging, request_windows, stored
from .catalogue import catalogue
from .run import run

if TYPE_CHECKING:
    from ..cache import AnalysisCache

ORDER = {
    "i2d": "r.i2d_ns DESC NULLS LAST",
    "d2c": "r.d2c_ns DESC NULLS LAST",
    "q2c": "r.q2c_ns DESC NULLS LAST",
    "time": "r.t_ns + s.clock_offset_ns ASC",
}

# Times are read on the analysis timeline: a source's own time + its clock_offset_ns (sources s).
AT = "s.clock_offset_ns"


def aligned(columns, alias: str = "r") -> str:
    """SELECT list of the columns of `alias`, times moved onto the analysis timeline."""
    return aligned_by(columns, AT, alias)


_FILTERS = {"pid": "r.pid = $pid", "dev": "r.dev = $dev", "t0": f"r.t_ns + {AT} >= $t0", "t1": f"r.t_ns + {AT} <= $t1"}


def _filters(**values) -> tuple[str, dict]:
    """WHERE clauses over blk_requests r for the filters given (not None), with their bound parameters."""
    given = {k: v for k, v in values.items() if v is not None}
    return "".join(f" AND {_FILTERS[k]}" for k in given), given


def _blk_sources(con, cache: AnalysisCache, analysis_id: str) -> list[tuple[int, int]]:
    """(id, clock_offset_ns) of the analysis' sources of block requests (catalogue.Catalogue.request_source_ids)."""
    found = catalogue(con, cache, analysis_id)
    return found.request_sources() if found else []


def _scope(sources: list[tuple[int, int]], t0=None, t1=None, at: str = "t_ns") -> tuple[str, dict]:
    """A WHERE clause over blk_requests r keeping these sources' requests whose time `at` (default: t_ns, their
    start) is placed in [t0, t1] (aligned, inclusive; None: open), compared in each source's own time (zone
    maps then skip row groups; `t_ns + offset` in the WHERE made every call a full scan), and its parameters."""
    clauses, params = [], {}
    for i, (sid, off) in enumerate(sources):
        params[f"s{i}"] = sid
        c = f"r.source_id = $s{i}"
        if t0 is not None:
            c += f" AND r.{at} >= $lo{i}"
            params[f"lo{i}"] = t0 - off
        if t1 is not None:
            c += f" AND r.{at} <= $hi{i}"
            params[f"hi{i}"] = t1 - off
        clauses.append(f"({c})")
    return ("(" + " OR ".join(clauses) + ")" if clauses else "FALSE"), params


def _offset(sources: list[tuple[int, int]]) -> tuple[str, dict]:
    """The clock offset of a row of blk_requests r of these sources, as an expression and its parameters."""
    if len(sources) <= 1:
        return "$o0", {"o0": sources[0][1] if sources else 0}
    params = {f"s{i}": sid for i, (sid, _) in enumerate(sources)} | {f"o{i}": off for i, (_, off) in enumerate(sources)}
    return f"(CASE r.source_id {' '.join(f'WHEN $s{i} THEN $o{i}' for i in range(len(sources)))} END)", params


def requests(
    con, cache: AnalysisCache, analysis_id: str, order: str, limit: int, pid=None, dev=None, t0=None, t1=None
) -> list[dict]:
    sources = _blk_sources(con, cache, analysis_id)
    scope, params = _scope(sources, t0, t1)
    off, off_params = _offset(sources)
    params.update(off_params)
    if order in TOP_METRICS and limit <= TOP and pid is None and dev is None and t0 is None and t1 is None:
        # each source's slowest were kept at ingest: the first `limit` of them all are the answer, unless fewer
        # than `limit` requests have the metric (then requests without it follow: the query below)
        rows = run(
            con,
            f"SELECT {aligned_by(REQUEST_COLUMNS, off)} FROM blk_top r WHERE r.metric = $metric AND {scope}"
            f" ORDER BY {ORDER[order]}, r.source_id, r.line LIMIT $limit",
            {**params, "metric": order, "limit": limit},
            shape="dicts",
        )
        if len(rows) == limit:
            return rows
    where, given = _filters(pid=pid, dev=dev)
    sort = f"r.t_ns + {off} ASC" if order == "time" else ORDER[order]
    return run(
        con,
        f"SELECT {aligned_by(REQUEST_COLUMNS, off)} FROM blk_requests r WHERE {scope}{where}"
        f" ORDER BY {sort}, r.source_id, r.line LIMIT $limit",
        {**params, **given, "limit": limit},
        shape="dicts",
    )


def window_requests_json(con, cache: AnalysisCache, analysis_id: str, order: str, limit: int, t0, t1) -> bytes:
    """`requests`' answer for a window without other filters, as JSON text (the route sends it without validating):
    found in the analysis' request columns (request_windows.py), each request's text kept or read by its id."""
    return b"[" + b",".join(request_windows.first_texts(con, cache, analysis_id, order, limit, t0, t1)) + b"]"


PAGE_LIMIT = 5000  # rows of a page at most


def _request_keys(order: str, off: str) -> list[paging.SortKey]:
    """The requests' ORDER BY as keyset columns: the order's, then the request's id (source_id, line)."""
    ids = [paging.SortKey("r.source_id", nullable=False), paging.SortKey("r.line", nullable=False)]
    if order == "time":
        return [paging.SortKey(f"r.t_ns + {off}"), *ids]
    return [paging.SortKey(f"r.{order}_ns", desc=True), *ids]


def requests_page(
    con,
    cache: AnalysisCache,
    analysis_id: str,
    order: str,
    limit: int,
    cursor: str | None = None,
    pid=None,
    dev=None,
    t0=None,
    t1=None,
) -> dict:
    """A page of the list in the same order as `requests` (and `requests_sql`), each row once over all the pages:
    {items, next_cursor}; `cursor` (a page's next_cursor) starts after its last row. BadCursor for a cursor this
    list, analysis, order and filters did not make."""
    sources = _blk_sources(con, cache, analysis_id)
    filters = {"order": order, "pid": pid, "dev": dev, "t0": t0, "t1": t1}
    if order == "time":  # a key on the analysis timeline: moved by a source's clock offset
        filters["clock"] = sources
    off, off_params = _offset(sources)
    keys = _request_keys(order, off)
    start = paging.decode(cursor, "requests", analysis_id, filters, len(keys)) if cursor is not None else None
    key_of = lambda r: [r["_key"], r["source_id"], r["line"]]  # noqa: E731
    unfiltered = pid is None and dev is None and t0 is None and t1 is None
    if start is None and unfiltered and order in TOP_METRICS and limit + 1 <= TOP:
        # the first page of an unfiltered slowest list (the Dispatch tab's first, stored: queries/stored.py):
        # `requests` reads the slowest kept at ingest (blk_top)
        def first_page():
            rows = requests(con, cache, analysis_id, order, limit + 1)
            key = lambda r: [r[f"{order}_ns"], r["source_id"], r["line"]]  # noqa: E731
            return paging.page(rows, limit, key, "requests", analysis_id, filters)

        return stored.get(con, cache, analysis_id, "requests-page", (order, limit), first_page, timed=True)
    scope, params = _scope(sources, t0, t1)
    params.update(off_params)
    where, given = _filters(pid=pid, dev=dev)
    if start is not None:
        cond, key_params = paging.after(keys, start)
        where += f" AND {cond}"
        params.update(key_params)
    rows = run(
        con,
        f"SELECT {aligned_by(REQUEST_COLUMNS, off)}, {keys[0].expr} AS _key FROM blk_requests r WHERE {scope}{where}"
        f" ORDER BY {paging.order_by(keys)} LIMIT $limit",
        {**params, **given, "limit": limit + 1},
        shape="dicts",
    )
    out = paging.page(rows, limit, key_of, "requests", analysis_id, filters)
    for r in out["items"]:
        del r["_key"]
    return out


def requests_sql(con, analysis_id: str, order: str, limit: int, pid=None, dev=None, t0=None, t1=None) -> list[dict]:
    """The list as one query over blk_requests joined with sources (the reference tests compare requests with)."""
    where, params = _filters(pid=pid, dev=dev, t0=t0, t1=t1)
    return run(
        con,
        f"SELECT {aligned(REQUEST_COLUMNS)} FROM blk_requests r JOIN sources s ON s.id = r.source_id"
        f" WHERE s.analysis_id = $aid{where} ORDER BY {ORDER[order]}, r.source_id, r.line LIMIT $limit",
        {"aid": analysis_id, "limit": limit, **params},
        shape="dicts",
    )


_PHASE_EVENTS = """
SELECT * FROM (
    SELECT unnest([
        {'line': a_line, 't_ns': a_ns, 'cpu': a_cpu, 'pid': pid, 'action': 'A', 'comm': NULL},
        {'line': q_line, 't_ns': q_ns, 'cpu': q_cpu, 'pid': pid, 'action': 'Q', 'comm': comm},
        {'line': g_line, 't_ns': g_ns, 'cpu': g_cpu, 'pid': pid, 'action': 'G', 'comm': comm},
        {'line': i_line, 't_ns': i_ns, 'cpu': i_cpu, 'pid': pid, 'action': 'I', 'comm': comm},
        {'line': d_line, 't_ns': d_ns, 'cpu': d_cpu, 'pid': d_pid, 'action': 'D', 'comm': NULL},
        {'line': c_line, 't_ns': c_ns, 'cpu': c_cpu, 'pid': NULL, 'action': 'C', 'comm': NULL}
    ], recursive := true), rwbs, sector, nsect, CASE WHEN c_line IS NOT NULL THEN error END AS error
    FROM blk_requests WHERE source_id = $sid AND line = $line
) WHERE line IS NOT NULL
UNION ALL
SELECT * FROM (
    SELECT unnest([
        {'line': a_line, 't_ns': a_ns, 'cpu': NULL, 'pid': pid, 'action': 'A', 'comm': NULL},
        {'line': q_line, 't_ns': q_ns, 'cpu': q_cpu, 'pid': pid, 'action': 'Q', 'comm': comm},
        {'line': merge_line, 't_ns': merge_ns, 'cpu': q_cpu, 'pid': pid, 'action': CASE WHEN front THEN 'F' ELSE 'M' END,
         'comm': comm}
    ], recursive := true), rwbs, sector, nsect, NULL AS error
    FROM blk_bios WHERE source_id = $sid AND req_line = $line
) WHERE line IS NOT NULL
UNION ALL
SELECT line, t_ns, cpu, pid, action, comm, rwbs, sector, nsect, error
FROM blk_events WHERE source_id = $sid AND req_line = $line
"""
_PHASE_EVENTS = (
    f"SELECT * REPLACE (t_ns + $off AS t_ns) FROM ({_PHASE_EVENTS}) ORDER BY line"  # on the analysis timeline
)


MESSAGES = 500  # scheduler messages sent per request by default (a starved request can have thousands)
MAX_MESSAGES = 20_000

# The device's scheduler `m` lines in [lo, hi] (the source's own time: its zone maps), aligned out: all of them
# when there are at most $n, else n spread evenly by rank over the whole wait (the first and the last included):
# row i (0-based, in time order) is kept when i·(n − 1)/(total − 1) reaches a new integer. `total` counts them all.
_MESSAGES = """
SELECT line, t_ns + $off AS t_ns, cpu, message, total FROM (
    SELECT line, t_ns, cpu, message, row_number() OVER (ORDER BY t_ns, line) - 1 AS i, count(*) OVER () AS total
    FROM blk_events WHERE source_id = $sid AND action = 'm' AND dev = $dev AND t_ns BETWEEN $lo AND $hi
) WHERE total <= $n OR i = 0 OR i * ($n - 1) // (total - 1) > (i - 1) * ($n - 1) // (total - 1)
ORDER BY i
"""


def request_detail(con, analysis_id: str, source_id: int, line: int, max_messages: int = MESSAGES) -> dict | None:
    """A request, the trace lines it was rebuilt from, and the scheduler messages logged on its device while it
    waited (from I, else Q, G or D, to D, else C): at most max_messages of them, spread over the whole wait."""
    cols = aligned(REQUEST_COLUMNS)
    rows = run(
        con,
        f"SELECT {cols}, {AT} AS clock_offset_ns FROM blk_requests r JOIN sources s ON s.id = r.source_id"
        " WHERE s.analysis_id = ? AND r.source_id = ? AND r.line = ?",
        [analysis_id, source_id, line],
        shape="dicts",
    )
    if not rows:
        return None
    req = rows[0]
    off = req.pop("clock_offset_ns")
    events = run(con, _PHASE_EVENTS, {"sid": source_id, "line": line, "off": off}, shape="dicts")
    start = next((req[k] for k in ("i_ns", "q_ns", "g_ns", "d_ns") if req[k] is not None), None)
    end = next((req[k] for k in ("d_ns", "c_ns") if req[k] is not None and start is not None and req[k] > start), None)
    messages = []
    if start is not None:
        messages = run(
            con,
            _MESSAGES,
            {
                "off": off,
                "sid": source_id,
                "dev": req["dev"],
                "lo": start - off,
                "hi": (end if end is not None else start) - off,
                "n": max_messages,
            },
            shape="dicts",
        )
    total = messages[0]["total"] if messages else 0
    for m in messages:
        del m["total"]
    return {
        "request": req,
        "events": events,
        "messages": messages,
        "messages_total": total,
        "messages_truncated": len(messages) < total,
        "clock_offset_ns": off,
        "layers": block_layers.Layers(lambda sql, p: run(con, sql, p, shape="dicts"), analysis_id).of(source_id, line),
    }


def _stats(expr: str) -> str:
    return (
        f"count({expr}) AS {expr}_n, min({expr}) AS {expr}_min, avg({expr}) AS {expr}_avg,"
        f" quantile_disc({expr}, [0.5, 0.95, 0.99]) AS {expr}_q, max({expr}) AS {expr}_max"
    )


def dispatch_summary(con, cache: AnalysisCache, analysis_id: str, by: str, t0=None, t1=None) -> list[dict]:
    """Per process or device: request count, and count, min, avg, p50, p95, p99 and max of I2D, D2C and Q2C (exact),
    each request counted once; beside them btt's figures (`btt`, per queued bio as btt counts: btt_rows), over the
    whole trace only (none with a window that leaves requests out).
    Over all the requests (no window, or one holding every source's whole span): computed once and kept
    (stored.py: it holds no time); over a window: computed per call, each source's window in its own time (zone
    maps)."""
    if _holds_all(con, cache, analysis_id, t0, t1):
        return stored.get(
            con,
            cache,
            analysis_id,
            "dispatch-summary",
            (by,),
            lambda: _with_btt(con, cache, analysis_id, by),
            timed=False,
        )
    lo = TIME_MIN if t0 is None else t0
    hi = TIME_MAX if t1 is None else t1
    return _dispatch_items(request_windows.request_columns(con, cache, analysis_id).dispatch(by, lo, hi), by)


# btt's rows in the order btt prints them
BTT_METRICS = ("Q2Qdm", "Q2Adm", "Q2Cdm", "Q2Q", "Q2A", "Q2G", "S2G", "G2I", "Q2M", "I2D", "M2D", "D2C", "Q2C")


def btt_rows(con, cache: AnalysisCache, analysis_id: str, by: str) -> dict:
    """btt's figures per device (by='device': the key is the device) or per pid of the queued bio (by='process'),
    summed over the analysis' blkparse sources as btt sums them: {key: [{metric, n, min_ns, avg_ns, max_ns,
    total_ns}]}, metrics in btt's order. btt counts per queued bio (Q), where the requests count each request once:
    a request that took merged bios gives btt one D2C and Q2C per bio; a bio split in two (X) gives btt a Q2G and
    G2I per half and no I2D, D2C or Q2C (neither half's D or C covers the whole bio); a D or C whose range covers
    several requests gives each of them one (parsers/_btt.h says how btt finds them)."""
    key = "b.dev" if by == "device" else "b.pid"
    rows = run(
        con,
        f"SELECT {key} AS key, b.metric, sum(b.n)::BIGINT AS n, min(b.min_ns) AS min_ns, max(b.max_ns) AS max_ns,"
        " sum(b.total_ns)::BIGINT AS total_ns FROM blk_btt b"
        f" WHERE b.source_id IN (SELECT unnest($ids)) AND {key} IS NOT NULL GROUP BY ALL",
        {"ids": [sid for sid, _ in _blk_sources(con, cache, analysis_id)]},
        shape="dicts",
    )
    out: dict = {}
    for r in sorted(rows, key=lambda r: BTT_METRICS.index(r["metric"])):
        r["avg_ns"] = r["total_ns"] / r["n"]
        out.setdefault(r.pop("key"), []).append(r)
    return out


def _with_btt(con, cache: AnalysisCache, analysis_id: str, by: str) -> list[dict]:
    groups = dispatch_sql(con, cache, analysis_id, by)
    btt = btt_rows(con, cache, analysis_id, by)
    for g in groups:
        g["btt"] = btt.get(g["dev"] if by == "device" else g["pid"], [])
    return groups


def _holds_all(con, cache: AnalysisCache, analysis_id: str, t0, t1) -> bool:
    """Whether [t0, t1] (aligned, None: open) holds every request source's whole span (so every request)."""
    if t0 is None and t1 is None:
        return True
    found = catalogue(con, cache, analysis_id)
    return all(
        s.t_min_ns is not None
        and s.t_max_ns is not None
        and (t0 is None or t0 <= s.t_min_ns + s.clock_offset_ns)
        and (t1 is None or s.t_max_ns + s.clock_offset_ns <= t1)
        for s in (found.sources if found else ())
        if s.has_requests
    )


def dispatch_sql(con, cache: AnalysisCache, analysis_id: str, by: str, t0=None, t1=None) -> list[dict]:
    """The dispatch summary over the requests starting in [t0, t1] (aligned, inclusive; None: open), computed now."""
    scope, params = requests_in_range(con, cache, analysis_id, t0, t1)
    keys = "r.pid, r.comm" if by == "process" else "r.dev"
    sql = (  # the keys last in the ORDER BY: groups tied on the rest always come in one order
        f"SELECT {keys}, count(*) AS count, {phase_stats_columns()}"
        f" FROM blk_requests r WHERE {scope} GROUP BY {keys}"
        f" ORDER BY max(r.q2c_ns) DESC NULLS LAST, max(r.i2d_ns) DESC NULLS LAST, count(*) DESC, {keys}"
    )
    return _dispatch_items(run(con, sql, params, shape="dicts"), by)


def _dispatch_items(rows: list[dict], by: str) -> list[dict]:
    """The dispatch summary's groups from its rows (dispatch_sql's, or request_windows' alike)."""
    out = []
    for row in rows:
        item = {
            "key": f"{row['comm']} ({row['pid']})" if by == "process" else row["dev"],
            "pid": row.get("pid"),
            "comm": row.get("comm"),
            "dev": row.get("dev"),
            "count": row["count"],
        }
        item.update(phase_stats(row))
        item["btt"] = None
        out.append(item)
    return out


def phase_stats_columns() -> str:
    """The select list of I2D, D2C and Q2C statistics that `phase_stats` reads back."""
    return ", ".join(_stats(f"{m}_ns") for m in ("i2d", "d2c", "q2c"))


def requests_in_range(con, cache: AnalysisCache, analysis_id: str, t0=None, t1=None) -> tuple[str, dict]:
    """The WHERE clause (on `blk_requests r`) and parameters of the requests starting in [t0, t1] (aligned)."""
    return _scope(_blk_sources(con, cache, analysis_id), t0, t1)


def phase_stats(row: dict) -> dict:
    """A dispatch row's I2D, D2C and Q2C columns (of `_stats`) as {phase: {n, min, avg, p50, p95, p99, max}}."""
    out = {}
    for m in ("i2d", "d2c", "q2c"):
        q = row[f"{m}_ns_q"] or [None, None, None]
        out[m] = {
            "n": row[f"{m}_ns_n"],
            "min": row[f"{m}_ns_min"],
            "avg": row[f"{m}_ns_avg"],
            "p50": q[0],
            "p95": q[1],
            "p99": q[2],
            "max": row[f"{m}_ns_max"],
        }
    return out


def latency_over_time(
    con, cache: AnalysisCache, analysis_id: str, buckets: int, pid=None, dev=None, t0=None, t1=None
) -> dict:
    """I2D (placed at I) and D2C (at D) per time bucket: count, exact p50, max and the request behind it. Without
    filters or window, kept after the first call (stored.py: keyed by the clock offsets, the result holds times);
    else computed, each source's window in its own time (zone maps)."""
    if pid is None and dev is None and t0 is None and t1 is None:
        return stored.get(
            con,
            cache,
            analysis_id,
            "latency-over-time",
            (buckets,),
            lambda: latency_sql(con, cache, analysis_id, buckets),
            timed=True,
        )
    if pid is None and dev is None and t0 is not None and t1 is not None:
        return request_windows.request_columns(con, cache, analysis_id).latency(t0, t1, buckets)
    return latency_sql(con, cache, analysis_id, buckets, pid, dev, t0, t1)


def latency_sql(
    con, cache: AnalysisCache, analysis_id: str, buckets: int, pid=None, dev=None, t0=None, t1=None
) -> dict:
    sources = _blk_sources(con, cache, analysis_id)
    where, params = _filters(pid=pid, dev=dev)
    scope, scope_params = _scope(sources)
    off, off_params = _offset(sources)
    span = (t0, t1)
    if t0 is None or t1 is None:  # the requests' own span
        span = run(
            con,
            f"SELECT min(r.t_ns + {off}), max(coalesce(r.c_ns, r.d_ns, r.t_ns) + {off}) FROM blk_requests r"
            f" WHERE {scope}{where}",
            {**params, **scope_params, **off_params},
        )[0]
    lo = t0 if t0 is not None else span[0]
    hi = t1 if t1 is not None else span[1]
    if lo is None or hi is None:
        return {"t0_ns": t0, "t1_ns": t1, "bucket_ns": None, "series": {"i2d": [], "d2c": []}}
    bucket = max(1, -(-(hi - lo + 1) // buckets))
    parts, given = [], {}
    for metric, at in (("i2d", "i_ns"), ("d2c", "d_ns")):  # one query for both (its parameters are the same)
        scope, scope_params = _scope(sources, lo, hi, at)
        given.update(scope_params)
        parts.append(
            f"SELECT '{metric}' AS metric, $lo + (r.{at} + {off} - $lo) // $bucket * $bucket AS t_ns, count(*),"
            f" quantile_disc(r.{metric}_ns, 0.5), max(r.{metric}_ns),"
            f" arg_max({{'s': r.source_id, 'l': r.line}}, r.{metric}_ns)"  # one request: both from one row
            f" FROM blk_requests r WHERE r.{metric}_ns IS NOT NULL AND {scope}{where} GROUP BY 2"
        )
    series = {"i2d": [], "d2c": []}
    for metric, t, n, p50, mx, ref in run(
        con,
        " UNION ALL ".join(f"({q})" for q in parts) + " ORDER BY 1, 2",
        {"lo": lo, "bucket": bucket, **params, **given, **off_params},
    ):
        series[metric].append(
            {"t_ns": t, "count": n, "p50_ns": p50, "max_ns": mx, "max_source_id": ref["s"], "max_line": ref["l"]}
        )
    return {"t0_ns": lo, "t1_ns": hi, "bucket_ns": bucket, "series": series}


def loads(value):
    return json.loads(value) if isinstance(value, str) else value
