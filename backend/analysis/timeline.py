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
picks the widest level whose bucket fits in a pixel, re-buckets it to pixels in SQL, and adds the few
segments at least one level bucket long from the raw tables (a range scan of the window). Windows narrower
than a level-0 bucket per pixel read the raw tables: they hold a small part of the trace. Lanes are ranked
from a coarser level (a few hundred buckets over the window), so the figures in a lane's `why` are close
to, not exactly, what the window holds (said with ≈).

All times are on the analysis timeline (the source's own time + its clock_offset_ns).
"""
from __future__ import annotations

import re
from collections import defaultdict

import numpy as np

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


def derive(con, source_id: int, report) -> None:
    """Slices of each task's scheduler state, from its sched_switch and sched_wakeup lines (one SQL pass).

    After a switch-in the task runs; after a switch-out it is runnable (prev_state R, R+) or blocked (any sleep)
    until its first wake-up, then runnable until its next switch-in; an exiting task (X, Z, x) has no slice."""
    con.execute("""
        INSERT INTO task_slices
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
        ) ORDER BY 5  -- by start: a window's reads skip the row groups outside it
        """, {"sid": source_id})


def _q(con, sql: str, params: dict):
    """Runs sql with the parameters it names (DuckDB refuses unused named parameters)."""
    used = set(re.findall(r"\$(\w+)", sql))
    return con.execute(sql, {k: v for k, v in params.items() if k in used})


# ---- segments: every lane's (lane, track, state, s, e, line), own clock ------------------------------------------

_TASK_SEGS = """
    SELECT l.lane, 0 AS track, x.state, x.start_ns AS s, x.end_ns AS e, x.line
    FROM task_slices x JOIN tl_lanes l ON l.source_id = x.source_id AND l.kind = 'task' AND l.pid = x.pid
    WHERE x.source_id = $sid{w_x}
    UNION ALL
    SELECT l.lane, 1, coalesce(x.lock_key, x.lock, '?'), x.start_ns, x.end_ns, x.line
    FROM waits x JOIN tl_lanes l ON l.source_id = x.source_id AND l.kind = 'task' AND l.pid = x.pid
    WHERE x.source_id = $sid AND x.end_ns >= x.start_ns{w_x}
    UNION ALL
    SELECT l.lane, 2, 'call', x.entry_ns, x.entry_ns + x.duration_ns, x.line
    FROM fg_calls x JOIN tl_lanes l ON l.source_id = x.source_id AND l.kind = 'task' AND l.pid = x.pid
    WHERE x.source_id = $sid AND x.depth = 0 AND x.entry_ns IS NOT NULL AND x.duration_ns >= 0{w_c}
"""
_BLK_PHASE = """
    SELECT l.lane, {track} AS track, '{state}' AS state, r.{s} AS s, r.{e} AS e, r.line
    FROM blk_requests r JOIN tl_lanes l ON l.source_id = r.source_id AND l.kind = '{kind}' AND l.{key} = r.{key}
    WHERE r.source_id = $sid AND r.{s} IS NOT NULL AND r.{e} >= r.{s}{window}"""


def _blk_segs(window: bool) -> str:
    """Each request's I→D (queued) and D→C (service), in its device's lane and in its process' lane."""
    return " UNION ALL ".join(
        _BLK_PHASE.format(track=track, state=state, s=a, e=z, kind=kind, key=key,
                          window=f" AND r.{a} BETWEEN $slo AND $hi AND r.{z} >= $lo" if window else "")
        for kind, key in (("device", "dev"), ("process", "pid"))
        for track, state, a, z in ((3, "queued", "i_ns", "d_ns"), (4, "service", "d_ns", "c_ns")))


def _segs(fmt: str, window: bool) -> str:
    """The source's segments; with `window`, those overlapping [$lo, $hi] (own clock) that start at $slo or later
    (a range on one column, which skips the row groups outside it): every segment shorter than $lo - $slo."""
    if fmt == "ftrace":
        return _TASK_SEGS.format(w_x=" AND x.start_ns BETWEEN $slo AND $hi AND x.end_ns >= $lo" if window else "",
                                 w_c=" AND x.entry_ns BETWEEN $slo AND $hi AND x.entry_ns + x.duration_ns >= $lo"
                                 if window else "")
    return _blk_segs(window)


# ---- summaries at ingest -------------------------------------------------------------------------------------------

def summarize(con, analysis_id: str) -> None:
    """The timeline's summaries of each ftrace and blkparse source (see the module docstring). Runs after the waits."""
    for sid, fmt, t_min, t_max in con.execute(
            "SELECT id, format, t_min_ns, t_max_ns FROM sources WHERE analysis_id = ? AND format IN ('ftrace', 'blkparse')"
            " AND t_min_ns IS NOT NULL AND t_max_ns IS NOT NULL ORDER BY id", [analysis_id]).fetchall():
        span = max(1, t_max - t_min)
        w0 = max(MIN_W0, 1 << max(0, (-(-span // LEVEL0_BUCKETS) - 1).bit_length()))
        top = 0
        while span // (w0 * FAN ** (top + 1)) >= TOP_BUCKETS:
            top += 1
        p = {"sid": sid, "w0": w0}
        con.execute("INSERT INTO tl_meta VALUES ($sid, $w0, $top)", {**p, "top": top})
        if fmt == "ftrace":
            con.execute("""
                INSERT INTO tl_lanes
                SELECT $sid, (row_number() OVER (ORDER BY pid) - 1)::INTEGER, 'task', pid, NULL, arg_max(comm, t)
                FROM (SELECT pid, comm, start_ns AS t FROM task_slices WHERE source_id = $sid
                      UNION ALL SELECT pid, comm, start_ns FROM waits WHERE source_id = $sid
                      UNION ALL SELECT pid, comm, entry_ns FROM fg_calls
                      WHERE source_id = $sid AND depth = 0 AND pid IS NOT NULL AND pid <> 0 AND entry_ns IS NOT NULL)
                GROUP BY pid""", {"sid": sid})
            con.execute(f"""
                INSERT INTO tl_calls
                SELECT $sid, pid, depth, func, entry_ns, entry_ns + duration_ns, duration_ns, line FROM fg_calls
                WHERE source_id = $sid AND depth BETWEEN 0 AND {MAX_CALL_DEPTH} AND entry_ns IS NOT NULL
                  AND duration_ns >= $w0
                ORDER BY entry_ns""", p)
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
                WITH e AS (
                    SELECT l.lane, r.i_ns // $w0 AS bucket, 1 AS d FROM blk_requests r
                    JOIN tl_lanes l ON l.source_id = r.source_id AND l.kind = 'device' AND l.dev = r.dev
                    WHERE r.source_id = $sid AND r.i_ns IS NOT NULL
                    UNION ALL
                    SELECT l.lane, r.c_ns // $w0, -1 FROM blk_requests r
                    JOIN tl_lanes l ON l.source_id = r.source_id AND l.kind = 'device' AND l.dev = r.dev
                    WHERE r.source_id = $sid AND r.i_ns IS NOT NULL AND r.c_ns IS NOT NULL AND r.c_ns >= r.i_ns
                ), g AS (SELECT lane, bucket, sum(d) AS d FROM e GROUP BY lane, bucket)
                SELECT $sid, lane, bucket, sum(d) OVER (PARTITION BY lane ORDER BY bucket ROWS UNBOUNDED PRECEDING)
                FROM g ORDER BY lane, bucket""", p)
        # one pass over the segments: each goes to the first level whose bucket is longer than it, bucketed there;
        # then each level is the one below merged FAN buckets at a time, plus the segments that start there
        widths = [w0 * FAN ** k for k in range(top + 1)]
        level = "CASE " + " ".join(f"WHEN e - s < {w} THEN {k}" for k, w in enumerate(widths)) + " END"
        width = "CASE lvl " + " ".join(f"WHEN {k} THEN {w}" for k, w in enumerate(widths)) + " END"
        con.execute(f"""
            CREATE OR REPLACE TEMP TABLE _tl_fresh AS
            SELECT lvl, lane, track, state, s // ({width}) AS bucket, sum(e - s) AS tot, count(*) AS n, max(e - s) AS mx,
                   arg_max(line, e - s) AS line
            FROM (SELECT *, {level} AS lvl FROM ({_segs(fmt, window=False)}) WHERE e - s < {widths[-1]})
            GROUP BY ALL""", {"sid": sid})
        for k in range(top + 1):
            below = (f"SELECT lane, track, state, bucket // {FAN} AS bucket, tot, n, mx, line FROM tl_bins"
                     " WHERE source_id = $sid AND level = $k - 1 UNION ALL ") if k else ""
            con.execute(f"""
                INSERT INTO tl_bins
                SELECT $sid, $k, lane, track, state, bucket, sum(tot), sum(n), max(mx), arg_max(line, mx) FROM (
                    {below}SELECT lane, track, state, bucket, tot, n, mx, line FROM _tl_fresh WHERE lvl = $k
                ) GROUP BY lane, track, state, bucket
                ORDER BY lane, bucket  -- a read of some lanes over a window skips the other row groups
                """, {"sid": sid, "k": k})
        con.execute("DROP TABLE _tl_fresh")
        # the segments a read at level >= 1 draws as they are: by level, then start (a read skips the rest)
        level = "CASE " + " ".join(f"WHEN e - s < {w} THEN {k}" for k, w in enumerate(widths)) + f" ELSE {top + 1} END"
        con.execute(f"""
            INSERT INTO tl_long
            SELECT $sid, {level} AS lvl, lane, track, state, s, e, line FROM ({_segs(fmt, window=False)})
            WHERE e - s >= {w0 * FAN} ORDER BY lvl, s""", {"sid": sid})


# ---- reads -------------------------------------------------------------------------------------------------------

def _sources(con, analysis_id: str) -> list[dict]:
    cur = _q(con, "SELECT s.id, s.filename, s.format, s.clock_offset_ns, s.t_min_ns, s.t_max_ns, m.w0_ns, m.top_level"
             " FROM sources s LEFT JOIN tl_meta m ON m.source_id = s.id WHERE s.analysis_id = $aid ORDER BY s.id",
             {"aid": analysis_id})
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def span(con, analysis_id: str) -> tuple[int | None, int | None]:
    ss = [s for s in _sources(con, analysis_id) if s["t_min_ns"] is not None]
    lo = [s["t_min_ns"] + s["clock_offset_ns"] for s in ss]
    hi = [s["t_max_ns"] + s["clock_offset_ns"] for s in ss if s["t_max_ns"] is not None]
    return (min(lo) if lo else None, max(hi) if hi else None)


def timeline(con, analysis_id: str, t0: int | None, t1: int | None, width_px: int, lanes: list[str] | None,
             max_lanes: int) -> dict:
    sources = _sources(con, analysis_id)
    lo, hi = span(con, analysis_id)
    t0 = lo if t0 is None else t0
    t1 = hi if t1 is None else t1
    out = {"t0_ns": t0, "t1_ns": t1, "width_px": width_px, "bucket_ns": None, "lanes": [], "arrows": [],
           "total_lanes": 0, "max_items": MAX_ITEMS}
    if t0 is None or t1 is None or t1 <= t0:
        return out
    b = max(1, -(-(t1 - t0) // width_px))
    out["bucket_ns"] = b
    p = {"aid": analysis_id, "t0": t0, "t1": t1, "b": b, "width_px": width_px}
    chains = _chain_links(con, analysis_id, p) if any(s["format"] == "ftrace" for s in sources) else []
    candidates = _candidate_lanes(con, p, sources, chains)
    out["total_lanes"] = len(candidates)
    if lanes:
        wanted = set(lanes)
        chosen = [c for c in candidates if c["id"] in wanted]
    else:
        chosen = candidates[:max_lanes]
    for c in chosen:
        c.update(counter=None, bucket_ns=None)
    by_source = defaultdict(list)
    for c in chosen:
        if c["kind"] != "window":
            by_source[c["source_id"]].append(c)
    inputs = {}
    for s in sources:
        if by_source.get(s["id"]) and s["w0_ns"] is not None:
            inputs.update(_lane_inputs(con, s, p, by_source[s["id"]]))
    _fit(chosen, inputs, p)
    for c in chosen:
        c.pop("_lane", None)
    out["lanes"] = chosen
    out["arrows"] = _arrows(chains, {c["id"] for c in chosen})
    out["marks"] = _marks(con, p)
    return out


def _chain_links(con, analysis_id: str, p: dict) -> list[dict]:
    """Links of the top chains whose first wait overlaps the window, times aligned."""
    cur = _q(con, f"""
        SELECT l.chain_id, l.pos, l.source_id, l.pid, l.comm, l.relation, l.start_ns + s.clock_offset_ns AS start_ns,
               l.end_ns + s.clock_offset_ns AS end_ns, l.req_source_id, l.req_dev, l.req_line,
               l.req_c_ns + r.clock_offset_ns AS req_c_ns
        FROM chain_links l JOIN sources s ON s.id = l.source_id LEFT JOIN sources r ON r.id = l.req_source_id
        WHERE l.analysis_id = $aid AND l.chain_id IN (
            SELECT c.chain_id FROM chain_links c JOIN sources cs ON cs.id = c.source_id
            WHERE c.analysis_id = $aid AND c.pos = 0 AND c.end_ns + cs.clock_offset_ns >= $t0
              AND c.start_ns + cs.clock_offset_ns <= $t1
            ORDER BY c.chain_id LIMIT {MAX_CHAINS})
        ORDER BY l.chain_id, l.pos
        """, p)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


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


def _long(s: dict, k: int) -> str:
    """The source's segments overlapping [$lo, $hi] (own clock) at least a level-k bucket long ($thr ns when k < 0:
    a read finer than level 0): lane, track, state, s, e, line. Those at least a level-1 bucket long are in tl_long;
    below level 1, those shorter come from the raw tables (they start after $slo = $lo - the level-1 bucket)."""
    long = ("SELECT lane, track, state, s, e, line FROM tl_long WHERE source_id = $sid AND lvl > $k"
            " AND e >= $lo AND s <= $hi")
    if k >= 1:
        return long
    return (f"{long} UNION ALL SELECT * FROM ({_segs(s['format'], window=True)})"
            " WHERE e - s >= $thr AND e - s < $lo - $slo")


def _lane_scores(con, s: dict, p: dict) -> dict[int, dict]:
    """Per lane of the source: what it holds in the window, from a level of at most RANK_BUCKETS buckets over it
    plus the segments at least one of its buckets long (clipped to the window)."""
    q = _own(s, p)
    k = _level(s, p["t1"] - p["t0"], RANK_BUCKETS)
    w = s["w0_ns"] * FAN ** k
    q.update(k=k, w=w, thr=w)
    rows = _q(con, f"""
        SELECT lane, track, state, sum(tot)::BIGINT, sum(n)::BIGINT, max(mx) FROM (
            SELECT lane, track, state, tot, n, mx FROM tl_bins
            WHERE source_id = $sid AND level = $k AND bucket BETWEEN $lo // $w AND $hi // $w
            UNION ALL
            SELECT lane, track, state, least(e, $hi) - greatest(s, $lo), 1, e - s FROM ({_long(s, k)})
        ) GROUP BY ALL""", q).fetchall()
    scores: dict[int, dict] = defaultdict(
        lambda: {"blocked": 0, "running": 0, "calls": 0, "queued": 0, "requests": 0, "worst": None})
    for lane, track, state, tot, n, mx in rows:
        sc = scores[lane]
        if track == 1:
            sc["blocked"] += tot
        elif track == 0 and state == "running":
            sc["running"] += tot
        elif track == 2:
            sc["calls"] += n
        elif track == 3:
            sc["queued"] += n
        elif track == 4:
            sc["requests"] += n
        if track in (3, 4):
            sc["worst"] = mx if sc["worst"] is None else max(sc["worst"], mx)
    return scores


def _candidate_lanes(con, p: dict, sources: list[dict], chains: list[dict]) -> list[dict]:
    """Every lane with something in the window, most telling first: the tasks of the chains (by chain rank), the
    block devices, the offcputime windows, then tasks by time blocked, by time running, by calls, and processes
    by their slowest phase."""
    lanes: list[dict] = []
    seen = set()

    def add(lane: dict) -> None:
        if lane["id"] not in seen:
            seen.add(lane["id"])
            lanes.append(lane)

    registry: dict[int, dict[int, tuple]] = {}
    scores: dict[int, dict[int, dict]] = {}
    for s in sources:
        if s["w0_ns"] is not None:
            registry[s["id"]] = {r[0]: r[1:] for r in con.execute(
                "SELECT lane, kind, pid, dev, comm FROM tl_lanes WHERE source_id = ?", [s["id"]]).fetchall()}
            scores[s["id"]] = _lane_scores(con, s, p)
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


def _lane_inputs(con, s: dict, p: dict, lanes: list[dict]) -> dict[str, dict]:
    """What the lanes of one source are drawn from: per lane, its merged buckets at pixel resolution (`px`: track,
    state, px, tot, n, mx, line; the depth-0 call track of tl_bins only ranks lanes: calls are drawn from the calls) and the segments at least a level bucket long (`segs`: track, state, s, e, line,
    aligned), and for task lanes the calls at least a pixel long (`calls`)."""
    off, b = s["clock_offset_ns"], p["b"]
    q = {**_own(s, p), "b": b, "t0": p["t0"], "off": off, "last": -(-(p["t1"] - p["t0"]) // b) - 1}
    with_bins = [c["_lane"] for c in lanes if c["_lane"] is not None]
    q["lanes"] = with_bins
    raw = b < s["w0_ns"]  # narrower than a level-0 bucket per pixel: the window holds little of the trace
    k = -1
    if not raw:  # the finest level whose bucket is at least a pixel (1 to FAN pixels; wider than the top: pixels)
        k = 0
        while k < s["top_level"] and s["w0_ns"] * FAN ** k < b:
            k += 1
    w = 0 if raw else s["w0_ns"] * FAN ** k
    bb = max(b, w)  # the lane's bucket
    q.update(k=k, w=w, thr=bb, bb=bb, last=-(-(p["t1"] - p["t0"]) // bb) - 1, m=p["width_px"])
    if raw:  # segments shorter than a pixel, from the raw tables
        short = f"""SELECT lane, track, state, greatest(s, $lo) AS t_at, e - s AS tot, 1 AS n, e - s AS mx, line
                    FROM ({_segs(s['format'], window=True)})
                    WHERE list_contains($lanes, lane) AND track <> 2 AND e - s < $b"""
    else:  # segments shorter than a level-k bucket, from its bins
        short = """SELECT lane, track, state, bucket * $w AS t_at, tot, n, mx, line FROM tl_bins
                   WHERE source_id = $sid AND level = $k AND list_contains($lanes, lane) AND track <> 2
                     AND bucket BETWEEN $lo // $w AND $hi // $w"""
    # the longer ones: per lane and track the longest m at least a pixel long as they are, the others merged too
    cols = _q(con, f"""
        WITH lg AS MATERIALIZED (
            SELECT *, e - s >= $bb AND row_number() OVER (PARTITION BY lane, track ORDER BY e - s DESC, line) <= $m AS keep
            FROM ({_long(s, k)}) WHERE list_contains($lanes, lane) AND track <> 2
        )
        SELECT lane, track, state, least($last, greatest(0, (t_at + $off - $t0) // $bb))::BIGINT AS px, sum(tot)::BIGINT AS tot,
               sum(n)::BIGINT AS n, max(mx)::BIGINT AS mx, arg_max(line, mx)::BIGINT AS line, NULL::BIGINT AS s,
               NULL::BIGINT AS e
        FROM ({short} UNION ALL SELECT lane, track, state, greatest(s, $lo), e - s, 1, e - s, line FROM lg WHERE NOT keep)
        GROUP BY ALL
        UNION ALL
        SELECT lane, track, state, -1, e - s, 1, e - s, line, s + $off, e + $off FROM lg WHERE keep
        """, q).fetchnumpy() if with_bins else None
    out = {c["id"]: {"lane": c, "px": None, "segs": None, "calls": [], "inflight": None, "bucket": bb} for c in lanes}
    by_int = {c["_lane"]: out[c["id"]] for c in lanes if c["_lane"] is not None}
    for lane, part in _split(cols):
        one = part["px"] < 0
        by_int[lane]["px"] = {k: v[~one] for k, v in part.items() if k not in ("s", "e")}
        by_int[lane]["segs"] = {k: part[k][one] for k in ("track", "state", "s", "e", "line")}
    tasks = [c for c in lanes if c["kind"] == "task"]
    if tasks:
        table = "fg_calls" if raw else "tl_calls"  # tl_calls: the calls at least w0_ns long
        end = "entry_ns + duration_ns"
        for c in tasks:
            out[c["id"]]["calls"] = []
        for pid, func, depth, c1, c0, dur, line in _q(con, f"""
                SELECT pid, func, depth, {end} AS e, entry_ns, duration_ns, line FROM {table}
                WHERE source_id = $sid AND list_contains($pids, pid) AND depth BETWEEN 0 AND {MAX_CALL_DEPTH}
                  AND entry_ns IS NOT NULL AND duration_ns >= $cmin AND entry_ns <= $hi AND {end} >= $lo
                QUALIFY row_number() OVER (PARTITION BY pid ORDER BY duration_ns DESC, line) <= {MAX_CALLS}
                """, {**q, "pids": [c["pid"] for c in tasks], "cmin": b}).fetchall():
            lane = f"task:{s['id']}:{pid}"
            if lane in out:
                out[lane]["calls"].append((func, depth, c0 + off, c1 + off, dur, line))
    devs = [c for c in lanes if c["kind"] == "device" and c["_lane"] is not None]
    for c in devs:
        out[c["id"]]["inflight"] = _inflight(con, s, q, c["_lane"], raw, p)
    return out


def _inflight(con, s: dict, q: dict, lane: int, raw: bool, p: dict) -> dict:
    """Requests in flight on the device at the end of each pixel (first point: at t0)."""
    w0, off, b, t0, t1 = s["w0_ns"], s["clock_offset_ns"], p["b"], p["t0"], p["t1"]
    n_px = -(-(t1 - t0) // b)
    ends = np.minimum(t1, t0 + (np.arange(n_px, dtype=np.int64) + 1) * b)  # each pixel's end, aligned
    first = (q["lo"] // w0) - 1  # the level-0 bucket before the window's
    rows = np.array(con.execute(
        "SELECT bucket, inflight FROM tl_depth WHERE source_id = ? AND lane = ? AND bucket >= ? AND bucket <= ?"
        " UNION ALL (SELECT bucket, inflight FROM tl_depth WHERE source_id = ? AND lane = ? AND bucket < ?"
        " ORDER BY bucket DESC LIMIT 1) ORDER BY bucket",
        [s["id"], lane, first, q["hi"] // w0, s["id"], lane, first]).fetchall(), dtype=np.int64).reshape(-1, 2)

    def at_bucket_end(buckets: np.ndarray) -> np.ndarray:  # in flight at the end of each level-0 bucket
        i = np.searchsorted(rows[:, 0], buckets, side="right") - 1
        return np.where(i >= 0, rows[np.maximum(i, 0), 1], 0)

    start_bucket = q["lo"] // w0
    if raw:  # exact: from the level-0 bucket before the window's, then each event
        base = int(at_bucket_end(np.array([start_bucket - 1]))[0])
        ev = np.array(con.execute("""
            SELECT t, d FROM (
                SELECT r.i_ns AS t, 1 AS d FROM blk_requests r JOIN tl_lanes l ON l.source_id = r.source_id
                       AND l.kind = 'device' AND l.dev = r.dev
                WHERE r.source_id = $sid AND l.lane = $lane AND r.i_ns >= $from AND r.i_ns <= $hi
                UNION ALL
                SELECT r.c_ns, -1 FROM blk_requests r JOIN tl_lanes l ON l.source_id = r.source_id
                       AND l.kind = 'device' AND l.dev = r.dev
                WHERE r.source_id = $sid AND l.lane = $lane AND r.i_ns IS NOT NULL AND r.c_ns >= r.i_ns
                  AND r.c_ns >= $from AND r.c_ns <= $hi)""",
            {"sid": s["id"], "lane": lane, "from": start_bucket * w0, "hi": q["hi"]}).fetchall(),
            dtype=np.int64).reshape(-1, 2)
        ev = ev[np.argsort(ev[:, 0], kind="stable")]
        cum = base + np.concatenate([[0], np.cumsum(ev[:, 1])])
        at_t0 = int(cum[np.searchsorted(ev[:, 0], q["lo"], side="left")])
        values = cum[np.searchsorted(ev[:, 0], ends - off, side="left")]
    else:  # at the end of the last level-0 bucket that ends at or before each pixel's end (within w0 <= b)
        at_t0 = int(at_bucket_end(np.array([start_bucket - 1]))[0])
        values = at_bucket_end((ends - off) // w0 - 1)
    pts = [[t0, at_t0]]
    keep = np.flatnonzero(np.diff(np.concatenate([[at_t0], values])) != 0)
    pts += [[int(ends[i]), int(values[i])] for i in keep]
    return {"name": "in flight", "unit": "requests", "points": pts, "max": max(v for _, v in pts)}


# ---- items: runs of merged buckets and long segments, within the response's budget --------------------------------

def _group(keys: list[np.ndarray], tot, n, mx, line):
    """Rows grouped by keys: (keys of each group, sum tot, sum n, max mx, the line of the max)."""
    order = np.lexsort([mx, *keys[::-1]])  # by keys, then mx: a group's last row holds its max
    keys = [k[order] for k in keys]
    tot, n, mx, line = tot[order], n[order], mx[order], line[order]
    change = np.zeros(len(order), bool)
    if len(order):
        change[0] = True
        for k in keys:
            change[1:] |= k[1:] != k[:-1]
    starts = np.flatnonzero(change)
    ends = np.append(starts[1:], len(order)) - 1
    if not len(starts):
        return [k[:0] for k in keys], tot[:0], n[:0], mx[:0], line[:0]
    return ([k[starts] for k in keys], np.add.reduceat(tot, starts), np.add.reduceat(n, starts), mx[ends], line[ends])


def _split(cols: dict | None):
    """(lane, its rows as numpy columns) for each lane in the columns."""
    if cols is None or not len(cols["lane"]):
        return
    lane = np.asarray(cols["lane"])
    order = np.argsort(lane, kind="stable")
    bounds = np.flatnonzero(np.diff(lane[order])) + 1
    for idx in np.split(order, bounds):
        yield int(lane[idx[0]]), {k: np.asarray(v)[idx] for k, v in cols.items() if k != "lane"}


_EMPTY_PX = {k: np.zeros(0, np.int64) for k in ("track", "px", "tot", "n", "mx", "line")} | {"state": np.zeros(0, object)}
_EMPTY_SEGS = {k: np.zeros(0, np.int64) for k in ("track", "s", "e", "line")} | {"state": np.zeros(0, object)}


def _items(inp: dict, p: dict, f: int) -> dict:
    """One lane's items with buckets f times the lane's (columns; `states`: the names the state codes index)."""
    t0, t1, bb = p["t0"], p["t1"], inp["bucket"] * f
    px = inp["px"] if inp["px"] is not None else _EMPTY_PX
    sg = inp["segs"] if inp["segs"] is not None else _EMPTY_SEGS
    calls = [c for c in inp["calls"] if c[4] >= bb]
    codes: dict[str, int] = {}
    st = np.array([codes.setdefault(x, len(codes)) for x in
                   [*px["state"].tolist(), *sg["state"].tolist(), *(c[0] or "?" for c in calls)]], np.int64)
    names = list(codes)
    np_, ns_ = len(px["track"]), len(sg["track"])
    dur = sg["e"] - sg["s"]
    short = dur < bb
    tr = np.concatenate([px["track"], sg["track"][short]]).astype(np.int64)
    pos = np.concatenate([px["px"] // f, (np.maximum(sg["s"][short], t0) - t0) // bb]).astype(np.int64)
    sst = np.concatenate([st[:np_], st[np_:np_ + ns_][short]])
    (gt, gp, gs), gtot, gn, gmx, gln = _group(
        [tr, pos, sst], np.concatenate([px["tot"], dur[short]]).astype(np.int64),
        np.concatenate([px["n"], np.ones(int(short.sum()), np.int64)]).astype(np.int64),
        np.concatenate([px["mx"], dur[short]]).astype(np.int64),
        np.concatenate([px["line"], sg["line"][short]]).astype(np.int64))
    # per track and pixel: the dominant state (tracks of tasks), else every state on its own
    dom = np.asarray(DOMINANT)[gt] if len(gt) else np.zeros(0, bool)
    parts = []
    if dom.any():
        dt, dp, ds, dtot = gt[dom], gp[dom], gs[dom], gtot[dom]
        _, _, pn, pmx, pln = _group([dt, dp], dtot, gn[dom], gmx[dom], gln[dom])  # over all states of the pixel
        order = np.lexsort([dtot, dp, dt])  # the dominant state: the last of its pixel by total time
        last = np.append((dt[order][1:] != dt[order][:-1]) | (dp[order][1:] != dp[order][:-1]), True)
        pick = order[last]
        parts.append((dt[pick], dp[pick], ds[pick], pn, pmx, pln))
    if (~dom).any():
        parts.append((gt[~dom], gp[~dom], gs[~dom], gn[~dom], gmx[~dom], gln[~dom]))
    track, state, i0, i1, n, mx, line, depth = ([] for _ in range(8))
    if parts:
        kt, kp, ks, kn, kmx, kln = (np.concatenate(x) for x in zip(*parts))
        order = np.lexsort([kp, ks, kt])
        kt, kp, ks, kn, kmx, kln = kt[order], kp[order], ks[order], kn[order], kmx[order], kln[order]
        run = np.ones(len(kt), bool)  # runs: consecutive pixels of one track and state
        run[1:] = (kt[1:] != kt[:-1]) | (ks[1:] != ks[:-1]) | (kp[1:] != kp[:-1] + 1)
        _, _, rn, rmx, rln = _group([np.cumsum(run)], kn, kn, kmx, kln)
        starts = np.flatnonzero(run)
        ends = np.append(starts[1:], len(kt)) - 1
        track.append(kt[starts]), state.append(ks[starts]), i0.append(kp[starts] * bb)
        i1.append(np.minimum(t1 - t0, (kp[ends] + 1) * bb)), n.append(rn), mx.append(rmx), line.append(rln)
        depth.append(np.full(len(starts), -1))
    long = ~short  # segments at least a bucket long, as they are (clipped to the window)
    track.append(sg["track"][long]), state.append(st[np_:np_ + ns_][long])
    i0.append(np.maximum(sg["s"][long], t0) - t0), i1.append(np.minimum(sg["e"][long], t1) - t0)
    n.append(np.ones(int(long.sum()), np.int64)), mx.append(dur[long]), line.append(sg["line"][long])
    depth.append(np.full(int(long.sum()), -1))
    if calls:
        track.append(np.full(len(calls), 2)), state.append(st[np_ + ns_:])
        i0.append(np.array([max(c[2], t0) - t0 for c in calls])), i1.append(np.array([min(c[3], t1) - t0 for c in calls]))
        n.append(np.ones(len(calls), np.int64)), mx.append(np.array([c[4] for c in calls]))
        line.append(np.array([c[5] for c in calls])), depth.append(np.array([c[1] for c in calls]))
    cols = [np.concatenate(x).astype(np.int64) for x in (track, state, i0, i1, n, mx, line, depth)]
    order = np.lexsort([cols[1], cols[2], cols[7], cols[0]])  # per track (calls by depth) in time order
    track, state, i0, i1, n, mx, line, depth = (c[order] for c in cols)
    return {"states": names, "track": track.tolist(), "state": state.tolist(), "t0": i0.tolist(),
            "t1": i1.tolist(), "n": n.tolist(), "max": mx.tolist(), "line": line.tolist(),
            "depth": [None if d < 0 else d for d in depth.tolist()]}


def _count(inp: dict, p: dict, f: int) -> int:
    """About how many items _items(inp, p, f) makes (at most one merged item per track and bucket, plus the segments
    and calls at least a bucket long): to choose a lane's first coarsening without building it."""
    bb = inp["bucket"] * f
    sg = inp["segs"]
    long = int(((sg["e"] - sg["s"]) >= bb).sum()) if sg is not None else 0
    merged = len(np.unique(inp["px"]["track"].astype(np.int64) * (1 << 32) + inp["px"]["px"] // f)) if inp["px"] is not None else 0
    return long + merged + sum(1 for c in inp["calls"] if c[4] >= bb)


def _fit(chosen: list[dict], inputs: dict[str, dict], p: dict) -> None:
    """Each lane's items (`segs`) and bucket (`bucket_ns`), doubling the buckets of the densest lanes until the
    response holds at most MAX_ITEMS: first from estimates (each lane within its share), then from the items built."""
    empty = {"states": [], **{k: [] for k in ("track", "state", "t0", "t1", "n", "max", "line", "depth")}}
    built = [c for c in chosen if c["id"] in inputs]
    span = p["t1"] - p["t0"]
    f = {c["id"]: 1 for c in built}
    share = MAX_ITEMS // max(1, len(built))
    est = {c["id"]: _count(inputs[c["id"]], p, 1) for c in built}
    if sum(est.values()) > MAX_ITEMS:
        for c in built:
            while est[c["id"]] > share and inputs[c["id"]]["bucket"] * f[c["id"]] < span:
                f[c["id"]] *= 2
                est[c["id"]] = _count(inputs[c["id"]], p, f[c["id"]])
    for c in chosen:
        inp = inputs.get(c["id"])
        c["segs"] = _items(inp, p, f[c["id"]]) if inp else empty
        c["bucket_ns"] = inp["bucket"] * f[c["id"]] if inp else None
        if inp:
            c["counter"] = inp["inflight"]
    total = sum(len(c["segs"]["t0"]) for c in chosen)
    while total > MAX_ITEMS:
        c = max(built, key=lambda c: (len(c["segs"]["t0"]), -f[c["id"]]), default=None)
        if c is None or c["bucket_ns"] >= span:
            break
        before = len(c["segs"]["t0"])
        f[c["id"]] *= 2
        c["segs"] = _items(inputs[c["id"]], p, f[c["id"]])
        c["bucket_ns"] = inputs[c["id"]]["bucket"] * f[c["id"]]
        total += len(c["segs"]["t0"]) - before


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


def _marks(con, p: dict) -> list[dict]:
    cur = _q(con, f"""
        SELECT e.source_id, e.line, e.t_ns + s.clock_offset_ns AS t_ns, e.pid, e.comm, e.text
        FROM trace_events e JOIN sources s ON s.id = e.source_id
        WHERE s.analysis_id = $aid AND e.event = 'print' AND e.t_ns + s.clock_offset_ns BETWEEN $t0 AND $t1
        ORDER BY t_ns, e.line LIMIT {MAX_MARKS}""", p)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]
