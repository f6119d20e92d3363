"""Call waits (`kind` = "call"), where the scheduler events do not show the sleep: a call of a sleeping primitive of
locks.py, or without any sched_switch in the trace of a scheduler's sleeping entry point (SLEEPING_CALLS), during
which its task was never switched out (the rules: derive/waits.py's docstring). `candidates` names the functions,
`add` writes their waits to the source's base table.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import locks
from ..db import arrow, execute
from ..distinct import distinct
from . import wait_rows
from .arrays import next_after
from .frames import duration_text
from .sql_io import register_table
from .wait_rows import BASE_TYPES, WAIT_ROWS

# the scheduler's entry points a task sleeps in: a long call of one is a wait when the trace has no sched_switch
SLEEPING_CALLS = frozenset(
    {
        "schedule",
        "schedule_timeout",
        "schedule_hrtimeout",
        "schedule_hrtimeout_range",
        "schedule_hrtimeout_range_clock",
        "schedule_preempt_disabled",
        "io_schedule",
        "io_schedule_timeout",
    }
)
MIN_CALL_SLEEP_NS = 1_000_000  # a lock call this long with no switch-out in the trace is taken as a sleep


def candidates(funcs: list[str], lockfn: dict[str, tuple[locks.Primitive, str, int]], no_sched: bool) -> dict:
    """The functions whose calls may be waits, name -> (id, role): the sleeping primitives among the source's names
    (`lockfn`: lock_function_ids), and without scheduler events (`no_sched`) the scheduler's sleeping entry points
    (their task may be unknown: function_graph without funcgraph-proc keeps calls per CPU)."""
    found = {f: (h[2], h[1]) for f, h in lockfn.items()}
    if no_sched:
        found.update((f, (i, "sleep")) for i, f in enumerate(funcs) if locks.base_name(f) in SLEEPING_CALLS)
    return found


def add(con, sid: int, base: str, seq: int, candidates: dict, trace_end: int) -> int:
    """Adds the call waits to the base table (wait_rows.base_table), after the waits numbered below `seq`; returns
    how many. `candidates`: the functions whose calls may be waits (candidates()); the tables of the tasks' switch-outs
    and wake-ups, `_stalls_outs` and `_stalls_wk`, made by the caller (waits.stage)."""
    register_table(
        con,
        "_stalls_fn",
        {
            "func_id": [h[0] for h in candidates.values()],
            "func": list(candidates),
            "role": [h[1] for h in candidates.values()],
        },
        {"func_id": pa.int32(), "func": pa.string(), "role": pa.string()},
    )
    try:
        c = arrow(
            con,
            """
            SELECT c.line, c.pid, n.name AS comm, c.cpu, f.func, c.entry_ns, c.exit_ns, c.duration_ns, c.exit_line,
                   c.partial AND c.exit_line = c.line AS exit_only
            FROM fg_call_rows c JOIN _stalls_fn f USING (func_id)
            LEFT JOIN fg_names n ON n.source_id = c.source_id AND n.id = c.comm_id
            WHERE c.source_id = $sid AND f.role <> 'release' AND c.pid IS NOT NULL AND c.entry_ns IS NOT NULL
              AND (c.exit_line IS NULL OR c.duration_ns >= $min)
            """,
            params={"sid": sid, "min": MIN_CALL_SLEEP_NS},
        )
    finally:
        con.unregister("_stalls_fn")
    t = _unswitched(con, sid, c, trace_end)
    if not t.num_rows:
        return 0
    cpid = t.column("pid").to_numpy()
    exit_line = t.column("exit_line").fill_null(1 << 62).to_numpy()
    has_exit = t.column("exit_line").is_valid().to_numpy(zero_copy_only=False)
    # drop a call that holds the next candidate of its task
    holds = np.zeros(len(cpid), bool)
    holds[:-1] = (cpid[1:] == cpid[:-1]) & (~has_exit[:-1] | (exit_line[1:] <= exit_line[:-1]))
    t = t.filter(pa.array(~holds))
    count = 0
    for a in range(0, t.num_rows, WAIT_ROWS):
        part = t.slice(a, WAIT_ROWS)
        cols = _call_wait_columns(sid, part, trace_end)
        cols["seq"] = pa.array(np.arange(seq + count, seq + count + part.num_rows), pa.int64())
        wait_rows.insert_arrow(con, base, pa.table({k: cols[k].cast(typ) for k, typ in BASE_TYPES.items()}))
        count += part.num_rows
    return count


_NO_SWITCH = "no sched_switch of the task in the trace: inferred from the call "


def _unswitched(con, sid: int, c: pa.Table, trace_end: int) -> pa.Table:
    """The candidates c (calls of sleeping primitives) kept, each with its task's first wake-up after its entry
    (wake_line, wake_ns, wake_cpu, waker_pid, waker_comm): a call that returned, unless its task was switched out
    inside it (the scheduler events tell that sleep); an open call never switched out, followed by a wake-up, or by
    nothing more of its task until the trace ends. Innermost first: a call that holds the next candidate of its
    task is dropped (by the caller); a call whose entry the trace missed (its exit line only: it began before the
    first line) holds the ones that returned before it: in line order each call spans (its entry line, or -1
    without one) .. (its exit line, or the end); by task, outer calls first."""
    pid, line = (c.column(k).to_numpy() for k in ("pid", "line"))
    outs = arrow(con, "SELECT line, pid FROM _stalls_outs")
    wk = arrow(con, "SELECT line, t_ns, cpu, pid, waker_pid, waker_comm FROM _stalls_wk")
    j = next_after(pid, line, outs.column("pid").to_numpy(), outs.column("line").to_numpy())
    next_out = np.where(j >= 0, outs.column("line").to_numpy()[np.maximum(j, 0)] if len(outs) else 0, -1)
    has_exit = c.column("exit_line").is_valid().to_numpy(zero_copy_only=False)
    exit_line = c.column("exit_line").fill_null(0).to_numpy()
    keep = np.where(has_exit, (next_out < 0) | (next_out >= exit_line), next_out < 0)
    w = next_after(pid, line, wk.column("pid").to_numpy(), wk.column("line").to_numpy())
    at = pa.array(w, mask=w < 0)
    names = {"line": "wake_line", "t_ns": "wake_ns", "cpu": "wake_cpu", "waker_pid": "waker_pid"}
    t = c.append_column("waker_comm", wk.column("waker_comm").take(at))
    for k, name in reversed(names.items()):
        t = t.add_column(c.num_columns, name, wk.column(k).take(at))
    t = t.filter(pa.array(keep))
    # an open call not woken: kept when its task shows nothing more until the end of the trace (a full scan: only
    # for those tasks, usually none)
    open_ = t.column("exit_line").is_null().to_numpy(zero_copy_only=False)
    lone = open_ & t.column("wake_line").is_null().to_numpy(zero_copy_only=False)
    keep = ~lone
    if lone.any():
        tpid = t.column("pid").to_numpy()
        con.register("_stalls_lone", pa.table({"pid": distinct(tpid[lone])}))
        try:
            last = execute(
                con,
                """
                SELECT pid, max(l) AS last_line FROM (
                    SELECT pid, greatest(line, coalesce(exit_line, line)) l FROM fg_call_rows WHERE source_id = $sid
                    UNION ALL SELECT pid, line FROM trace_events WHERE source_id = $sid)
                WHERE pid IN (SELECT pid FROM _stalls_lone) GROUP BY pid
                """,
                params={"sid": sid},
            ).fetchall()
        finally:
            con.unregister("_stalls_lone")
        last_line = dict(last)
        tline, entry = t.column("line").to_numpy(), t.column("entry_ns").to_numpy()
        for k in np.flatnonzero(lone).tolist():
            got = last_line.get(int(tpid[k]))
            keep[k] = got is not None and got <= tline[k] and entry[k] <= trace_end - MIN_CALL_SLEEP_NS
    t = t.filter(pa.array(keep))
    exit_only = t.column("exit_only").fill_null(False).to_numpy(zero_copy_only=False)
    tline = t.column("line").to_numpy()
    order = np.lexsort(
        (
            tline,
            -t.column("exit_line").fill_null(1 << 62).to_numpy(),
            np.where(exit_only, -1, tline),
            t.column("pid").to_numpy(),
        )
    )
    return t.take(order)


def _call_wait_columns(sid: int, c: pa.Table, trace_end: int) -> dict[str, pa.Array]:
    """The waits of the call candidates kept (c: a row each), as their base table columns (but seq). A call that
    returned: from its entry to its exit; else, woken (a wake-up of its task after its entry): until the wake-up;
    else open until the end of the trace (a lower bound). The evidence says which, and names the call."""
    col = {k: c.column(k).combine_chunks() for k in c.column_names}
    n = c.num_rows
    returned = col["exit_line"].is_valid()
    exit_line = col["exit_line"].fill_null(np.iinfo(np.int64).max)
    woke = pc.and_(col["wake_line"].is_valid(), pc.less(col["wake_line"].fill_null(0), exit_line))
    woken = pc.and_(pc.invert(returned), woke)
    dur = pc.coalesce(col["duration_ns"], pc.subtract(col["exit_ns"], col["entry_ns"]))
    end_ns = pc.if_else(returned, col["exit_ns"], pc.if_else(woke, col["wake_ns"], pa.scalar(trace_end, pa.int64())))
    duration = pc.coalesce(pc.if_else(returned, dur, pa.nulls(n, pa.int64())), pc.subtract(end_ns, col["entry_ns"]))
    null_int = pa.nulls(n, pa.int64())
    what = pc.binary_join_element_wise(col["func"], "() (line ", col["line"].cast(pa.string()), ")", "")
    returned_l, woke_l = returned.to_pylist(), woke.to_pylist()
    texts = [
        f", which returned after {duration_text(d)} (line {x})" + ("" if k else "; no wake-up line for it in the trace")
        if r
        else (f", still open; ends at its wake-up (line {wl})" if k else _STILL_OPEN)
        for r, k, d, x, wl in zip(
            returned_l, woke_l, dur.to_pylist(), col["exit_line"].to_pylist(), col["wake_line"].to_pylist()
        )
    ]
    evidence = pc.binary_join_element_wise(_NO_SWITCH, what, pa.array(texts, pa.string()), "")
    unknown = pc.less(col["pid"], 0)  # a CPU's pseudo-task (cpu_tasks.py)
    cpu_task = pc.binary_join_element_wise(_UNKNOWN_TASK, col["cpu"].cast(pa.string()), "'s call; ", "")
    evidence = pc.if_else(unknown, pc.binary_join_element_wise(cpu_task, evidence, ""), evidence)
    # a sched_wakeup written by the wakee names no waker
    other = pc.and_(woke, pc.invert(pc.equal(col["waker_pid"], col["pid"]).fill_null(False)))
    return {
        "source_id": pa.array(np.full(n, sid), pa.int32()),
        "line": col["line"],
        "kind": pa.array(np.full(n, "call", object), pa.string()),
        "pid": col["pid"],
        "comm": col["comm"],
        "cpu": col["cpu"],
        "start_ns": col["entry_ns"],
        "end_ns": end_ns,
        "duration_ns": duration,
        "end_known": pc.or_(returned, woke),
        "end_line": pc.if_else(returned, col["exit_line"], pc.if_else(woken, col["wake_line"], null_int)),
        "state": pa.nulls(n, pa.string()),
        "inferred": pa.array(np.ones(n, bool)),
        "evidence": evidence,
        "wake_line": pc.if_else(woke, col["wake_line"], null_int),
        "wake_ns": pc.if_else(woke, col["wake_ns"], null_int),
        "wake_cpu": pc.if_else(woke, col["wake_cpu"].cast(pa.int32()), pa.nulls(n, pa.int32())),
        "waker_pid": pc.if_else(other, col["waker_pid"], null_int),
        "waker_comm": pc.if_else(other, col["waker_comm"], pa.nulls(n, pa.string())),
        "innermost": col["line"],
    }


_STILL_OPEN = ", still open and the task shows nothing more until the end of the trace: duration is a lower bound"
_UNKNOWN_TASK = "the task is unknown (the lines name none: funcgraph-proc off), this is CPU "
