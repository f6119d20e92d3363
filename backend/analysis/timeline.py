"""One time axis for every source: lanes of items, aggregated on the server for the pixels asked for.

Lanes (ids are stable, for the URL):
* `task:<source>:<pid>` (ftrace) — the task's states from the scheduler events (running / runnable /
  blocked, derived at ingest into `task_slices`), its waits coloured by lock (`waits`), and, zoomed in,
  its function calls (depth ≤ MAX_CALL_DEPTH, calls at least one pixel long); `print` markers of the
  task's source.
* `dev:<source>:<dev>` and `proc:<source>:<pid>` (blktrace) — each request's I→D wait (`queued`) and
  D→C service (`service`); per device also the number of requests in flight (inserted, not completed)
  at the end of each pixel.
* `window:<source>` (offcputime) — the dump's capture window, a band.
Chains of the Stalls view are arrows across lanes: from the waker / holder (or the device whose request
completed) to the waiter, at the end of the wait.

Aggregation: the window [t0, t1] is cut in `width_px` buckets of `bucket_ns`. A segment at least one
bucket long is kept as it is (clipped to the window); shorter ones are merged per bucket (the bucket their
start falls in) — for a task, the state (or the lock) that took most of the bucket's time; for block
lanes, per track — and runs of consecutive buckets with the same state become one item with its count,
its longest segment and the line of that segment (the event behind it).

A response holds at most MAX_ITEMS items: when the lanes asked for would hold more, the densest lanes are
drawn with wider buckets (the lane's `bucket_ns` doubled, and again), the same rule applied with a
coarser bucket. So a response stays small and quick to draw, whatever the trace's size.

Reading never rescans the raw events of a wide window: `summarize` precomputes at ingest, per source and in
its own clock (so a clock offset set later changes nothing stored), a pyramid of bucketed aggregates —
`tl_bins`, level 0 buckets of `w0_ns` (the source's span / LEVEL0_BUCKETS, a power of two), each level
FAN times wider, holding at level k the segments shorter than its bucket (count, total and longest time,
the longest's line, per lane, track and state) — the requests in flight per device at the end of each
level-0 bucket (`tl_depth`), and the calls long enough to be drawn at level 0 or wider (`tl_calls`). A read
picks the finest level whose bucket is at least a pixel, re-buckets it to pixels and adds the segments at
least one level bucket long (`tl_long`). Windows narrower than a level-0 bucket per pixel read the raw tables
instead (a range of the window: a small part of the trace). Lanes are ranked from a coarser level (a few
hundred buckets over the window), so the figures in a lane's `why` are close to, not exactly, what the
window holds (said with ≈).

The summaries above level 0, tl_depth, tl_calls and the chains are kept in memory per analysis from its first
read (memo.py; ~45 MB, ~0.3 s to load, for the 17 M-event benchmark analysis), as numpy arrays found by binary
search; level 0 and the raw rows of a narrow window are one query per table, and everything is bucketed and
merged in numpy, all lanes at once.

All times are on the analysis timeline (the source's own time + its clock_offset_ns).
"""
from __future__ import annotations

import re
from collections import defaultdict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import memo

MAX_CALL_DEPTH = 6
MAX_ITEMS = 12_000  # drawable items in one response, all lanes together
MAX_CALLS = 2000  # calls per lane (the longest), before coarsening
MAX_MARKS = 500
MAX_CHAINS = 50
TASK_STATES = ("running", "runnable", "blocked")
TRACKS = ("state", "wait", "call", "queued", "service")  # the track codes of tl_bins and of a lane's items
DOMINANT = (True, True, False, False, False)  # per track: a merged bucket shows its dominant state, else each state
LEVEL0_BUCKETS = 1 << 16  # level-0 buckets over a source's span (its w0_ns: this fraction, a power of two)
MIN_W0 = 1024  # ns
FAN = 4  # each level's bucket is FAN times the one below
TOP_BUCKETS = 16  # the coarsest level still has at least this many buckets over the span
RANK_BUCKETS = 512  # lanes are ranked from the finest level with at most this many buckets in the window

SCHEMA = """
CREATE TABLE IF NOT EXISTS task_slices (
    source_id INTEGER NOT NULL,
    pid BIGINT NOT NULL,
    comm VARCHAR,
    state VARCHAR NOT NULL,          -- running | runnable | blocked (off CPU asleep, until its wake-up)
    start_ns BIGINT NOT NULL,        -- the source's own clock
    end_ns BIGINT NOT NULL,
    line BIGINT NOT NULL,            -- the sched_switch / sched_wakeup line that began it
    end_known BOOLEAN NOT NULL       -- false: still so when the trace ends
);
-- the timeline's precomputed summaries (see backend/analysis/timeline.py), in each source's own clock
CREATE TABLE IF NOT EXISTS tl_meta (source_id INTEGER NOT NULL, w0_ns BIGINT NOT NULL, top_level INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS tl_lanes (
    source_id INTEGER NOT NULL, lane INTEGER NOT NULL, kind VARCHAR NOT NULL,  -- task | device | process
    pid BIGINT, dev VARCHAR, comm VARCHAR
);
CREATE TABLE IF NOT EXISTS tl_bins (
    source_id INTEGER NOT NULL, level TINYINT NOT NULL, lane INTEGER NOT NULL, track TINYINT NOT NULL,
    state VARCHAR NOT NULL, bucket BIGINT NOT NULL,  -- [bucket * w, (bucket + 1) * w), w = w0_ns * FAN^level
    tot BIGINT NOT NULL, n BIGINT NOT NULL, mx BIGINT NOT NULL, line BIGINT NOT NULL  -- segments shorter than w
);
CREATE TABLE IF NOT EXISTS tl_long (  -- segments at least a level-1 bucket long; lvl: the first level longer than it
    source_id INTEGER NOT NULL, lvl TINYINT NOT NULL, lane INTEGER NOT NULL, track TINYINT NOT NULL,
    state VARCHAR NOT NULL, s BIGINT NOT NULL, e BIGINT NOT NULL, line BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS tl_depth (  -- requests in flight per device lane at the end of each level-0 bucket
    source_id INTEGER NOT NULL, lane INTEGER NOT NULL, bucket BIGINT NOT NULL, inflight BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS tl_calls (  -- calls of depth <= MAX_CALL_DEPTH at least w0_ns long
    source_id INTEGER NOT NULL, pid BIGINT, depth INTEGER NOT NULL, func VARCHAR, entry_ns BIGINT NOT NULL,
    end_ns BIGINT NOT NULL, duration_ns BIGINT NOT NULL, line BIGINT NOT NULL
);
"""
# summarize's tables, each keyed by source_id: it may write and commit them before the analysis (its sources rows)
# is committed, in a transaction of its own; until then no read joins them, and a failed ingest deletes them
STAGED_TABLES = ("task_slices", "tl_meta", "tl_lanes", "tl_bins", "tl_long", "tl_depth", "tl_calls")


def prepare(con, sources: list[tuple[int, int | None, int | None]]) -> dict[int, dict[str, pa.Table]]:
    """What `summarize` needs of each ftrace source (id, t_min_ns, t_max_ns) that its staged rows alone give (stalls.derive
    runs it beside the waits, through a cursor of its own): "slices", its rows of task_slices; "calls", its rows of
    tl_calls; "roots", its depth-0 calls (for tl_lanes and the call track)."""
    out = {}
    for sid, t_min, t_max in sources:
        p = {"sid": sid}
        out[sid] = {"slices": con.sql(_SLICES, params=p).to_arrow_table(),
                    "roots": con.sql(_ROOTS, params=p).to_arrow_table()}
        if t_min is not None and t_max is not None:
            out[sid]["calls"] = con.sql(_CALLS, params={**p, "w0": _geometry(t_min, t_max)[0]}).to_arrow_table()
    return out


def _geometry(t_min: int, t_max: int) -> tuple[int, int]:
    """(w0_ns, top level) of a source's summaries."""
    span = max(1, t_max - t_min)
    w0 = max(MIN_W0, 1 << max(0, (-(-span // LEVEL0_BUCKETS) - 1).bit_length()))
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
BLK_PHASES = ((3, "queued", "i_ns", "d_ns"), (4, "service", "d_ns", "c_ns"))  # track, state, start, end
# each block request's I→D (queued) and D→C (service) segment, before lanes (dev, pid)
_BLK_SEGS = " UNION ALL ".join(f"""
    SELECT dev, pid, {track} AS track, {a} AS s, {z} AS e, line FROM blk_requests
    WHERE source_id = $sid AND {a} IS NOT NULL AND {z} >= {a}""" for track, _, a, z in BLK_PHASES)
_BLK_STATE = "CASE track " + " ".join(f"WHEN {track} THEN '{state}'" for track, state, _, _ in BLK_PHASES) + " END"


def _in_lanes(rows: str) -> str:
    """The rows of `rows` (SQL with a `{key}` column: dev, then pid) in their device's lane and in their process'
    lane, with that lane: a request's rows are in two lanes."""
    return " UNION ALL ".join(f"""
        SELECT l.lane, g.* FROM ({rows.format(key=key)}) g
        JOIN tl_lanes l ON l.source_id = $sid AND l.kind = '{kind}' AND l.{key} = g.{key}"""
                              for kind, key in (("device", "dev"), ("process", "pid")))


def _segs(fmt: str) -> str:
    """The source's segments (lane, track, state, s, e, line): a task's scheduler states, its waits (`_tl_waits`) and
    its depth-0 calls (`_tl_roots`), both registered by summarize; each block request's I→D (queued) and D→C
    (service), in its device's lane and in its process' lane. (A read of a window makes the same from the raw tables:
    _raw.)"""
    if fmt == "ftrace":
        return _TASK_SEGS
    return f"SELECT lane, track, {_BLK_STATE} AS state, s, e, line FROM ({_in_lanes(f'SELECT * FROM ({_BLK_SEGS})')})"


def _fresh(fmt: str, level: str, width: str, top_width: int) -> str:
    """The segments shorter than top_width summed per (level, lane, track, state, bucket): level, the first level
    whose bucket is longer than the segment (a CASE on s and e); width, that level's bucket (a CASE on lvl). A block
    request's segments are summed per device and per process, then given their lanes (a request is in two lanes:
    summing its segments once per lane kind and joining the sums took 0.36-0.47 s for 2 M requests, against
    0.54-0.56 s for joining first and summing per lane)."""
    if fmt == "ftrace":
        return f"""
            SELECT lvl, lane, track, state, s // ({width}) AS bucket, sum(e - s) AS tot, count(*) AS n, max(e - s) AS mx,
                   arg_max(line, e - s) AS line
            FROM (SELECT *, {level} AS lvl FROM ({_TASK_SEGS}) WHERE e - s < {top_width})
            GROUP BY ALL"""
    sums = (f"SELECT lvl, {{key}}, track, s // ({width}) AS bucket, sum(d) AS tot, count(*) AS n, max(d) AS mx,"
            " arg_max(line, d) AS line FROM x WHERE {key} IS NOT NULL GROUP BY ALL")
    return f"""
        WITH x AS (SELECT {level} AS lvl, dev, pid, track, s, e - s AS d, line FROM ({_BLK_SEGS}) WHERE e - s < {top_width})
        SELECT lvl, lane, track, {_BLK_STATE} AS state, bucket, tot, n, mx, line FROM ({_in_lanes(sums)})"""


# ---- summaries at ingest -------------------------------------------------------------------------------------------

def summarize(con, sources: list[tuple[int, str, int | None, int | None]], waits: pa.Table | None = None,
              prepared: dict[int, dict[str, pa.Table]] | None = None) -> None:
    """The timeline's summaries (see the module docstring) of each ftrace and blkparse source (id, format, t_min_ns,
    t_max_ns), and each ftrace source's task slices, from its waits (stalls.BRIEF: needed when there is an ftrace
    source) and what `prepare` read of it (else read now). stalls.derive runs it beside the waits' insert and the
    chains, in a transaction of its own (STAGED_TABLES)."""
    sources = [s for s in sources if s[1] in ("ftrace", "blkparse")]
    ftrace = [(sid, t_min, t_max) for sid, fmt, t_min, t_max in sources if fmt == "ftrace"]
    prepared = {**(prepared or {})}
    prepared.update(prepare(con, [s for s in ftrace if s[0] not in prepared]))
    if waits is not None:
        con.register("_tl_waits", waits)

    def insert(table: str, sid: int, part: str, order: str) -> None:  # by `order`: a read skips the other row groups
        con.register("_tl_rows", prepared[sid][part])
        con.execute(f"INSERT INTO {table} SELECT * FROM _tl_rows ORDER BY {order}")
        con.unregister("_tl_rows")

    for sid, _, _ in ftrace:
        insert("task_slices", sid, "slices", "start_ns")
    for sid, fmt, t_min, t_max in sources:
        if t_min is None or t_max is None:
            continue
        w0, top = _geometry(t_min, t_max)
        p = {"sid": sid, "w0": w0}
        con.execute("INSERT INTO tl_meta VALUES ($sid, $w0, $top)", {**p, "top": top})
        if fmt == "ftrace":
            con.register("_tl_roots", prepared[sid]["roots"])  # until the segments are summarized
            con.execute("""
                INSERT INTO tl_lanes
                SELECT $sid, (row_number() OVER (ORDER BY pid) - 1)::INTEGER, 'task', pid, NULL, arg_max(comm, t)
                FROM (SELECT pid, comm, start_ns AS t FROM task_slices WHERE source_id = $sid
                      UNION ALL SELECT pid, comm, start_ns FROM _tl_waits WHERE source_id = $sid
                      UNION ALL SELECT pid, comm, entry_ns FROM _tl_roots WHERE pid <> 0)
                GROUP BY pid""", {"sid": sid})
            insert("tl_calls", sid, "calls", "entry_ns")
        else:
            con.execute("""
                INSERT INTO tl_lanes
                SELECT $sid, (row_number() OVER (ORDER BY kind, dev, pid) - 1)::INTEGER, kind, pid, dev, comm FROM (
                    SELECT 'device' AS kind, NULL::BIGINT AS pid, dev, NULL AS comm FROM blk_requests
                    WHERE source_id = $sid AND dev IS NOT NULL GROUP BY dev
                    UNION ALL
                    SELECT 'process', pid, NULL, mode(comm) FROM blk_requests
                    WHERE source_id = $sid AND pid IS NOT NULL GROUP BY pid)""", {"sid": sid})
            con.execute("""
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
                FROM g ORDER BY lane, bucket""", p)
        # one pass over the segments: each goes to the first level whose bucket is longer than it, bucketed there;
        # then each level is the one below merged FAN buckets at a time, plus the segments that start there
        widths = [w0 * FAN ** k for k in range(top + 1)]
        level = "CASE " + " ".join(f"WHEN e - s < {w} THEN {k}" for k, w in enumerate(widths)) + " END"
        width = "CASE lvl " + " ".join(f"WHEN {k} THEN {w}" for k, w in enumerate(widths)) + " END"
        con.execute(f"CREATE OR REPLACE TEMP TABLE _tl_fresh AS {_fresh(fmt, level, width, widths[-1])}", {"sid": sid})
        # (level 0 has nothing below: its fresh rows are its bins as they are)
        con.execute("INSERT INTO tl_bins SELECT $sid, 0, lane, track, state, bucket, tot, n, mx, line FROM _tl_fresh"
                    " WHERE lvl = 0 ORDER BY lane, bucket", {"sid": sid})
        for k in range(1, top + 1):
            con.execute(f"""
                INSERT INTO tl_bins
                SELECT $sid, $k, lane, track, state, bucket, sum(tot), sum(n), max(mx), arg_max(line, mx) FROM (
                    SELECT lane, track, state, bucket // {FAN} AS bucket, tot, n, mx, line FROM tl_bins
                    WHERE source_id = $sid AND level = $k - 1
                    UNION ALL SELECT lane, track, state, bucket, tot, n, mx, line FROM _tl_fresh WHERE lvl = $k
                ) GROUP BY lane, track, state, bucket
                ORDER BY lane, bucket  -- a read of some lanes over a window skips the other row groups
                """, {"sid": sid, "k": k})
        con.execute("DROP TABLE _tl_fresh")
        # the segments a read at level >= 1 draws as they are: by level, then start (a read skips the rest)
        level = "CASE " + " ".join(f"WHEN e - s < {w} THEN {k}" for k, w in enumerate(widths)) + f" ELSE {top + 1} END"
        con.execute(f"INSERT INTO tl_long SELECT $sid, {level} AS lvl, lane, track, state, s, e, line"
                    f" FROM ({_segs(fmt)}) WHERE e - s >= {w0 * FAN} ORDER BY lvl, s", {"sid": sid})
        if fmt == "ftrace":
            con.unregister("_tl_roots")
    if waits is not None:
        con.unregister("_tl_waits")


# ---- reads -------------------------------------------------------------------------------------------------------

def _sources(con, analysis_id: str) -> list[dict]:
    """The analysis' sources (their offsets read each time: they may be set later), with the levels of their
    summaries (w0_ns, top_level; None: none), kept per analysis (memo.py)."""
    meta = memo.shared((analysis_id, "timeline-meta"), lambda: {sid: (w0, top) for sid, w0, top in con.execute(
        "SELECT m.source_id, m.w0_ns, m.top_level FROM tl_meta m JOIN sources s ON s.id = m.source_id"
        " WHERE s.analysis_id = ?", [analysis_id]).fetchall()}, lambda m: 100 * len(m))
    cols = ("id", "filename", "format", "clock_offset_ns", "t_min_ns", "t_max_ns")
    return [dict(zip(cols, r), w0_ns=meta.get(r[0], (None, None))[0], top_level=meta.get(r[0], (None, None))[1])
            for r in con.execute(f"SELECT {', '.join(cols)} FROM sources WHERE analysis_id = ? ORDER BY id",
                                 [analysis_id]).fetchall()]


def _span(sources: list[dict]) -> tuple[int | None, int | None]:
    ss = [s for s in sources if s["t_min_ns"] is not None]
    lo = [s["t_min_ns"] + s["clock_offset_ns"] for s in ss]
    hi = [s["t_max_ns"] + s["clock_offset_ns"] for s in ss if s["t_max_ns"] is not None]
    return (min(lo) if lo else None, max(hi) if hi else None)


def span(con, analysis_id: str) -> tuple[int | None, int | None]:
    return _span(_sources(con, analysis_id))


def timeline(con, analysis_id: str, t0: int | None, t1: int | None, width_px: int, lanes: list[str] | None,
             max_lanes: int) -> dict:
    """The response body, complete (every field of the response model: the route sends it without validating)."""
    sources = _sources(con, analysis_id)
    lo, hi = _span(sources)
    t0 = lo if t0 is None else t0
    t1 = hi if t1 is None else t1
    out = {"t0_ns": t0, "t1_ns": t1, "width_px": width_px, "bucket_ns": None, "lanes": [], "arrows": [], "marks": [],
           "total_lanes": 0, "tracks": list(TRACKS), "max_items": MAX_ITEMS}
    if t0 is None or t1 is None or t1 <= t0:
        return out
    b = max(1, -(-(t1 - t0) // width_px))
    out["bucket_ns"] = b
    p = {"aid": analysis_id, "t0": t0, "t1": t1, "b": b, "width_px": width_px}
    chains = _chain_links(con, analysis_id, sources, p) if any(s["format"] == "ftrace" for s in sources) else []
    names: dict[str, int] = {}  # the state names of this response -> their codes in the columns read
    registry = _registry(con, analysis_id)
    reads = {s["id"]: _read(con, analysis_id, s, p, registry.get(s["id"], {}), names) for s in sources
             if s["w0_ns"] is not None}
    candidates = _candidate_lanes(p, sources, chains, registry, reads, names)
    out["total_lanes"] = len(candidates)
    if lanes:
        wanted = set(lanes)
        chosen = [c for c in candidates if c["id"] in wanted]
    else:
        chosen = candidates[:max_lanes]
    by_source = defaultdict(list)
    for i, c in enumerate(chosen):
        c.update(segs=None, bucket_ns=None, counter=None, band=c.get("band"), _index=i)
        if c["kind"] != "window":
            by_source[c["source_id"]].append(c)
    parts = [_lane_inputs(con, analysis_id, s, p, by_source[s["id"]], reads[s["id"]], names)
             for s in sources if by_source.get(s["id"]) and s["id"] in reads]
    _fit(chosen, {k: {c: np.concatenate([x[k][c] for x in parts]) for c in parts[0][k]} for k in ("px", "segs", "calls")}
         if parts else None, p, list(names))
    for c in chosen:
        c.pop("_lane", None), c.pop("_index", None)
    out["lanes"] = chosen
    out["arrows"] = _arrows(chains, {c["id"] for c in chosen})
    out["marks"] = _marks(con, analysis_id, sources, p)
    return out


CHAIN_COLS = ("chain_id", "pos", "source_id", "pid", "comm", "relation", "start_ns", "end_ns", "req_source_id",
              "req_dev", "req_line", "req_c_ns")


def _chain_links(con, analysis_id: str, sources: list[dict], p: dict) -> list[dict]:
    """Links of the top chains whose first wait overlaps the window, times aligned. The analysis' links (an Arrow
    table by chain and position, ~3 MB for 28 k links) and their first link's aligned span are kept per clock offsets
    (memo.py): a window's are picked without a query."""
    offsets = {s["id"]: s["clock_offset_ns"] for s in sources}

    def build():
        table = con.sql(f"SELECT {', '.join(CHAIN_COLS)} FROM chain_links WHERE analysis_id = $aid"
                        " ORDER BY chain_id, pos", params={"aid": analysis_id}).to_arrow_table()
        first = table.filter(pc.and_(pc.equal(table["pos"], 0), pc.and_(pc.is_valid(table["start_ns"]),
                                                                         pc.is_valid(table["end_ns"]))))
        off = np.array([offsets[x] for x in first["source_id"].to_pylist()], np.int64)
        return {"links": table, "chain_id": table["chain_id"].to_numpy(), "ids": first["chain_id"].to_numpy(),
                "t0": first["start_ns"].to_numpy() + off, "t1": first["end_ns"].to_numpy() + off}

    chains = memo.shared((analysis_id, "timeline-chains", tuple(offsets.items())), build,
                         lambda d: d["links"].nbytes + 24 * len(d["ids"]))
    ids = chains["ids"][(chains["t1"] >= p["t0"]) & (chains["t0"] <= p["t1"])][:MAX_CHAINS]
    a, z = np.searchsorted(chains["chain_id"], ids, "left"), np.searchsorted(chains["chain_id"], ids, "right")
    links = chains["links"].take(np.concatenate([np.arange(x, y) for x, y in zip(a, z)] or [np.zeros(0, np.int64)]))
    out = links.to_pylist()
    for link in out:
        off, req_off = offsets[link["source_id"]], offsets.get(link["req_source_id"])
        link["start_ns"] = None if link["start_ns"] is None else link["start_ns"] + off
        link["end_ns"] = None if link["end_ns"] is None else link["end_ns"] + off
        link["req_c_ns"] = None if link["req_c_ns"] is None or req_off is None else link["req_c_ns"] + req_off
    return out


def _lane_id(kind: str, sid: int, key) -> str:
    return f"{ {'task': 'task', 'device': 'dev', 'process': 'proc'}[kind]}:{sid}:{key}"


def _own(s: dict, p: dict) -> dict:
    """The window in the source's own clock; $slo: how early a segment shorter than a level-1 bucket may start."""
    lo = p["t0"] - s["clock_offset_ns"]
    return {"sid": s["id"], "lo": lo, "hi": p["t1"] - s["clock_offset_ns"], "slo": lo - s["w0_ns"] * FAN}


def _level(s: dict, width: int, most: int) -> int:
    """The finest level of the source with at most `most` buckets over `width` ns (its top level at most)."""
    k = 0
    while k < s["top_level"] and width // (s["w0_ns"] * FAN ** k) > most:
        k += 1
    return k


def _fetch(con, sql: str, params: dict, names: dict[str, int], wide: bool = True,
           nullable: tuple = ()) -> dict[str, np.ndarray]:
    """The rows of sql as numpy columns (through Arrow), integers as int64 (`wide`) or as they come; text columns as
    codes into `names` (name -> code, grown with the names met; int64, or int32 when not `wide`). The `nullable`
    columns have their nulls as 0, and which are not null as valid_<name>."""
    used = set(re.findall(r"\$(\w+)", sql))
    table = con.sql(sql, params={k: v for k, v in params.items() if k in used}).to_arrow_table()
    cols = {}
    for name, col in zip(table.column_names, table.columns):
        col = col.combine_chunks()
        if name in nullable:
            cols[f"valid_{name}"] = col.is_valid().to_numpy(zero_copy_only=False)
            col = col.fill_null(0)
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            enc = pc.dictionary_encode(col)
            codes = np.array([names.setdefault(x, len(names)) for x in enc.dictionary.to_pylist()],
                             np.int64 if wide else np.int32)
            cols[name] = codes[enc.indices.to_numpy(zero_copy_only=False)] if len(codes) else codes
        else:
            arr = col.to_numpy(zero_copy_only=False)
            cols[name] = arr.astype(np.int64) if wide and arr.dtype.kind in "iu" else arr
    return cols


def _take(cols: dict[str, np.ndarray], mask: np.ndarray) -> dict[str, np.ndarray]:
    return {k: v[mask] for k, v in cols.items()}


def _read(con, analysis_id: str, s: dict, p: dict, lanes: dict[int, tuple], names: dict[str, int]) -> dict:
    """What one source's lanes are ranked from and drawn with in the window, read once (own clock): the levels of
    the ranking (`kr`, at most RANK_BUCKETS buckets over the window) and of the drawing (`k`, the finest whose bucket
    is at least a pixel; -1: narrower than a level-0 bucket per pixel, the raw tables), the segments of tl_long
    either needs (`long`: lane, track, state, s, e, line, lvl), the ranking level's bins of every lane (`rank`), and
    when either level is below 1 the window's raw segments shorter than a level-1 bucket (`raw`). Nothing is read
    when the window is outside the source's span (`none`)."""
    q = _own(s, p)
    w0, b = s["w0_ns"], p["b"]
    kr = _level(s, p["t1"] - p["t0"], RANK_BUCKETS)
    k = -1
    if b >= w0:  # the finest level whose bucket is at least a pixel (1 to FAN pixels; wider than the top: pixels)
        k = 0
        while k < s["top_level"] and w0 * FAN ** k < b:
            k += 1
    none = q["hi"] < s["t_min_ns"] or q["lo"] > s["t_max_ns"]
    rd = {"q": q, "k": k, "kr": kr, "none": none, "long": _columns(LONG_COLS), "rank": _columns(RANK_COLS),
          "raw": _columns(SEG_COLS), "events": _columns(("lane", "t", "d"))}
    if none:
        return rd
    rd["long"] = _long(con, analysis_id, s, min(k, kr), q, names)
    rd["rank"] = _bins(con, analysis_id, s, kr, q, names)
    if k < 1 or kr < 1:
        rd["raw"], rd["events"] = _raw(con, s, q, lanes, names, calls=kr < 1)
    return rd


def _summary(con, analysis_id: str, s: dict) -> dict:
    """A source's summaries above level 0, kept per analysis from a window's first read (memo.py; ~45 bytes a row:
    ~45 MB, ~0.3 s, for the 17 M-event benchmark analysis) so that a window reads them without a query: per level,
    tl_bins' rows by bucket (key ("tl_bins", level)) and tl_long's by start (("tl_long", level)); states as codes
    into `states` (an array of the names). Level 0 (as large as the others together, for narrow windows only) is
    read by a query."""
    def build():
        states: dict[str, int] = {}
        out = {}
        for table, sql in (("tl_bins", "SELECT level AS k, lane, track, state, bucket, tot, n, mx, line FROM tl_bins"
                                       " WHERE source_id = $sid AND level > 0 ORDER BY level, bucket"),
                           ("tl_long", "SELECT lvl AS k, lane, track, state, s, e, line FROM tl_long"
                                       " WHERE source_id = $sid ORDER BY lvl, s")):
            cols = _fetch(con, sql, {"sid": s["id"]}, states, wide=False)
            k = cols.pop("k")
            cut = np.searchsorted(k, np.arange(s["top_level"] + 3))
            out.update({(table, lvl): {c: v[cut[lvl]:cut[lvl + 1]] for c, v in cols.items()}
                        for lvl in range(s["top_level"] + 2)})
        return {**out, "states": np.array(list(states) or [""], object)}

    return memo.shared((analysis_id, "timeline-summary", s["id"]), build,
                       lambda x: sum(v.nbytes for k, c in x.items() if k != "states" for v in c.values())
                       + 64 * len(x["states"]))


def _coded(rows: dict[str, np.ndarray], states: np.ndarray, names: dict[str, int]) -> dict[str, np.ndarray]:
    """The rows (a slice of a kept level) as int64 columns, their states as codes into `names`."""
    rows = {c: v.astype(np.int64) for c, v in rows.items()}
    used = _distinct(rows["state"])
    rows["state"] = np.array([names.setdefault(x, len(names)) for x in states[used].tolist()], np.int64)[
        np.searchsorted(used, rows["state"])]
    return rows


def _bins(con, analysis_id: str, s: dict, level: int, q: dict, names: dict[str, int]) -> dict[str, np.ndarray]:
    """The rows of a tl_bins level whose bucket is in the window [lo, hi] (own clock), every lane."""
    w = s["w0_ns"] * FAN ** level
    if level == 0:
        return _fetch(con, "SELECT lane, track, state, bucket, tot, n, mx, line FROM tl_bins WHERE source_id = $sid"
                           " AND level = 0 AND bucket BETWEEN $lo // $w AND $hi // $w", {**q, "w": w}, names)
    sm = _summary(con, analysis_id, s)
    x = sm[("tl_bins", level)]
    a, z = np.searchsorted(x["bucket"], q["lo"] // w, "left"), np.searchsorted(x["bucket"], q["hi"] // w, "right")
    return _coded({c: v[a:z] for c, v in x.items()}, sm["states"], names)


def _long(con, analysis_id: str, s: dict, k: int, q: dict, names: dict[str, int]) -> dict[str, np.ndarray]:
    """The segments of tl_long above level k (at least a level-k bucket long) overlapping [lo, hi] (own clock), with
    their level: per level those starting at most one of its buckets before lo (shorter than it), the longest all."""
    parts = []
    top, sm = s["top_level"], _summary(con, analysis_id, s)
    for lvl in range(max(k + 1, 0), top + 2):
        x = sm[("tl_long", lvl)]
        a = np.searchsorted(x["s"], q["lo"] - s["w0_ns"] * FAN ** lvl, "left") if lvl <= top else 0
        rows = _coded({c: v[a:np.searchsorted(x["s"], q["hi"], "right")] for c, v in x.items()}, sm["states"], names)
        rows["lvl"] = np.full(len(rows["s"]), lvl)
        parts.append(_take(rows, rows["e"] >= q["lo"]))
    return {c: np.concatenate([x[c] for x in parts]) for c in LONG_COLS} if parts else _columns(LONG_COLS)


LONG_COLS = ("lane", "track", "state", "s", "e", "line", "lvl")
RANK_COLS = ("lane", "track", "state", "tot", "n", "mx")
SEG_COLS = ("lane", "track", "state", "s", "e", "line")


def _columns(names: tuple, n: int = 0) -> dict[str, np.ndarray]:
    return {c: np.zeros(n, np.int64) for c in names}


def _raw(con, s: dict, q: dict, lanes: dict[int, tuple], names: dict[str, int], calls: bool) -> tuple[dict, dict]:
    """The segments of _segs overlapping the window [$lo, $hi] and shorter than a level-1 bucket ($lo - $slo: the
    longer ones are in tl_long), from the raw tables by a range of one column each (row groups outside it are
    skipped); lanes looked up here, not joined. With `calls` (ranking at level 0), the depth-0 calls too, only those
    at least w0_ns long (from tl_calls): those shorter are in the level-0 bins. Of block requests, also the inserts
    (d = 1) and completions (-1) per device lane from the start of the window's level-0 bucket (`events`: lane, t,
    d), as tl_depth counts them: the requests in flight within a pixel."""
    events = _columns(("lane", "t", "d"))
    table = {(kind, dev if kind == "device" else pid): ln for ln, (kind, pid, dev, _) in lanes.items()}

    def lane_of(kind: str, keys: np.ndarray, values: list | None = None) -> np.ndarray:
        """The lane of each key (a pid; for a device, an index into `values`); -1: none."""
        u = _distinct(keys)
        found = [table.get((kind, v if values is None else values[v]), -1) for v in u.tolist()]
        return np.array(found, np.int64)[np.searchsorted(u, keys)]

    if s["format"] == "ftrace":
        sql = """
            SELECT pid, 0 AS track, state, start_ns AS s, end_ns AS e, line FROM task_slices
            WHERE source_id = $sid AND pid IS NOT NULL AND start_ns BETWEEN $slo AND $hi AND end_ns >= $lo
              AND end_ns - start_ns < $lo - $slo
            UNION ALL
            SELECT pid, 1, coalesce(lock_key, lock, '?'), start_ns, end_ns, line FROM waits
            WHERE source_id = $sid AND pid IS NOT NULL AND start_ns BETWEEN $slo AND $hi AND end_ns >= $lo
              AND end_ns >= start_ns AND end_ns - start_ns < $lo - $slo"""
        if calls:
            sql += """
            UNION ALL
            SELECT pid, 2, 'call', entry_ns, end_ns, line FROM tl_calls
            WHERE source_id = $sid AND pid IS NOT NULL AND depth = 0 AND entry_ns BETWEEN $slo AND $hi
              AND end_ns >= $lo AND duration_ns < $lo - $slo"""
        rows = _fetch(con, sql, q, names)
        rows["lane"] = lane_of("task", rows.pop("pid"))
        return _take(rows, rows["lane"] >= 0), events
    devs: dict[str, int] = {}
    cols = "coalesce(dev, '') AS dev, coalesce(pid, -1) AS pid, line, i_ns, d_ns, c_ns"
    r = _fetch(con, f"""
        SELECT {cols} FROM blk_requests WHERE source_id = $sid AND i_ns BETWEEN $slo AND $hi
        UNION ALL  -- those inserted before (or never) dispatched or completed in the window
        SELECT {cols} FROM blk_requests WHERE source_id = $sid AND (i_ns IS NULL OR i_ns < $slo)
          AND (d_ns BETWEEN $slo AND $hi OR c_ns BETWEEN $slo AND $hi)""", q, devs, nullable=("i_ns", "d_ns", "c_ns"))
    dev_lane = lane_of("device", r["dev"], list(devs))
    start = q["lo"] // s["w0_ns"] * s["w0_ns"]
    i, d, c = r["i_ns"], r["d_ns"], r["c_ns"]
    has_i, has_c = r["valid_i_ns"], r["valid_c_ns"] & (c >= i)
    ins = has_i & (dev_lane >= 0) & (i >= start) & (i <= q["hi"])
    done = has_i & has_c & (dev_lane >= 0) & (c >= start) & (c <= q["hi"])
    events = {"lane": np.concatenate([dev_lane[ins], dev_lane[done]]), "t": np.concatenate([i[ins], c[done]]),
              "d": np.concatenate([np.ones(int(ins.sum()), np.int64), np.full(int(done.sum()), -1)])}
    phase = {}  # per track: the requests whose phase is a segment of the window shorter than a level-1 bucket
    for track, _, a, z in BLK_PHASES:
        x, y = r[a], r[z]
        phase[track] = (r[f"valid_{a}"] & r[f"valid_{z}"] & (x >= q["slo"]) & (x <= q["hi"]) & (y >= q["lo"])
                        & (y >= x) & (y - x < q["lo"] - q["slo"]))
    parts = []
    for lane in (dev_lane, lane_of("process", r["pid"])):
        for track, state, a, z in BLK_PHASES:
            m = phase[track] & (lane >= 0)
            parts.append({"lane": lane[m], "track": np.full(int(m.sum()), track), "s": r[a][m], "e": r[z][m],
                          "state": np.full(int(m.sum()), names.setdefault(state, len(names))), "line": r["line"][m]})
    return {c: np.concatenate([x[c] for x in parts]) for c in SEG_COLS}, events


def _lane_scores(rd: dict, s: dict, names: dict[str, int]) -> dict[int, dict]:
    """Per lane of the source: what it holds in the window, from a level of at most RANK_BUCKETS buckets over it
    plus the segments at least one of its buckets long (clipped to the window)."""
    q, kr, w0 = rd["q"], rd["kr"], s["w0_ns"]
    long = _take(rd["long"], rd["long"]["lvl"] > kr)
    parts = [rd["rank"], {"lane": long["lane"], "track": long["track"], "state": long["state"],
                          "tot": np.minimum(long["e"], q["hi"]) - np.maximum(long["s"], q["lo"]),
                          "n": np.ones(len(long["s"]), np.int64), "mx": long["e"] - long["s"]}]
    if kr == 0:  # the segments between a level-0 and a level-1 bucket long
        raw = _take(rd["raw"], rd["raw"]["e"] - rd["raw"]["s"] >= w0)
        parts.append({"lane": raw["lane"], "track": raw["track"], "state": raw["state"],
                      "tot": np.minimum(raw["e"], q["hi"]) - np.maximum(raw["s"], q["lo"]),
                      "n": np.ones(len(raw["s"]), np.int64), "mx": raw["e"] - raw["s"]})
    lane, track, state, tot, n, mx = (np.concatenate([x[c] for x in parts]) for c in
                                      ("lane", "track", "state", "tot", "n", "mx"))
    running = names.get("running", -1)
    size = int(lane.max()) + 1 if len(lane) else 0

    def per_lane(mask: np.ndarray, values: np.ndarray) -> list[int]:
        out = np.zeros(size, np.int64)
        np.add.at(out, lane[mask], values[mask])
        return out.tolist()

    blocked, run, calls = per_lane(track == 1, tot), per_lane((track == 0) & (state == running), tot), per_lane(track == 2, n)
    queued, requests = per_lane(track == 3, n), per_lane(track == 4, n)
    blk = (track == 3) | (track == 4)
    worst = np.full(size, -1, np.int64)
    np.maximum.at(worst, lane[blk], mx[blk])
    worst = worst.tolist()
    return {ln: {"blocked": blocked[ln], "running": run[ln], "calls": calls[ln], "queued": queued[ln],
                 "requests": requests[ln], "worst": worst[ln] if worst[ln] >= 0 else None}
            for ln in _distinct(lane).tolist()}


def _registry(con, analysis_id: str) -> dict[int, dict[int, tuple]]:
    """Per source, its lanes: lane -> (kind, pid, dev, comm); kept per analysis (memo.py: rows that never change)."""
    def build():
        reg: dict[int, dict[int, tuple]] = defaultdict(dict)
        for sid, lane, kind, pid, dev, comm in con.execute(
                "SELECT l.source_id, l.lane, l.kind, l.pid, l.dev, l.comm FROM tl_lanes l"
                " JOIN sources s ON s.id = l.source_id WHERE s.analysis_id = ?", [analysis_id]).fetchall():
            reg[sid][lane] = (kind, pid, dev, comm)
        return dict(reg)
    return memo.shared((analysis_id, "timeline-lanes"), build, lambda reg: 200 * sum(len(x) for x in reg.values()))


def _candidate_lanes(p: dict, sources: list[dict], chains: list[dict], registry: dict, reads: dict,
                     names: dict[str, int]) -> list[dict]:
    """Every lane with something in the window, most telling first: the tasks of the chains (by chain rank), the
    block devices, the offcputime windows, then tasks by time blocked, by time running, by calls, and processes
    by their slowest phase."""
    lanes: list[dict] = []
    seen = set()

    def add(lane: dict) -> None:
        if lane["id"] not in seen:
            seen.add(lane["id"])
            lanes.append(lane)

    registry = {sid: reg for sid, reg in registry.items() if sid in reads}
    scores = {s["id"]: _lane_scores(reads[s["id"]], s, names) for s in sources if s["id"] in reads}
    task_lane = {(sid, kind, pid if kind != "device" else dev): lane for sid, reg in registry.items()
                 for lane, (kind, pid, dev, comm) in reg.items()}
    def lane_dict(sid, kind, pid, dev, label, group, why):
        return {"id": _lane_id(kind, sid, dev if kind == "device" else pid), "kind": kind, "source_id": sid,
                "label": label, "group": group, "pid": pid, "dev": dev, "why": why,
                "_lane": task_lane.get((sid, kind, dev if kind == "device" else pid))}

    for link in chains:
        if link["pid"] is not None:
            add(lane_dict(link["source_id"], "task", link["pid"], None, f"{link['comm'] or '?'} ({link['pid']})", None,
                          f"chain #{link['chain_id']}"))
    ranked = {name: [] for name in ("device", "blocked", "running", "calls", "process")}
    for s in sources:
        if s["format"] == "offcputime":
            start = s["t_min_ns"] + s["clock_offset_ns"]
            end = s["t_max_ns"] + s["clock_offset_ns"] if s["t_max_ns"] is not None else None
            ranked.setdefault("window", []).append(
                ((), {"id": f"window:{s['id']}", "kind": "window", "source_id": s["id"], "label": "capture window",
                      "group": s["filename"], "pid": None, "dev": None, "why": "offcputime dump",
                      "band": {"t0_ns": start, "t1_ns": end}}))
        if s["id"] not in scores:
            continue
        for lane, sc in scores[s["id"]].items():
            kind, pid, dev, comm = registry[s["id"]][lane]
            if kind == "device":
                n = sc["requests"] or sc["queued"]  # requests serviced, else those queued
                ranked["device"].append(((-n, s["id"], dev), lane_dict(
                    s["id"], kind, None, dev, f"{dev} (device)", s["filename"], f"≈{n} requests in the window")))
            elif kind == "process":
                worst = sc["worst"]
                ranked["process"].append(((-(worst or 0), s["id"], pid), lane_dict(
                    s["id"], kind, pid, None, f"{comm} ({pid})", s["filename"],
                    f"slowest I→D or D→C phase ≈{worst} ns" if worst is not None else "requests in the window")))
            else:
                label = f"{comm or '?'} ({pid})"
                for key in ("blocked", "running", "calls"):
                    if sc[key] > 0:
                        why = {"blocked": f"blocked ≈{sc['blocked']} ns in the window",
                               "running": f"running ≈{sc['running']} ns in the window",
                               "calls": f"≈{sc['calls']} top-level calls in the window"}[key]
                        ranked[key].append(((-sc[key], s["id"], pid), lane_dict(s["id"], kind, pid, None, label, None,
                                                                                why)))
    for key in ("device", "window", "blocked", "running", "calls", "process"):
        for _, lane in sorted(ranked.get(key, []), key=lambda x: x[0]):
            add(lane)
    return lanes




def _lane_inputs(con, analysis_id: str, s: dict, p: dict, lanes: list[dict], rd: dict,
                 names: dict[str, int]) -> dict:
    """What the lanes of one source are drawn from, as columns whose `lane` is the lane's `_index` in the response:
    the merged buckets at the lanes' bucket (`px`: lane, track, state, px, tot, n, mx, line; the depth-0 call track
    of tl_bins only ranks lanes: calls are drawn from the calls), per lane and track the `width_px` longest segments
    at least a bucket long (`segs`: lane, track, state, s, e, line, aligned; the other ones are merged too), the
    calls at least a pixel long (`calls`); and per lane its bucket (`bucket`) and requests in flight (`counter`,
    devices), set on the lanes. States are codes into `names`."""
    off, b, w0, k, q = s["clock_offset_ns"], p["b"], s["w0_ns"], rd["k"], rd["q"]
    bb = max(b, 0 if k < 0 else w0 * FAN ** k)  # the lanes' bucket
    last = -(-(p["t1"] - p["t0"]) // bb) - 1
    own = [c for c in lanes if c["_lane"] is not None]
    index = np.full(max([c["_lane"] for c in own], default=0) + 1, -1, np.int64)  # source lane -> response lane
    index[[c["_lane"] for c in own]] = [c["_index"] for c in own]

    def mine(cols: dict, mask: np.ndarray) -> dict:  # the rows of the lanes drawn, with their response lane
        mask = mask & (cols["lane"] < len(index))
        mask[mask] = index[cols["lane"][mask]] >= 0
        rows = cols if mask.all() else _take(cols, mask)
        return {**rows, "lane": index[rows["lane"]]}

    segs = mine(rd["long"], (rd["long"]["lvl"] > k) & (rd["long"]["track"] != 2))  # all at least a bucket long
    del segs["lvl"]
    if k < 0:  # narrower than a level-0 bucket per pixel: the raw segments (shorter than a level-1 bucket)
        raw = mine(rd["raw"], rd["raw"]["track"] != 2)
        segs = {c: np.concatenate([segs[c], raw[c]]) for c in SEG_COLS}
        bins = _columns(("lane", "track", "state", "t_at", "tot", "n", "mx", "line"))
    elif rd["none"]:
        bins = _columns(("lane", "track", "state", "t_at", "tot", "n", "mx", "line"))
    else:  # the segments shorter than a level-k bucket, from its bins
        bins = _bins(con, analysis_id, s, k, q, names)
        bins["t_at"] = bins.pop("bucket") * w0 * FAN ** k
        bins = mine(bins, bins["track"] != 2)
    # per lane and track the longest width_px of those at least a bucket long as they are (then by line); the
    # others merged per bucket, with the bins
    dur = segs["e"] - segs["s"]
    long = np.flatnonzero(dur >= bb)
    keep = np.zeros(len(dur), bool)
    keep[long] = _top([segs["lane"][long], segs["track"][long]], dur[long], segs["line"][long], p["width_px"])
    rest = np.flatnonzero(~keep)
    merged = {"lane": segs["lane"][rest], "track": segs["track"][rest], "state": segs["state"][rest],
              "t_at": np.maximum(segs["s"][rest], q["lo"]), "tot": dur[rest], "n": np.ones(len(rest), np.int64),
              "line": segs["line"][rest]}
    merged["mx"] = merged["tot"]
    if len(bins["lane"]):
        merged = {c: np.concatenate([bins[c], x]) for c, x in merged.items()}
    px = np.clip((merged["t_at"] + off - p["t0"]) // bb, 0, last)
    (lane, track, state, px), tot, n, mx, line = _group(
        [merged["lane"], merged["track"], merged["state"], px], merged["tot"], merged["n"], merged["mx"], merged["line"])
    kept = _take(segs, keep)
    kept["s"], kept["e"] = kept["s"] + off, kept["e"] + off
    calls = _columns(CALL_COLS)
    if not rd["none"]:
        calls = _calls(con, analysis_id, s, p, rd, [c for c in lanes if c["kind"] == "task"], names)
        devs = [c for c in own if c["kind"] == "device"]
        counters = _inflight(con, analysis_id, s, p, rd, devs)
        for c in devs:
            c["counter"] = counters[c["id"]]
    for c in lanes:
        c["bucket_ns"] = bb
    return {"px": {"lane": lane, "track": track, "state": state, "px": px, "tot": tot, "n": n, "mx": mx, "line": line},
            "segs": kept, "calls": calls}


CALL_COLS = ("lane", "func", "depth", "s", "e", "dur", "line")


def _calls(con, analysis_id: str, s: dict, p: dict, rd: dict, tasks: list[dict],
           names: dict[str, int]) -> dict[str, np.ndarray]:
    """The task lanes' calls (depth <= MAX_CALL_DEPTH) at least a pixel long overlapping the window, per lane the
    MAX_CALLS longest (then by line), as columns: lane (the response's index), func (a code into `names`), depth,
    s, e (aligned), dur, line. From tl_calls (those at least w0_ns long, kept per analysis: memo.py), and below a
    level-0 bucket per pixel the shorter ones from fg_calls too (starting at most w0_ns before the window: a range)."""
    if not tasks:
        return _columns(CALL_COLS)
    q, off = rd["q"], s["clock_offset_ns"]
    pids = [c["pid"] for c in tasks]
    kept, funcs = _long_calls(con, analysis_id, s["id"])
    rows = _take(kept, np.isin(kept["pid"], pids) & (kept["dur"] >= p["b"]) & (kept["s"] <= q["hi"])
                 & (kept["e"] >= q["lo"]))
    rows["func"] = _recode(rows["func"], funcs, names)
    if rd["k"] < 0:
        short = _fetch(con, f"""
            SELECT pid, coalesce(func, '?') AS func, depth, entry_ns AS s, entry_ns + duration_ns AS e,
                   duration_ns AS dur, line FROM fg_calls
            WHERE source_id = $sid AND list_contains($pids, pid) AND depth BETWEEN 0 AND {MAX_CALL_DEPTH}
              AND entry_ns BETWEEN $lo - $w0 AND $hi AND duration_ns >= $cmin AND duration_ns < $w0
              AND entry_ns + duration_ns >= $lo""", {**q, "pids": pids, "cmin": p["b"], "w0": s["w0_ns"]}, names)
        rows = {c: np.concatenate([rows[c], short[c]]) for c in rows}
    rows = _take(rows, _top([rows["pid"]], rows["dur"], rows["line"], MAX_CALLS))
    rows["s"], rows["e"] = rows["s"] + off, rows["e"] + off
    by_pid = sorted((c["pid"], c["_index"]) for c in tasks)
    rows["lane"] = np.array([i for _, i in by_pid], np.int64)[np.searchsorted([x for x, _ in by_pid], rows.pop("pid"))]
    return rows


def _long_calls(con, analysis_id: str, sid: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """tl_calls of the source as columns (func: codes into the names returned with them), kept per analysis
    (memo.py)."""
    def build():
        funcs: dict[str, int] = {}
        cols = _fetch(con, "SELECT pid, coalesce(func, '?') AS func, depth, entry_ns AS s, end_ns AS e,"
                           " duration_ns AS dur, line FROM tl_calls WHERE source_id = $sid AND pid IS NOT NULL",
                      {"sid": sid}, funcs)
        return cols, np.array(list(funcs) or [""], object)
    return memo.shared((analysis_id, "timeline-calls", sid), build,
                       lambda x: sum(v.nbytes for v in x[0].values()) + 64 * len(x[1]))


def _recode(codes: np.ndarray, funcs: np.ndarray, names: dict[str, int]) -> np.ndarray:
    """Codes into `funcs` made codes into `names`."""
    used = _distinct(codes)
    return np.array([names.setdefault(f, len(names)) for f in funcs[used].tolist()], np.int64)[
        np.searchsorted(used, codes)]


def _top(keys: list[np.ndarray], dur: np.ndarray, line: np.ndarray, m: int) -> np.ndarray:
    """Which rows are among the m longest of their group (rows with the same keys), ties by line (the first)."""
    keep = np.ones(len(dur), bool)
    if len(dur) <= m:
        return keep
    inv = _dense(_key(keys))
    for g in np.flatnonzero(np.bincount(inv) > m).tolist():  # few: per lane and track
        idx = np.flatnonzero(inv == g)
        d = dur[idx]
        cut = np.partition(d, len(d) - m)[len(d) - m]  # the m-th longest
        ties = idx[d == cut]
        keep[idx[d < cut]] = False
        keep[ties[np.argsort(line[ties], kind="stable")[m - int((d > cut).sum()):]]] = False
    return keep


def _depth(con, analysis_id: str, sid: int) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per device lane of the source, tl_depth's (bucket, in flight) in bucket order; kept per analysis (memo.py)."""
    def build():
        rows = con.execute("SELECT lane, bucket, inflight FROM tl_depth WHERE source_id = ? ORDER BY lane, bucket",
                           [sid]).fetchnumpy()
        lane, bucket, inflight = (np.asarray(rows[c], np.int64) for c in ("lane", "bucket", "inflight"))
        cuts = np.flatnonzero(np.diff(lane)) + 1
        return {int(ln[0]): (bk, fl) for ln, bk, fl in zip(*(np.split(x, cuts) for x in (lane, bucket, inflight)))
                if len(ln)}
    return memo.shared((analysis_id, "timeline-depth", sid), build,
                       lambda d: sum(b.nbytes + v.nbytes for b, v in d.values()))


def _inflight(con, analysis_id: str, s: dict, p: dict, rd: dict, devs: list[dict]) -> dict[str, dict]:
    """Per device lane, the requests in flight at the end of each pixel (first point: at t0): from tl_depth at the
    end of the last level-0 bucket ending by then (within w0 <= a pixel), and below a level-0 bucket per pixel exact,
    from the level-0 bucket before the window's then each insert and completion (`events` of _raw)."""
    w0, off, b, t0, t1, q = s["w0_ns"], s["clock_offset_ns"], p["b"], p["t0"], p["t1"], rd["q"]
    n_px = -(-(t1 - t0) // b)
    ends = np.minimum(t1, t0 + (np.arange(n_px, dtype=np.int64) + 1) * b)  # each pixel's end, aligned
    depth = _depth(con, analysis_id, s["id"]) if devs else {}
    start_bucket = q["lo"] // w0
    out = {}
    for c in devs:
        buckets, inflight = depth.get(c["_lane"], (np.zeros(0, np.int64), np.zeros(0, np.int64)))

        def at_bucket_end(x: np.ndarray) -> np.ndarray:  # in flight at the end of each level-0 bucket
            i = np.searchsorted(buckets, x, side="right") - 1
            return np.where(i >= 0, inflight[np.maximum(i, 0)], 0) if len(buckets) else np.zeros(len(x), np.int64)

        base = int(at_bucket_end(np.array([start_bucket - 1]))[0])
        if rd["k"] < 0:  # exact: from the level-0 bucket before the window's, then each event
            mine = rd["events"]["lane"] == c["_lane"]
            t, d = rd["events"]["t"][mine], rd["events"]["d"][mine]
            order = np.argsort(t, kind="stable")
            t, cum = t[order], base + np.concatenate([[0], np.cumsum(d[order])])
            at_t0 = int(cum[np.searchsorted(t, q["lo"], side="left")])
            values = cum[np.searchsorted(t, ends - off, side="left")]
        else:  # at the end of the last level-0 bucket that ends at or before each pixel's end
            at_t0 = base
            values = at_bucket_end((ends - off) // w0 - 1)
        keep = np.flatnonzero(np.diff(np.concatenate([[at_t0], values])) != 0)
        pts = [[t0, at_t0], *([int(x), int(v)] for x, v in zip(ends[keep].tolist(), values[keep].tolist()))]
        out[c["id"]] = {"name": "in flight", "unit": "requests", "points": pts, "max": max(v for _, v in pts)}
    return out


# ---- items: runs of merged buckets and long segments, within the response's budget --------------------------------

def _distinct(x: np.ndarray) -> np.ndarray:
    """The distinct values, sorted (np.unique, by a sort)."""
    x = np.sort(x)
    return x[np.concatenate([[True], x[1:] != x[:-1]])] if len(x) else x


def _dense(key: np.ndarray) -> np.ndarray:
    """The keys (>= 0) as they are when they span few more values than there are rows, else their ranks: indexes
    of arrays of a size about the rows'."""
    return _ranks(key) if len(key) and int(key.max()) >= 4 * len(key) + 4096 else key


def _ranks(x: np.ndarray) -> np.ndarray:
    """Each value's rank among the distinct values (np.unique's inverse, by a sort)."""
    order = np.argsort(x)
    ranks = np.empty(len(x), np.int64)
    ranks[order] = np.cumsum(np.concatenate([[False], x[order][1:] != x[order][:-1]]))
    return ranks


def _key(keys: list[np.ndarray]) -> np.ndarray:
    """One int64 per row ordered as the rows' keys (each >= 0) are, lexicographically."""
    key = np.zeros(len(keys[0]), np.int64)
    for k in keys:
        size = int(k.max()) + 1 if len(k) else 1
        if len(key) and (int(key.max()) + 1) * size >= 1 << 62:  # too wide: the keys so far ranked first
            key = _ranks(key)
        key = key * size + k
    return key


def _group(keys: list[np.ndarray], tot, n, mx, line):
    """Rows grouped by keys (each >= 0): (keys of each group, sum tot, sum n, max mx, the line of the max: the
    first on ties), groups in the keys' order. Summed into arrays indexed by the key (no sort), or by its rank
    when the keys span many more values than there are rows."""
    key = _dense(_key(keys))
    size = int(key.max()) + 1 if len(key) else 0
    first = np.full(size, len(key))
    np.minimum.at(first, key, np.arange(len(key)))
    at = first < len(key)
    sums = [np.zeros(size, np.int64) for _ in range(2)]
    np.add.at(sums[0], key, tot)
    np.add.at(sums[1], key, n)
    top = np.full(size, np.iinfo(np.int64).min)
    np.maximum.at(top, key, mx)
    is_top = mx == top[key]
    top_line = np.full(size, np.iinfo(np.int64).max)
    np.minimum.at(top_line, key[is_top], line[is_top])
    rows = first[at]
    return [k[rows] for k in keys], sums[0][at], sums[1][at], top[at], top_line[at]


def _runs(starts: np.ndarray, keys: list[np.ndarray], tot, n, mx, line):
    """As _group, for rows whose groups are runs beginning at `starts`."""
    if not len(starts):
        return [k[:0] for k in keys], tot[:0], n[:0], mx[:0], line[:0]
    top = np.maximum.reduceat(mx, starts)
    at_top = np.where(mx == np.repeat(top, np.diff(np.append(starts, len(mx)))), line, np.iinfo(np.int64).max)
    return ([k[starts] for k in keys], np.add.reduceat(tot, starts), np.add.reduceat(n, starts), top,
            np.minimum.reduceat(at_top, starts))


def _items(inp: dict, ls: list[int], bucket: np.ndarray, f: np.ndarray, p: dict, names: list[str]) -> dict[int, dict]:
    """The items of the lanes ls (indexes of the response's lanes) with buckets f times each lane's `bucket` (arrays
    over the response's lanes): per lane its columns, `states` the names its state codes index (inp's states and
    call functions are codes into `names`)."""
    t0, t1 = p["t0"], p["t1"]
    want = np.zeros(len(bucket), bool)
    want[ls] = True
    bb = bucket * f
    px, sg, calls = (_take(inp[k], want[inp[k]["lane"]]) for k in ("px", "segs", "calls"))
    calls = _take(calls, calls["dur"] >= bb[calls["lane"]])
    # each lane's own state codes: the rank of the name among those of the lane, by name
    size = len(names) + 1
    by_name = np.argsort(np.array(names, dtype=object), kind="stable")
    rank = np.empty(len(names), np.int64)
    rank[by_name] = np.arange(len(names))
    used = _distinct(np.concatenate([x["lane"] * size + rank[x[c]] for x, c in ((px, "state"), (sg, "state"),
                                                                               (calls, "func"))]))
    first = np.searchsorted(used, np.arange(len(bucket) + 1) * size)

    def local(lane: np.ndarray, code: np.ndarray) -> np.ndarray:
        return np.searchsorted(used, lane * size + rank[code]) - first[lane]

    # px holds one row per lane, track, state and lane bucket, in that order (_lane_inputs): merged again only in
    # lanes with wider buckets (f > 1), a row per run of rows falling in one wider bucket, then with their segments
    # now shorter than a bucket
    dur = sg["e"] - sg["s"]
    short = dur < bb[sg["lane"]]
    again = f[px["lane"]] > 1
    lane, track, state = px["lane"][again], px["track"][again], px["state"][again]
    pos = px["px"][again] // f[lane]
    change = np.ones(len(lane), bool)
    change[1:] = (lane[1:] != lane[:-1]) | (track[1:] != track[:-1]) | (state[1:] != state[:-1]) | (pos[1:] != pos[:-1])
    (gl, gt, gp, gs), gtot, gn, gmx, gln = _runs(
        np.flatnonzero(change), [lane, track, pos, state], px["tot"][again], px["n"][again], px["mx"][again],
        px["line"][again])
    if short.any():
        (gl, gt, gp, gs), gtot, gn, gmx, gln = _group(
            [np.concatenate([gl, sg["lane"][short]]), np.concatenate([gt, sg["track"][short]]),
             np.concatenate([gp, (np.maximum(sg["s"][short], t0) - t0) // bb[sg["lane"][short]]]),
             np.concatenate([gs, sg["state"][short]])], np.concatenate([gtot, dur[short]]),
            np.concatenate([gn, np.ones(int(short.sum()), np.int64)]), np.concatenate([gmx, dur[short]]),
            np.concatenate([gln, sg["line"][short]]))
    same = ~again
    gl, gt, gp, gs, gtot, gn, gmx, gln = (np.concatenate([x, px[c][same]]) for x, c in (
        (gl, "lane"), (gt, "track"), (gp, "px"), (gs, "state"), (gtot, "tot"), (gn, "n"), (gmx, "mx"), (gln, "line")))
    gs = local(gl, gs)
    # per track and pixel: the dominant state (tracks of tasks: the most time in the pixel, then the last name),
    # else every state on its own
    dom = np.asarray(DOMINANT)[gt]
    dl, dt, dp, ds, dtot = gl[dom], gt[dom], gp[dom], gs[dom], gtot[dom]
    _, _, pn, pmx, pln = _group([dl, dt, dp], dtot, gn[dom], gmx[dom], gln[dom])  # over all states of the pixel
    pixel = _dense(_key([dl, dt, dp]))  # as _group numbers the pixels: its groups in the order of these
    most = np.full(int(pixel.max()) + 1 if len(pixel) else 0, -1)
    np.maximum.at(most, pixel, dtot)
    top = dtot == most[pixel]
    last = np.full(len(most), -1)
    np.maximum.at(last, pixel[top], ds[top])
    pick = np.full(len(most), -1)
    pick[pixel[top & (ds == last[pixel])]] = np.flatnonzero(top & (ds == last[pixel]))
    pick = pick[pick >= 0]
    kl, kt, kp, ks, kn, kmx, kln = (np.concatenate(x) for x in zip(
        (dl[pick], dt[pick], dp[pick], ds[pick], pn, pmx, pln),
        (gl[~dom], gt[~dom], gp[~dom], gs[~dom], gn[~dom], gmx[~dom], gln[~dom])))
    order = np.argsort(_key([kl, kt, ks, kp]))
    kl, kt, kp, ks, kn, kmx, kln = (x[order] for x in (kl, kt, kp, ks, kn, kmx, kln))
    run = np.ones(len(kt), bool)  # runs: consecutive pixels of one lane, track and state
    run[1:] = (kl[1:] != kl[:-1]) | (kt[1:] != kt[:-1]) | (ks[1:] != ks[:-1]) | (kp[1:] != kp[:-1] + 1)
    starts = np.flatnonzero(run)
    _, _, rn, rmx, rln = _runs(starts, [], kn, kn, kmx, kln)
    ends = np.append(starts[1:], len(kt))[:len(starts)] - 1
    lbb = bb[kl[starts]]
    long = ~short  # segments at least a bucket long, as they are (clipped to the window)
    cols = [np.concatenate(x) for x in zip(
        (kl[starts], kt[starts], ks[starts], kp[starts] * lbb, np.minimum(t1 - t0, (kp[ends] + 1) * lbb), rn, rmx, rln,
         np.full(len(starts), -1)),
        (sg["lane"][long], sg["track"][long], local(sg["lane"][long], sg["state"][long]),
         np.maximum(sg["s"][long], t0) - t0, np.minimum(sg["e"][long], t1) - t0, np.ones(int(long.sum()), np.int64),
         dur[long], sg["line"][long], np.full(int(long.sum()), -1)),
        (calls["lane"], np.full(len(calls["dur"]), 2), local(calls["lane"], calls["func"]),
         np.maximum(calls["s"], t0) - t0, np.minimum(calls["e"], t1) - t0, np.ones(len(calls["dur"]), np.int64),
         calls["dur"], calls["line"], calls["depth"]))]
    order = np.argsort(_key([cols[0], cols[1], cols[8] + 1, cols[3], cols[2]]), kind="stable")  # per track (calls
    lane, track, state, i0, i1, n, mx, line, depth = (c[order] for c in cols)  # by depth) in time order
    bounds = np.searchsorted(lane, np.arange(len(bucket) + 1))
    out = {}
    for ln in ls:
        a, z = bounds[ln], bounds[ln + 1]
        out[ln] = {"states": [names[by_name[x % size]] for x in used[first[ln]:first[ln + 1]].tolist()],
                   "track": track[a:z].tolist(), "state": state[a:z].tolist(), "t0": i0[a:z].tolist(),
                   "t1": i1[a:z].tolist(), "n": n[a:z].tolist(), "max": mx[a:z].tolist(), "line": line[a:z].tolist(),
                   "depth": [None if d < 0 else d for d in depth[a:z].tolist()]}
    return out


def _counts(inp: dict, bucket: np.ndarray, f: np.ndarray) -> np.ndarray:
    """About how many items _items makes per lane (at most one merged item per track and bucket, plus the segments
    and calls at least a bucket long), over the response's lanes: to choose the lanes' first coarsening without
    building it."""
    bb = bucket * f
    px, sg, calls = inp["px"], inp["segs"], inp["calls"]
    pos = px["px"] // f[px["lane"]]
    cells = len(TRACKS) * (int(pos.max()) + 1 if len(pos) else 1)
    seen = np.zeros(len(bucket) * cells, bool)  # per lane, track and bucket: merged items there
    seen[px["lane"] * cells + px["track"] * (cells // len(TRACKS)) + pos] = True
    return (seen.reshape(len(bucket), cells).sum(axis=1)
            + np.bincount(sg["lane"][sg["e"] - sg["s"] >= bb[sg["lane"]]], minlength=len(bucket))
            + np.bincount(calls["lane"][calls["dur"] >= bb[calls["lane"]]], minlength=len(bucket)))


def _fit(chosen: list[dict], inp: dict | None, p: dict, names: list[str]) -> None:
    """Each lane's items (`segs`) and bucket (`bucket_ns`), doubling the buckets of the densest lanes until the
    response holds at most MAX_ITEMS: first from estimates (each lane within its share), then from the items built."""
    empty = {"states": [], **{k: [] for k in ("track", "state", "t0", "t1", "n", "max", "line", "depth")}}
    built = [i for i, c in enumerate(chosen) if c["bucket_ns"] is not None]
    for c in chosen:
        c["segs"] = empty
    if not built:
        return
    span = p["t1"] - p["t0"]
    bucket = np.array([c["bucket_ns"] or 0 for c in chosen], np.int64)
    f = np.ones(len(chosen), np.int64)
    share = MAX_ITEMS // len(built)
    est = _counts(inp, bucket, f)
    if est.sum() > MAX_ITEMS:
        grow = np.flatnonzero((est > share) & (bucket * f < span))
        while len(grow):
            f[grow] *= 2
            est[grow] = _counts(inp, bucket, f)[grow]
            grow = grow[(est[grow] > share) & (bucket[grow] * f[grow] < span)]
    for i, items in _items(inp, built, bucket, f, p, names).items():
        chosen[i]["segs"] = items
    total = sum(len(chosen[i]["segs"]["t0"]) for i in built)
    while total > MAX_ITEMS:
        i = max(built, key=lambda i: (len(chosen[i]["segs"]["t0"]), -f[i]))
        if bucket[i] * f[i] >= span:
            break
        before = len(chosen[i]["segs"]["t0"])
        f[i] *= 2
        chosen[i]["segs"] = _items(inp, [i], bucket, f, p, names)[i]
        total += len(chosen[i]["segs"]["t0"]) - before
    for i in built:
        chosen[i]["bucket_ns"] = int(bucket[i] * f[i])


def _arrows(chains: list[dict], lane_ids: set) -> list[dict]:
    by_chain: dict[int, list[dict]] = defaultdict(list)
    for link in chains:
        by_chain[link["chain_id"]].append(link)
    arrows = []
    for cid, links in by_chain.items():
        for waiter, nxt in zip(links, links[1:] + [None]):
            to = f"task:{waiter['source_id']}:{waiter['pid']}"
            if waiter["relation"] == "io_completion" and waiter["req_line"] is not None:
                frm = f"dev:{waiter['req_source_id']}:{waiter['req_dev']}"
                arrows.append({"chain_id": cid, "relation": "io_completion", "from_lane": frm, "to_lane": to,
                               "from_ns": waiter["req_c_ns"], "to_ns": waiter["end_ns"],
                               "request": {"source_id": waiter["req_source_id"], "line": waiter["req_line"]}})
            if nxt is None or waiter["relation"] is None or nxt["pid"] is None:
                continue
            frm = f"task:{nxt['source_id']}:{nxt['pid']}"
            arrows.append({"chain_id": cid, "relation": waiter["relation"], "from_lane": frm, "to_lane": to,
                           "from_ns": waiter["end_ns"], "to_ns": waiter["end_ns"], "request": None})
    return [a for a in arrows if a["from_lane"] in lane_ids and a["to_lane"] in lane_ids]


def _marks(con, analysis_id: str, sources: list[dict], p: dict) -> list[dict]:
    """The first MAX_MARKS print markers in the window, from each ftrace source in its own time: the times of its
    markers are kept per analysis (memo.py), so that the query reads a range holding those only."""
    rows = []
    for s in sources:
        if s["format"] != "ftrace":
            continue
        times = memo.shared((analysis_id, "timeline-marks", s["id"]), lambda: np.asarray(con.execute(
            "SELECT t_ns FROM trace_events WHERE source_id = ? AND event = 'print' AND t_ns IS NOT NULL ORDER BY t_ns",
            [s["id"]]).fetchnumpy()["t_ns"], np.int64), lambda x: x.nbytes)
        off = s["clock_offset_ns"]
        a, z = int(np.searchsorted(times, p["t0"] - off, "left")), int(np.searchsorted(times, p["t1"] - off, "right"))
        if z > a:
            rows += con.execute(
                "SELECT source_id, line, t_ns + ? AS t_ns, pid, comm, text FROM trace_events WHERE source_id = ?"
                " AND t_ns BETWEEN ? AND ? AND event = 'print' ORDER BY t_ns, line LIMIT ?",
                [off, s["id"], int(times[a]), int(times[min(z, a + MAX_MARKS) - 1]), MAX_MARKS]).fetchall()
    rows.sort(key=lambda r: (r[2], r[1]))
    return [dict(zip(("source_id", "line", "t_ns", "pid", "comm", "text"), r)) for r in rows[:MAX_MARKS]]
