"""Block requests rebuilt from blkparse events, and the queries the dispatch view reads.

Reconstruction (vectorised SQL, once at ingest):
  1. Events of one device and start sector are ordered by time; each request's life on that key is
     A? Q G I D (R I? D)* C. A new request starts at A, at a Q not preceded by its A, or when a phase
     does not move forward (e.g. D after C) unless the previous event was a requeue (R).
  2. A bio that was merged (M back, F front) forms its own short segment (Q M). It is attached to the
     request it joined: a back-merged bio starts where its predecessor ends, a front-merged one ends
     where its successor starts (ASOF joins on the device and that sector, latest before the merge),
     then pointers are followed until a request head is reached.
  3. Phases: q/g/i = first Q/G/I, d = last D (after a requeue the request is dispatched again),
     c = first C. Durations exist only where both ends were traced: nothing is invented for a trace
     that starts or ends mid-request.
btt's conventions are followed (shared/FORMATS.md 1.6): zero-length (flush) and passthrough requests
are left out; the issuing process is the one that queued the bio (Q, else G, I, then D).
"""
from __future__ import annotations

import json

from parsers.common import ParseReport

SCHEMA = """
CREATE TABLE IF NOT EXISTS blk_requests (
    source_id INTEGER NOT NULL,
    line BIGINT NOT NULL,
    dev VARCHAR NOT NULL,
    sector BIGINT NOT NULL,
    nsect BIGINT,
    rwbs VARCHAR,
    pid BIGINT,
    comm VARCHAR,
    q_ns BIGINT, g_ns BIGINT, i_ns BIGINT, d_ns BIGINT, c_ns BIGINT,
    q2g_ns BIGINT, g2i_ns BIGINT, i2d_ns BIGINT, d2c_ns BIGINT, q2c_ns BIGINT,
    error BIGINT,
    merged_bios INTEGER NOT NULL,
    requeues INTEGER NOT NULL,
    from_dev VARCHAR,
    from_sector BIGINT,
    t_ns BIGINT NOT NULL,
    lines BIGINT[] NOT NULL
);
CREATE TABLE IF NOT EXISTS blk_messages (
    source_id INTEGER NOT NULL,
    line BIGINT NOT NULL,
    dev VARCHAR NOT NULL,
    t_ns BIGINT NOT NULL,
    cpu INTEGER,
    pid BIGINT,
    message VARCHAR
);
"""

REQUEST_COLUMNS = [
    "source_id", "line", "dev", "sector", "nsect", "rwbs", "pid", "comm", "q_ns", "g_ns", "i_ns", "d_ns", "c_ns",
    "q2g_ns", "g2i_ns", "i2d_ns", "d2c_ns", "q2c_ns", "error", "merged_bios", "requeues", "from_dev", "from_sector",
]

_SEGMENTS = """
CREATE TEMP TABLE _seg AS
WITH ev AS (
    SELECT line, dev, t_ns, pid, action, rwbs, sector, nsect, error, comm, from_dev, from_sector,
           CASE action WHEN 'A' THEN 0 WHEN 'Q' THEN 1 WHEN 'G' THEN 2 WHEN 'S' THEN 2 WHEN 'M' THEN 2
                       WHEN 'F' THEN 2 WHEN 'I' THEN 3 WHEN 'D' THEN 4 WHEN 'R' THEN 5 WHEN 'C' THEN 6 END AS ph
    FROM blk_events
    WHERE source_id = $sid AND action IN ('A', 'Q', 'G', 'S', 'M', 'F', 'I', 'D', 'R', 'C')
      AND sector IS NOT NULL AND nsect > 0
), lagged AS (
    SELECT *, lag(ph) OVER w AS pph, lag(action) OVER w AS pact
    FROM ev WINDOW w AS (PARTITION BY dev, sector ORDER BY line)
), numbered AS (
    SELECT *, sum(CASE WHEN pph IS NULL OR action = 'A' OR (action = 'Q' AND pact <> 'A')
                            OR (ph <= pph AND pact NOT IN ('R', 'A')) THEN 1 ELSE 0 END)
              OVER (PARTITION BY dev, sector ORDER BY line ROWS UNBOUNDED PRECEDING) AS k
    FROM lagged
)
SELECT min(line) AS line, dev, sector,
       arg_min(nsect, ph) FILTER (WHERE action IN ('Q', 'G', 'I', 'D', 'C')) AS nsect0,
       coalesce(max(nsect) FILTER (WHERE action IN ('D', 'C')), max(nsect)) AS nsect,
       coalesce(arg_min(rwbs, ph) FILTER (WHERE action IN ('Q', 'G', 'I', 'D')), any_value(rwbs)) AS rwbs,
       arg_min(pid, ph) FILTER (WHERE action IN ('Q', 'G', 'I', 'D')) AS pid,
       arg_min(comm, ph) FILTER (WHERE action IN ('Q', 'G', 'I', 'D') AND comm IS NOT NULL) AS comm,
       min(t_ns) FILTER (WHERE action = 'Q') AS q_ns,
       min(t_ns) FILTER (WHERE action = 'G') AS g_ns,
       min(t_ns) FILTER (WHERE action = 'I') AS i_ns,
       max(t_ns) FILTER (WHERE action = 'D') AS d_ns,
       min(t_ns) FILTER (WHERE action = 'C') AS c_ns,
       max(error) FILTER (WHERE action = 'C') AS error,
       count(*) FILTER (WHERE action = 'R') AS requeues,
       any_value(from_dev) FILTER (WHERE action = 'A') AS from_dev,
       any_value(from_sector) FILTER (WHERE action = 'A') AS from_sector,
       min(t_ns) FILTER (WHERE action IN ('M', 'F')) AS merge_ns,
       bool_or(action = 'F') AS front,
       bool_or(action IN ('G', 'I', 'D', 'C')) AS head,
       bool_and(action = 'A') AS hop,
       min(t_ns) AS t_ns,
       list(line ORDER BY line) AS lines
FROM numbered
GROUP BY dev, sector, k
"""

# A merged bio's neighbour: the segment it was merged next to, latest before the merge.
_PARENTS = """
CREATE TEMP TABLE _parent AS
WITH bios AS (
    SELECT line, dev, merge_ns, CASE WHEN front THEN sector + nsect0 END AS next_sector,
           CASE WHEN NOT front THEN sector END AS end_sector
    FROM _seg WHERE merge_ns IS NOT NULL AND NOT head
), segs AS (SELECT line, dev, sector, sector + nsect0 AS end_sector, t_ns FROM _seg)
SELECT b.line, s.line AS parent FROM bios b
    ASOF JOIN segs s ON b.dev = s.dev AND b.end_sector = s.end_sector AND b.merge_ns >= s.t_ns
    WHERE s.line <> b.line
UNION ALL
SELECT b.line, s.line FROM bios b
    ASOF JOIN segs s ON b.dev = s.dev AND b.next_sector = s.sector AND b.merge_ns >= s.t_ns
    WHERE s.line <> b.line
"""

_JUMP = """
CREATE OR REPLACE TEMP TABLE _parent AS
SELECT c.line, coalesce(p.parent, c.parent) AS parent FROM _parent c LEFT JOIN _parent p ON c.parent = p.line
"""

_INSERT = """
INSERT INTO blk_requests
WITH merged AS (
    SELECT r.parent AS head, count(*) AS n, flatten(list(s.lines)) AS lines
    FROM _parent r JOIN _seg s ON s.line = r.line GROUP BY r.parent
)
SELECT $sid, s.line, s.dev, s.sector, s.nsect, s.rwbs, s.pid, s.comm,
       s.q_ns, s.g_ns, s.i_ns, s.d_ns, s.c_ns,
       _span(s.q_ns, s.g_ns), _span(s.g_ns, s.i_ns), _span(s.i_ns, s.d_ns), _span(s.d_ns, s.c_ns),
       _span(s.q_ns, s.c_ns),
       s.error, coalesce(m.n, 0), s.requeues, s.from_dev, s.from_sector, s.t_ns,
       list_sort(s.lines || coalesce(m.lines, []))
FROM _seg s LEFT JOIN merged m ON m.head = s.line
WHERE (s.head OR s.merge_ns IS NULL) AND NOT s.hop
"""


def derive(con, source_id: int, report: ParseReport) -> tuple[int | None, int | None]:
    """Builds blk_requests and blk_messages for one source; returns its time span (ns)."""
    con.execute("DROP TABLE IF EXISTS _seg; DROP TABLE IF EXISTS _parent")
    con.execute("CREATE OR REPLACE TEMP MACRO _span(a, b) AS CASE WHEN b >= a THEN b - a END")
    con.execute(_SEGMENTS, {"sid": source_id})
    con.execute(_PARENTS)
    for _ in range(32):  # pointer jumping: chains of merged bios halve each round
        changed = con.execute("SELECT count(*) FROM _parent WHERE parent IN (SELECT line FROM _parent)").fetchall()[0][0]
        if not changed:
            break
        con.execute(_JUMP)
    con.execute(_INSERT, {"sid": source_id})
    orphans = con.execute(
        "SELECT count(*) FROM _seg WHERE merge_ns IS NOT NULL AND NOT head AND line NOT IN (SELECT line FROM _parent)"
    ).fetchall()[0][0]
    if orphans:
        report.note(f"{orphans} merged bios joined a request whose own events are not in the trace")
    backwards = con.execute(
        "SELECT count(*) FROM _seg WHERE greatest(q_ns, g_ns, i_ns, d_ns, c_ns) > least(d_ns, c_ns)"
        " AND (g_ns < q_ns OR i_ns < coalesce(g_ns, q_ns) OR d_ns < coalesce(i_ns, g_ns, q_ns)"
        " OR c_ns < coalesce(d_ns, i_ns, g_ns, q_ns))"
    ).fetchall()[0][0]
    if backwards:
        report.note(f"{backwards} requests have phases whose times go backwards (the trace's clock jumps);"
                    " those phase durations are left out")
    con.execute("DROP TABLE _seg; DROP TABLE _parent")
    con.execute(
        "INSERT INTO blk_messages SELECT source_id, line, dev, t_ns, cpu, pid, message FROM blk_events"
        " WHERE source_id = ? AND action = 'm'",
        [source_id],
    )
    return con.execute("SELECT min(t_ns), max(t_ns) FROM blk_events WHERE source_id = ?", [source_id]).fetchall()[0]


# ---- reads -------------------------------------------------------------------------------------

ORDER = {"i2d": "i2d_ns DESC NULLS LAST", "d2c": "d2c_ns DESC NULLS LAST", "q2c": "q2c_ns DESC NULLS LAST",
         "time": "t_ns ASC"}


def _filters(pid: int | None, dev: str | None, t0: int | None, t1: int | None) -> tuple[str, dict]:
    """WHERE clauses over blk_requests r for the common filters, with their bound parameters."""
    sql, params = "", {}
    if pid is not None:
        sql += " AND r.pid = $pid"
        params["pid"] = pid
    if dev is not None:
        sql += " AND r.dev = $dev"
        params["dev"] = dev
    if t0 is not None:
        sql += " AND r.t_ns >= $t0"
        params["t0"] = t0
    if t1 is not None:
        sql += " AND r.t_ns <= $t1"
        params["t1"] = t1
    return sql, params


def _rows(cur) -> list[dict]:
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row)) for row in cur.fetchall()]


def requests(con, analysis_id: str, order: str, limit: int, pid=None, dev=None, t0=None, t1=None) -> list[dict]:
    where, params = _filters(pid, dev, t0, t1)
    cols = ", ".join(f"r.{c}" for c in REQUEST_COLUMNS)
    cur = con.execute(
        f"SELECT {cols} FROM blk_requests r JOIN sources s ON s.id = r.source_id"
        f" WHERE s.analysis_id = $aid{where} ORDER BY {ORDER[order]}, r.source_id, r.line LIMIT $limit",
        {"aid": analysis_id, "limit": limit, **params},
    )
    return _rows(cur)


def request_detail(con, analysis_id: str, source_id: int, line: int) -> dict | None:
    cols = ", ".join(f"r.{c}" for c in REQUEST_COLUMNS)
    cur = con.execute(
        f"SELECT {cols}, r.lines FROM blk_requests r JOIN sources s ON s.id = r.source_id"
        " WHERE s.analysis_id = ? AND r.source_id = ? AND r.line = ?",
        [analysis_id, source_id, line],
    )
    rows = _rows(cur)
    if not rows:
        return None
    req = rows[0]
    lines = req.pop("lines")
    events = _rows(con.execute(
        "SELECT line, t_ns, cpu, pid, action, rwbs, sector, nsect, comm, error FROM blk_events"
        " WHERE source_id = ? AND line BETWEEN ? AND ? AND list_contains(?, line) ORDER BY t_ns, line",
        [source_id, min(lines), max(lines), lines],
    ))
    start = next((req[k] for k in ("i_ns", "q_ns", "g_ns", "d_ns") if req[k] is not None), None)
    end = next((req[k] for k in ("d_ns", "c_ns") if req[k] is not None and start is not None and req[k] > start), None)
    messages = []
    if start is not None:
        messages = _rows(con.execute(
            "SELECT line, t_ns, cpu, message FROM blk_messages WHERE source_id = ? AND dev = ?"
            " AND t_ns BETWEEN ? AND ? ORDER BY t_ns, line LIMIT 500",
            [source_id, req["dev"], start, end if end is not None else start],
        ))
    return {"request": req, "events": events, "messages": messages}


def _stats(expr: str) -> str:
    return (f"count({expr}) AS {expr}_n, quantile_disc({expr}, [0.5, 0.95, 0.99]) AS {expr}_q,"
            f" max({expr}) AS {expr}_max")


def dispatch_summary(con, analysis_id: str, by: str, t0=None, t1=None) -> list[dict]:
    where, params = _filters(None, None, t0, t1)
    keys = "r.pid, r.comm" if by == "process" else "r.dev"
    sql = (
        f"SELECT {keys}, count(*) AS count, {_stats('i2d_ns')}, {_stats('d2c_ns')}, {_stats('q2c_ns')}"
        f" FROM blk_requests r JOIN sources s ON s.id = r.source_id WHERE s.analysis_id = $aid{where}"
        f" GROUP BY {keys} ORDER BY max(r.q2c_ns) DESC NULLS LAST, max(r.i2d_ns) DESC NULLS LAST, count(*) DESC"
    )
    out = []
    for row in _rows(con.execute(sql, {"aid": analysis_id, **params})):
        item = {
            "key": f"{row['comm']} ({row['pid']})" if by == "process" else row["dev"],
            "pid": row.get("pid"), "comm": row.get("comm"), "dev": row.get("dev"), "count": row["count"],
        }
        for m in ("i2d", "d2c", "q2c"):
            q = row[f"{m}_ns_q"] or [None, None, None]
            item[m] = {"n": row[f"{m}_ns_n"], "p50": q[0], "p95": q[1], "p99": q[2], "max": row[f"{m}_ns_max"]}
        out.append(item)
    return out


def latency_over_time(con, analysis_id: str, buckets: int, pid=None, dev=None, t0=None, t1=None) -> dict:
    where, params = _filters(pid, dev, None, None)
    span = con.execute(
        f"SELECT min(r.t_ns), max(coalesce(r.c_ns, r.d_ns, r.t_ns)) FROM blk_requests r"
        f" JOIN sources s ON s.id = r.source_id WHERE s.analysis_id = $aid{where}",
        {"aid": analysis_id, **params},
    ).fetchall()[0]
    lo = t0 if t0 is not None else span[0]
    hi = t1 if t1 is not None else span[1]
    if lo is None or hi is None:
        return {"t0_ns": t0, "t1_ns": t1, "bucket_ns": None, "series": {"i2d": [], "d2c": []}}
    bucket = max(1, -(-(hi - lo + 1) // buckets))
    series = {}
    for metric, at in (("i2d", "i_ns"), ("d2c", "d_ns")):
        rows = con.execute(
            f"SELECT $lo + (r.{at} - $lo) // $bucket * $bucket AS t_ns, count(*) AS count,"
            f" quantile_disc(r.{metric}_ns, 0.5) AS p50_ns, max(r.{metric}_ns) AS max_ns,"
            f" arg_max(r.source_id, r.{metric}_ns) AS max_source_id, arg_max(r.line, r.{metric}_ns) AS max_line"
            f" FROM blk_requests r JOIN sources s ON s.id = r.source_id"
            f" WHERE s.analysis_id = $aid AND r.{metric}_ns IS NOT NULL AND r.{at} BETWEEN $lo AND $hi{where}"
            f" GROUP BY 1 ORDER BY 1",
            {"aid": analysis_id, "lo": lo, "hi": hi, "bucket": bucket, **params},
        )
        series[metric] = _rows(rows)
    return {"t0_ns": lo, "t1_ns": hi, "bucket_ns": bucket, "series": series}


def loads(value):
    return json.loads(value) if isinstance(value, str) else value
