"""Calls whose task the trace does not name: a per-CPU pseudo-task each, labelled as such.

A tracefs function_graph file without the funcgraph-proc column names no task on its lines. The tokenizer follows
the context-switch markers (` 0)  platfor-3210  =>  vmstat-2854`) where the file has them: from a marker on, a CPU's
lines are the marker's next task's, and the calls still open at a CPU's first marker are its previous task's.
What is left without a task (no marker on that CPU, or calls that returned before its first one) is kept per CPU
(`pid` null, `cpu` set). This step, run per ftrace source once its rows are staged (derive/pipeline.DERIVE_STAGED:
committed with them, so that the derive steps' reader cursor sees it), gives those calls the pseudo-task of their
CPU, so that waits, timeline lanes and the calls view work per CPU:

* `pid` = PSEUDO_PID(cpu) = -1 - cpu: negative, never a Linux pid (pid 0 is each CPU's idle task), so a pseudo-task
  can be told from a task everywhere (`pid < 0`; the waits' `pid`, the timeline's lanes, the calls' filter);
* `comm` = "CPU n (task unknown)" (a name added to the source's fg_names), which is what every view shows for it.

Calls without a CPU either (neither column shown) stay without a task: they make no wait and no lane.
"""

from __future__ import annotations

import pyarrow as pa

from ..db import execute


def pseudo_pid(cpu: int) -> int:
    """The pseudo-task id of a CPU's calls of unknown task: negative, never a Linux pid."""
    return -1 - cpu


def pseudo_comm(cpu: int) -> str:
    return f"CPU {cpu} (task unknown)"


def name_cpu_tasks(con, source_id: int) -> int:
    """Gives the source's calls without a task (pid null, CPU known) their CPU's pseudo-task; how many CPUs had such
    calls. A source whose calls all name their task costs one scan of two columns."""
    cpus = [
        c
        for (c,) in execute(
            con,
            "SELECT DISTINCT cpu FROM fg_call_rows WHERE source_id = ? AND pid IS NULL AND cpu IS NOT NULL"
            " ORDER BY cpu",
            [source_id],
        ).fetchall()
    ]
    if not cpus:
        return 0
    next_id = "SELECT coalesce(max(id), -1) + 1 FROM fg_names WHERE source_id = ?"
    base = execute(con, next_id, [source_id]).fetchall()[0][0]
    names = pa.table(
        {
            "cpu": pa.array(cpus, pa.int32()),
            "pid": pa.array([pseudo_pid(c) for c in cpus], pa.int64()),
            "comm_id": pa.array(range(base, base + len(cpus)), pa.int32()),
            "name": pa.array([pseudo_comm(c) for c in cpus], pa.string()),
        }
    )
    con.register("_cpu_tasks", names)
    try:
        execute(
            con,
            "INSERT INTO fg_names (source_id, id, name) SELECT $sid, comm_id, name FROM _cpu_tasks",
            {"sid": source_id},
        )
        execute(
            con,
            "UPDATE fg_call_rows SET pid = t.pid, comm_id = t.comm_id FROM _cpu_tasks t"
            " WHERE fg_call_rows.source_id = $sid AND fg_call_rows.pid IS NULL AND fg_call_rows.cpu = t.cpu",
            {"sid": source_id},
        )
    finally:
        con.unregister("_cpu_tasks")
    return len(cpus)
