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
  nothing more until the end of the trace (open wait). Call waits are always `inferred`.
* waker: the first `sched_waking`/`sched_wakeup` (success not false) of the task after the wait began and
  before it ended; the waker is the task on whose behalf that line was written (for the idle task, pid 0,
  per CPU). `waker_stack` = the waker's calls open at the wake line.
* stack: the task's calls open at the wait's first line (entered before it, not yet exited), root first;
  found from the last call event of the task before that line (an ASOF join) and the parent chain.
* lock: `locks.label(stack)` (`xfs_ilock via down_write`); `primitive` is the locks.py entry it came
  from. Without a known primitive on the stack, the innermost frame that is not scheduler plumbing
  (`futex_wait_queue_me`), with `primitive` null.
* holder (inferred, only for locks.py "object" entries that have release functions, e.g. xfs_ilock,
  xfs_buf_lock, page lock, jbd2 handle): of the tasks other than the waiter that returned from an
  acquire function of that object before the waiter blocked and had not called one of its release
  functions since, the one that returned last. Evidence: that acquire call's line and exit time.

Chains (tables `chains`, `chain_links`, by analysis_id): each wait's next link is
* its waker, when known: if the waker is the idle task / an interrupt (pid 0) or its stack shows an I/O
  completion (IO_COMPLETION, or a release function of locks.py's "I/O" entry) the relation is
  `io_completion` and the chain ends with the waking context; else `woken_by` the waker's own wait that
  overlapped this one (the latest that began before the wake-up, ended at or before it and after this
  wait began), or the waker itself (running) when it had none;
* else its inferred holder: `held_by` the holder's wait that overlapped this one (begun after it took the
  lock), or the holder itself (running);
* else nothing known: the chain ends.
A chain starts at a wait that is no other wait's next link and is worth explaining (a locks.py primitive
on its stack, or state D). Waits on the same lock (`lock_key`: the object, e.g. `xfs_ilock`, whatever the
primitive) with the same next link are one chain: the first link is the one with the longest stall whose
end is known (else the longest), the others are its `also_waiting`. Chains are ranked by the first
link's duration, at most MAX_CHAINS per analysis, MAX_LINKS links each.
An `io_completion` link is matched to a block request of a blkparse source of the same analysis: the one
completed (C) within REQUEST_WINDOW_NS before the wake-up (or REQUEST_SLACK_NS after it, for clock
jitter), preferring a request queued by the waiting task, then the completion closest to the wake-up.
Times are compared on the analysis timeline (each source's clock_offset_ns as it was at ingest).
"""
from __future__ import annotations

import bisect
import functools
import gc
import itertools
import json
import operator
from collections import defaultdict
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from parsers import funcgraph

from . import locks, memo, tables

MIN_CALL_SLEEP_NS = 1_000_000  # a lock call this long with no switch-out in the trace is taken as a sleep
REQUEST_WINDOW_NS = 10_000_000  # a request completed at most this long before the wake-up caused it
REQUEST_SLACK_NS = 50_000  # ... or this long after it (blktrace and ftrace timestamps jitter)
MAX_CHAINS = 5000
MAX_LINKS = 32
MAX_HOLDER_SCAN = 10_000  # acquire calls looked at, backwards, per wait
WAIT_ROWS = 16384  # waits inserted per statement

# functions that complete block I/O (bio/request end, buffer and page end-of-I/O, fs completion work)
IO_COMPLETION = frozenset({
    "bio_endio", "blk_mq_end_request", "__blk_mq_end_request", "blk_update_request", "blk_mq_complete_request",
    "blk_complete_reqs", "blk_done_softirq", "blk_end_request", "__blk_end_request", "blk_end_request_all",
    "req_bio_endio", "scsi_io_completion", "scsi_end_request", "nvme_complete_rq", "nvme_pci_complete_rq",
    "end_bio_bh_io_sync", "end_buffer_write_sync", "end_buffer_read_sync", "end_buffer_async_write",
    "end_buffer_async_read", "end_page_writeback", "folio_end_writeback", "mpage_end_io", "iomap_finish_ioend",
    "iomap_finish_ioends", "xfs_buf_iodone_work", "xfs_buf_ioend", "xfs_buf_ioend_work", "xfs_buf_iodone",
    "xfs_buf_bio_end_io", "xfs_end_io", "xfs_end_bio", "xfs_end_ioend", "ext4_end_bio", "ext4_end_io_rsv_work",
    "dio_bio_end_io", "dio_bio_end_aio", "blkdev_bio_end_io", "iomap_dio_bio_end_io",
}) | frozenset(next(p for p in locks.PRIMITIVES if p.name == "I/O").release)

# scheduler plumbing: never the reason of a wait
_PLUMBING = frozenset({
    "schedule", "__schedule", "schedule_timeout", "schedule_hrtimeout", "schedule_hrtimeout_range",
    "schedule_hrtimeout_range_clock", "schedule_preempt_disabled", "preempt_schedule", "preempt_schedule_common",
    "preempt_schedule_irq", "finish_task_switch", "context_switch", "__switch_to", "__switch_to_asm",
    "prepare_to_wait", "prepare_to_wait_event", "prepare_to_wait_exclusive", "finish_wait", "pick_next_task",
    "pick_next_task_fair", "dequeue_task", "dequeue_task_fair", "deactivate_task", "_cond_resched",
    "__cond_resched", "psi_task_switch", "rcu_note_context_switch", "__math_state_restore",
})
_IDLE_COMMS = ("<idle>", "swapper")

# A stack is stored as its frames joined by STACK_SEP and read as a list: DuckDB inserts and logs (WAL) one string per
# stack for less than half the cost of a list of ~25 (the 60 k waits of the benchmark's function_graph trace, inserted
# and committed: 0.4 s against 0.85 s). A frame never holds the separator (a control character; the tokenizer's
# function names are tokens without it). The rows are stored in wait_rows and chain_link_rows; `waits` and
# `chain_links` are views that add the lists (not virtual columns: DuckDB computes those on every INSERT, 0.3 s of
# the 0.5 s that inserting those 60 k waits took).
STACK_SEP = "\x1f"
_STACK = "CASE WHEN {c}_text = '' THEN []::VARCHAR[] ELSE string_split({c}_text, chr(31)) END AS {c}"
WAITS_COLUMNS = f"""
    source_id INTEGER NOT NULL,
    line BIGINT NOT NULL,            -- the line that starts the wait: the switch-out, or the call's entry
    kind VARCHAR NOT NULL,           -- sched | call
    pid BIGINT NOT NULL,
    comm VARCHAR,
    cpu INTEGER,
    start_ns BIGINT NOT NULL,
    end_ns BIGINT NOT NULL,          -- the trace's last timestamp when end_known is false
    duration_ns BIGINT NOT NULL,     -- for a call wait that returned: the call's own duration field
    end_known BOOLEAN NOT NULL,
    end_line BIGINT,                 -- the switch-in, wake-up or call exit that ends it
    state VARCHAR,                   -- prev_state of the switch-out; null for a call wait
    lock VARCHAR,
    lock_key VARCHAR,                -- what is locked, for grouping waiters: the object (xfs_ilock), else lock
    primitive VARCHAR,               -- locks.py entry behind lock, null when lock is only the innermost frame
    stack_text VARCHAR NOT NULL,     -- root first (the view's `stack`)
    inferred BOOLEAN NOT NULL,
    evidence VARCHAR NOT NULL,
    waker_pid BIGINT,
    waker_comm VARCHAR,
    waker_stack_text VARCHAR,
    wake_line BIGINT,
    wake_ns BIGINT,
    wake_cpu INTEGER,
    holder_pid BIGINT,
    holder_comm VARCHAR,
    holder_line BIGINT,              -- the holder's acquire call (its entry line)
    holder_ns BIGINT,                -- ... and when it returned
    holder_evidence VARCHAR,
    holder_stack_text VARCHAR        -- the holder's calls open when this wait began
"""
CHAIN_LINKS_COLUMNS = f"""
    analysis_id VARCHAR NOT NULL,
    chain_id INTEGER NOT NULL,
    pos INTEGER NOT NULL,            -- 0 = the stalled task
    source_id INTEGER NOT NULL,
    wait_line BIGINT,                -- the link's wait (waits.line), null for the running task that ends a chain
    pid BIGINT,
    comm VARCHAR,
    lock VARCHAR,
    start_ns BIGINT,
    end_ns BIGINT,
    duration_ns BIGINT,
    end_known BOOLEAN,
    relation VARCHAR,                -- to the next link: woken_by | held_by | io_completion; null at the end
    inferred BOOLEAN NOT NULL,
    evidence VARCHAR NOT NULL,
    stack_text VARCHAR NOT NULL,
    line BIGINT,
    also_waiting JSON NOT NULL,
    req_source_id INTEGER, req_line BIGINT, req_dev VARCHAR, req_sector BIGINT, req_nsect BIGINT,
    req_rwbs VARCHAR, req_pid BIGINT, req_comm VARCHAR, req_q_ns BIGINT, req_i_ns BIGINT, req_d_ns BIGINT,
    req_c_ns BIGINT
"""
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS wait_rows ({WAITS_COLUMNS});
CREATE OR REPLACE VIEW waits AS
    SELECT *, {", ".join(_STACK.format(c=c) for c in ("stack", "waker_stack", "holder_stack"))} FROM wait_rows;
-- the waits that are stalls: all but idle sleeps, a task asleep interruptibly (S, or I for an idle kernel thread)
-- on no known lock: a worker waiting for work (schedule_timeout), a nanosleep, a poll; they are waits, not stalls
CREATE OR REPLACE VIEW stall_waits AS
    SELECT * FROM waits WHERE primitive IS NOT NULL OR NOT regexp_matches(coalesce(state, ''), '^[SI]');
CREATE TABLE IF NOT EXISTS chains (
    analysis_id VARCHAR NOT NULL,
    chain_id INTEGER NOT NULL,       -- rank, 1 = longest stall of its first task
    duration_ns BIGINT NOT NULL,
    links INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS chain_link_rows ({CHAIN_LINKS_COLUMNS});
CREATE OR REPLACE VIEW chain_links AS SELECT *, {_STACK.format(c="stack")} FROM chain_link_rows;
"""


def _ms(ns: int | None) -> str:
    if ns is None:
        return "?"
    return f"{ns / 1e6:.3f} ms" if abs(ns) >= 1_000_000 else f"{ns / 1e3:.1f} µs"


def _path(frames, marked: set) -> str:
    """The waker's stack from its innermost I/O completion frame on, else from its outermost lock release frame
    (else its last 3). `marked` holds at least those frames of the stack (a look-up: most stacks have none)."""
    frames = list(frames or ())
    marks = [] if marked.isdisjoint(frames) else list(map(_path_mark, frames))
    if 2 in marks:
        start = len(marks) - 1 - marks[::-1].index(2)
    elif 1 in marks:
        start = marks.index(1)
    else:
        start = max(0, len(frames) - 3)
    shown = frames[start:start + 4]
    return " → ".join(shown) + (" → …" if start + 4 < len(frames) else "") if shown else "?"


def _ts(ns: int | None) -> str:
    return "?" if ns is None else f"{ns // 1_000_000_000}.{ns % 1_000_000_000:09d}".rstrip("0").rstrip(".")


def _task(comm, pid) -> str:
    return f"{comm or '?'} ({pid})"


@functools.lru_cache(maxsize=65536)
def _lookup(frame: str):
    return locks.lookup(frame)


@functools.lru_cache(maxsize=65536)
def _base(frame: str) -> str:
    return locks.base_name(frame)


@functools.lru_cache(maxsize=65536)
def _path_mark(frame: str) -> int:
    """2: an I/O completion function, 1: a lock release function, 0: any other."""
    hit = _lookup(frame)
    return 2 if _base(frame) in IO_COMPLETION else int(bool(hit and hit[1] == "release"))


@functools.lru_cache(maxsize=65536)
def _waiting(frame: str) -> bool:
    """A frame that takes or sleeps on a known lock."""
    hit = _lookup(frame)
    return hit is not None and hit[1] != "release"


@functools.lru_cache(maxsize=65536)
def _is_object(frame: str) -> bool:
    hit = _lookup(frame)
    return hit is not None and hit[0].kind == "object"


@functools.lru_cache(maxsize=65536)
def _own_object(frame: str) -> bool:
    """An object's own function (not a sleep function objects share: see locks.py)."""
    hit = _lookup(frame)
    return hit is not None and hit[0].kind == "object" and hit[1] == "acquire"


@functools.lru_cache(maxsize=65536)
def _is_io(frame: str) -> bool:
    return _base(frame) in IO_COMPLETION


@functools.lru_cache(maxsize=65536)
def _not_plumbing(frame: str) -> bool:
    return _base(frame) not in _PLUMBING


def _is_idle(pid, comm) -> bool:
    return pid == 0 or (comm or "").startswith(_IDLE_COMMS)


# ---- derive ------------------------------------------------------------------------------------

def derive(con, analysis_id: str, meanwhile: Callable[[object, list[tuple], pa.Table | None, object], None] | None = None,
           early: Callable[[object, list[tuple]], object] | None = None) -> None:
    """All waits of the analysis' ftrace sources, then its chains (inside the ingest's transaction).

    `early`(reader, [(source id, t_min_ns, t_max_ns)]) reads what a later step needs from the sources' staged rows
    alone (committed: a cursor of its own sees them), beside the waits' derivation. `meanwhile`(cursor, the
    analysis' sources [(id, format, t_min_ns, t_max_ns)], its waits (BRIEF), what early returned), a step that
    needs the waits' locks but not their holders nor the chains, runs once the locks are known, beside the holders'
    look-ups, the waits' insert (in a thread of its own, on `con`) and the chains (in Python): on the reader, in a
    transaction of its own that it commits first (it writes tables keyed by the sources' staged ids:
    timeline.STAGED_TABLES). Without ftrace sources it runs on `con`, in the ingest's transaction."""
    rows = con.execute("SELECT id, format, t_min_ns, t_max_ns, clock_offset_ns FROM sources WHERE analysis_id = ?"
                       " ORDER BY id", [analysis_id]).fetchall()
    sources = [r[:4] for r in rows]
    spans = [(sid, t_min, t_max) for sid, fmt, t_min, t_max, _ in rows if fmt == "ftrace"]
    offs = {sid: off for sid, fmt, _, _, off in rows if fmt == "ftrace"}
    if not offs:
        if meanwhile:
            meanwhile(con, sources, None, None)
        return
    gc_was = gc.isenabled()
    gc.disable()  # many small lists and dicts, no cycles: the collector would only rescan them
    reader = con.cursor()  # the staged rows, read by the pool's thread while this one uses `con`
    try:
        # a thread for work that releases the GIL (DuckDB, Arrow, numpy) while this one goes on in Python or in
        # DuckDB; a connection is used by one thread at a time
        with ThreadPoolExecutor(max_workers=1) as pool:
            derived, tables = {}, []
            prepared = done = None

            def locked(last: list[dict]) -> None:
                """Every wait's lock is known (the last source's too: `last`): `meanwhile` can start, beside the
                holders' and their stacks' look-ups."""
                nonlocal prepared, done
                if meanwhile and done is None:
                    brief = _brief(itertools.chain(itertools.chain.from_iterable(derived.values()), last))
                    done = pool.submit(_apart, reader, meanwhile, sources, brief, prepared)
                    prepared = None  # held by that step only: freed once used, before the chains' peak

            for k, sid in enumerate(offs):
                funcs = _functions(con, sid)
                calls = pool.submit(_call_index, reader, sid, funcs)  # built while the waits are derived
                if early and k == 0:  # queued behind the first source's call index
                    prepared = pool.submit(early, reader, spans)
                derived[sid], table = _derive_waits(con, sid, funcs, calls, locked if k == len(offs) - 1 else None)
                calls = None  # the index (~25 bytes a call) is freed before the next source's, and the chains
                tables.append(table)
                for w in derived[sid]:
                    w["off"] = offs[sid]
            locked([])  # when the last source had no waits
            # the waits' insert (DuckDB, on `con`: this thread does not use it until the insert is done), in a
            # thread of its own, beside `meanwhile` and the chains' Python here
            with ThreadPoolExecutor(max_workers=1) as inserter:
                inserted = inserter.submit(_insert_waits, con, itertools.chain.from_iterable(tables))
                tables = []
                chains = _chains(derived)
                inserted.result()
            if done:
                done.result()
        _match_requests(con, analysis_id, chains)
        _insert_chains(con, analysis_id, chains)
    finally:
        reader.close()
        if gc_was:
            gc.enable()


BRIEF = ("source_id", "pid", "comm", "start_ns", "end_ns", "lock_key", "lock", "line")  # what `meanwhile` is given


def _brief(waits: Iterable[dict]) -> pa.Table:
    """The BRIEF columns of the waits, as they will be stored."""
    values = zip(*map(operator.itemgetter(*BRIEF), waits))
    return pa.table([pa.array(v, _WAIT_TYPES[k]) for k, v in itertools.zip_longest(BRIEF, values, fillvalue=())],
                    names=list(BRIEF))


def _apart(cur, step: Callable, sources: list[tuple], brief: pa.Table, prepared: Future | None) -> None:
    """step(cur, sources, brief, what `prepared` holds) in a transaction of its own, committed when it returns."""
    early_rows = prepared.result() if prepared else None
    cur.begin()
    try:
        step(cur, sources, brief, early_rows)
        cur.commit()
    except BaseException:
        cur.rollback()
        raise


def _functions(con, sid: int) -> list[str]:
    """The source's names (fg_names: its functions' and tasks'), by id: a call's func_id indexes it."""
    return [n for (n,) in con.execute("SELECT name FROM fg_names WHERE source_id = ? ORDER BY id", [sid]).fetchall()]


def _lock_functions(funcs: list[str]) -> dict[str, tuple[locks.Primitive, str, int]]:
    """The names of sleeping primitives among the source's names: (primitive, role, id)."""
    return {f: (*hit, i) for i, f in enumerate(funcs) if (hit := locks.lookup(f))}


def _register(con, name: str, columns: dict[str, list], types: dict[str, pa.DataType]) -> None:
    con.register(name, pa.table({k: pa.array(v, type=types[k]) for k, v in columns.items()}))


def _fetch(cur, blank: dict | None = None) -> list[dict]:
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


def _derive_waits(con, sid: int, funcs: list[str], calls: Future,
                  locked: Callable[[list[dict]], None] | None = None) -> tuple[list[dict], Iterator[pa.Table]]:
    """Derives the source's waits: as dicts, in file order, and as the rows of `waits` (made as they are read).
    `funcs`: the source's names by id (_functions); `calls`: its _call_index, being built meanwhile; `locked`(the
    waits), called once their locks are known (before their holders are looked for)."""
    p = {"sid": sid}
    trace_end = con.execute(
        "SELECT max(t) FROM (SELECT max(greatest(entry_ns, exit_ns)) t FROM fg_call_rows WHERE source_id = $sid"
        " UNION ALL SELECT max(t_ns) FROM sched_switch WHERE source_id = $sid"
        " UNION ALL SELECT max(t_ns) FROM sched_wakeup WHERE source_id = $sid"
        " UNION ALL SELECT max(t_ns) FROM trace_events WHERE source_id = $sid)", p).fetchall()[0][0]
    if trace_end is None:
        return [], iter(())
    lockfn = _lock_functions(funcs)
    _register(con, "_stalls_fn", {"func_id": [h[2] for h in lockfn.values()], "func": list(lockfn),
                                   "role": [h[1] for h in lockfn.values()]},
              {"func_id": pa.int32(), "func": pa.string(), "role": pa.string()})
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _stalls_outs AS SELECT line, prev_pid AS pid FROM sched_switch"
        " WHERE source_id = $sid AND prev_pid IS NOT NULL", p)
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _stalls_wk AS SELECT line, t_ns, cpu, pid, waker_pid, waker_comm FROM sched_wakeup"
        " WHERE source_id = $sid AND pid IS NOT NULL AND t_ns IS NOT NULL AND success IS NOT FALSE", p)

    # scheduler waits: switch-out asleep -> next switch-in; first wake-up after the switch-out (its end and
    # evidence written by DuckDB: a row is then a wait as is)
    blank = dict.fromkeys(_WAIT_KEYS)  # every wait has every column, as read back
    blank["innermost"] = None
    waits = _fetch(con.execute(f"""
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
        """, {**p, "end": trace_end}), blank)  # in file order: what follows (also_waiting lists, ...) must not depend on threads

    # call waits: long (or open) calls of sleeping primitives with no switch-out of the task inside them
    if lockfn:
        kept = _fetch(con.execute("""
            WITH c AS (
                SELECT c.line, c.pid, n.name AS comm, c.cpu, f.func, c.entry_ns, c.exit_ns, c.duration_ns, c.exit_line
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
            """, {**p, "min": MIN_CALL_SLEEP_NS, "latest": trace_end - MIN_CALL_SLEEP_NS}))
        for i, c in enumerate(kept):  # innermost: drop a call that holds the next candidate of its task
            nxt = kept[i + 1] if i + 1 < len(kept) else None
            if nxt and nxt["pid"] == c["pid"] and (c["exit_line"] is None or nxt["line"] < c["exit_line"]):
                continue
            what = f"{c['func']}() (line {c['line']})"
            w = {**blank, "source_id": sid, "line": c["line"], "kind": "call", "pid": c["pid"], "comm": c["comm"],
                 "cpu": c["cpu"], "start_ns": c["entry_ns"], "state": None, "innermost": c["line"], "inferred": True}
            woke = c["wake_line"] is not None and (c["exit_line"] is None or c["wake_line"] < c["exit_line"])
            if c["exit_line"] is not None:
                dur = c["duration_ns"] if c["duration_ns"] is not None else c["exit_ns"] - c["entry_ns"]
                w.update(end_ns=c["exit_ns"], duration_ns=dur, end_line=c["exit_line"], end_known=True,
                         evidence=f"no sched_switch of the task in the trace: inferred from the call {what}, which "
                                  f"returned after {_ms(dur)} (line {c['exit_line']})")
                if not woke:
                    w["evidence"] += "; no wake-up line for it in the trace"
            elif woke:
                w.update(end_ns=c["wake_ns"], end_line=c["wake_line"], end_known=True,
                         evidence=f"no sched_switch of the task in the trace: inferred from the call {what}, still open; "
                                  f"ends at its wake-up (line {c['wake_line']})")
            else:
                w.update(end_ns=trace_end, end_line=None, end_known=False,
                         evidence=f"no sched_switch of the task in the trace: inferred from the call {what}, still open "
                                  "and the task shows nothing more until the end of the trace: duration is a lower bound")
            if woke:
                w.update(wake_line=c["wake_line"], wake_ns=c["wake_ns"], wake_cpu=c["wake_cpu"],
                         waker_pid=c["waker_pid"], waker_comm=c["waker_comm"])
            waits.append(w)
        del kept
    if not waits:
        return [], iter(())
    for w in waits:
        if w["duration_ns"] is None:
            w["duration_ns"] = w["end_ns"] - w["start_ns"]
        if w["waker_pid"] is not None and w["waker_pid"] == w["pid"]:  # sched_wakeup written by the wakee
            w["waker_pid"] = w["waker_comm"] = None

    # stacks: of each wait at its line (here), of each waker at its wake line (beside, in a thread of its own: numpy
    # releases the GIL; not when the look-ups are SQL on `con`)
    n = len(waits)
    woken = [i for i, w in enumerate(waits) if w["waker_pid"] is not None]
    calls = calls.result()
    wakers = (con, sid, calls, [waits[i]["waker_pid"] for i in woken], [waits[i]["wake_cpu"] for i in woken],
              [waits[i]["wake_line"] for i in woken])
    with ThreadPoolExecutor(max_workers=1) as beside:
        wst = beside.submit(_stacks, *wakers) if calls["keys"] is not None else None
        st = _stacks(con, sid, calls, [w["pid"] for w in waits], [w["cpu"] for w in waits], [w["line"] for w in waits],
                     [w["innermost"] for w in waits])
        wst = wst.result() if wst is not None else _stacks(*wakers)
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
    _holders(con, sid, waits, need_holder, prims, lockfn)
    held = [i for i, w in enumerate(waits) if w["holder_pid"] is not None]
    hst = _stacks(con, sid, calls, [waits[i]["holder_pid"] for i in held], [None] * len(held),
                  [waits[i]["line"] for i in held])
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
            yield _wait_table(waits[r], {"stack_text": st.text(every[r], no[r]),
                                         "waker_stack_text": wst.text(waker[r], waker[r] < 0),
                                         "holder_stack_text": hst.text(holder[r], holder[r] < 0)})

    for name in ("_stalls_outs", "_stalls_wk"):
        con.execute(f"DROP TABLE IF EXISTS {name}")
    con.unregister("_stalls_fn")
    return waits, tables()


@functools.lru_cache(maxsize=65536)
def _lock_reason(prim: str | None, obj: str | None, innermost: str) -> tuple[str, str, str, str | None]:
    label = locks.label(tuple(f for f in (prim, obj) if f is not None))
    name = _lookup(obj)[0].name if obj is not None else None
    return label, (label.split(" via ", 1)[0] if name else label), name or _lookup(innermost)[0].name, name


class _Stacks:
    """The stacks of a list of requests, flat: request i's frames are codes[off[i]:off[i + 1]] (indexes into
    names), root first; none when no call was found."""

    def __init__(self, off: np.ndarray, codes: np.ndarray, names: list[str]):
        self.off, self.codes, self.names = off, codes, names
        self._o = off.tolist()
        self._frames = np.array(names, dtype=object)[codes].tolist()

    def found(self, i: int) -> bool:
        return self._o[i + 1] > self._o[i]

    def frames(self, i: int) -> list[str]:
        return self._frames[self._o[i]:self._o[i + 1]]

    def reasons(self, n: int) -> list[tuple[str | None, str | None, str | None, str | None]]:
        """Per request i < n, what its stack waits on: (lock label, lock key, primitive name, object primitive
        name). From its frames that take or sleep on a known lock, the outermost primitive and the innermost object
        (an object's own function before a sleep function objects share: locks.label); with none, the innermost
        frame that is not plumbing (label and key), else all None. Each name's kind is looked up once; the frames
        are scanned as arrays."""
        kinds = np.array([(_waiting(f), _is_object(f), _own_object(f), _not_plumbing(f)) for f in self.names],
                         bool).reshape(-1, 4)
        codes = self.codes[:self.off[n]]
        stack = np.repeat(np.arange(n), np.diff(self.off[:n + 1]))
        waiting, obj, own, plain = (kinds[codes, k] for k in range(4))

        def pick(mask: np.ndarray, last: bool) -> np.ndarray:  # per stack, the code of its first (last) masked frame
            out, at = np.full(n, -1), np.flatnonzero(mask)
            if len(at):
                s = stack[at]
                edge = np.flatnonzero(np.append(s[1:] != s[:-1], True) if last else np.insert(s[1:] != s[:-1], 0, True))
                out[s[edge]] = codes[at[edge]]
            return out

        prim, inner, inner_obj = pick(waiting & ~obj, False), pick(waiting, True), pick(own, True)
        inner_obj = np.where(inner_obj >= 0, inner_obj, pick(waiting & obj, True))  # else a shared sleep function
        other = pick(plain, True)
        names, out = self.names, []
        for p, o, w, f in zip(prim.tolist(), inner_obj.tolist(), inner.tolist(), other.tolist()):
            if w >= 0:  # _lock_reason keeps each (primitive, object, innermost) it has seen
                out.append(_lock_reason(names[p] if p >= 0 else None, names[o] if o >= 0 else None, names[w]))
            else:
                out.append((names[f], names[f], None, None) if f >= 0 else (None, None, None, None))
        return out

    def text(self, rows: np.ndarray, null: np.ndarray) -> pa.Array:
        """Per row, the frames of request rows[j] joined by STACK_SEP (as `waits` stores them), or null where
        null[j]."""
        start, count, sel = np.zeros(len(rows), np.int64), np.zeros(len(rows), np.int64), rows[~null]
        start[~null], count[~null] = self.off[sel], self.off[sel + 1] - self.off[sel]
        offsets = np.zeros(len(rows) + 1, np.int64)
        np.cumsum(count, out=offsets[1:])
        take = np.repeat(start - offsets[:-1], count) + np.arange(offsets[-1])
        values = pa.array(self.names, pa.string()).take(self.codes[take])
        return pc.binary_join(pa.LargeListArray.from_arrays(offsets, values, mask=pa.array(null, pa.bool_())),
                              STACK_SEP)


def _stacks(con, sid: int, calls: dict, pid: list, cpu: list, line: list, innermost: list | None = None) -> _Stacks:
    """The stacks of the requests i: the calls (_call_index) of task pid[i] open at line[i] (or the ancestors-or-self
    of the call innermost[i] when given), root first; the idle task (pid 0) has one per CPU (cpu[i])."""
    req = {"pid": _ints(pid), "cpu": _ints(cpu), "line": _ints(line), "inner": _ints(innermost or [None] * len(pid))}
    tops = _tops(calls, req) if calls["keys"] is not None else _tops_sql(con, sid, req)
    k, at, cur = tops
    at = np.minimum(at, calls["bound"])  # past every call and exit: the same as at the bound
    parent, exit_line, code = calls["parent"], calls["exit"], calls["code"]
    # the last call entered before the line (or the innermost call) and its ancestors, less those that had already
    # returned (a suffix of that chain); all stacks climb one level per step: calls -> their parents
    ok = (cur >= 0) & (cur < len(code))
    ok[ok] = code[cur[ok]] != _NO_CALL
    k, at, cur = k[ok], at[ok], cur[ok]
    parts, depth = [], np.zeros(len(pid), np.int64)  # per level: requests, their frame's level from the top, call
    for _ in range(4096):
        if not len(k):
            break
        open_at = exit_line[cur] >= at
        parts.append((k[open_at], depth[k[open_at]], cur[open_at]))
        depth[k[open_at]] += 1
        nxt = parent[cur]
        ok = (nxt >= 0) & (nxt < len(code))
        ok[ok] = code[nxt[ok]] != _NO_CALL
        k, at, cur = k[ok], at[ok], nxt[ok]
    off = np.zeros(len(pid) + 1, np.int64)
    np.cumsum(depth, out=off[1:])
    lines = np.zeros(off[-1], np.int64)
    for ks, level, calls_at in parts:  # root first: the frame found last goes first
        lines[off[ks] + depth[ks] - 1 - level] = calls_at
    return _Stacks(off, code[lines], calls["names"])


def _ints(values: list) -> tuple[np.ndarray, np.ndarray]:
    """(values with nulls as 0, valid) of a list of ints or None."""
    a = pa.array(values, pa.int64())
    return a.fill_null(0).to_numpy(), a.is_valid().to_numpy(zero_copy_only=False)


def _ckey(req: dict) -> np.ndarray:
    """Which stack of its task a request looks at: per CPU for the idle task (-2: CPU unknown), else -1."""
    (pid, has_pid), (cpu, has_cpu) = req["pid"], req["cpu"]
    return np.where(has_pid & (pid == 0), np.where(has_cpu, cpu, -2), -1)


def _tops_sql(con, sid: int, req: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """As _tops, in SQL, for call indexes whose keys do not fit in numbers."""
    cols = {"pid": req["pid"], "line": req["line"], "innermost": req["inner"]}
    con.register("_stalls_req", pa.table({"k": np.arange(len(req["pid"][0])), "ckey": _ckey(req),
                                          **{c: pa.array(v, mask=~ok) for c, (v, ok) in cols.items()}}))
    # the last call the task entered before `line`
    tops = con.execute("""
        SELECT r.k, coalesce(r.line, -1) AS at_line, coalesce(r.innermost, c.line) AS line FROM _stalls_req r
        ASOF LEFT JOIN (SELECT pid, CASE WHEN pid = 0 THEN cpu ELSE -1 END AS ckey, line FROM fg_call_rows
                        WHERE source_id = $sid AND pid IS NOT NULL) c
        ON r.pid = c.pid AND r.ckey = c.ckey AND c.line < r.line
        WHERE coalesce(r.innermost, c.line) IS NOT NULL ORDER BY r.k""", {"sid": sid}).fetchnumpy()
    con.unregister("_stalls_req")
    return tuple(np.asarray(tops[c], np.int64) for c in ("k", "at_line", "line"))


def _tops(calls: dict, req: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per request, the last call of its task (per CPU for pid 0) before its line, or its `innermost` call:
    (requests found, their lines, those calls' lines)."""
    keys, bits = calls["keys"]
    (pid, has_pid), (cpu, has_cpu), (at, has_at), (inner, has_inner) = req["pid"], req["cpu"], req["line"], req["inner"]
    task = np.where(pid > 0, pid, np.where(has_cpu, -10 - cpu, -8))  # as _call_index's; -8: pid 0, CPU unknown
    fits = has_pid & has_at & ((pid > 0) | ((pid == 0) & (cpu >= 0))) & (np.abs(task) < 1 << (62 - bits))
    # the last key below (task, line): the task's last call before the line, if that key is the task's
    j = np.searchsorted(keys, np.where(fits, task, 0) * (1 << bits) + np.clip(at, 0, (1 << bits) - 1)) - 1
    last = keys[np.maximum(j, 0)] if len(keys) else np.zeros(len(j), np.int64)
    ok = fits & ~has_inner & (j >= 0) & (last >> bits == task)
    line = np.where(ok, last & ((1 << bits) - 1), inner)
    sel = np.flatnonzero(ok | has_inner)
    return sel, np.where(has_at, at, -1)[sel], line[sel]


_NO_CALL = -2  # the function code of a line where no call is


def _call_index(con, sid: int, names: list[str]) -> dict:
    """The source's calls by line (a line has at most one call): each call's parent line (-1: none), exit line
    (the integer type's max: none) and function (an index into names; _NO_CALL: no call at this line), in the
    smallest integers that hold every line of the calls (`bound`: above them all) and every name; and `keys`, for
    the stacks' look-ups of a task's last call before a line: (the sorted task * 2**bits + line of the calls with a
    task, bits), None when a key would not fit. A call's task is its pid, for the idle task (pid 0) -10 - its CPU (-5:
    CPU unknown, never looked up)."""
    last, pid_lo, pid_hi, cpu_lo, cpu_hi, ncalls = con.execute(
        "SELECT max(greatest(line, exit_line)), min(pid), max(pid), min(cpu) FILTER (pid = 0),"
        " max(cpu) FILTER (pid = 0), count(*) FROM fg_call_rows WHERE source_id = ? AND line >= 0", [sid]).fetchall()[0]
    bound = (last or 0) + 1
    bits = bound.bit_length()
    limit = 1 << (62 - bits)  # |task| < limit: task * 2**bits + line fits in 63 bits
    unfit = (pid_lo is not None and (pid_lo < 0 or pid_hi >= limit)) or (
        cpu_lo is not None and (cpu_lo < 0 or cpu_hi >= limit - 10))
    key = f"CASE WHEN c.pid > 0 THEN c.pid WHEN c.pid = 0 THEN coalesce(-10 - c.cpu::BIGINT, -5) END * {1 << bits}"
    sql_type, dtype = ("INTEGER", np.int32) if bound < np.iinfo(np.int32).max else ("BIGINT", np.int64)
    code_type = np.int16 if len(names) < np.iinfo(np.int16).max else np.int32
    index = {"names": names + ["?"], "bound": bound, "parent": np.full(bound, -1, dtype),
             "exit": np.zeros(bound, dtype), "code": np.full(bound, _NO_CALL, code_type), "keys": None}
    keys, nkeys = np.empty(0 if unfit else ncalls, np.int64), 0
    # batch by batch: the whole result at once would be ~24 bytes a call more at the derivation's peak
    reader = con.sql(f"""
        SELECT c.line::{sql_type} AS line, coalesce(c.parent_line, -1)::{sql_type} AS parent,
               coalesce(c.exit_line, {np.iinfo(dtype).max})::{sql_type} AS exit,
               coalesce(c.func_id, {len(names)}) AS code,
               {"NULL::BIGINT" if unfit else key} + c.line AS key
        FROM fg_call_rows c WHERE c.source_id = $sid AND c.line >= 0
        """, params={"sid": sid}).to_arrow_reader(1 << 20)
    for b in reader:
        line = b.column("line").to_numpy()
        for name in ("parent", "exit", "code"):
            index[name][line] = b.column(name).to_numpy()
        if not unfit:
            k = pc.drop_null(b.column("key")).to_numpy()
            keys[nkeys : nkeys + len(k)] = k
            nkeys += len(k)
    if not unfit:
        keys = keys[:nkeys]
        keys.sort(kind="stable")  # in place; a merge sort: each task's calls come in runs
        index["keys"] = (keys, bits)
    return index


def _holders(con, sid: int, waits: list[dict], need: dict[str, list[int]], prims: dict, lockfn: dict) -> None:
    """Inferred holders (see the module's rules): one SQL pass over the acquire calls of the objects
    waited on, with each acquire's next release by the same task; then a short backward scan per wait,
    all of an object's waits at once."""
    if not need:
        return
    # match the trace's own spellings (with .isra.0 etc.) of those functions
    objs = list(need)
    spelled = [(f, i, objs.index(p.name), role) for f, (p, role, i) in lockfn.items()
               if p.name in need and role in ("acquire", "release")]
    if not spelled:
        return
    _register(con, "_stalls_hf", dict(zip(("func", "func_id", "obj", "role"), map(list, zip(*spelled)))),
              {"func": pa.string(), "func_id": pa.int32(), "obj": pa.int32(), "role": pa.string()})
    t = con.sql(f"""
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
        """, params={"sid": sid}).to_arrow_table()
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
                holder_pid=h["pid"], holder_comm=h["comm"], holder_line=h["line"], holder_ns=h["exit_ns"],
                holder_evidence=f"inferred holder: {_task(h['comm'], h['pid'])} returned from {h['func']}() (line "
                                f"{h['line']}) at {_ts(h['exit_ns'])}, before this wait began, and did not call "
                                f"{rel_names}() " + (f"until line {h['rel_line']}" if h["rel_line"] is not None
                                                     else "in the rest of the trace"))


_SCHED_WAIT = {  # the columns of a scheduler wait, in SQL over _derive_waits' scheduler rows
    "source_id": "$sid", "line": "line", "kind": "'sched'", "pid": "pid", "comm": "comm", "cpu": "cpu",
    "start_ns": "t_ns", "end_ns": "end_at", "duration_ns": "end_at - t_ns",
    "end_known": "in_line IS NOT NULL OR woke", "end_line": "CASE WHEN in_line IS NOT NULL THEN in_line WHEN woke THEN wl END",
    "state": "state", "inferred": "in_line IS NULL",
    "evidence": "CASE WHEN in_line IS NOT NULL THEN format('{}, back on CPU at line {}{}', out, in_line,"
                " CASE WHEN woke THEN '' ELSE '; no wake-up line for it in the trace' END)"
                " WHEN woke THEN format('{}; its switch-in is not in the trace: ends at its wake-up (line {})', out, wl)"
                " ELSE out || '; still asleep when the trace ends (no wake-up, no switch-in): duration is a lower bound'"
                " END",
    "wake_line": "CASE WHEN woke THEN wl END", "wake_ns": "CASE WHEN woke THEN wns END",
    "wake_cpu": "CASE WHEN woke THEN wcpu END", "waker_pid": "CASE WHEN woke AND other THEN wpid END",
    "waker_comm": "CASE WHEN woke AND other THEN wcomm END",
}
_WAIT_TYPES = {
    "source_id": pa.int32(), "line": pa.int64(), "kind": pa.string(), "pid": pa.int64(), "comm": pa.string(),
    "cpu": pa.int32(), "start_ns": pa.int64(), "end_ns": pa.int64(), "duration_ns": pa.int64(),
    "end_known": pa.bool_(), "end_line": pa.int64(), "state": pa.string(), "lock": pa.string(),
    "lock_key": pa.string(), "primitive": pa.string(), "stack_text": pa.string(), "inferred": pa.bool_(),
    "evidence": pa.string(), "waker_pid": pa.int64(), "waker_comm": pa.string(), "waker_stack_text": pa.string(),
    "wake_line": pa.int64(), "wake_ns": pa.int64(),
    "wake_cpu": pa.int32(), "holder_pid": pa.int64(), "holder_comm": pa.string(), "holder_line": pa.int64(),
    "holder_ns": pa.int64(), "holder_evidence": pa.string(), "holder_stack_text": pa.string(),
}


def _wait_table(waits: list[dict], stacks: dict[str, pa.Array]) -> pa.Table:
    scalars = {k: t for k, t in _WAIT_TYPES.items() if k not in stacks}
    values = zip(*map(operator.itemgetter(*scalars), waits))  # column by column
    return pa.table({**{k: pa.array(v, t) for (k, t), v in zip(scalars.items(), values)}, **stacks})


_WAIT_KEYS = [*_WAIT_TYPES, "stack", "waker_stack", "holder_stack"]  # a wait's dict: its row, its stacks as lists


def migrate(con) -> None:
    """A database written with an older layout of the waits or the chains' links: a table `waits` or `chain_links`
    (stacks stored as lists, or as text with virtual list columns; the waits' stack_lines, never read). Each is
    rebuilt once into wait_rows or chain_link_rows (WAITS_COLUMNS, CHAIN_LINKS_COLUMNS), its rows kept, before the
    schema makes the views of those names."""
    for old, rows, columns in (("waits", "wait_rows", WAITS_COLUMNS), ("chain_links", "chain_link_rows",
                                                                        CHAIN_LINKS_COLUMNS)):
        stored = tables.stored_columns(con, old)
        if not stored:  # no such table: the view, or a new file
            continue
        con.execute("DROP VIEW IF EXISTS stall_waits")
        # a stack's text from its list, where the old table stored the list
        tables.rebuild(con, old, rows, columns, {f"{c}_text": f"array_to_string({c}, chr(31))"
                                                 for c in ("stack", "waker_stack", "holder_stack") if c in stored})


def migrate_calls(con) -> None:
    """A database written before the calls' names became ids (parsers/funcgraph.py): a table `fg_calls` with the
    comm and func text in each row. Its names go to fg_names (per source, ids in name order), its rows to
    fg_call_rows, in one transaction, before the view of that name is made."""
    if not tables.stored_columns(con, "fg_calls"):  # no such table: the view, or a new file
        return
    con.begin()
    con.execute("""
        INSERT INTO fg_names (source_id, id, name)
        SELECT source_id, (row_number() OVER (PARTITION BY source_id ORDER BY name) - 1)::INTEGER, name FROM (
            SELECT source_id, comm AS name FROM fg_calls WHERE comm IS NOT NULL
            UNION SELECT source_id, func FROM fg_calls WHERE func IS NOT NULL)""")
    cols = [c for c in funcgraph.CALL_COLUMNS if c not in ("comm", "func")]
    con.execute(f"""
        INSERT INTO fg_call_rows ({", ".join(cols)}, comm_id, func_id)
        SELECT {", ".join(f"c.{c}" for c in cols)}, cn.id, fn.id FROM fg_calls c
        LEFT JOIN fg_names cn ON cn.source_id = c.source_id AND cn.name = c.comm
        LEFT JOIN fg_names fn ON fn.source_id = c.source_id AND fn.name = c.func""")
    con.execute("DROP TABLE fg_calls")
    con.commit()


def _insert_waits(con, tables: Iterable[pa.Table]) -> None:
    cols = ", ".join(_WAIT_TYPES)
    for table in tables:
        con.register("_stalls_w", table)
        con.execute(f"INSERT INTO wait_rows ({cols}) SELECT {cols} FROM _stalls_w")
        con.unregister("_stalls_w")


# ---- chains ------------------------------------------------------------------------------------

def _has_io_completion(frames) -> str | None:
    f = next(filter(_is_io, reversed(frames or ())), None)
    return None if f is None else _base(f)


class _Index:
    """The waits of one source by task, for 'the wait of task X that overlapped ...' look-ups."""

    def __init__(self, waits: list[dict]):
        self.by_pid: dict[int, list[dict]] = defaultdict(list)
        for w in sorted(waits, key=operator.itemgetter("start_ns", "line")):
            self.by_pid[w["pid"]].append(w)
        self.starts = {pid: [w["start_ns"] for w in ws] for pid, ws in self.by_pid.items()}
        # the latest end among a task's waits up to each: a look-up stops when no earlier wait reaches w's start
        self.reach = {pid: list(itertools.accumulate((w["end_ns"] for w in ws), max))
                      for pid, ws in self.by_pid.items()}
        # the I/O completion and lock release functions among the wakers' frames (a set look-up per stack, not a
        # call per frame)
        self.marked = set(filter(_path_mark, set().union(*(w["waker_stack"] or () for w in waits))))
        self.io = set(filter(_is_io, self.marked))

    def latest_woken(self, w) -> dict | None:
        """latest(waker, wake_ns): a wait of the waker that ended at or before the wake-up, after w began."""
        ws = self.by_pid.get(w["waker_pid"])
        if not ws:
            return None
        wake, start, reach = w["wake_ns"], w["start_ns"], self.reach[w["waker_pid"]]
        j = bisect.bisect_left(self.starts[w["waker_pid"]], wake) - 1
        for k in range(j, max(-1, j - 64), -1):
            if reach[k] <= start:
                break
            v = ws[k]
            if v is not w and v["end_ns"] <= wake and v["end_known"] and v["end_ns"] > start:
                return v
        return None

    def latest_held(self, w, before_ns: int) -> dict | None:
        """latest(holder, before_ns): a wait of the holder begun after it took the lock, ended after w began."""
        ws = self.by_pid.get(w["holder_pid"])
        if not ws:
            return None
        took, start, reach = w["holder_ns"] or 0, w["start_ns"], self.reach[w["holder_pid"]]
        j = bisect.bisect_left(self.starts[w["holder_pid"]], before_ns) - 1
        for k in range(j, max(-1, j - 64), -1):
            v = ws[k]
            if v["start_ns"] < took or reach[k] <= start:  # nor will any earlier one (they began earlier)
                break
            if v["end_ns"] > start:
                return v
        return None


def _next(w: dict, idx: _Index) -> tuple[str | None, dict | None, tuple | None]:
    """(relation, the next link's wait or None, else (pid, line) of the task that ends the chain, running)."""
    if w["waker_pid"] is not None:
        end = (w["waker_pid"], w["wake_line"])
        if w["waker_stack"] and not idx.io.isdisjoint(w["waker_stack"]):
            return "io_completion", None, end
        if _is_idle(w["waker_pid"], w["waker_comm"]):
            return "woken_by", None, end
        v = idx.latest_woken(w)
        return "woken_by", v, None if v is not None else end
    if w["holder_pid"] is not None:
        end = w["end_ns"] if w["end_known"] else None
        v = idx.latest_held(w, end if end is not None else 1 << 62)
        return "held_by", v, None if v is not None else (w["holder_pid"], w["holder_line"])
    return None, None, None


def _describe(w: dict, rel: str, v: dict | None, idx: _Index) -> tuple[str, dict | None]:
    """The evidence of a link's relation to the next (see _next), and the link that ends the chain when no wait
    follows (the waker or the holder itself). Built only for the links stored."""
    if w["waker_pid"] is not None:
        waker = _task(w["waker_comm"], w["waker_pid"])
        io = _has_io_completion(w["waker_stack"]) if rel == "io_completion" else None
        via = _path(w["waker_stack"], idx.marked)
        term = {"pid": w["waker_pid"], "comm": w["waker_comm"], "lock": None, "start_ns": w["wake_ns"],
                "end_ns": w["wake_ns"], "duration_ns": 0, "end_known": True, "stack": w["waker_stack"] or [],
                "line": w["wake_line"], "source_id": w["source_id"], "inferred": False}
        if io or _is_idle(w["waker_pid"], w["waker_comm"]):
            ctx = "an interrupt on the idle CPU" if _is_idle(w["waker_pid"], w["waker_comm"]) else waker
            term["evidence"] = f"{ctx} woke {_task(w['comm'], w['pid'])} at line {w['wake_line']} from {via}"
            return (f"woken at line {w['wake_line']} by {waker} in the I/O completion {io}()" if io
                    else f"woken at line {w['wake_line']} by {ctx}"), term
        ev = f"woken at line {w['wake_line']} by {waker} from {via}"
        if v is not None:
            return ev + f"; {waker} had itself waited from line {v['line']}", None
        term["evidence"] = f"running: woke {_task(w['comm'], w['pid'])} at line {w['wake_line']} from {via}"
        return ev, term
    if v is not None:
        return w["holder_evidence"], None
    return w["holder_evidence"], {
        "pid": w["holder_pid"], "comm": w["holder_comm"], "lock": None, "start_ns": w["start_ns"],
        "end_ns": w["end_ns"], "duration_ns": None, "end_known": w["end_known"], "stack": w["holder_stack"] or [],
        "line": w["holder_line"], "source_id": w["source_id"], "inferred": True,
        "evidence": f"holds the lock and shows no wait of its own that overlaps ({w['holder_evidence']})"}


def _derive_chains(con, analysis_id: str, sids: list[int]) -> None:
    """The analysis' chains from its stored waits."""
    if not sids:
        return
    rows = _fetch(con.execute(
        "SELECT w.*, s.clock_offset_ns AS off FROM waits w JOIN sources s ON s.id = w.source_id"
        " WHERE s.analysis_id = ?", [analysis_id]))
    by_source: dict[int, list[dict]] = defaultdict(list)
    for w in rows:
        by_source[w["source_id"]].append(w)
    chains = _chains(by_source)
    _match_requests(con, analysis_id, chains)
    _insert_chains(con, analysis_id, chains)


def _chains(by_source: dict[int, list[dict]]) -> list[dict]:
    """The chains of the waits (each source's, with every column of `waits`, and `off`: its clock offset)."""
    heads = [h for ws in by_source.values() for h in _source_heads(ws)]
    # a chain's rank is its first link's: only the chains kept are built
    heads.sort(key=lambda h: (-h[0]["duration_ns"], h[0]["source_id"], h[0]["line"]))
    return [_build_chain(h, ctx) for h, ctx in heads[:MAX_CHAINS]]


def _wait_brief(w: dict) -> str:
    """A wait as an entry of a link's also_waiting (JSON)."""
    return json.dumps({"pid": w["pid"], "comm": w["comm"], "lock": w["lock"], "source_id": w["source_id"],
                       "line": w["line"], "start_ns": w["start_ns"], "end_ns": w["end_ns"],
                       "duration_ns": w["duration_ns"], "end_known": w["end_known"], "inferred": w["inferred"]})


class _Group:
    """The waiters of one group (same lock, same next link; in file order), for 'which of them overlap this wait'
    look-ups: by a look at each, or as arrays when there are many (a group may have thousands of members). Each
    member's JSON is made once."""

    ARRAYS = 64  # members from which the arrays cost less than a look at each

    def __init__(self, members: list[dict]):
        self.members = members
        self.briefs: dict[int, str] = {}
        self.starts = self.ends = None
        if len(members) >= self.ARRAYS:
            self.starts = np.fromiter((m["start_ns"] for m in members), np.int64, len(members))
            self.ends = np.fromiter((m["end_ns"] for m in members), np.int64, len(members))

    def overlapping(self, w: dict) -> str:
        """The other members that overlap w in time, in file order, as a JSON list."""
        members, briefs, s, e = self.members, self.briefs, w["start_ns"], w["end_ns"]
        if self.starts is None:
            hits = [i for i, m in enumerate(members) if m["start_ns"] < e and m["end_ns"] > s]
        else:
            hits = np.flatnonzero((self.starts < e) & (self.ends > s)).tolist()
        return "[" + ", ".join(briefs.get(i) or briefs.setdefault(i, _wait_brief(members[i]))
                               for i in hits if members[i] is not w) + "]"


def _source_heads(ws: list[dict]) -> list[tuple[dict, tuple]]:
    """The first links of the source's chains, each with what building its chain needs."""
    idx = _Index(ws)
    nxt = {}
    targets = set()
    for w in ws:
        n = nxt[id(w)] = _next(w, idx)
        if n[1] is not None:
            targets.add(id(n[1]))
    # waiters on the same lock with the same next link: one group
    groups: dict[tuple, list[dict]] = defaultdict(list)
    gkey = {}
    for w in ws:
        rel, v, end = nxt[id(w)]
        if rel is None or w["lock_key"] is None:
            continue
        tgt = ("w", v["line"]) if v is not None else ("t", *end)
        gkey[id(w)] = (w["lock_key"], rel, tgt)
        groups[gkey[id(w)]].append(w)
    ctx = (nxt, groups, gkey, idx, {})  # {}: the groups' look-ups (_Group), made as needed
    heads = []
    seen_groups = set()
    for w in ws:
        if id(w) in targets or not (w["primitive"] is not None or (w["state"] or "").startswith("D")):
            continue
        g = gkey.get(id(w))
        if g is not None:
            if g in seen_groups:
                continue
            seen_groups.add(g)
            members = [m for m in groups[g] if id(m) not in targets]
            w = max(members, key=lambda m: (m["end_known"], m["duration_ns"], -m["line"]))
        heads.append((w, ctx))
    return heads


def _build_chain(h: dict, ctx: tuple) -> dict:
    nxt, groups, gkey, idx, looked = ctx

    def also(w):
        k = gkey.get(id(w))
        if k is None:
            return "[]"
        return (looked.get(k) or looked.setdefault(k, _Group(groups[k]))).overlapping(w)

    links, seen, w = [], set(), h
    while w is not None and len(links) < MAX_LINKS:
        seen.add(id(w))
        rel, v, _ = nxt[id(w)]
        rel_ev, term = _describe(w, rel, v, idx) if rel else ("", None)
        evidence = w["evidence"] + (f"; {w['holder_evidence']}" if rel == "held_by" and w["holder_evidence"] else "")
        if rel and rel != "held_by":
            evidence += f"; {rel_ev}"
        links.append({"source_id": w["source_id"], "wait_line": w["line"], "pid": w["pid"], "comm": w["comm"],
                      "lock": w["lock"], "start_ns": w["start_ns"], "end_ns": w["end_ns"],
                      "duration_ns": w["duration_ns"], "end_known": w["end_known"], "relation": rel,
                      "inferred": bool(w["inferred"] or rel == "held_by"), "evidence": evidence,
                      "stack": w["stack"], "line": w["line"], "also_waiting": also(w), "_wait": w})
        if term is not None:
            links.append({**term, "wait_line": None, "relation": None, "also_waiting": "[]"})
            break
        w = v if v is not None and id(v) not in seen else None
    return {"duration_ns": h["duration_ns"], "links": links}


def _match_requests(con, analysis_id: str, chains: list[dict]) -> None:
    todo = [(ci, li, l) for ci, c in enumerate(chains) for li, l in enumerate(c["links"])
            if l["relation"] == "io_completion" and l.get("_wait") is not None]
    if not todo:
        return
    blk = con.execute("SELECT count(*) FROM sources WHERE analysis_id = ? AND format = 'blkparse'",
                      [analysis_id]).fetchall()[0][0]
    if not blk:
        return
    _register(con, "_stalls_io", {
        "k": list(range(len(todo))), "wake": [l["_wait"]["wake_ns"] + (l["_wait"]["off"] or 0) for _, _, l in todo],
        "pid": [l["pid"] for _, _, l in todo],
    }, {"k": pa.int64(), "wake": pa.int64(), "pid": pa.int64()})
    rows = _fetch(con.execute("""
        WITH r AS (
            SELECT r.source_id, r.line, r.dev, r.sector, r.nsect, r.rwbs, r.pid, r.comm, r.q_ns, r.i_ns, r.d_ns, r.c_ns,
                   r.c_ns + s.clock_offset_ns AS c_at
            FROM blk_requests r JOIN sources s ON s.id = r.source_id
            WHERE s.analysis_id = $aid AND s.format = 'blkparse' AND r.c_ns IS NOT NULL
        )
        SELECT l.k, r.* EXCLUDE (c_at), r.c_at - l.wake AS delta
        FROM _stalls_io l JOIN r ON r.c_at BETWEEN l.wake - $win AND l.wake + $slack
        QUALIFY row_number() OVER (PARTITION BY l.k ORDER BY (r.pid = l.pid) DESC NULLS LAST, (r.c_at <= l.wake) DESC,
                                   abs(r.c_at - l.wake), r.source_id, r.line) = 1
        """, {"aid": analysis_id, "win": REQUEST_WINDOW_NS, "slack": REQUEST_SLACK_NS}))
    con.unregister("_stalls_io")
    for r in rows:
        _, _, link = todo[r["k"]]
        link["request"] = r
        d = -r["delta"]
        when = f"{_ms(abs(d))} {'before' if d >= 0 else 'after'}"
        link["evidence"] += (f"; block request {r['dev']} {r['rwbs'] or ''} {r['sector']} + {r['nsect']} completed "
                             f"{when} the wake-up (blktrace source {r['source_id']}, line {r['line']})")


_LINK_TYPES = {"source_id": pa.int32(), "wait_line": pa.int64(), "pid": pa.int64(), "comm": pa.string(),
               "lock": pa.string(), "start_ns": pa.int64(), "end_ns": pa.int64(), "duration_ns": pa.int64(),
               "end_known": pa.bool_(), "relation": pa.string(), "inferred": pa.bool_(), "evidence": pa.string(),
               "line": pa.int64()}
_REQUEST_TYPES = {"source_id": pa.int32(), "line": pa.int64(), "dev": pa.string(), "sector": pa.int64(),
                  "nsect": pa.int64(), "rwbs": pa.string(), "pid": pa.int64(), "comm": pa.string(), "q_ns": pa.int64(),
                  "i_ns": pa.int64(), "d_ns": pa.int64(), "c_ns": pa.int64()}


def _insert_chains(con, analysis_id: str, chains: list[dict]) -> None:
    if not chains:
        return
    _register(con, "_stalls_ch", {"chain_id": list(range(1, len(chains) + 1)),
                                  "duration_ns": [c["duration_ns"] for c in chains],
                                  "links": [len(c["links"]) for c in chains]},
              {"chain_id": pa.int32(), "duration_ns": pa.int64(), "links": pa.int32()})
    con.execute("INSERT INTO chains SELECT ?, chain_id, duration_ns, links FROM _stalls_ch", [analysis_id])
    con.unregister("_stalls_ch")
    links = [link for c in chains for link in c["links"]]
    data = {"chain_id": pa.array([i + 1 for i, c in enumerate(chains) for _ in c["links"]], pa.int32()),
            "pos": pa.array([pos for c in chains for pos in range(len(c["links"]))], pa.int32()),
            "also_waiting": pa.array([link["also_waiting"] for link in links], pa.string())}
    values = zip(*map(operator.itemgetter(*_LINK_TYPES), links))  # column by column
    data.update({k: pa.array(v, t) for (k, t), v in zip(_LINK_TYPES.items(), values)})
    data["stack_text"] = pa.array([STACK_SEP.join(link["stack"]) for link in links], pa.string())
    matched = [(i, link["request"]) for i, link in enumerate(links) if link.get("request")]
    for k, t in _REQUEST_TYPES.items():
        col = [None] * len(links)
        for i, r in matched:
            col[i] = r[k]
        data[f"req_{k}"] = pa.array(col, t)
    con.register("_stalls_cl", pa.table(data))
    names = ", ".join(data)
    con.execute(f"INSERT INTO chain_link_rows (analysis_id, {names}) SELECT ?, {names} FROM _stalls_cl", [analysis_id])
    con.unregister("_stalls_cl")


def relink(con, analysis_id: str) -> None:
    """Builds the analysis' chains again from its stored waits, after a source's clock offset changed: which block
    request completed at a wake-up depends on it (inside the caller's transaction)."""
    con.execute("DELETE FROM chain_link_rows WHERE analysis_id = ?", [analysis_id])
    con.execute("DELETE FROM chains WHERE analysis_id = ?", [analysis_id])
    sids = [r[0] for r in con.execute(
        "SELECT id FROM sources WHERE analysis_id = ? AND format = 'ftrace' ORDER BY id", [analysis_id]).fetchall()]
    _derive_chains(con, analysis_id, sids)


# ---- reads -------------------------------------------------------------------------------------

WAIT_COLUMNS = ["source_id", "line", "kind", "pid", "comm", "cpu", "start_ns", "end_ns", "duration_ns", "end_known",
                "end_line", "state", "lock", "primitive", "stack", "inferred", "evidence", "waker_pid", "waker_comm",
                "waker_stack", "wake_line", "wake_ns", "holder_pid", "holder_comm", "holder_line", "holder_ns",
                "holder_evidence"]
_WAIT_ORDER = {"duration": "w.duration_ns DESC, w.source_id, w.line",
               "start": "w.start_ns + s.clock_offset_ns, w.source_id, w.line"}
_WAIT_TIMES = frozenset({"start_ns", "end_ns", "wake_ns", "holder_ns"})
_WAIT_FILTERS = {"pid": "w.pid = $pid", "lock": "contains(w.lock, $lock)", "t0": "w.end_ns + s.clock_offset_ns >= $t0",
                 "t1": "w.start_ns + s.clock_offset_ns <= $t1",
                 # on a lock as flame graphs mark frames: the label's object or primitive is that lock of the table
                 # (any of its names: $lock_names, locks.label_names), or the label is the key exactly
                 "lock_key": "(w.lock = $lock_key OR list_contains($lock_names, split_part(w.lock, ' via ', 1))"
                             " OR list_contains($lock_names, split_part(w.lock, ' via ', 2)))"}


def waits(con, analysis_id: str, order: str = "duration", limit: int = 100, pid=None, lock=None, t0=None,
          t1=None, lock_key=None, idle: bool = False) -> list[dict]:
    """Waits by duration or start; lock: the label contains it (free text); lock_key: the label's object or primitive
    is that lock of locks.py, by any of its names (`xfs_buf_lock via down` is on xfs_buf_lock, semaphore and down,
    not on down_read; xfs_ilock_map_shared is xfs_ilock), else the label is it exactly; idle: idle sleeps too (see
    `stall_waits`)."""
    given = {k: v for k, v in {"pid": pid, "lock": lock, "t0": t0, "t1": t1, "lock_key": lock_key}.items()
             if v is not None}
    where = "".join(f" AND {_WAIT_FILTERS[k]}" for k in given)
    if lock_key is not None:
        given["lock_names"] = locks.label_names(lock_key)
    # times on the analysis timeline: the source's own + its clock offset
    cols = ", ".join(f"w.{c} + s.clock_offset_ns AS {c}" if c in _WAIT_TIMES else f"w.{c}" for c in WAIT_COLUMNS)
    return _fetch(con.execute(
        f"SELECT {cols} FROM {'waits' if idle else 'stall_waits'} w JOIN sources s ON s.id = w.source_id"
        f" WHERE s.analysis_id = $aid{where}"
        f" ORDER BY {_WAIT_ORDER[order]} LIMIT $limit", {"aid": analysis_id, "limit": limit, **given}))


def first_waits(con, analysis_id: str, order: str = "duration", limit: int = 100, idle: bool = False) -> list[dict]:
    """The unfiltered list of waits (the Stalls tab's first), kept per analysis and clock offsets (memo.py): the
    route's and the warm-up's (warm.py)."""
    return memo.get((analysis_id, "waits", order, limit, idle, memo.offsets(con, analysis_id)),
                    lambda: waits(con, analysis_id, order, limit, idle=idle))


def first_chains(con, analysis_id: str, limit: int = 50) -> list[dict]:
    """The chains over the whole analysis (the Stalls tab's first), kept as first_waits is."""
    return memo.get((analysis_id, "chains", limit, memo.offsets(con, analysis_id)),
                    lambda: chains(con, analysis_id, limit))


def lock_waits(con, analysis_id: str, lock_keys: list[str], t0=None, t1=None) -> list[dict]:
    """Per lock key, what /waits?lock_key= lists (its filters, stall waits only; in the window t0..t1 when given):
    how many waits and their total duration, so that a link to them can say so before it is followed (the off-CPU
    view's sleeping primitives)."""
    window = {k: v for k, v in {"t0": t0, "t1": t1}.items() if v is not None}
    where = "".join(f" AND {_WAIT_FILTERS[k]}" for k in ("lock_key", *window))
    out = []
    for key in dict.fromkeys(lock_keys):
        n, total = con.execute(
            "SELECT count(*), coalesce(sum(w.duration_ns), 0)::BIGINT FROM stall_waits w JOIN sources s"
            f" ON s.id = w.source_id WHERE s.analysis_id = $aid{where}",
            {"aid": analysis_id, "lock_key": key, "lock_names": locks.label_names(key), **window}).fetchall()[0]
        out.append({"lock_key": key, "waits": n, "total_ns": total})
    return out


_CHAIN_FILTERS = {"t0": "l.end_ns + s.clock_offset_ns >= $t0", "t1": "l.start_ns + s.clock_offset_ns <= $t1"}


def chains(con, analysis_id: str, limit: int = 50, t0=None, t1=None) -> list[dict]:
    """The first `limit` chains by rank; with t0/t1 (the analysis timeline), those whose first link's wait overlaps
    [t0, t1]. A chain keeps its rank (id) in a window."""
    given = {k: v for k, v in {"t0": t0, "t1": t1}.items() if v is not None}
    where = "".join(f" AND {_CHAIN_FILTERS[k]}" for k in given)
    heads = con.execute(
        "SELECT c.chain_id, c.duration_ns FROM chains c JOIN chain_links l ON l.analysis_id = c.analysis_id"
        " AND l.chain_id = c.chain_id AND l.pos = 0 JOIN sources s ON s.id = l.source_id"
        f" WHERE c.analysis_id = $aid{where} ORDER BY c.chain_id LIMIT $limit",
        {"aid": analysis_id, "limit": limit, **given}).fetchall()
    if not heads:
        return []
    # times on the analysis timeline: each link's source offset, the request's its blktrace source's
    links = _fetch(con.execute(
        "SELECT l.* EXCLUDE (analysis_id, stack_text) REPLACE (l.start_ns + s.clock_offset_ns AS start_ns,"
        " l.end_ns + s.clock_offset_ns AS end_ns, l.req_q_ns + r.clock_offset_ns AS req_q_ns,"
        " l.req_i_ns + r.clock_offset_ns AS req_i_ns, l.req_d_ns + r.clock_offset_ns AS req_d_ns,"
        " l.req_c_ns + r.clock_offset_ns AS req_c_ns), s.clock_offset_ns AS _off"
        " FROM chain_links l JOIN sources s ON s.id = l.source_id LEFT JOIN sources r ON r.id = l.req_source_id"
        " WHERE l.analysis_id = ? AND l.chain_id IN (SELECT unnest(?)) ORDER BY l.chain_id, l.pos",
        [analysis_id, [cid for cid, _ in heads]]))
    by_chain: dict[int, list] = defaultdict(list)
    for link in links:
        cid = link.pop("chain_id")
        link.pop("pos")
        req = {k[4:]: link.pop(k) for k in list(link) if k.startswith("req_")}
        link["request"] = req if req["line"] is not None else None
        off = link.pop("_off")
        also = json.loads(link["also_waiting"]) if isinstance(link["also_waiting"], str) else []
        link["also_waiting"] = [{**a, "start_ns": a["start_ns"] + off, "end_ns": a["end_ns"] + off} for a in also]
        link["lock_key"] = locks.label_key(link["lock"])
        by_chain[cid].append(link)
    return [{"id": cid, "duration_ns": dur, "links": by_chain[cid]} for cid, dur in heads]


MAX_CALLS = 20_000


def calls(con, analysis_id: str, pid: int, t0=None, t1=None, max_depth=None, limit: int = 5000,
          source_id=None) -> dict:
    """One task's calls overlapping [t0, t1], for a flame chart (by entry time); at most `limit` (capped)."""
    limit = min(limit, MAX_CALLS)
    given = {k: v for k, v in {"t0": t0, "t1": t1, "depth": max_depth, "source": source_id}.items() if v is not None}
    flt = {"t0": "(c.exit_ns IS NULL OR c.exit_ns + s.clock_offset_ns >= $t0)", "t1": "c.entry_ns + s.clock_offset_ns <= $t1",
           "depth": "c.depth <= $depth", "source": "c.source_id = $source"}
    where = "".join(f" AND {flt[k]}" for k in given)
    rows = _fetch(con.execute(  # times on the analysis timeline
        "SELECT c.source_id, c.line, c.func, c.depth, c.entry_ns + s.clock_offset_ns AS entry_ns,"
        " c.exit_ns + s.clock_offset_ns AS exit_ns, c.duration_ns, c.partial, c.comm, c.cpu"
        " FROM fg_calls c JOIN sources s ON s.id = c.source_id"
        f" WHERE s.analysis_id = $aid AND c.pid = $pid{where}"
        " ORDER BY c.entry_ns + s.clock_offset_ns NULLS FIRST, c.line LIMIT $lim",
        {"aid": analysis_id, "pid": pid, "lim": limit + 1, **given}))
    truncated = len(rows) > limit
    return {"pid": pid, "calls": rows[:limit], "truncated": truncated}


def span(con, source_id: int, report) -> tuple[int | None, int | None]:
    """An ftrace source's time span (ns): its first and last timestamp of any kind."""
    return con.execute(
        "SELECT min(lo), max(hi) FROM ("
        " SELECT min(coalesce(entry_ns, exit_ns)) lo, max(coalesce(exit_ns, entry_ns)) hi FROM fg_call_rows"
        " WHERE source_id = $s"
        " UNION ALL SELECT min(t_ns), max(t_ns) FROM sched_switch WHERE source_id = $s"
        " UNION ALL SELECT min(t_ns), max(t_ns) FROM sched_wakeup WHERE source_id = $s"
        " UNION ALL SELECT min(t_ns), max(t_ns) FROM trace_events WHERE source_id = $s)", {"s": source_id}).fetchall()[0]


def marks(con, analysis_id: str, t0: int | None, t1: int | None, limit: int) -> list[dict]:
    cur = con.execute(
        "SELECT e.source_id, e.line, e.t_ns + s.clock_offset_ns AS t, e.cpu, e.pid, e.comm, e.text FROM trace_events e"
        " JOIN sources s ON s.id = e.source_id WHERE s.analysis_id = $aid AND e.event = 'print'"
        " AND ($t0 IS NULL OR t >= $t0) AND ($t1 IS NULL OR t <= $t1) ORDER BY t, e.line LIMIT $limit",
        {"aid": analysis_id, "t0": t0, "t1": t1, "limit": limit})
    return [dict(zip(("source_id", "line", "t_ns", "cpu", "pid", "comm", "text"), r)) for r in cur.fetchall()]
