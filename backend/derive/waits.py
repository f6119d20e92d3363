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
  stack events right after it on its CPU, as the same task; recorded.event_stacks), that stack is the wait's (user
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

from collections import defaultdict
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import locks, wait_kinds
from . import wait_rows
from .frames import base_name, duration_text, is_io_completion
from .recorded import event_stacks
from .stacks import concat_stacks, name_kinds, stacks_at, stacks_at_many, with_frames
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
    locked: Callable[[pa.Table], None] | None = None,
    on_reader: Callable[..., Future] | None = None,
) -> SourceWaits | None:
    """Derives the source's waits (None: it has none): staged in a temporary table of their own columns, in file
    order (scheduler waits by line, then call waits by task), what the chains need of them as arrays, and `insert`,
    which writes their `wait_rows` a window at a time. `funcs`: the source's names by id (function_names); `calls`:
    its stacks.call_index, being read meanwhile; `locked`(their summary: wait_rows.SUMMARY_COLUMNS), called once
    their locks (and holders) are known; `on_reader`(fn, *args): fn(a cursor of its own on
    the staged rows, *args) run in another thread, when given: the stacks the trace recorded are read there, before
    the scan of the calls for the stacks (its windows' locks use the stacks recorded for their waits)."""
    p = {"sid": sid}
    trace_end = con.execute(
        "SELECT max(t) FROM (SELECT max(greatest(entry_ns, exit_ns)) t FROM fg_call_rows WHERE source_id = $sid"
        " UNION ALL SELECT max(t_ns) FROM sched_switch WHERE source_id = $sid"
        " UNION ALL SELECT max(t_ns) FROM sched_wakeup WHERE source_id = $sid"
        " UNION ALL SELECT max(t_ns) FROM trace_events WHERE source_id = $sid)",
        p,
    ).fetchall()[0][0]
    if trace_end is None:
        return None
    lockfn = _lock_function_ids(funcs)
    # without scheduler events, a long call of the scheduler's sleeping entry points is a sleep too (its task may be
    # unknown: function_graph without funcgraph-proc keeps calls per CPU)
    no_sched = not con.execute("SELECT count(*) FROM sched_switch WHERE source_id = $sid", p).fetchall()[0][0]
    candidates = {f: (h[2], h[1]) for f, h in lockfn.items()}
    if no_sched:
        candidates.update((f, (i, "sleep")) for i, f in enumerate(funcs) if base_name(f) in SLEEPING_CALLS)
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
    base = wait_rows.base_table(con, sid)
    # scheduler waits: switch-out asleep -> next switch-in; first wake-up after the switch-out (a row is then a wait
    # as is), in file order: what follows (also_waiting lists, ...) must not depend on threads
    cols = {**_SCHED_WAIT, "innermost": "NULL"}
    asleep = (
        "FROM sched_switch WHERE source_id = $sid AND prev_pid IS NOT NULL AND prev_pid <> 0 AND t_ns IS NOT NULL"
        " AND coalesce(prev_state, '') <> '' AND NOT regexp_matches(prev_state, '^[RXZx]')"
    )
    # each switch-out's next switch-in, next switch-out and first wake-up of its task (on arrays: DuckDB's ASOF
    # joins cost ~3x the rest of the statement)
    o = con.sql(f"SELECT line, prev_pid AS pid {asleep}", params=p).to_arrow_table()
    i = con.sql(
        "SELECT line, next_pid AS pid, t_ns FROM sched_switch WHERE source_id = $sid AND next_pid IS NOT NULL", params=p
    ).to_arrow_table()
    o_pid, o_line = (o.column(k).to_numpy() for k in ("pid", "line"))
    nxt = {"line": o.column("line")}
    for name, b in (("i", i), ("n", con.sql("SELECT line, pid FROM _stalls_outs").to_arrow_table())):
        j = next_after(o_pid, o_line, b.column("pid").to_numpy(), b.column("line").to_numpy())
        at = pa.array(j, mask=j < 0)
        nxt[f"{name}_line"] = b.column("line").take(at)
        if name == "i":
            nxt["i_ns"] = b.column("t_ns").take(at)
    wk = con.sql("SELECT line, pid FROM _stalls_wk").to_arrow_table()
    j = next_after(o_pid, o_line, wk.column("pid").to_numpy(), wk.column("line").to_numpy())
    nxt["w_line"] = wk.column("line").take(pa.array(j, mask=j < 0))
    con.register("_stalls_nx", pa.table(nxt))
    con.execute(
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
    n = con.execute(f"SELECT count(*) FROM {base}").fetchall()[0][0]
    # call waits: long (or open) calls of sleeping primitives with no switch-out of the task inside them
    if candidates:
        n += _call_waits(con, sid, base, n, candidates, trace_end)
    for name in ("_stalls_outs", "_stalls_wk"):
        con.execute(f"DROP TABLE IF EXISTS {name}")
    if not n:
        con.execute(f"DROP TABLE {base}")
        return None
    w = con.sql(
        f"SELECT line, pid, cpu, innermost, start_ns, end_ns, duration_ns, end_known, waker_pid, wake_cpu, wake_line,"
        f" wake_ns, (waker_pid = 0 OR starts_with(coalesce(waker_comm, ''), '<idle>')"
        f" OR starts_with(coalesce(waker_comm, ''), 'swapper')) AS waker_idle,"
        f" starts_with(coalesce(state, ''), 'D') AS state_d FROM {base} ORDER BY seq"
    ).to_arrow_table()
    w = {k: _ints(w.column(k)) for k in w.column_names}
    line, pid = w["line"][0], w["pid"][0]
    woken = np.flatnonzero(w["waker_pid"][1])

    # stacks: of each wait at its line and of each waker at its wake line (one scan of the calls in line order, here),
    # the ones the trace recorded (on the reader, meanwhile)
    at_lines = np.concatenate([line, w["wake_line"][0][woken]])
    recording = on_reader(event_stacks, sid, at_lines) if on_reader else None
    calls = calls.result()
    # stacks the trace recorded itself (-T, the stacktrace trigger): at the switch-out and at the wake-up line
    recorded = recording.result() if recording else event_stacks(con, sid, at_lines)
    mine = recorded.find(line)
    prims = {p.name: p for p in locks.PRIMITIVES}
    found = _LocksInScan(
        n, line, pid, recorded, mine, wait_rows.HolderFinder(con, sid, lockfn, prims, funcs), calls["names"]
    )
    every = np.ones(n, bool)
    st, wst, hst = stacks_at_many(
        con,
        sid,
        calls,
        [
            ((pid, every), w["cpu"], (line, every), w["innermost"]),
            (*(_take(w[k], woken) for k in ("waker_pid", "wake_cpu", "wake_line")), None),
        ],
        found,
    )  # (one scan of the calls for the waits, their wakers and their holders)
    st = with_frames(st, n, np.flatnonzero(mine >= 0), recorded, mine[mine >= 0])
    theirs = recorded.find(w["wake_line"][0][woken])
    wst = with_frames(wst, len(woken), np.flatnonzero(theirs >= 0), recorded, theirs[theirs >= 0])
    waker_of = np.full(n, -1)
    waker_of[woken] = np.arange(len(woken))
    hst = found.rest(con, sid, calls, st, hst)
    reasons = found.reasons
    states = [s for (s,) in con.execute(f"SELECT state FROM {base} ORDER BY seq").fetchall()]
    kind, rule = wait_kinds.classify_stacks(st.off, st.codes, st.names, states, reasons)
    states = None
    summary = wait_rows.summary(con, base, reasons)
    if locked:
        locked(summary)
    held = found.held.done()
    # the stack columns straight from the stacks' arrays (null: no waker; no holder, or no call of it found)
    holder = np.full(n, -1)
    with_holder = np.flatnonzero(found.asked >= 0)
    j = found.asked[with_holder]
    holder[with_holder] = np.where(hst.off[j + 1] > hst.off[j], j, -1)
    io = np.fromiter(map(is_io_completion, wst.names), bool, len(wst.names))
    has_holder = held.row >= 0
    rows = held.row[has_holder]
    chain = {
        "line": line,
        "pid": pid,
        **{k: w[k][0] for k in ("start_ns", "end_ns", "duration_ns", "wake_ns", "wake_line", "waker_pid")},
        "end_known": w["end_known"][0].astype(bool),
        "waker": w["waker_pid"][1],
        "waker_idle": w["waker_idle"][0].astype(bool),
        "waker_io": np.zeros(n, bool),
        "holder": has_holder,
        "holder_pid": _spread(held.pid, rows, has_holder),
        "holder_ns": _spread(held.ns, rows, has_holder),
        "holder_line": _spread(held.line, rows, has_holder),
        "lock_key": [r[1] for r in reasons],
        # worth a chain: a lock on its stack or asleep in D, and not idle (wait_kinds.py)
        "worthy": (np.array([r[2] is not None for r in reasons], bool) | w["state_d"][0].astype(bool))
        & (np.array(kind, object) != "idle"),
    }
    chain["waker_io"][woken] = wst.any_frame(np.arange(len(woken)), io)

    def insert() -> None:  # a window at a time: all at once, the stacks' strings would be in memory twice
        try:
            for a in range(0, n, WAIT_ROWS):
                r = slice(a, a + WAIT_ROWS)
                found = {
                    "lock": pa.array([x[0] for x in reasons[r]], pa.string()),
                    "lock_key": pa.array([x[1] for x in reasons[r]], pa.string()),
                    "primitive": pa.array([x[2] for x in reasons[r]], pa.string()),
                    "stack_text": st.text(np.arange(a, min(a + WAIT_ROWS, n)), ~every[r]),
                    "waker_stack_text": wst.text(waker_of[r], waker_of[r] < 0),
                    **held.columns(r),
                    "holder_stack_text": hst.text(holder[r], holder[r] < 0),
                    "wait_kind": pa.array(kind[r], pa.string()),
                    "wait_rule": pa.array(rule[r], pa.string()),
                }
                tail = []
                for m, t in zip(mine[r].tolist(), theirs_of(r)):
                    tail.append(
                        ("" if m < 0 else f"; {recorded.evidence(m, 'stack')}")
                        + ("" if t < 0 else f"; the waker's {recorded.evidence(t, 'stack')}")
                    )
                wait_rows.insert_window(con, base, a, found, tail)
        finally:
            con.execute(f"DROP TABLE IF EXISTS {base}")

    def theirs_of(r: slice) -> list[int]:
        j = waker_of[r]
        return np.where(j >= 0, theirs[np.maximum(j, 0)] if len(theirs) else -1, -1).tolist()

    return SourceWaits(sid, n, chain, summary, insert)


class _LocksInScan:
    """What each wait waits on (Stacks.reasons: `reasons`), its inferred holder (`held`, wait_rows.HolderFinder) and
    the holder's stack at the wait's line, found during the one scan of the calls (stacks_at_many's `more`): as the
    scan answers a window's waits, their stacks (those the trace recorded instead, when it did) give their locks, the
    locks their holders, and the holders' stacks are read from that window. `asked`: per wait, its holder's stack's
    index in the scan's last Stacks (-1: no holder)."""

    def __init__(self, n: int, line, pid, recorded, mine: np.ndarray, finder, names: list[str]):
        self.n, self.line, self.pid, self.recorded, self.mine, self.finder = n, line, pid, recorded, mine, finder
        self.tasks = finder.tasks
        self.kinds = name_kinds(names + recorded.names)
        self.prims = {p.name: p for p in locks.PRIMITIVES}
        self.reasons: list = [None] * n
        self.seen = np.zeros(n, bool)
        self.held = wait_rows.Holders(n)
        self.asked = np.full(n, -1)
        self._count = 0

    def __call__(self, ks: np.ndarray, st) -> tuple[np.ndarray, np.ndarray] | None:
        """The holders' stacks to read, of the waits among the requests ks (their stacks: st)."""
        sel = np.flatnonzero(ks < self.n)  # (the others: wakers)
        if not len(sel):
            return None
        ws = ks[sel]
        rec = self.mine[ws]
        has = np.flatnonzero(rec >= 0)
        part = with_frames(st.take(sel), len(ws), has, self.recorded, rec[has])
        return self._found(ws, part.reasons(len(ws), self.kinds))

    def _found(self, ws: np.ndarray, reasons: list) -> tuple[np.ndarray, np.ndarray]:
        self.seen[ws] = True
        need: dict[str, list[int]] = defaultdict(list)
        for i, r in zip(ws.tolist(), reasons):
            self.reasons[i] = r
            if r[3] is not None and self.prims[r[3]].release:
                need[r[3]].append(i)
        waits, pids = self.finder.find(
            self.held, {k: np.array(v, np.int64) for k, v in need.items()}, self.line, self.pid
        )
        self.asked[waits] = np.arange(self._count, self._count + len(waits))
        self._count += len(waits)
        return pids, self.line[waits]

    def rest(self, con, sid: int, calls: dict, st, hst):
        """The waits the scan did not answer (none asked by task nor by call): their locks from st (the waits' stacks,
        with those recorded), their holders, and the holders' stacks (a scan of their own) after hst's."""
        missing = np.flatnonzero(~self.seen)
        if not len(missing):
            return hst
        pids, lines = self._found(missing, st.take(missing).reasons(len(missing), self.kinds))
        if not len(pids):
            return hst
        ok = np.ones(len(pids), bool)
        return concat_stacks(hst, stacks_at(con, sid, calls, (pids, ok), None, (lines, ok)))


def next_after(key: np.ndarray, line: np.ndarray, b_key: np.ndarray, b_line: np.ndarray) -> np.ndarray:
    """Per row of (key, line): the index of the row of (b_key, b_line) with the same key and the nearest line after
    its line, -1 for none (as `ASOF LEFT JOIN b ON key = b.key AND b.line > line`; each line once in b). Keys and
    lines are ranked, then packed in one integer: key rank, then line rank."""
    out = np.full(len(line), -1, np.int64)
    if not len(line) or not len(b_line):
        return out
    n = len(key)
    group = np.unique(np.concatenate([key, b_key]), return_inverse=True)[1].reshape(-1).astype(np.int64)
    rank = np.unique(np.concatenate([line, b_line]), return_inverse=True)[1].reshape(-1).astype(np.int64)
    shift = max(1, int(rank.max()) + 1).bit_length()
    packed = (group << shift) | rank
    order = np.argsort(packed[n:], kind="stable")
    b_packed = packed[n:][order]
    j = np.searchsorted(b_packed, packed[:n], "right")
    hit = j < len(b_packed)
    hit[hit] = b_packed[j[hit]] >> shift == group[:n][hit]
    out[hit] = order[j[hit]]
    return out


def _ints(col: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """(values with nulls as 0 or false, valid) of a column."""
    filled = col.fill_null(False if pa.types.is_boolean(col.type) else 0)
    return filled.to_numpy(zero_copy_only=False), col.is_valid().to_numpy(zero_copy_only=False)


def _take(col: tuple[np.ndarray, np.ndarray], rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return col[0][rows], col[1][rows]


def _spread(values: np.ndarray, rows: np.ndarray, where: np.ndarray) -> np.ndarray:
    out = np.zeros(len(where), np.int64)
    out[where] = values[rows]
    return out


@dataclass
class SourceWaits:
    """A source's waits as derive_waits leaves them: their count, what the chains need of them (chains.py), their
    summary for the timeline, and `insert`() (their rows, into wait_rows)."""

    sid: int
    n: int
    chain: dict
    summary: pa.Table
    insert: Callable[[], None]


def _call_waits(con, sid: int, base: str, seq: int, candidates: dict, trace_end: int) -> int:
    """Adds the call waits to the base table, after the waits numbered below `seq`; returns how many."""
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
        c = con.sql(
            """
            SELECT c.line, c.pid, n.name AS comm, c.cpu, f.func, c.entry_ns, c.exit_ns, c.duration_ns, c.exit_line,
                   c.partial AND c.exit_line = c.line AS exit_only
            FROM fg_call_rows c JOIN _stalls_fn f USING (func_id)
            LEFT JOIN fg_names n ON n.source_id = c.source_id AND n.id = c.comm_id
            WHERE c.source_id = $sid AND f.role <> 'release' AND c.pid IS NOT NULL AND c.entry_ns IS NOT NULL
              AND (c.exit_line IS NULL OR c.duration_ns >= $min)
            """,
            params={"sid": sid, "min": MIN_CALL_SLEEP_NS},
        ).to_arrow_table()
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
    outs = con.sql("SELECT line, pid FROM _stalls_outs").to_arrow_table()
    wk = con.sql("SELECT line, t_ns, cpu, pid, waker_pid, waker_comm FROM _stalls_wk").to_arrow_table()
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
        con.register("_stalls_lone", pa.table({"pid": np.unique(tpid[lone])}))
        try:
            last = con.sql(
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


def span(con, source_id: int, report) -> tuple[int | None, int | None]:
    """An ftrace source's time span (ns): its first and last timestamp of any kind, as the trace printed them. A call
    seen only by its exit (partial, with an exit) has an entry computed from its duration, before the capture began:
    not a time the trace printed, so not where the capture starts (the views say such a call entered before it).
    Notes scheduler events that carry no time (tracefs function_graph text without funcgraph-abstime prints an
    event as a comment with none): no wait can be measured from them, and the user is told how to record them."""
    untimed = con.execute(
        "SELECT count(*) FILTER (WHERE t_ns IS NULL), count(*) FROM sched_switch WHERE source_id = ?", [source_id]
    ).fetchall()[0]
    if untimed[0]:
        report.note(
            f"{untimed[0]} of {untimed[1]} sched_switch events have no timestamp (function_graph text without"
            " funcgraph-abstime), so no wait is measured from them: record with"
            " `echo 1 > /sys/kernel/tracing/options/funcgraph-abstime` (and funcgraph-proc), or with trace-cmd"
        )
    return con.execute(
        "SELECT min(lo), max(hi) FROM ("
        " SELECT min(CASE WHEN partial AND exit_ns IS NOT NULL THEN exit_ns ELSE coalesce(entry_ns, exit_ns) END) lo,"
        " max(coalesce(exit_ns, entry_ns)) hi FROM fg_call_rows"
        " WHERE source_id = $s"
        " UNION ALL SELECT min(t_ns), max(t_ns) FROM sched_switch WHERE source_id = $s"
        " UNION ALL SELECT min(t_ns), max(t_ns) FROM sched_wakeup WHERE source_id = $s"
        " UNION ALL SELECT min(t_ns), max(t_ns) FROM trace_events WHERE source_id = $s)",
        {"s": source_id},
    ).fetchall()[0]
