"""Per-CPU tracks (Perfetto's and KernelShark's CPU rows): what ran on each CPU, from the scheduler's switches.

`summarize` writes, per ftrace source, `cpu_slices` (one row per sched_switch: its next task runs on that CPU until
the following switch on that CPU, or the trace's end; idle is pid 0) and the timeline's lanes of kind `cpu` (one per
CPU, numbered after the source's other lanes, `dev` = the CPU number) with their summaries in `tl_bins` and `tl_long`
(track 0, state = the comm that ran; idle slices are not drawn), on the levels `timeline.summarize` chose for the
source (tl_meta). derive/pipeline.py runs it after timeline.summarize, in that step's transaction (STAGED_TABLES),
and, as `summarize_kept`, once for the kept sources of a file written before it existed (schema migration 3 marks it
pending: derive/pipeline.run_pending).
"""

from __future__ import annotations

from functools import partial

from ..db import execute
from .timeline import segment_sums, write_levels

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


def summarize_kept(con) -> None:
    """cpu_slices, the cpu lanes and their summaries of every kept ftrace source that has timeline summaries and no
    cpu lanes yet (a file written before they existed), in the caller's transaction."""
    rows = execute(
        con,
        "SELECT id, format, t_min_ns, t_max_ns FROM sources s WHERE format = 'ftrace'"
        " AND EXISTS (SELECT 1 FROM tl_meta m WHERE m.source_id = s.id)"
        " AND NOT EXISTS (SELECT 1 FROM tl_lanes l WHERE l.source_id = s.id AND l.kind = 'cpu') ORDER BY id",
    ).fetchall()
    if rows:
        execute(con, "DELETE FROM cpu_slices WHERE source_id IN (SELECT unnest(?))", [[r[0] for r in rows]])
        summarize(con, rows)


def summarize(con, sources: list[tuple[int, str, int | None, int | None]]) -> None:
    """cpu_slices, the cpu lanes and their summaries of each ftrace source (id, format, t_min_ns, t_max_ns) whose
    timeline summaries exist (tl_meta, written by timeline.summarize on this connection or before)."""
    for sid, fmt, t_min, t_max in sources:
        if fmt != "ftrace" or t_min is None or t_max is None:
            continue
        execute(con, _SLICES, {"sid": sid, "t_max": t_max})
        meta = execute(con, "SELECT w0_ns, top_level FROM tl_meta WHERE source_id = ?", [sid]).fetchone()
        if meta is None:
            continue
        w0, top = meta
        execute(
            con,
            """
            INSERT INTO tl_lanes
            SELECT $sid, ((SELECT coalesce(max(lane), -1) FROM tl_lanes WHERE source_id = $sid)
                          + row_number() OVER (ORDER BY cpu))::INTEGER, 'cpu', NULL, cpu::VARCHAR, NULL
            FROM (SELECT DISTINCT cpu FROM cpu_slices WHERE source_id = $sid AND pid <> 0)""",
            {"sid": sid},
        )
        first = execute(con, "SELECT min(lane) FROM tl_lanes WHERE source_id = ? AND kind = 'cpu'", [sid]).fetchone()[0]
        if first is None:
            continue
        # the cpu lanes' rows of tl_bins and tl_long, as timeline.summarize makes a source's
        write_levels(con, sid, w0, top, _SEGS, partial(segment_sums, _SEGS), first_lane=first)
