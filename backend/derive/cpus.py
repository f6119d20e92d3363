"""Per-CPU tracks (Perfetto's and KernelShark's CPU rows): what ran on each CPU, from the scheduler's switches.

`summarize` writes, per ftrace source, `cpu_slices` (one row per sched_switch: its next task runs on that CPU until
the following switch on that CPU, or the trace's end; idle is pid 0) and the timeline's lanes of kind `cpu` (one per
CPU, numbered after the source's other lanes, `dev` = the CPU number) with their summaries in `tl_bins` and `tl_long`
(track 0, state = the comm that ran; idle slices are not drawn), on the levels `timeline.summarize` chose for the
source (tl_meta). derive/pipeline.py runs it after timeline.summarize, in that step's transaction (STAGED_TABLES);
schema/migrations.py runs it once for the sources of a file written before it existed.
"""

from __future__ import annotations

from ..schema.tables import FAN

# each switch's next task, from the switch to the next one on that CPU (in file order: the CPU's ring buffer order)
_SLICES = """
    INSERT INTO cpu_slices
    SELECT $sid, cpu, next_pid, next_comm, t_ns, coalesce(lead(t_ns) OVER w, greatest($t_max, t_ns)), line,
           lead(t_ns) OVER w IS NOT NULL
    FROM sched_switch WHERE source_id = $sid AND cpu IS NOT NULL AND t_ns IS NOT NULL AND next_pid IS NOT NULL
    WINDOW w AS (PARTITION BY cpu ORDER BY line)
    ORDER BY t_ns"""
# the drawn slices: a CPU's tasks (not its idle time) in its lane, as timeline._segs has a task's states
_SEGS = """
    SELECT l.lane, 0 AS track, coalesce(x.comm, '?') AS state, x.start_ns AS s, x.end_ns AS e, x.line
    FROM cpu_slices x JOIN tl_lanes l ON l.source_id = x.source_id AND l.kind = 'cpu' AND l.dev = x.cpu::VARCHAR
    WHERE x.source_id = $sid AND x.pid <> 0 AND x.end_ns >= x.start_ns"""


def segments_sql() -> str:
    """The SQL of a source's CPU segments (lane, track, state, s, e, line; $sid), own clock: for tests' references."""
    return _SEGS


def summarize(con, sources: list[tuple[int, str, int | None, int | None]]) -> None:
    """cpu_slices, the cpu lanes and their summaries of each ftrace source (id, format, t_min_ns, t_max_ns) whose
    timeline summaries exist (tl_meta, written by timeline.summarize on this connection or before)."""
    for sid, fmt, t_min, t_max in sources:
        if fmt != "ftrace" or t_min is None or t_max is None:
            continue
        con.execute(_SLICES, {"sid": sid, "t_max": t_max})
        meta = con.execute("SELECT w0_ns, top_level FROM tl_meta WHERE source_id = ?", [sid]).fetchone()
        if meta is None:
            continue
        w0, top = meta
        con.execute(
            """
            INSERT INTO tl_lanes
            SELECT $sid, ((SELECT coalesce(max(lane), -1) FROM tl_lanes WHERE source_id = $sid)
                          + row_number() OVER (ORDER BY cpu))::INTEGER, 'cpu', NULL, cpu::VARCHAR, NULL
            FROM (SELECT DISTINCT cpu FROM cpu_slices WHERE source_id = $sid AND pid <> 0)""",
            {"sid": sid},
        )
        first = con.execute("SELECT min(lane) FROM tl_lanes WHERE source_id = ? AND kind = 'cpu'", [sid]).fetchone()[0]
        if first is None:
            continue
        _pyramid(con, sid, w0, top, first)


def _pyramid(con, sid: int, w0: int, top: int, first_lane: int) -> None:
    """The cpu lanes' (lane >= first_lane) rows of tl_bins and tl_long, as timeline.summarize makes a source's: each
    slice shorter than the top level's bucket summed at the first level whose bucket is longer than it, each level
    the one below merged FAN buckets at a time plus those; slices at least a level-1 bucket long kept as they are."""
    widths = [w0 * FAN**k for k in range(top + 1)]
    level = "CASE " + " ".join(f"WHEN e - s < {w} THEN {k}" for k, w in enumerate(widths)) + " END"
    width = "CASE lvl " + " ".join(f"WHEN {k} THEN {w}" for k, w in enumerate(widths)) + " END"
    p = {"sid": sid}
    con.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE _cpu_short_sums AS
        SELECT lvl, lane, track, state, s // ({width}) AS bucket, sum(e - s) AS tot, count(*) AS n, max(e - s) AS mx,
               arg_max(line, e - s) AS line
        FROM (SELECT *, {level} AS lvl FROM ({_SEGS}) WHERE e - s < {widths[-1]})
        GROUP BY ALL""",
        p,
    )
    con.execute(
        "INSERT INTO tl_bins SELECT $sid, 0, lane, track, state, bucket, tot, n, mx, line FROM _cpu_short_sums"
        " WHERE lvl = 0 ORDER BY lane, bucket",
        p,
    )
    for k in range(1, top + 1):
        con.execute(
            f"""
            INSERT INTO tl_bins
            SELECT $sid, $k, lane, track, state, bucket, sum(tot), sum(n), max(mx), arg_max(line, mx) FROM (
                SELECT lane, track, state, bucket // {FAN} AS bucket, tot, n, mx, line FROM tl_bins
                WHERE source_id = $sid AND level = $k - 1 AND lane >= $first
                UNION ALL SELECT lane, track, state, bucket, tot, n, mx, line FROM _cpu_short_sums WHERE lvl = $k
            ) GROUP BY lane, track, state, bucket
            ORDER BY lane, bucket""",
            {**p, "k": k, "first": first_lane},
        )
    con.execute("DROP TABLE _cpu_short_sums")
    level = "CASE " + " ".join(f"WHEN e - s < {w} THEN {k}" for k, w in enumerate(widths)) + f" ELSE {top + 1} END"
    con.execute(
        f"INSERT INTO tl_long SELECT $sid, {level} AS lvl, lane, track, state, s, e, line"
        f" FROM ({_SEGS}) WHERE e - s >= {w0 * FAN} ORDER BY lvl, s",
        p,
    )
