"""Scheduler waits (`kind` = "sched"): a sched_switch whose prev_state is a sleep, from the switch-out to the task's
next switch-in, else its wake-up, else the trace's end (the rules: derive/waits.py's docstring). `add` writes them to
the source's base table, in file order.
"""

from __future__ import annotations

import pyarrow as pa

from ..db import arrow, execute
from .arrays import next_after
from .wait_rows import BASE_TYPES

_SCHED_WAIT = {  # the columns of a scheduler wait, in SQL over add's rows
    "source_id": "$sid",
    "line": "line",
    "kind": "'sched'",
    "pid": "pid",
    "comm": "comm",
    "cpu": "cpu",
    "start_ns": "t_ns",
    "end_ns": "end_at",
    "duration_ns": "end_at - t_ns",
    "end_known": "in_line IS NOT NULL OR woke",
    "end_line": "CASE WHEN in_line IS NOT NULL THEN in_line WHEN woke THEN wl END",
    "state": "state",
    "inferred": "in_line IS NULL",
    "evidence": "CASE WHEN in_line IS NOT NULL THEN format('{}, back on CPU at line {}{}', out, in_line,"
    " CASE WHEN woke THEN '' ELSE '; no wake-up line for it in the trace' END)"
    " WHEN woke THEN format('{}; its switch-in is not in the trace: ends at its wake-up (line {})', out, wl)"
    " ELSE out || '; still asleep when the trace ends (no wake-up, no switch-in): duration is a lower bound'"
    " END",
    "wake_line": "CASE WHEN woke THEN wl END",
    "wake_ns": "CASE WHEN woke THEN wns END",
    "wake_cpu": "CASE WHEN woke THEN wcpu END",
    "waker_pid": "CASE WHEN woke AND other THEN wpid END",
    "waker_comm": "CASE WHEN woke AND other THEN wcomm END",
}


def add(con, sid: int, base: str, trace_end: int) -> int:
    """Adds the source's scheduler waits to the base table (wait_rows.base_table, empty), numbered from 0 in line
    order: what follows (also_waiting lists, ...) must not depend on threads; returns how many. Reads the tasks'
    switch-outs and wake-ups from `_stalls_outs` and `_stalls_wk` (made by the caller, waits.stage)."""
    p = {"sid": sid}
    cols = {**_SCHED_WAIT, "innermost": "NULL"}
    asleep = (
        "FROM sched_switch WHERE source_id = $sid AND prev_pid IS NOT NULL AND prev_pid <> 0 AND t_ns IS NOT NULL"
        " AND coalesce(prev_state, '') <> '' AND NOT regexp_matches(prev_state, '^[RXZx]')"
    )
    # each switch-out's next switch-in, next switch-out and first wake-up of its task (on arrays: DuckDB's ASOF
    # joins cost ~3x the rest of the statement)
    o = arrow(con, f"SELECT line, prev_pid AS pid {asleep}", params=p)
    i = arrow(
        con,
        "SELECT line, next_pid AS pid, t_ns FROM sched_switch WHERE source_id = $sid AND next_pid IS NOT NULL",
        params=p,
    )
    o_pid, o_line = (o.column(k).to_numpy() for k in ("pid", "line"))
    nxt = {"line": o.column("line")}
    for name, b in (("i", i), ("n", arrow(con, "SELECT line, pid FROM _stalls_outs"))):
        j = next_after(o_pid, o_line, b.column("pid").to_numpy(), b.column("line").to_numpy())
        at = pa.array(j, mask=j < 0)
        nxt[f"{name}_line"] = b.column("line").take(at)
        if name == "i":
            nxt["i_ns"] = b.column("t_ns").take(at)
    wk = arrow(con, "SELECT line, pid FROM _stalls_wk")
    j = next_after(o_pid, o_line, wk.column("pid").to_numpy(), wk.column("line").to_numpy())
    nxt["w_line"] = wk.column("line").take(pa.array(j, mask=j < 0))
    con.register("_stalls_nx", pa.table(nxt))
    execute(
        con,
        f"""
        INSERT INTO {base} ({", ".join(BASE_TYPES)})
        WITH o AS (SELECT line, t_ns, cpu, prev_pid AS pid, prev_comm AS comm, prev_state AS state {asleep}
        ), j AS (
            -- back on CPU: the next switch-in, unless the task was switched out again before it (a lost switch-in)
            SELECT o.*, CASE WHEN x.n_line IS NULL OR x.i_line < x.n_line THEN x.i_line END AS in_line,
                   x.i_ns AS in_ns, x.n_line AS next_out, w.line AS wl, w.t_ns AS wns, w.cpu AS wcpu,
                   w.waker_pid AS wpid, w.waker_comm AS wcomm,
                   format('switched out ({{}}) at line {{}}', o.state, o.line) AS out
            FROM o JOIN _stalls_nx x USING (line) LEFT JOIN _stalls_wk w ON w.line = x.w_line
        ), k AS (
            -- woken: a wake-up before the switch-in (else before the next switch-out)
            SELECT *, wl IS NOT NULL AND (coalesce(in_line, next_out) IS NULL OR wl < coalesce(in_line, next_out))
                      AS woke,
                      -- a sched_wakeup written by the wakee itself names no waker
                      wpid IS NULL OR wpid <> pid AS other
            FROM j
        ), e AS (  -- the end: back on CPU, else the wake-up, else the trace's end (a lower bound)
            SELECT *, CASE WHEN in_line IS NOT NULL THEN in_ns WHEN woke THEN wns ELSE $end END AS end_at FROM k
        )
        SELECT row_number() OVER (ORDER BY line) - 1, {", ".join(cols[k] for k in BASE_TYPES if k != "seq")} FROM e
        ORDER BY line
        """,
        {**p, "end": trace_end},
    )
    con.unregister("_stalls_nx")
    return execute(con, f"SELECT count(*) FROM {base}").fetchall()[0][0]
