"""Waits and chains of waits, from ftrace (function_graph calls, sched_switch, sched_wakeup/waking).

Derived once per analysis at ingest (`derive`, registered in DERIVE_ANALYSIS: it needs every source of the
analysis, to link a chain that ends in an I/O completion to a block request of a blktrace of the same
capture). Reads (`waits`, `chains`, `calls`) only query the derived tables (except `calls`, which is the
flame chart of one task's raw calls, bounded by a window and a cap).

Rules (all times are the trace's own ns; `line` is the 1-based line of the ftrace file):

Waits (table `waits`, key (source_id, line)):
* scheduler wait (`kind` = "sched"): a `sched_switch` whose prev_state is a sleep (anything but R/R+, and
  not X/Z/x of an exiting task), from the switch-out to the task's next switch-in (`end_line`). If the
  switch-in is not in the trace, the wait ends at its wake-up (inferred); with neither, it is still
  open at the end of the trace (`end_known` false, `end_ns` = the trace's last timestamp, a lower bound).
* call wait (`kind` = "call"), where the scheduler events do not show the sleep: a call of a sleeping
  primitive of `locks.py` (role acquire or sleep; the innermost one when they nest, e.g. `down_write`
  inside `xfs_ilock`) during which the task was never switched out in the trace, and which either
  lasted >= MIN_CALL_SLEEP_NS (the call's own duration is the wait; ends at its exit), or is still open
  and is followed by a wake-up of the task (ends at the wake-up), or is still open and the task shows
  nothing more until the end of the trace (open wait). Call waits are always `inferred`. A trace without any
  sched_switch (function_graph alone) also takes the scheduler's sleeping entry points (SLEEPING_CALLS:
  schedule, schedule_timeout, io_schedule, ...). Calls whose task the trace does not name (no funcgraph-proc
  column, no context-switch marker) are their CPU's pseudo-task's (cpu_tasks.py: pid -1 - cpu, "CPU n (task
  unknown)"), and so are its waits: the evidence says the task is unknown.
* waker: the first `sched_waking`/`sched_wakeup` (success not false) of the task after the wait began and
  before it ended; the waker is the task on whose behalf that line was written (for the idle task, pid 0,
  per CPU). `waker_stack` = the waker's calls open at the wake line.
* stack: the task's calls open at the wait's first line (entered before it, not yet exited), root first;
  found from the last call event of the task before that line (an ASOF join) and the parent chain. Where the
  trace recorded a stack for the wait's line itself (trace-cmd -T, the stacktrace trigger, userstacktrace: the
  stack events right after it on its CPU, as the same task; stacks.event_stacks), that stack is the wait's (user
  frames, then kernel frames), and the evidence names its lines; the same for the waker at its wake-up line.
* lock: `locks.label(stack)` (`xfs_ilock via down_write`); `primitive` is the locks.py entry it came
  from. Without a known primitive on the stack, the innermost frame that is not scheduler plumbing
  (`futex_wait_queue_me`), with `primitive` null.
* holder (inferred, only for locks.py "object" entries that have release functions, e.g. xfs_ilock,
  xfs_buf_lock, page lock, jbd2 handle): of the tasks other than the waiter that returned from an
  acquire function of that object before the waiter blocked and had not called one of its release
  functions since, the one that returned last. Evidence: that acquire call's line and exit time.
"""

from __future__ import annotations

import itertools
import operator
from collections import defaultdict
from concurrent.futures import Future
from typing import Callable, Iterable, Iterator

import numpy as np
import pyarrow as pa

from .. import locks
from .frames import base_name, duration_text, task_text, time_text
from .stacks import event_stacks, stacks_at, stacks_at_many, with_frames

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
MAX_HOLDER_SCAN = 10_000  # acquire calls looked at, backwards, per wait
WAIT_ROWS = 16384  # waits inserted per statement


# what the timeline's summaries need of each wait (timeline.summarize, as soon as the locks are known)
SUMMARY_COLUMNS = ("source_id", "pid", "comm", "start_ns", "end_ns", "lock_key", "lock", "line")


def wait_summary(waits: Iterable[dict]) -> pa.Table:
    """The SUMMARY_COLUMNS of the waits, as they will be stored."""
    values = zip(*map(operator.itemgetter(*SUMMARY_COLUMNS), waits))
    return pa.table(
        [pa.array(v, WAIT_TYPES[k]) for k, v in itertools.zip_longest(SUMMARY_COLUMNS, values, fillvalue=())],
        names=list(SUMMARY_COLUMNS),
    )


def function_names(con, sid: int) -> list[str]:
    """The source's names (fg_names: its functions' and tasks'), by id: a call's func_id indexes it."""
    return [n for (n,) in con.execute("SELECT name FROM fg_names WHERE source_id = ? ORDER BY id", [sid]).fetchall()]


def _lock_function_ids(funcs: list[str]) -> dict[str, tuple[locks.Primitive, str, int]]:
    """The names of sleeping primitives among the source's names: (primitive, role, id)."""
    return {f: (*hit, i) for i, f in enumerate(funcs) if (hit := locks.lookup(f))}


def register_table(con, name: str, columns: dict[str, list], types: dict[str, pa.DataType]) -> None:
    con.register(name, pa.table({k: pa.array(v, type=types[k]) for k, v in columns.items()}))


def fetch_dicts(cur, blank: dict | None = None) -> list[dict]:
    """The rows as dicts; each a copy of `blank` (its other keys) updated with the row, when given."""
    names = [d[0] for d in cur.description]
    if blank is None:
        return [dict(zip(names, r)) for r in cur.fetchall()]
    out = []
    for r in cur.fetchall():
        d = blank.copy()
        d.update(zip(names, r))
        out.append(d)
    return out


def derive_waits(
    con,
    sid: int,
    funcs: list[str],
    calls: Future,
    locked: Callable[[list[dict]], None] | None = None,
    on_reader: Callable[..., Future] | None = None,
) -> tuple[list[dict], Iterator[pa.Table]]:
    """Derives the source's waits: as dicts, in file order, and as the rows of `waits` (made as they are read).
    `funcs`: the source's names by id (function_names); `calls`: its stacks.call_index, being read meanwhile; `locked`(the
    waits), called once their locks are known (before their holders are looked for); `on_reader`(fn, *args): fn(a
    cursor of its own on the staged rows, *args) run in another thread, when given: the stacks the trace recorded
    are read there, beside the look-ups of the stacks of calls."""
    p = {"sid": sid}
    trace_end = con.execute(
        "SELECT max(t) FROM (SELECT max(greatest(entry_ns, exit_ns)) t FROM fg_call_rows WHERE source_id = $sid"
        " UNION ALL SELECT max(t_ns) FROM sched_switch WHERE source_id = $sid"
        " UNION ALL SELECT max(t_ns) FROM sched_wakeup WHERE source_id = $sid"
        " UNION ALL SELECT max(t_ns) FROM trace_events WHERE source_id = $sid)",
        p,
    ).fetchall()[0][0]
    if trace_end is None:
        return [], iter(())
    lockfn = _lock_function_ids(funcs)
    # without scheduler events, a long call of the scheduler's sleeping entry points is a sleep too (its task may be
    # unknown: function_graph without funcgraph-proc keeps calls per CPU)
    no_sched = not con.execute("SELECT count(*) FROM sched_switch WHERE source_id = $sid", p).fetchall()[0][0]
    candidates = {f: (h[2], h[1]) for f, h in lockfn.items()}
    if no_sched:
        candidates.update((f, (i, "sleep")) for i, f in enumerate(funcs) if base_name(f) in SLEEPING_CALLS)
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
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _stalls_outs AS SELECT line, prev_pid AS pid FROM sched_switch"
        " WHERE source_id = $sid AND prev_pid IS NOT NULL",
        p,
    )
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _stalls_wk AS SELECT line, t_ns, cpu, pid, waker_pid, waker_comm FROM sched_wakeup"
        " WHERE source_id = $sid AND pid IS NOT NULL AND t_ns IS NOT NULL AND success IS NOT FALSE",
        p,
    )

    # scheduler waits: switch-out asleep -> next switch-in; first wake-up after the switch-out (its end and
    # evidence written by DuckDB: a row is then a wait as is)
    blank = dict.fromkeys(_WAIT_KEYS)  # every wait has every column, as read back
    blank["innermost"] = None
    waits = fetch_dicts(
        con.execute(
            f"""
        WITH o AS (
            SELECT line, t_ns, cpu, prev_pid AS pid, prev_comm AS comm, prev_state AS state FROM sched_switch
            WHERE source_id = $sid AND prev_pid IS NOT NULL AND prev_pid <> 0 AND t_ns IS NOT NULL
              AND coalesce(prev_state, '') <> '' AND NOT regexp_matches(prev_state, '^[RXZx]')
        ), i AS (SELECT line, t_ns, next_pid AS pid FROM sched_switch WHERE source_id = $sid AND next_pid IS NOT NULL
        ), j AS (
            -- back on CPU: the next switch-in, unless the task was switched out again before it (a lost switch-in)
            SELECT o.*, CASE WHEN n.line IS NULL OR i.line < n.line THEN i.line END AS in_line, i.t_ns AS in_ns,
                   n.line AS next_out, w.line AS wl, w.t_ns AS wns, w.cpu AS wcpu, w.waker_pid AS wpid,
                   w.waker_comm AS wcomm, format('switched out ({{}}) at line {{}}', o.state, o.line) AS out
            FROM o ASOF LEFT JOIN i ON o.pid = i.pid AND i.line > o.line
                   ASOF LEFT JOIN _stalls_outs n ON o.pid = n.pid AND n.line > o.line
                   ASOF LEFT JOIN _stalls_wk w ON o.pid = w.pid AND w.line > o.line
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
        SELECT {", ".join(f"{v} AS {k}" for k, v in _SCHED_WAIT.items())} FROM e
        ORDER BY line
        """,
            {**p, "end": trace_end},
        ),
        blank,
    )  # in file order: what follows (also_waiting lists, ...) must not depend on threads

    # call waits: long (or open) calls of sleeping primitives with no switch-out of the task inside them
    if candidates:
        kept = fetch_dicts(
            con.execute(
                """
            WITH c AS (
                SELECT c.line, c.pid, n.name AS comm, c.cpu, f.func, c.entry_ns, c.exit_ns, c.duration_ns, c.exit_line,
                       c.partial AND c.exit_line = c.line AS exit_only
                FROM fg_call_rows c JOIN _stalls_fn f USING (func_id)
                LEFT JOIN fg_names n ON n.source_id = c.source_id AND n.id = c.comm_id
                WHERE c.source_id = $sid AND f.role <> 'release' AND c.pid IS NOT NULL AND c.entry_ns IS NOT NULL
                  AND (c.exit_line IS NULL OR c.duration_ns >= $min)
            ), j AS (  -- a call that returned, unless switched out inside it (the scheduler events tell that sleep);
                       -- an open call never switched out
                SELECT c.*, n.line AS next_out, w.line AS wake_line, w.t_ns AS wake_ns, w.cpu AS wake_cpu,
                       w.waker_pid, w.waker_comm
                FROM c ASOF LEFT JOIN _stalls_outs n ON c.pid = n.pid AND n.line > c.line
                       ASOF LEFT JOIN _stalls_wk w ON c.pid = w.pid AND w.line > c.line
                WHERE CASE WHEN c.exit_line IS NOT NULL THEN n.line IS NULL OR n.line >= c.exit_line
                           ELSE n.line IS NULL END
            ), last AS (  -- the last line of each task with an open call not followed by a wake-up (a full scan:
                          -- only for those tasks, usually none)
                SELECT pid, max(l) AS last_line FROM (
                    SELECT pid, greatest(line, coalesce(exit_line, line)) l FROM fg_call_rows WHERE source_id = $sid
                    UNION ALL SELECT pid, line FROM trace_events WHERE source_id = $sid)
                WHERE pid IN (SELECT pid FROM j WHERE exit_line IS NULL AND wake_line IS NULL) GROUP BY pid
            )
            SELECT j.*, last.last_line FROM j LEFT JOIN last ON last.pid = j.pid
            -- an open call: followed by a wake-up, or by nothing more of its task until the trace ends
            WHERE j.exit_line IS NOT NULL OR j.wake_line IS NOT NULL
                  OR last.last_line <= j.line AND j.entry_ns <= $latest
            ORDER BY j.pid, j.line
            """,
                {**p, "min": MIN_CALL_SLEEP_NS, "latest": trace_end - MIN_CALL_SLEEP_NS},
            )
        )
        # innermost: drop a call that holds the next candidate of its task. A call whose entry the trace missed (its
        # exit line only: it began before the first line) holds the ones that returned before it: in line order each
        # call spans (its entry line, or -1 without one) .. (its exit line, or the end); outer calls first
        kept.sort(key=lambda c: (c["pid"], -1 if c["exit_only"] else c["line"], -(c["exit_line"] or 1 << 62)))
        for i, c in enumerate(kept):
            nxt = kept[i + 1] if i + 1 < len(kept) else None
            if (
                nxt
                and nxt["pid"] == c["pid"]
                and (c["exit_line"] is None or (nxt["exit_line"] or 1 << 62) <= c["exit_line"])
            ):
                continue
            what = f"{c['func']}() (line {c['line']})"
            w = {
                **blank,
                "source_id": sid,
                "line": c["line"],
                "kind": "call",
                "pid": c["pid"],
                "comm": c["comm"],
                "cpu": c["cpu"],
                "start_ns": c["entry_ns"],
                "state": None,
                "innermost": c["line"],
                "inferred": True,
            }
            woke = c["wake_line"] is not None and (c["exit_line"] is None or c["wake_line"] < c["exit_line"])
            if c["exit_line"] is not None:
                dur = c["duration_ns"] if c["duration_ns"] is not None else c["exit_ns"] - c["entry_ns"]
                w.update(
                    end_ns=c["exit_ns"],
                    duration_ns=dur,
                    end_line=c["exit_line"],
                    end_known=True,
                    evidence=f"no sched_switch of the task in the trace: inferred from the call {what}, which "
                    f"returned after {duration_text(dur)} (line {c['exit_line']})",
                )
                if not woke:
                    w["evidence"] += "; no wake-up line for it in the trace"
            elif woke:
                w.update(
                    end_ns=c["wake_ns"],
                    end_line=c["wake_line"],
                    end_known=True,
                    evidence=f"no sched_switch of the task in the trace: inferred from the call {what}, still open; "
                    f"ends at its wake-up (line {c['wake_line']})",
                )
            else:
                w.update(
                    end_ns=trace_end,
                    end_line=None,
                    end_known=False,
                    evidence=f"no sched_switch of the task in the trace: inferred from the call {what}, still open "
                    "and the task shows nothing more until the end of the trace: duration is a lower bound",
                )
            if woke:
                w.update(
                    wake_line=c["wake_line"],
                    wake_ns=c["wake_ns"],
                    wake_cpu=c["wake_cpu"],
                    waker_pid=c["waker_pid"],
                    waker_comm=c["waker_comm"],
                )
            if c["pid"] < 0:  # a CPU's pseudo-task (cpu_tasks.py)
                w["evidence"] = (
                    f"the task is unknown (the lines name none: funcgraph-proc off), this is CPU {c['cpu']}'s call; "
                    + w["evidence"]
                )
            waits.append(w)
        del kept
    if not waits:
        return [], iter(())
    for w in waits:
        if w["duration_ns"] is None:
            w["duration_ns"] = w["end_ns"] - w["start_ns"]
        if w["waker_pid"] is not None and w["waker_pid"] == w["pid"]:  # sched_wakeup written by the wakee
            w["waker_pid"] = w["waker_comm"] = None

    # stacks: of each wait at its line and of each waker at its wake line (one scan of the calls in line order, here),
    # the ones the trace recorded (on the reader, meanwhile)
    n = len(waits)
    woken = [i for i, w in enumerate(waits) if w["waker_pid"] is not None]
    at_lines = [w["line"] for w in waits] + [waits[i]["wake_line"] for i in woken]
    recording = on_reader(event_stacks, sid, at_lines) if on_reader else None
    calls = calls.result()
    st, wst = stacks_at_many(
        con,
        sid,
        calls,
        [
            (
                [w["pid"] for w in waits],
                [w["cpu"] for w in waits],
                [w["line"] for w in waits],
                [w["innermost"] for w in waits],
            ),
            (
                [waits[i]["waker_pid"] for i in woken],
                [waits[i]["wake_cpu"] for i in woken],
                [waits[i]["wake_line"] for i in woken],
                None,
            ),
        ],
    )  # (one scan of the calls for both)
    # stacks the trace recorded itself (-T, the stacktrace trigger): at the switch-out and at the wake-up line
    recorded = recording.result() if recording else event_stacks(con, sid, at_lines)
    if recorded:
        mine = {i: recorded[w["line"]] for i, w in enumerate(waits) if w["line"] in recorded}
        st = with_frames(st, n, {i: s.frames for i, s in mine.items()})
        for i, s in mine.items():
            waits[i]["evidence"] = f"{waits[i]['evidence']}; {s.evidence('stack')}"
        theirs = {j: recorded[waits[i]["wake_line"]] for j, i in enumerate(woken) if waits[i]["wake_line"] in recorded}
        wst = with_frames(wst, len(woken), {j: s.frames for j, s in theirs.items()})
        for j, s in theirs.items():
            waits[woken[j]]["evidence"] = f"{waits[woken[j]]['evidence']}; the waker's {s.evidence('stack')}"
    need_holder: dict[str, list[int]] = defaultdict(list)
    prims = {p.name: p for p in locks.PRIMITIVES}
    for i, (w, reason) in enumerate(zip(waits, st.reasons(n))):
        w["stack"] = st.frames(i)
        w["lock"], w["lock_key"], w["primitive"], obj = reason
        if obj is not None and prims[obj].release:
            need_holder[obj].append(i)
    for j, i in enumerate(woken):
        waits[i]["waker_stack"] = wst.frames(j)
    if locked:
        locked(waits)
    _infer_holders(con, sid, waits, need_holder, prims, lockfn)
    held = [i for i, w in enumerate(waits) if w["holder_pid"] is not None]
    hst = stacks_at(
        con, sid, calls, [waits[i]["holder_pid"] for i in held], [None] * len(held), [waits[i]["line"] for i in held]
    )
    for j, i in enumerate(held):
        if hst.found(j):
            waits[i]["holder_stack"] = hst.frames(j)
    # the stack columns straight from the stacks' arrays (null: no waker; no holder, or no call of it found)
    every, no, waker, holder = np.arange(n), np.zeros(n, bool), np.full(n, -1), np.full(n, -1)
    waker[woken] = np.arange(len(woken))
    holder[held] = np.where(np.diff(hst.off) > 0, np.arange(len(held)), -1)

    def tables() -> Iterator[pa.Table]:  # a slice at a time: all at once, the stacks' strings would be in memory twice
        for a in range(0, n, WAIT_ROWS):
            r = slice(a, a + WAIT_ROWS)
            yield _wait_rows_table(
                waits[r],
                {
                    "stack_text": st.text(every[r], no[r]),
                    "waker_stack_text": wst.text(waker[r], waker[r] < 0),
                    "holder_stack_text": hst.text(holder[r], holder[r] < 0),
                },
            )

    for name in ("_stalls_outs", "_stalls_wk"):
        con.execute(f"DROP TABLE IF EXISTS {name}")
    con.unregister("_stalls_fn")
    return waits, tables()


def _infer_holders(con, sid: int, waits: list[dict], need: dict[str, list[int]], prims: dict, lockfn: dict) -> None:
    """Inferred holders (see the module's rules): one SQL pass over the acquire calls of the objects
    waited on, with each acquire's next release by the same task; then a short backward scan per wait,
    all of an object's waits at once."""
    if not need:
        return
    # match the trace's own spellings (with .isra.0 etc.) of those functions
    objs = list(need)
    spelled = [
        (f, i, objs.index(p.name), role)
        for f, (p, role, i) in lockfn.items()
        if p.name in need and role in ("acquire", "release")
    ]
    if not spelled:
        return
    register_table(
        con,
        "_stalls_hf",
        dict(zip(("func", "func_id", "obj", "role"), map(list, zip(*spelled)))),
        {"func": pa.string(), "func_id": pa.int32(), "obj": pa.int32(), "role": pa.string()},
    )
    t = con.sql(
        f"""
        WITH a AS (
            SELECT f.obj, c.pid, n.name AS comm, c.line, f.func, c.exit_line, c.exit_ns
            FROM fg_call_rows c JOIN _stalls_hf f USING (func_id)
            LEFT JOIN fg_names n ON n.source_id = c.source_id AND n.id = c.comm_id
            WHERE c.source_id = $sid AND f.role = 'acquire' AND c.exit_line IS NOT NULL AND c.pid IS NOT NULL
        ), r AS (
            SELECT f.obj, c.pid, c.line FROM fg_call_rows c JOIN _stalls_hf f USING (func_id)
            WHERE c.source_id = $sid AND f.role = 'release' AND c.pid IS NOT NULL
        )
        SELECT a.obj, a.pid, a.comm, a.line, a.func, a.exit_line, a.exit_ns, r.line AS rel_line,
               coalesce(r.line, {np.iinfo(np.int64).max}) AS rel_or_never
        FROM a ASOF LEFT JOIN r ON a.obj = r.obj AND a.pid = r.pid AND r.line > a.exit_line
        ORDER BY a.obj, a.exit_line
        """,
        params={"sid": sid},
    ).to_arrow_table()
    con.unregister("_stalls_hf")
    obj, pid, exit_line, rel = (t.column(c).to_numpy() for c in ("obj", "pid", "exit_line", "rel_or_never"))
    for k, (name, idxs) in enumerate(need.items()):
        a, b = np.searchsorted(obj, [k, k + 1])  # the object's acquires, by exit line
        at = np.array([waits[i]["line"] for i in idxs], np.int64)
        who = np.array([waits[i]["pid"] for i in idxs], np.int64)
        j = np.searchsorted(exit_line[a:b], at) + a - 1  # the last acquire that returned before the wait began
        stop = np.maximum(j - MAX_HOLDER_SCAN, a - 1)
        hit = np.full(len(idxs), -1)
        todo = np.flatnonzero(j > stop)
        while len(todo):  # back, past the waiter's own acquires and those released before the wait began
            jj = j[todo]
            ok = (pid[jj] != who[todo]) & (rel[jj] >= at[todo])
            hit[todo[ok]] = jj[ok]
            todo = todo[~ok]
            j[todo] -= 1
            todo = todo[j[todo] > stop[todo]]
        found = np.flatnonzero(hit >= 0)
        rows = t.select(["pid", "comm", "line", "func", "exit_ns", "rel_line"]).take(hit[found]).to_pylist()
        rel_names = "/".join(prims[name].release)
        for i, h in zip((idxs[f] for f in found.tolist()), rows):
            waits[i].update(
                holder_pid=h["pid"],
                holder_comm=h["comm"],
                holder_line=h["line"],
                holder_ns=h["exit_ns"],
                holder_evidence=f"inferred holder: {task_text(h['comm'], h['pid'])} returned from {h['func']}() (line "
                f"{h['line']}) at {time_text(h['exit_ns'])}, before this wait began, and did not call "
                f"{rel_names}() "
                + (f"until line {h['rel_line']}" if h["rel_line"] is not None else "in the rest of the trace"),
            )


_SCHED_WAIT = {  # the columns of a scheduler wait, in SQL over derive_waits' scheduler rows
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
WAIT_TYPES = {
    "source_id": pa.int32(),
    "line": pa.int64(),
    "kind": pa.string(),
    "pid": pa.int64(),
    "comm": pa.string(),
    "cpu": pa.int32(),
    "start_ns": pa.int64(),
    "end_ns": pa.int64(),
    "duration_ns": pa.int64(),
    "end_known": pa.bool_(),
    "end_line": pa.int64(),
    "state": pa.string(),
    "lock": pa.string(),
    "lock_key": pa.string(),
    "primitive": pa.string(),
    "stack_text": pa.string(),
    "inferred": pa.bool_(),
    "evidence": pa.string(),
    "waker_pid": pa.int64(),
    "waker_comm": pa.string(),
    "waker_stack_text": pa.string(),
    "wake_line": pa.int64(),
    "wake_ns": pa.int64(),
    "wake_cpu": pa.int32(),
    "holder_pid": pa.int64(),
    "holder_comm": pa.string(),
    "holder_line": pa.int64(),
    "holder_ns": pa.int64(),
    "holder_evidence": pa.string(),
    "holder_stack_text": pa.string(),
}


def _wait_rows_table(waits: list[dict], stacks: dict[str, pa.Array]) -> pa.Table:
    scalars = {k: t for k, t in WAIT_TYPES.items() if k not in stacks}
    values = zip(*map(operator.itemgetter(*scalars), waits))  # column by column
    return pa.table({**{k: pa.array(v, t) for (k, t), v in zip(scalars.items(), values)}, **stacks})


_WAIT_KEYS = [*WAIT_TYPES, "stack", "waker_stack", "holder_stack"]  # a wait's dict: its row, its stacks as lists


def insert_waits(con, tables: Iterable[pa.Table]) -> None:
    cols = ", ".join(WAIT_TYPES)
    for table in tables:
        con.register("_stalls_w", table)
        con.execute(f"INSERT INTO wait_rows ({cols}) SELECT {cols} FROM _stalls_w")
        con.unregister("_stalls_w")


def span(con, source_id: int, report) -> tuple[int | None, int | None]:
    """An ftrace source's time span (ns): its first and last timestamp of any kind."""
    return con.execute(
        "SELECT min(lo), max(hi) FROM ("
        " SELECT min(coalesce(entry_ns, exit_ns)) lo, max(coalesce(exit_ns, entry_ns)) hi FROM fg_call_rows"
        " WHERE source_id = $s"
        " UNION ALL SELECT min(t_ns), max(t_ns) FROM sched_switch WHERE source_id = $s"
        " UNION ALL SELECT min(t_ns), max(t_ns) FROM sched_wakeup WHERE source_id = $s"
        " UNION ALL SELECT min(t_ns), max(t_ns) FROM trace_events WHERE source_id = $s)",
        {"s": source_id},
    ).fetchall()[0]
