"""One time axis for every source: lanes of segments, aggregated on the server for the pixels asked for.

Lanes (ids are stable, for the URL):
* `task:<source>:<pid>` (ftrace) — the task's states from the scheduler events (running / runnable /
  blocked, derived at ingest into `task_slices`), its waits coloured by lock (`waits`), and, zoomed in,
  its function calls (`fg_calls`, depth ≤ MAX_CALL_DEPTH, calls at least one pixel long); `print`
  markers of the task's source.
* `dev:<source>:<dev>` and `proc:<source>:<pid>` (blktrace) — each request's I→D wait (`queued`) and
  D→C service (`service`); per device also the number of requests in flight (inserted, not completed)
  at the end of each pixel.
* `window:<source>` (offcputime) — the dump's capture window, a band.
Chains of the Stalls view are arrows across lanes: from the waker / holder (or the device whose request
completed) to the waiter, at the end of the wait.

Aggregation: the window [t0, t1] is cut in `width_px` buckets of `bucket_ns`. A segment at least one
bucket long is kept as it is (clipped to the window); shorter ones are merged per bucket — for a task,
the state that took most of the bucket's time; for block lanes, per state — and runs of consecutive
buckets with the same state become one item with its count, its longest segment and the line of that
segment (the event behind it). So a lane holds at most a few thousand items whatever the trace's size.
All times are on the analysis timeline (the source's own time + its clock_offset_ns).
"""
from __future__ import annotations

import re
from collections import defaultdict

MAX_CALL_DEPTH = 6
MAX_LONG = 2000  # segments longer than a bucket kept per lane and state (the longest)
MAX_MARKS = 500
MAX_CHAINS = 50
TASK_STATES = ("running", "runnable", "blocked")

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
        """, {"sid": source_id})


def _q(con, sql: str, params: dict):
    """Runs sql with the parameters it names (DuckDB refuses unused named parameters)."""
    used = set(re.findall(r"\$(\w+)", sql))
    return con.execute(sql, {k: v for k, v in params.items() if k in used})


# ---- reads -------------------------------------------------------------------------------------

def _bins(con, rows_sql: str, params: dict, dominant: bool) -> list[dict]:
    """Segments of `rows_sql` (lane, state, start_ns, end_ns, source_id, line; aligned times, already restricted to
    the window) binned as the module docstring says. Returns dicts lane, state, t0_ns, t1_ns, n, max_ns, source_id,
    line; in lane and time order."""
    pick = ("arg_max(state, tot)", "GROUP BY lane, px") if dominant else ("state", "GROUP BY lane, px, state")
    cur = _q(con, f"""
        WITH x AS (SELECT *, end_ns - start_ns AS dur FROM ({rows_sql})),
        long AS (
            SELECT lane, state, greatest(start_ns, $t0) AS t0_ns, least(end_ns, $t1) AS t1_ns, 1::BIGINT AS n,
                   dur AS max_ns, source_id, line
            FROM x WHERE dur >= $b
            QUALIFY row_number() OVER (PARTITION BY lane, state ORDER BY dur DESC, line) <= {MAX_LONG}
        ),
        short AS (
            SELECT lane, state, (greatest(start_ns, $t0) - $t0) // $b AS px, sum(dur) AS tot, count(*) AS n,
                   max(dur) AS mx, arg_max(source_id, dur) AS sid, arg_max(line, dur) AS ln
            FROM x WHERE dur < $b GROUP BY lane, state, px
        ),
        px AS (
            SELECT lane, {pick[0]} AS state, px, sum(n) AS n, max(mx) AS mx, arg_max(sid, mx) AS sid,
                   arg_max(ln, mx) AS ln
            FROM short {pick[1]}
        ),
        runs AS (
            SELECT *, px - row_number() OVER (PARTITION BY lane, state ORDER BY px) AS run FROM px
        )
        SELECT lane, state, $t0 + min(px) * $b AS t0_ns, least($t1, $t0 + (max(px) + 1) * $b) AS t1_ns,
               sum(n)::BIGINT AS n, max(mx) AS max_ns, arg_max(sid, mx) AS source_id, arg_max(ln, mx) AS line
        FROM runs GROUP BY lane, state, run
        UNION ALL SELECT * FROM long
        ORDER BY lane, t0_ns, state
        """, params)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def _sources(con, analysis_id: str) -> list[dict]:
    cur = _q(con, "SELECT id, filename, format, clock_offset_ns, t_min_ns, t_max_ns FROM sources"
             " WHERE analysis_id = $aid ORDER BY id", {"aid": analysis_id})
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
           "total_lanes": 0}
    if t0 is None or t1 is None or t1 <= t0:
        return out
    b = max(1, -(-(t1 - t0) // width_px))
    out["bucket_ns"] = b
    p = {"aid": analysis_id, "t0": t0, "t1": t1, "b": b}
    fmt = {s["id"]: s["format"] for s in sources}

    chains = _chain_links(con, analysis_id, p) if "ftrace" in fmt.values() else []
    candidates = _candidate_lanes(con, analysis_id, p, sources, chains)
    out["total_lanes"] = len(candidates)
    if lanes:
        wanted = set(lanes)
        chosen = [c for c in candidates if c["id"] in wanted]
    else:
        chosen = candidates[:max_lanes]
    by_id = {c["id"]: c for c in chosen}
    for c in chosen:
        c.update(segments=[], counter=None, marks=[])

    tasks = [c for c in chosen if c["kind"] == "task"]
    if tasks:
        _task_segments(con, p, tasks, by_id)
    blk = [c for c in chosen if c["kind"] in ("device", "process")]
    if blk:
        _block_segments(con, p, blk, by_id)
    out["lanes"] = chosen
    out["arrows"] = _arrows(chains, by_id)
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


def _candidate_lanes(con, analysis_id: str, p: dict, sources: list[dict], chains: list[dict]) -> list[dict]:
    """Every lane with something in the window, most telling first: the tasks of the chains (by chain rank), the
    block devices, the offcputime windows, then tasks by time blocked and processes by their slowest request."""
    lanes: list[dict] = []
    seen = set()

    def add(lane: dict) -> None:
        if lane["id"] not in seen:
            seen.add(lane["id"])
            lanes.append(lane)

    for link in chains:
        if link["pid"] is not None:
            add(_task_lane(link["source_id"], link["pid"], link["comm"], f"chain #{link['chain_id']}"))
    for s in sources:
        if s["format"] == "blkparse":
            for dev, n in _q(con,
                    "SELECT dev, count(*) FROM blk_requests r JOIN sources s ON s.id = r.source_id WHERE r.source_id = $sid"
                    " AND coalesce(r.c_ns, r.d_ns, r.i_ns, r.q_ns) + s.clock_offset_ns >= $t0"
                    " AND r.t_ns + s.clock_offset_ns <= $t1 GROUP BY dev ORDER BY count(*) DESC, dev",
                    {"sid": s["id"], "t0": p["t0"], "t1": p["t1"]}).fetchall():
                add({"id": f"dev:{s['id']}:{dev}", "kind": "device", "source_id": s["id"], "label": f"{dev} (device)",
                     "group": s["filename"], "pid": None, "dev": dev, "why": f"{n} requests in the window"})
        elif s["format"] == "offcputime":
            start = s["t_min_ns"] + s["clock_offset_ns"]
            end = s["t_max_ns"] + s["clock_offset_ns"] if s["t_max_ns"] is not None else None
            add({"id": f"window:{s['id']}", "kind": "window", "source_id": s["id"], "label": "capture window",
                 "group": s["filename"], "pid": None, "dev": None, "why": "offcputime dump",
                 "band": {"t0_ns": start, "t1_ns": end}})
    for sid, pid, comm, blocked in _q(con, """
            SELECT w.source_id, w.pid, any_value(w.comm), sum(least(w.end_ns + s.clock_offset_ns, $t1)
                   - greatest(w.start_ns + s.clock_offset_ns, $t0)) AS blocked
            FROM waits w JOIN sources s ON s.id = w.source_id
            WHERE s.analysis_id = $aid AND w.end_ns + s.clock_offset_ns >= $t0 AND w.start_ns + s.clock_offset_ns <= $t1
            GROUP BY ALL ORDER BY blocked DESC, w.source_id, w.pid LIMIT 2000""", p).fetchall():
        add(_task_lane(sid, pid, comm, f"blocked {blocked} ns in the window"))
    for sid, pid, comm, running in _q(con, """
            SELECT t.source_id, t.pid, any_value(t.comm), sum(least(t.end_ns + s.clock_offset_ns, $t1)
                   - greatest(t.start_ns + s.clock_offset_ns, $t0)) AS running
            FROM task_slices t JOIN sources s ON s.id = t.source_id
            WHERE s.analysis_id = $aid AND t.state = 'running' AND t.end_ns + s.clock_offset_ns >= $t0
              AND t.start_ns + s.clock_offset_ns <= $t1
            GROUP BY ALL ORDER BY running DESC, t.source_id, t.pid LIMIT 2000""", p).fetchall():
        add(_task_lane(sid, pid, comm, f"running {running} ns in the window"))
    for sid, pid, comm, n in _q(con, """
            SELECT c.source_id, c.pid, any_value(c.comm), count(*) FROM fg_calls c JOIN sources s ON s.id = c.source_id
            WHERE s.analysis_id = $aid AND c.pid IS NOT NULL AND c.pid <> 0 AND c.depth = 0
              AND coalesce(c.exit_ns, c.entry_ns) + s.clock_offset_ns >= $t0 AND c.entry_ns + s.clock_offset_ns <= $t1
            GROUP BY ALL ORDER BY count(*) DESC, c.source_id, c.pid LIMIT 2000""", p).fetchall():
        add(_task_lane(sid, pid, comm, f"{n} top-level calls in the window"))
    for s in sources:
        if s["format"] == "blkparse":
            for pid, comm, worst in _q(con,
                    "SELECT r.pid, any_value(r.comm), max(r.q2c_ns) FROM blk_requests r JOIN sources s ON s.id = r.source_id"
                    " WHERE r.source_id = $sid AND r.pid IS NOT NULL"
                    " AND coalesce(r.c_ns, r.d_ns, r.i_ns, r.q_ns) + s.clock_offset_ns >= $t0"
                    " AND r.t_ns + s.clock_offset_ns <= $t1 GROUP BY r.pid"
                    " ORDER BY max(r.q2c_ns) DESC NULLS LAST, r.pid LIMIT 500",
                    {"sid": s["id"], "t0": p["t0"], "t1": p["t1"]}).fetchall():
                add({"id": f"proc:{s['id']}:{pid}", "kind": "process", "source_id": s["id"],
                     "label": f"{comm} ({pid})", "group": s["filename"], "pid": pid, "dev": None,
                     "why": f"slowest request Q2C {worst} ns" if worst is not None else "requests in the window"})
    return lanes


def _task_lane(sid: int, pid: int, comm: str | None, why: str) -> dict:
    return {"id": f"task:{sid}:{pid}", "kind": "task", "source_id": sid, "label": f"{comm or '?'} ({pid})",
            "group": None, "pid": pid, "dev": None, "why": why}


def _lane_filter(lanes: list[dict], key: str) -> tuple[list[int], list]:
    return [lane["source_id"] for lane in lanes], [lane[key] for lane in lanes]


def _task_segments(con, p: dict, tasks: list[dict], by_id: dict) -> None:
    sids, pids = _lane_filter(tasks, "pid")
    q = {**p, "sids": sids, "pids": pids}
    # sources and pids of the lanes; a pid of another source that slips through is dropped by lane id below
    in_lanes = " AND list_contains($sids, x.source_id) AND list_contains($pids, x.pid)"
    states = _bins(con, f"""
        SELECT 'task:' || x.source_id || ':' || x.pid AS lane, x.state, x.start_ns + s.clock_offset_ns AS start_ns,
               x.end_ns + s.clock_offset_ns AS end_ns, x.source_id, x.line
        FROM task_slices x JOIN sources s ON s.id = x.source_id
        WHERE s.analysis_id = $aid{in_lanes} AND x.end_ns + s.clock_offset_ns >= $t0
          AND x.start_ns + s.clock_offset_ns <= $t1""", q, dominant=True)
    waits = _bins(con, f"""
        SELECT 'task:' || x.source_id || ':' || x.pid AS lane, coalesce(x.lock_key, x.lock, '?') AS state,
               x.start_ns + s.clock_offset_ns AS start_ns, x.end_ns + s.clock_offset_ns AS end_ns, x.source_id, x.line
        FROM waits x JOIN sources s ON s.id = x.source_id
        WHERE s.analysis_id = $aid{in_lanes} AND x.end_ns + s.clock_offset_ns >= $t0
          AND x.start_ns + s.clock_offset_ns <= $t1""", q, dominant=True)
    calls = _q(con, f"""
        SELECT 'task:' || x.source_id || ':' || x.pid AS lane, x.func, x.depth,
               greatest(x.entry_ns + s.clock_offset_ns, $t0) AS t0_ns,
               least(coalesce(x.exit_ns, x.entry_ns + x.duration_ns) + s.clock_offset_ns, $t1) AS t1_ns,
               x.duration_ns, x.source_id, x.line
        FROM fg_calls x JOIN sources s ON s.id = x.source_id
        WHERE s.analysis_id = $aid{in_lanes} AND x.depth BETWEEN 0 AND {MAX_CALL_DEPTH} AND x.entry_ns IS NOT NULL
          AND x.duration_ns >= $b AND x.entry_ns + s.clock_offset_ns <= $t1
          AND x.entry_ns + x.duration_ns + s.clock_offset_ns >= $t0
        QUALIFY row_number() OVER (PARTITION BY lane ORDER BY x.duration_ns DESC, x.line) <= {MAX_LONG}
        ORDER BY lane, x.depth, t0_ns""", q).fetchall()
    for seg in states:
        if seg["lane"] in by_id:
            by_id[seg["lane"]]["segments"].append({**_seg(seg), "track": "state"})
    for seg in waits:
        if seg["lane"] in by_id:
            by_id[seg["lane"]]["segments"].append({**_seg(seg), "track": "wait"})
    for lane, func, depth, s0, s1, dur, sid, line in calls:
        if lane in by_id:
            by_id[lane]["segments"].append({"track": "call", "state": func, "depth": depth, "t0_ns": s0, "t1_ns": s1,
                                            "n": 1, "max_ns": dur, "source_id": sid, "line": line})


def _seg(r: dict) -> dict:
    return {"state": r["state"], "t0_ns": r["t0_ns"], "t1_ns": r["t1_ns"], "n": r["n"], "max_ns": r["max_ns"],
            "source_id": r["source_id"], "line": r["line"]}


_PHASES = """
    SELECT {lane} AS lane, unnest([{{'state': 'queued', 'start_ns': r.i_ns, 'end_ns': r.d_ns}},
                                  {{'state': 'service', 'start_ns': r.d_ns, 'end_ns': r.c_ns}}], recursive := true),
           r.source_id, r.line, s.clock_offset_ns AS off
    FROM blk_requests r JOIN sources s ON s.id = r.source_id
    WHERE s.analysis_id = $aid AND list_contains($sids, r.source_id) AND list_contains($keys, {key})
      AND coalesce(r.c_ns, r.d_ns, r.i_ns, r.q_ns) + s.clock_offset_ns >= $t0 AND r.t_ns + s.clock_offset_ns <= $t1
"""


def _block_segments(con, p: dict, lanes: list[dict], by_id: dict) -> None:
    for kind, key, lane_expr in (("device", "dev", "'dev:' || r.source_id || ':' || r.dev"),
                                 ("process", "pid", "'proc:' || r.source_id || ':' || r.pid")):
        mine = [lane for lane in lanes if lane["kind"] == kind]
        if not mine:
            continue
        sids, keys = _lane_filter(mine, key)
        rows = _PHASES.format(lane=lane_expr, key=f"r.{key}")
        segs = _bins(con, f"""
            SELECT lane, state, start_ns + off AS start_ns, end_ns + off AS end_ns, source_id, line FROM ({rows})
            WHERE start_ns IS NOT NULL AND end_ns IS NOT NULL AND end_ns >= start_ns
              AND end_ns + off >= $t0 AND start_ns + off <= $t1""", {**p, "sids": sids, "keys": keys}, dominant=False)
        for seg in segs:
            if seg["lane"] in by_id:
                by_id[seg["lane"]]["segments"].append({**_seg(seg), "track": seg["state"]})
        if kind == "device":
            _depth(con, p, sids, keys, by_id)


def _depth(con, p: dict, sids: list[int], devs: list[str], by_id: dict) -> None:
    """Requests in flight (inserted, not yet completed) at the end of each bucket, per device."""
    rows = _q(con, """
        WITH e AS (
            SELECT r.source_id, r.dev, r.i_ns + s.clock_offset_ns AS t, 1 AS d
            FROM blk_requests r JOIN sources s ON s.id = r.source_id
            WHERE list_contains($sids, r.source_id) AND list_contains($devs, r.dev) AND r.i_ns IS NOT NULL
            UNION ALL
            SELECT r.source_id, r.dev, r.c_ns + s.clock_offset_ns, -1
            FROM blk_requests r JOIN sources s ON s.id = r.source_id
            WHERE list_contains($sids, r.source_id) AND list_contains($devs, r.dev) AND r.i_ns IS NOT NULL
              AND r.c_ns IS NOT NULL AND r.c_ns >= r.i_ns
        )
        SELECT source_id, dev, CASE WHEN t < $t0 THEN -1 ELSE (t - $t0) // $b END AS px, sum(d)
        FROM e WHERE t <= $t1 GROUP BY ALL ORDER BY source_id, dev, px
        """, {"sids": sids, "devs": devs, "t0": p["t0"], "t1": p["t1"], "b": p["b"]}).fetchall()
    series: dict[str, list] = {f"dev:{sid}:{dev}": [] for sid, dev in zip(sids, devs)}
    level: dict[str, int] = defaultdict(int)
    before: dict[str, int] = {}  # in flight at t0
    for sid, dev, px, d in rows:
        lane = f"dev:{sid}:{dev}"
        level[lane] += int(d)
        if px < 0:
            before[lane] = level[lane]
        else:
            series[lane].append([min(p["t1"], p["t0"] + (px + 1) * p["b"]), level[lane]])
    for lane, pts in series.items():
        if lane in by_id:
            pts = [[p["t0"], before.get(lane, 0)]] + pts
            by_id[lane]["counter"] = {"name": "in flight", "unit": "requests", "points": pts,
                                      "max": max(v for _, v in pts)}


def _arrows(chains: list[dict], by_id: dict) -> list[dict]:
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
    return [a for a in arrows if a["from_lane"] in by_id and a["to_lane"] in by_id]


def _marks(con, p: dict) -> list[dict]:
    cur = _q(con, f"""
        SELECT e.source_id, e.line, e.t_ns + s.clock_offset_ns AS t_ns, e.pid, e.comm, e.text
        FROM trace_events e JOIN sources s ON s.id = e.source_id
        WHERE s.analysis_id = $aid AND e.event = 'print' AND e.t_ns + s.clock_offset_ns BETWEEN $t0 AND $t1
        ORDER BY t_ns, e.line LIMIT {MAX_MARKS}""", p)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]
