"""A source's waits, from ftrace (function_graph calls, sched_switch, sched_wakeup/waking), in three stages that
derive/pipeline.py runs in order per ftrace source (waits_chains_and_timeline, with what its reader thread reads
between them):

1. `stage`: the waits' own columns staged in a temporary table (wait_rows.base_table), by SQL: the scheduler waits
   (sched_waits.py), then the call waits (call_waits.py); what the stacks and the chains read of them, as arrays;
2. `find_stacks`: the waits' and their wakers' stacks (one scan of the calls in line order, stacks.py; those the
   trace recorded itself come from recorded.event_stacks, read by the reader thread), what each waits on and its
   holder (wait_locks.py), its kind (wait_kinds.py) and the summary the timeline needs;
3. `finish`: what the chains need of them (chain_plan.py) and their rows, which `SourceWaits.insert` writes a window
   at a time (wait_rows.py).

The chains are built from every source's waits (chains.py); the reads are queries/stalls.py's.

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

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from .. import locks, wait_kinds
from ..db import arrow, execute
from . import call_waits, sched_waits, wait_rows
from .arrays import ints, spread, take
from .frames import FrameKinds
from .recorded import Recorded
from .stacks import Stacks, stacks_at_many, with_frames
from .wait_locks import LocksInScan
from .wait_rows import WAIT_ROWS


def function_names(con, sid: int) -> list[str]:
    """The source's names (fg_names: its functions' and tasks'), by id: a call's func_id indexes it."""
    return [n for (n,) in execute(con, "SELECT name FROM fg_names WHERE source_id = ? ORDER BY id", [sid]).fetchall()]


def lock_function_ids(funcs: list[str]) -> dict[str, tuple[locks.Primitive, str, int]]:
    """The names of sleeping primitives among the source's names: (primitive, role, id)."""
    return {f: (*hit, i) for i, f in enumerate(funcs) if (hit := locks.lookup(f))}


@dataclass
class StagedWaits:
    """A source's waits staged in their base table (`base`), `n` of them in file order, with the columns the stacks
    and the chains read as arrays (`w`: name -> (values, valid)); `woken`: the waits with a wake-up."""

    sid: int
    base: str
    n: int
    funcs: list[str]
    lockfn: dict[str, tuple[locks.Primitive, str, int]]
    w: dict[str, tuple[np.ndarray, np.ndarray]]
    woken: np.ndarray

    def at_lines(self) -> np.ndarray:
        """The lines whose recorded stacks are the waits' (recorded.event_stacks): each wait's line, then each woken
        wait's wake-up line."""
        return np.concatenate([self.w["line"][0], self.w["wake_line"][0][self.woken]])


def stage(con, sid: int, funcs: list[str]) -> StagedWaits | None:
    """Stages the source's waits (None: it has none) in a temporary table of their own columns, in file order:
    scheduler waits by line, then call waits by task. `funcs`: the source's names by id (function_names)."""
    p = {"sid": sid}
    trace_end = execute(
        con,
        "SELECT max(t) FROM (SELECT max(greatest(entry_ns, exit_ns)) t FROM fg_call_rows WHERE source_id = $sid"
        " UNION ALL SELECT max(t_ns) FROM sched_switch WHERE source_id = $sid"
        " UNION ALL SELECT max(t_ns) FROM sched_wakeup WHERE source_id = $sid"
        " UNION ALL SELECT max(t_ns) FROM trace_events WHERE source_id = $sid)",
        p,
    ).fetchall()[0][0]
    if trace_end is None:
        return None
    lockfn = lock_function_ids(funcs)
    no_sched = not execute(con, "SELECT count(*) FROM sched_switch WHERE source_id = $sid", p).fetchall()[0][0]
    candidates = call_waits.candidates(funcs, lockfn, no_sched)
    # the tasks' switch-outs and wake-ups, read by both kinds of waits
    execute(
        con,
        "CREATE OR REPLACE TEMP TABLE _stalls_outs AS SELECT line, prev_pid AS pid FROM sched_switch"
        " WHERE source_id = $sid AND prev_pid IS NOT NULL",
        p,
    )
    execute(
        con,
        "CREATE OR REPLACE TEMP TABLE _stalls_wk AS SELECT line, t_ns, cpu, pid, waker_pid, waker_comm FROM sched_wakeup"
        " WHERE source_id = $sid AND pid IS NOT NULL AND t_ns IS NOT NULL AND success IS NOT FALSE",
        p,
    )
    base = wait_rows.base_table(con, sid)
    n = sched_waits.add(con, sid, base, trace_end)
    # call waits: long (or open) calls of sleeping primitives with no switch-out of the task inside them
    if candidates:
        n += call_waits.add(con, sid, base, n, candidates, trace_end)
    for name in ("_stalls_outs", "_stalls_wk"):
        execute(con, f"DROP TABLE IF EXISTS {name}")
    if not n:
        execute(con, f"DROP TABLE {base}")
        return None
    w = arrow(
        con,
        f"SELECT line, pid, cpu, innermost, start_ns, end_ns, duration_ns, end_known, waker_pid, wake_cpu, wake_line,"
        f" wake_ns, (waker_pid = 0 OR starts_with(coalesce(waker_comm, ''), '<idle>')"
        f" OR starts_with(coalesce(waker_comm, ''), 'swapper')) AS waker_idle,"
        f" starts_with(coalesce(state, ''), 'D') AS state_d FROM {base} ORDER BY seq",
    )
    w = {k: ints(w.column(k)) for k in w.column_names}
    return StagedWaits(sid, base, n, funcs, lockfn, w, np.flatnonzero(w["waker_pid"][1]))


@dataclass
class WaitStacks:
    """What the scan of the calls found for a source's staged waits: their stacks (`st`, those the trace recorded
    instead where it did), their wakers' (`wst`, by woken wait) and their holders' (`hst`); `mine` / `theirs`: per
    wait / per woken wait, its stack's row in `recorded` (-1: none); per wait what it waits on (`reasons`:
    Stacks.reasons), its inferred holder (`held`) and its holder's row in hst (`asked`, -1: none); `kind`, `rule`:
    why it waited (wait_kinds.py); `summary`: wait_rows.SUMMARY_COLUMNS, for the timeline."""

    st: Stacks
    wst: Stacks
    hst: Stacks
    recorded: Recorded
    mine: np.ndarray
    theirs: np.ndarray
    reasons: list
    held: wait_rows.Holders
    asked: np.ndarray
    kind: list
    rule: list
    summary: pa.Table


def holder_finder(con, sid: int, funcs: list[str]) -> wait_rows.HolderFinder:
    """The source's lock calls read for its waits' inferred holders (wait_rows.HolderFinder): they need only the
    source's function names (`funcs`: function_names), so they are read beside `stage`, before the waits are
    known."""
    prims = {p.name: p for p in locks.PRIMITIVES}
    return wait_rows.HolderFinder(con, sid, lock_function_ids(funcs), prims, funcs)


def find_stacks(
    con, staged: StagedWaits, calls: dict, recorded: Recorded, finder: wait_rows.HolderFinder, frames: FrameKinds
) -> WaitStacks:
    """The stacks of each wait at its line and of each waker at its wake line, in one scan of the calls in line order
    (`calls`: the source's stacks.call_index), where the trace did not record them (`recorded`:
    recorded.event_stacks at staged.at_lines()); the scan's windows' locks and holders (`finder`: holder_finder of
    the source) as it answers them (a window's locks use the stacks recorded for its waits); then each wait's kind
    and the waits' summary. `frames`: the derivation's look-ups of what the frames are."""
    sid, n, w, woken = staged.sid, staged.n, staged.w, staged.woken
    line, pid = w["line"][0], w["pid"][0]
    mine = recorded.find(line)
    found = LocksInScan(n, line, pid, recorded, mine, finder, calls["names"], frames)
    every = np.ones(n, bool)
    st, wst, hst = stacks_at_many(
        con,
        sid,
        calls,
        [
            ((pid, every), w["cpu"], (line, every), w["innermost"]),
            (*(take(w[k], woken) for k in ("waker_pid", "wake_cpu", "wake_line")), None),
        ],
        found,
    )  # (one scan of the calls for the waits, their wakers and their holders)
    st = with_frames(st, n, np.flatnonzero(mine >= 0), recorded, mine[mine >= 0])
    theirs = recorded.find(w["wake_line"][0][woken])
    wst = with_frames(wst, len(woken), np.flatnonzero(theirs >= 0), recorded, theirs[theirs >= 0])
    hst = found.rest(con, sid, calls, st, hst)
    states = [s for (s,) in execute(con, f"SELECT state FROM {staged.base} ORDER BY seq").fetchall()]
    kind, rule = wait_kinds.classify_stacks(st.off, st.codes, st.names, states, found.reasons)
    summary = wait_rows.summary(con, staged.base, found.reasons)
    return WaitStacks(st, wst, hst, recorded, mine, theirs, found.reasons, found.held, found.asked, kind, rule, summary)


@dataclass
class SourceWaits:
    """A source's waits as `finish` leaves them: their count, what the chains need of them (`chain`: chain_plan.py),
    their summary for the timeline, and what `insert` writes of them into wait_rows."""

    sid: int
    n: int
    chain: dict
    summary: pa.Table
    base: str
    stacks: WaitStacks
    held: wait_rows.Holders
    waker_of: np.ndarray  # per wait, its waker's row in stacks.wst (-1: no waker)
    holder: np.ndarray  # per wait, its holder's row in stacks.hst (-1: no holder, or no call of it found)

    def insert(self, con) -> None:
        """Their rows into wait_rows, a window at a time (all at once, the stacks' strings would be in memory twice);
        the base table dropped. A thread of its own builds the next window's columns (Python, Arrow) while DuckDB
        inserts this one (the base table is read on `con`, here)."""
        starts = range(0, self.n, WAIT_ROWS)
        try:
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="derive-wait-columns") as builder:
                ahead = builder.submit(self._found, 0) if starts else None
                for a in starts:
                    found, tail = ahead.result()
                    ahead = builder.submit(self._found, a + WAIT_ROWS) if a + WAIT_ROWS < self.n else None
                    wait_rows.insert_window(con, self.base, a, found, tail)
        finally:
            execute(con, f"DROP TABLE IF EXISTS {self.base}")

    def _found(self, a: int) -> tuple[dict[str, pa.Array], list[str]]:
        """The columns found for the waits of the window from `a`, and the tail of their evidence."""
        s, r = self.stacks, slice(a, a + WAIT_ROWS)
        rows = np.arange(a, min(a + WAIT_ROWS, self.n))
        reasons = s.reasons[r]
        found = {
            "lock": pa.array([x[0] for x in reasons], pa.string()),
            "lock_key": pa.array([x[1] for x in reasons], pa.string()),
            "primitive": pa.array([x[2] for x in reasons], pa.string()),
            "stack_text": s.st.text(rows, np.zeros(len(rows), bool)),
            "waker_stack_text": s.wst.text(self.waker_of[r], self.waker_of[r] < 0),
            **self.held.columns(r),
            "holder_stack_text": s.hst.text(self.holder[r], self.holder[r] < 0),
            "wait_kind": pa.array(s.kind[r], pa.string()),
            "wait_rule": pa.array(s.rule[r], pa.string()),
        }
        return found, self._recorded_evidence(r)

    def _recorded_evidence(self, r: slice) -> list[str]:
        """What the evidence of the waits of window r adds for the stacks the trace recorded (theirs, their wakers')."""
        s = self.stacks
        j = self.waker_of[r]
        theirs = np.where(j >= 0, s.theirs[np.maximum(j, 0)] if len(s.theirs) else -1, -1).tolist()
        return [
            ("" if m < 0 else f"; {s.recorded.evidence(m, 'stack')}")
            + ("" if t < 0 else f"; the waker's {s.recorded.evidence(t, 'stack')}")
            for m, t in zip(s.mine[r].tolist(), theirs)
        ]


def finish(staged: StagedWaits, stacks: WaitStacks, frames: FrameKinds) -> SourceWaits:
    """The source's waits with their holders known: what the chains need of them, and their rows to insert."""
    n, w, woken = staged.n, staged.w, staged.woken
    held = stacks.held.done()
    waker_of = np.full(n, -1)
    waker_of[woken] = np.arange(len(woken))
    # the stack columns straight from the stacks' arrays (null: no waker; no holder, or no call of it found)
    holder = np.full(n, -1)
    with_holder = np.flatnonzero(stacks.asked >= 0)
    j = stacks.asked[with_holder]
    holder[with_holder] = np.where(stacks.hst.off[j + 1] > stacks.hst.off[j], j, -1)
    io = np.fromiter(map(frames.is_io_completion, stacks.wst.names), bool, len(stacks.wst.names))
    has_holder = held.row >= 0
    rows = held.row[has_holder]
    reasons = stacks.reasons
    chain = {
        "line": w["line"][0],
        "pid": w["pid"][0],
        **{k: w[k][0] for k in ("start_ns", "end_ns", "duration_ns", "wake_ns", "wake_line", "waker_pid")},
        "end_known": w["end_known"][0].astype(bool),
        "waker": w["waker_pid"][1],
        "waker_idle": w["waker_idle"][0].astype(bool),
        "waker_io": np.zeros(n, bool),
        "holder": has_holder,
        "holder_pid": spread(held.pid, rows, has_holder),
        "holder_ns": spread(held.ns, rows, has_holder),
        "holder_line": spread(held.line, rows, has_holder),
        "lock_key": [r[1] for r in reasons],
        # worth a chain: a lock on its stack or asleep in D, and not idle (wait_kinds.py)
        "worthy": (np.array([r[2] is not None for r in reasons], bool) | w["state_d"][0].astype(bool))
        & (np.array(stacks.kind, object) != "idle"),
    }
    chain["waker_io"][woken] = stacks.wst.any_frame(np.arange(len(woken)), io)
    return SourceWaits(staged.sid, n, chain, stacks.summary, staged.base, stacks, held, waker_of, holder)
