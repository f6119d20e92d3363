"""The timeline's task slices and summaries, made at ingest (queries/timeline/ reads them; schema/tables.py
defines the tables).

Reading never rescans the raw events of a wide window: `summarize` precomputes at ingest, per source and in
its own clock (so a clock offset set later changes nothing stored), a pyramid of bucketed aggregates —
`tl_bins`, level 0 buckets of `w0_ns` (the source's span / LEVEL0_BUCKETS, a power of two; 2x finer for a
blkparse source of FINE_REQUESTS requests or more: its windows of 0.9-1.8 % of the span then read a few thousand
summary rows kept in memory instead of ~100 k raw requests, the timeline's slowest reads of a 5 GiB capture), each level
FAN times wider, holding at level k the segments shorter than its bucket (count, total and longest time,
the longest's line, per lane, track and state) — the segments at least a level-1 bucket long (`tl_long`),
the requests in flight per device at the end of each level-0 bucket (`tl_depth`), and the calls long enough
to be drawn at level 0 or wider (`tl_calls`). `prepare` reads what of that needs only a source's staged rows
(task slices, long calls, depth-0 calls), beside the waits' derivation (derive/pipeline.py).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import pyarrow as pa

from ..db import arrow, execute
from ..schema.tables import BLK_PHASES, FAN, MAX_CALL_DEPTH

LEVEL0_BUCKETS = 1 << 16  # level-0 buckets over a source's span (its w0_ns: this fraction, a power of two)
FINE_REQUESTS = 1 << 22  # a blkparse source of at least this many requests: level-0 buckets 2^FINE_SHIFT finer
FINE_SHIFT = 1  # (2: 4x finer, ingest CPU +5-13 % at 5 GiB; 1: +1.6 %, the slowest reads ~ as fast)
MIN_W0 = 1024  # ns
TOP_BUCKETS = 16  # the coarsest level still has at least this many buckets over the span


def prepare(con, sources: list[tuple[int, int | None, int | None]]) -> dict[int, dict[str, pa.Table]]:
    """What `summarize` needs of each ftrace source (id, t_min_ns, t_max_ns) that its staged rows alone give
    (derive/pipeline.py runs it beside the waits, through a cursor of its own): "slices", its rows of task_slices;
    "calls", its rows of tl_calls; "roots", its depth-0 calls (for tl_lanes and the call track)."""
    out = {}
    for sid, t_min, t_max in sources:
        p = {"sid": sid}
        out[sid] = {
            "slices": arrow(con, _SLICES, params=p),
            "roots": arrow(con, _ROOTS, params=p),
        }
        if t_min is not None and t_max is not None:
            out[sid]["calls"] = arrow(con, _CALLS, params={**p, "w0": _geometry(t_min, t_max)[0]})
    return out


def _geometry(t_min: int, t_max: int, fine: bool = False) -> tuple[int, int]:
    """(w0_ns, top level) of a source's summaries; `fine`: level-0 buckets 2^FINE_SHIFT times narrower."""
    span = max(1, t_max - t_min)
    buckets = LEVEL0_BUCKETS << FINE_SHIFT if fine else LEVEL0_BUCKETS
    w0 = max(MIN_W0, 1 << max(0, (-(-span // buckets) - 1).bit_length()))
    top = 0
    while span // (w0 * FAN ** (top + 1)) >= TOP_BUCKETS:
        top += 1
    return w0, top


_ROOTS = """
    SELECT pid, comm, entry_ns, duration_ns, line FROM fg_calls
    WHERE source_id = $sid AND depth = 0 AND pid IS NOT NULL AND entry_ns IS NOT NULL"""
_CALLS = f"""
    SELECT $sid AS source_id, pid, depth, func, entry_ns, entry_ns + duration_ns AS end_ns, duration_ns, line
    FROM fg_calls WHERE source_id = $sid AND depth BETWEEN 0 AND {MAX_CALL_DEPTH} AND entry_ns IS NOT NULL
      AND duration_ns >= $w0"""
# slices of each task's scheduler state, from its sched_switch and sched_wakeup lines (one SQL pass): after a switch-in
# the task runs; after a switch-out it is runnable (prev_state R, R+) or blocked (any sleep) until its first wake-up,
# then runnable until its next switch-in; an exiting task (X, Z, x) has no slice
_SLICES = """
        WITH ev AS (
            SELECT line, t_ns, prev_pid AS pid, prev_comm AS comm,
                   CASE WHEN coalesce(prev_state, '') = '' OR prev_state LIKE 'R%' THEN 'runnable'
                        WHEN regexp_matches(prev_state, '^[XZx]') THEN 'exited' ELSE 'blocked' END AS state
            FROM sched_switch WHERE source_id = $sid AND prev_pid IS NOT NULL AND prev_pid <> 0 AND t_ns IS NOT NULL
            UNION ALL
            SELECT line, t_ns, next_pid, next_comm, 'running' FROM sched_switch
            WHERE source_id = $sid AND next_pid IS NOT NULL AND next_pid <> 0 AND t_ns IS NOT NULL
        ), sl AS (
            SELECT pid, comm, state, t_ns AS start_ns, line,
                   lead(t_ns) OVER w AS next_ns, lead(line) OVER w AS next_line
            FROM ev WINDOW w AS (PARTITION BY pid ORDER BY line)
        ), wk AS (
            SELECT line, t_ns, pid FROM sched_wakeup
            WHERE source_id = $sid AND pid IS NOT NULL AND t_ns IS NOT NULL AND success IS NOT FALSE
        ), blk AS (  -- a blocked slice ends at the task's first wake-up inside it; runnable from there
            SELECT sl.*, w.t_ns AS wake_ns, w.line AS wake_line
            FROM sl ASOF LEFT JOIN wk w ON sl.pid = w.pid AND w.line > sl.line
            WHERE sl.state = 'blocked'
        ), last AS (SELECT max(t_ns) AS t FROM (SELECT t_ns FROM sched_switch WHERE source_id = $sid
                                                UNION ALL SELECT t_ns FROM wk))
        SELECT * FROM (
            SELECT $sid, pid, comm, state, start_ns, coalesce(next_ns, (SELECT t FROM last)), line, next_ns IS NOT NULL
            FROM sl WHERE state IN ('running', 'runnable')
            UNION ALL
            SELECT $sid, pid, comm, 'blocked', start_ns,
                   CASE WHEN wake_line < coalesce(next_line, 9223372036854775807) THEN wake_ns
                        ELSE coalesce(next_ns, (SELECT t FROM last)) END, line,
                   coalesce(wake_line < coalesce(next_line, 9223372036854775807), false) OR next_ns IS NOT NULL
            FROM blk
            UNION ALL
            SELECT $sid, pid, comm, 'runnable', wake_ns, coalesce(next_ns, (SELECT t FROM last)), wake_line,
                   next_ns IS NOT NULL
            FROM blk WHERE wake_line < coalesce(next_line, 9223372036854775807)
        )"""


# ---- segments: every lane's (lane, track, state, s, e, line), own clock ------------------------------------------

_TASK_SEGS = """
    SELECT l.lane, 0 AS track, x.state, x.start_ns AS s, x.end_ns AS e, x.line
    FROM task_slices x JOIN tl_lanes l ON l.source_id = x.source_id AND l.kind = 'task' AND l.pid = x.pid
    WHERE x.source_id = $sid
    UNION ALL
    SELECT l.lane, 1, coalesce(x.lock_key, x.lock, '?'), x.start_ns, x.end_ns, x.line
    FROM _tl_waits x JOIN tl_lanes l ON l.source_id = x.source_id AND l.kind = 'task' AND l.pid = x.pid
    WHERE x.source_id = $sid AND x.end_ns >= x.start_ns
    UNION ALL
    SELECT l.lane, 2, 'call', x.entry_ns, x.entry_ns + x.duration_ns, x.line
    FROM _tl_roots x JOIN tl_lanes l ON l.source_id = $sid AND l.kind = 'task' AND l.pid = x.pid
    WHERE x.duration_ns >= 0
"""
# each block request's I→D (queued) and D→C (service) segment, before lanes (dev, pid)
_BLK_SEGS = " UNION ALL ".join(
    f"""
    SELECT dev, pid, {track} AS track, {a} AS s, {z} AS e, line FROM blk_requests
    WHERE source_id = $sid AND {a} IS NOT NULL AND {z} >= {a}"""
    for track, _, a, z in BLK_PHASES
)
_BLK_STATE = "CASE track " + " ".join(f"WHEN {track} THEN '{state}'" for track, state, _, _ in BLK_PHASES) + " END"


def _in_lanes(rows: str) -> str:
    """The rows of `rows` (SQL with a `{key}` column: dev, then pid) in their device's lane and in their process'
    lane, with that lane: a request's rows are in two lanes."""
    return " UNION ALL ".join(
        f"""
        SELECT l.lane, g.* FROM ({rows.format(key=key)}) g
        JOIN tl_lanes l ON l.source_id = $sid AND l.kind = '{kind}' AND l.{key} = g.{key}"""
        for kind, key in (("device", "dev"), ("process", "pid"))
    )


def _segs(fmt: str) -> str:
    """The source's segments (lane, track, state, s, e, line): a task's scheduler states, its waits (`_tl_waits`) and
    its depth-0 calls (`_tl_roots`), both registered by summarize; each block request's I→D (queued) and D→C
    (service), in its device's lane and in its process' lane. (A read of a window makes the same from the raw tables:
    _raw.)"""
    if fmt == "ftrace":
        return _TASK_SEGS
    return f"SELECT lane, track, {_BLK_STATE} AS state, s, e, line FROM ({_in_lanes(f'SELECT * FROM ({_BLK_SEGS})')})"


def _short_segment_sums(fmt: str, level: str, width: str, top_width: int) -> str:
    """The segments shorter than top_width summed per (level, lane, track, state, bucket): level, the first level
    whose bucket is longer than the segment (a CASE on s and e); width, that level's bucket (a CASE on lvl). A block
    request's segments are summed per device and per process, then given their lanes (a request is in two lanes:
    summing its segments once per lane kind and joining the sums took 0.36-0.47 s for 2 M requests, against
    0.54-0.56 s for joining first and summing per lane)."""
    if fmt == "ftrace":
        return segment_sums(_TASK_SEGS, level, width, top_width)
    sums = (
        f"SELECT lvl, {{key}}, track, s // ({width}) AS bucket, sum(d) AS tot, count(*) AS n, max(d) AS mx,"
        " arg_max(line, d) AS line FROM x WHERE {key} IS NOT NULL GROUP BY ALL"
    )
    return f"""
        WITH x AS (SELECT {level} AS lvl, dev, pid, track, s, e - s AS d, line FROM ({_BLK_SEGS}) WHERE e - s < {top_width})
        SELECT lvl, lane, track, {_BLK_STATE} AS state, bucket, tot, n, mx, line FROM ({_in_lanes(sums)})"""


def segment_sums(segs: str, level: str, width: str, top_width: int) -> str:
    """The segments of `segs` (SQL of lane, track, state, s, e, line) shorter than top_width summed per (level, lane,
    track, state, bucket), as _short_segment_sums has them."""
    return f"""
        SELECT lvl, lane, track, state, s // ({width}) AS bucket, sum(e - s) AS tot, count(*) AS n, max(e - s) AS mx,
               arg_max(line, e - s) AS line
        FROM (SELECT *, {level} AS lvl FROM ({segs}) WHERE e - s < {top_width})
        GROUP BY ALL"""


def write_levels(
    con, sid: int, w0: int, top: int, segs: str, short_sums: Callable[[str, str, int], str], first_lane: int = 0
) -> None:
    """The rows of tl_bins and tl_long of a source's lanes from first_lane on, levels 0 to top (level 0's bucket
    w0): segs, the SQL of their segments (lane, track, state, s, e, line; $sid); short_sums(level, width,
    top_width), the SQL of those shorter than top_width summed per level (see _short_segment_sums).

    One pass over the segments: each goes to the first level whose bucket is longer than it, bucketed there; then
    each level is the one below merged FAN buckets at a time, plus the segments that start there. Segments at least
    a level-1 bucket long are kept as they are in tl_long."""
    widths = [w0 * FAN**k for k in range(top + 1)]
    level = "CASE " + " ".join(f"WHEN e - s < {w} THEN {k}" for k, w in enumerate(widths)) + " END"
    width = "CASE lvl " + " ".join(f"WHEN {k} THEN {w}" for k, w in enumerate(widths)) + " END"
    p = {"sid": sid}
    execute(con, f"CREATE OR REPLACE TEMP TABLE _tl_short_sums AS {short_sums(level, width, widths[-1])}", p)
    # (level 0 has nothing below: its fresh rows are its bins as they are)
    execute(
        con,
        "INSERT INTO tl_bins SELECT $sid, 0, lane, track, state, bucket, tot, n, mx, line FROM _tl_short_sums"
        " WHERE lvl = 0 ORDER BY lane, bucket",
        p,
    )
    for k in range(1, top + 1):
        execute(
            con,
            f"""
            INSERT INTO tl_bins
            SELECT $sid, $k, lane, track, state, bucket, sum(tot), sum(n), max(mx), arg_max(line, mx) FROM (
                SELECT lane, track, state, bucket // {FAN} AS bucket, tot, n, mx, line FROM tl_bins
                WHERE source_id = $sid AND level = $k - 1 AND lane >= $first
                UNION ALL SELECT lane, track, state, bucket, tot, n, mx, line FROM _tl_short_sums WHERE lvl = $k
            ) GROUP BY lane, track, state, bucket
            ORDER BY lane, bucket  -- a read of some lanes over a window skips the other row groups
            """,
            {**p, "k": k, "first": first_lane},
        )
    execute(con, "DROP TABLE _tl_short_sums")
    # the segments a read at level >= 1 draws as they are: by level, then start (a read skips the rest)
    level = "CASE " + " ".join(f"WHEN e - s < {w} THEN {k}" for k, w in enumerate(widths)) + f" ELSE {top + 1} END"
    execute(
        con,
        f"INSERT INTO tl_long SELECT $sid, {level} AS lvl, lane, track, state, s, e, line"
        f" FROM ({segs}) WHERE e - s >= {w0 * FAN} ORDER BY lvl, s",
        p,
    )


# ---- summaries at ingest -------------------------------------------------------------------------------------------


def _requests(con, sid: int) -> int:
    return execute(con, "SELECT count(*) FROM blk_requests WHERE source_id = ?", [sid]).fetchone()[0]


def summarize(
    con,
    sources: list[tuple[int, str, int | None, int | None]],
    waits: pa.Table | None = None,
    prepared: dict[int, dict[str, pa.Table]] | None = None,
) -> None:
    """The timeline's summaries (see the module docstring) of each ftrace and blkparse source (id, format, t_min_ns,
    t_max_ns), and each ftrace source's task slices, from its waits (their summary: source_id, pid, comm, start_ns,
    end_ns, lock_key, lock, line; needed when there is an ftrace source) and what `prepare` read of it (else read
    now). derive/pipeline.py runs it beside the waits' insert
    and the chains, in a transaction of its own (STAGED_TABLES)."""
    sources = [s for s in sources if s[1] in ("ftrace", "blkparse")]
    ftrace = [(sid, t_min, t_max) for sid, fmt, t_min, t_max in sources if fmt == "ftrace"]
    prepared = {**(prepared or {})}
    prepared.update(prepare(con, [s for s in ftrace if s[0] not in prepared]))
    if waits is not None:
        con.register("_tl_waits", waits)

    def insert(table: str, sid: int, part: str, order: str) -> None:  # by `order`: a read skips the other row groups
        con.register("_tl_rows", prepared[sid][part])
        execute(con, f"INSERT INTO {table} SELECT * FROM _tl_rows ORDER BY {order}")
        con.unregister("_tl_rows")

    for sid, _, _ in ftrace:
        insert("task_slices", sid, "slices", "start_ns")
    for sid, fmt, t_min, t_max in sources:
        if t_min is None or t_max is None:
            continue
        fine = fmt == "blkparse" and _requests(con, sid) >= FINE_REQUESTS
        w0, top = _geometry(t_min, t_max, fine)
        p = {"sid": sid, "w0": w0}
        execute(con, "INSERT INTO tl_meta VALUES ($sid, $w0, $top)", {**p, "top": top})
        if fmt == "ftrace":
            con.register("_tl_roots", prepared[sid]["roots"])  # until the segments are summarized
            execute(
                con,
                """
                INSERT INTO tl_lanes
                SELECT $sid, (row_number() OVER (ORDER BY pid) - 1)::INTEGER, 'task', pid, NULL, arg_max(comm, t)
                FROM (SELECT pid, comm, start_ns AS t FROM task_slices WHERE source_id = $sid
                      UNION ALL SELECT pid, comm, start_ns FROM _tl_waits WHERE source_id = $sid
                      UNION ALL SELECT pid, comm, entry_ns FROM _tl_roots WHERE pid <> 0)
                GROUP BY pid""",
                {"sid": sid},
            )
            insert("tl_calls", sid, "calls", "entry_ns")
        else:
            execute(
                con,
                """
                INSERT INTO tl_lanes
                SELECT $sid, (row_number() OVER (ORDER BY kind, dev, pid) - 1)::INTEGER, kind, pid, dev, comm FROM (
                    SELECT 'device' AS kind, NULL::BIGINT AS pid, dev, NULL AS comm FROM blk_requests
                    WHERE source_id = $sid AND dev IS NOT NULL GROUP BY dev
                    UNION ALL
                    SELECT 'process', pid, NULL, mode(comm) FROM blk_requests
                    WHERE source_id = $sid AND pid IS NOT NULL GROUP BY pid)""",
                {"sid": sid},
            )
            execute(
                con,
                """
                INSERT INTO tl_depth
                WITH e AS (  -- requests inserted (+1) and completed (-1) per device and bucket, then in its lane
                    SELECT dev, i_ns // $w0 AS bucket, 1 AS d FROM blk_requests
                    WHERE source_id = $sid AND i_ns IS NOT NULL AND dev IS NOT NULL
                    UNION ALL
                    SELECT dev, c_ns // $w0, -1 FROM blk_requests
                    WHERE source_id = $sid AND i_ns IS NOT NULL AND c_ns IS NOT NULL AND c_ns >= i_ns AND dev IS NOT NULL
                ), g AS (SELECT l.lane, e.bucket, sum(e.d) AS d FROM e
                         JOIN tl_lanes l ON l.source_id = $sid AND l.kind = 'device' AND l.dev = e.dev GROUP BY ALL)
                SELECT $sid, lane, bucket, sum(d) OVER (PARTITION BY lane ORDER BY bucket ROWS UNBOUNDED PRECEDING)
                FROM g ORDER BY lane, bucket""",
                p,
            )
        write_levels(con, sid, w0, top, _segs(fmt), partial(_short_segment_sums, fmt))
        if fmt == "ftrace":
            con.unregister("_tl_roots")
    if waits is not None:
        con.unregister("_tl_waits")
