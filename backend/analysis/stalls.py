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
import json
from collections import defaultdict

import numpy as np
import pyarrow as pa

from . import locks

MIN_CALL_SLEEP_NS = 1_000_000  # a lock call this long with no switch-out in the trace is taken as a sleep
REQUEST_WINDOW_NS = 10_000_000  # a request completed at most this long before the wake-up caused it
REQUEST_SLACK_NS = 50_000  # ... or this long after it (blktrace and ftrace timestamps jitter)
MAX_CHAINS = 5000
MAX_LINKS = 32
MAX_HOLDER_SCAN = 10_000  # acquire calls looked at, backwards, per wait

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

SCHEMA = """
CREATE TABLE IF NOT EXISTS waits (
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
    stack VARCHAR[] NOT NULL,        -- root first
    stack_lines BIGINT[] NOT NULL,
    inferred BOOLEAN NOT NULL,
    evidence VARCHAR NOT NULL,
    waker_pid BIGINT,
    waker_comm VARCHAR,
    waker_stack VARCHAR[],
    wake_line BIGINT,
    wake_ns BIGINT,
    wake_cpu INTEGER,
    holder_pid BIGINT,
    holder_comm VARCHAR,
    holder_line BIGINT,              -- the holder's acquire call (its entry line)
    holder_ns BIGINT,                -- ... and when it returned
    holder_evidence VARCHAR,
    holder_stack VARCHAR[]           -- the holder's calls open when this wait began
);
CREATE TABLE IF NOT EXISTS chains (
    analysis_id VARCHAR NOT NULL,
    chain_id INTEGER NOT NULL,       -- rank, 1 = longest stall of its first task
    duration_ns BIGINT NOT NULL,
    links INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS chain_links (
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
    stack VARCHAR[] NOT NULL,
    line BIGINT,
    also_waiting JSON NOT NULL,
    req_source_id INTEGER, req_line BIGINT, req_dev VARCHAR, req_sector BIGINT, req_nsect BIGINT,
    req_rwbs VARCHAR, req_pid BIGINT, req_comm VARCHAR, req_q_ns BIGINT, req_i_ns BIGINT, req_d_ns BIGINT,
    req_c_ns BIGINT
);
"""


def _ms(ns: int | None) -> str:
    if ns is None:
        return "?"
    return f"{ns / 1e6:.3f} ms" if abs(ns) >= 1_000_000 else f"{ns / 1e3:.1f} µs"


def _path(frames) -> str:
    """The waker's stack from its innermost I/O completion or lock release frame on (else its last 3)."""
    frames = list(frames or ())
    start = max(0, len(frames) - 3)
    for i in range(len(frames) - 1, -1, -1):
        hit = _lookup(frames[i])
        io = _base(frames[i]) in IO_COMPLETION
        if io or (hit and hit[1] == "release"):
            start = i
            if io:
                break
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
def _label(frames: tuple) -> str | None:
    return locks.label(frames)


def _is_idle(pid, comm) -> bool:
    return pid == 0 or (comm or "").startswith(_IDLE_COMMS)


# ---- derive ------------------------------------------------------------------------------------

def derive(con, analysis_id: str) -> None:
    """All waits of the analysis' ftrace sources, then its chains (inside the ingest's transaction)."""
    sids = [r[0] for r in con.execute(
        "SELECT id FROM sources WHERE analysis_id = ? AND format = 'ftrace' ORDER BY id", [analysis_id]).fetchall()]
    if not sids:
        return
    gc_was = gc.isenabled()
    gc.disable()  # many small lists and dicts, no cycles: the collector would only rescan them
    try:
        derived = {}
        try:
            for sid in sids:
                derived[sid] = _derive_waits(con, sid)
        finally:
            _CALL_INDEX.clear()  # the call index of the last source: not needed past the waits
        _derive_chains(con, analysis_id, sids, derived)
    finally:
        if gc_was:
            gc.enable()


def _lock_functions(con, sid: int) -> dict[str, tuple[locks.Primitive, str]]:
    funcs = con.execute("SELECT DISTINCT func FROM fg_calls WHERE source_id = ? AND func IS NOT NULL", [sid]).fetchall()
    return {f: hit for (f,) in funcs if (hit := locks.lookup(f))}


def _register(con, name: str, columns: dict[str, list], types: dict[str, pa.DataType]) -> None:
    con.register(name, pa.table({k: pa.array(v, type=types[k]) for k, v in columns.items()}))


def _fetch(cur) -> list[dict]:
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def _derive_waits(con, sid: int) -> list[dict]:
    """Derives and inserts the source's waits; returns them (as inserted, in insertion order)."""
    p = {"sid": sid}
    trace_end = con.execute(
        "SELECT max(t) FROM (SELECT max(greatest(entry_ns, exit_ns)) t FROM fg_calls WHERE source_id = $sid"
        " UNION ALL SELECT max(t_ns) FROM sched_switch WHERE source_id = $sid"
        " UNION ALL SELECT max(t_ns) FROM sched_wakeup WHERE source_id = $sid"
        " UNION ALL SELECT max(t_ns) FROM trace_events WHERE source_id = $sid)", p).fetchall()[0][0]
    if trace_end is None:
        return []
    lockfn = _lock_functions(con, sid)
    _register(con, "_stalls_fn", {"func": list(lockfn), "role": [h[1] for h in lockfn.values()]},
              {"func": pa.string(), "role": pa.string()})
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _stalls_outs AS SELECT line, prev_pid AS pid FROM sched_switch"
        " WHERE source_id = $sid AND prev_pid IS NOT NULL", p)
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _stalls_wk AS SELECT line, t_ns, cpu, pid, waker_pid, waker_comm FROM sched_wakeup"
        " WHERE source_id = $sid AND pid IS NOT NULL AND t_ns IS NOT NULL AND success IS NOT FALSE", p)

    # scheduler waits: switch-out asleep -> next switch-in; first wake-up after the switch-out
    sched = _fetch(con.execute("""
        WITH o AS (
            SELECT line, t_ns, cpu, prev_pid AS pid, prev_comm AS comm, prev_state AS state FROM sched_switch
            WHERE source_id = $sid AND prev_pid IS NOT NULL AND prev_pid <> 0 AND t_ns IS NOT NULL
              AND coalesce(prev_state, '') <> '' AND NOT regexp_matches(prev_state, '^[RXZx]')
        ), i AS (SELECT line, t_ns, next_pid AS pid FROM sched_switch WHERE source_id = $sid AND next_pid IS NOT NULL)
        SELECT o.*, i.line AS in_line, i.t_ns AS in_ns, n.line AS next_out, w.line AS wake_line, w.t_ns AS wake_ns,
               w.cpu AS wake_cpu, w.waker_pid, w.waker_comm
        FROM o ASOF LEFT JOIN i ON o.pid = i.pid AND i.line > o.line
               ASOF LEFT JOIN _stalls_outs n ON o.pid = n.pid AND n.line > o.line
               ASOF LEFT JOIN _stalls_wk w ON o.pid = w.pid AND w.line > o.line
        ORDER BY o.line
        """, p))  # in file order: what follows (also_waiting lists, ...) must not depend on DuckDB's threads
    waits: list[dict] = []
    for s in sched:
        w = {"source_id": sid, "line": s["line"], "kind": "sched", "pid": s["pid"], "comm": s["comm"], "cpu": s["cpu"],
             "start_ns": s["t_ns"], "state": s["state"], "innermost": None}
        in_line = s["in_line"] if s["in_line"] is not None and (s["next_out"] is None or s["in_line"] < s["next_out"]) else None
        limit = in_line if in_line is not None else s["next_out"]
        woke = s["wake_line"] is not None and (limit is None or s["wake_line"] < limit)
        out = f"switched out ({s['state']}) at line {s['line']}"
        if in_line is not None:
            w.update(end_ns=s["in_ns"], end_line=in_line, end_known=True, inferred=False,
                     evidence=f"{out}, back on CPU at line {in_line}")
        elif woke:
            w.update(end_ns=s["wake_ns"], end_line=s["wake_line"], end_known=True, inferred=True,
                     evidence=f"{out}; its switch-in is not in the trace: ends at its wake-up (line {s['wake_line']})")
        else:
            w.update(end_ns=trace_end, end_line=None, end_known=False, inferred=True,
                     evidence=f"{out}; still asleep when the trace ends (no wake-up, no switch-in): duration is a lower bound")
        if woke:
            w.update(wake_line=s["wake_line"], wake_ns=s["wake_ns"], wake_cpu=s["wake_cpu"],
                     waker_pid=s["waker_pid"], waker_comm=s["waker_comm"])
        elif in_line is not None:
            w["evidence"] += "; no wake-up line for it in the trace"
        waits.append(w)

    # call waits: long (or open) calls of sleeping primitives with no switch-out of the task inside them
    if lockfn:
        cands = _fetch(con.execute("""
            WITH c AS (
                SELECT c.line, c.pid, c.comm, c.cpu, c.func, c.entry_ns, c.exit_ns, c.duration_ns, c.exit_line
                FROM fg_calls c JOIN _stalls_fn f ON c.func = f.func
                WHERE c.source_id = $sid AND f.role <> 'release' AND c.pid IS NOT NULL AND c.entry_ns IS NOT NULL
                  AND (c.exit_line IS NULL OR c.duration_ns >= $min)
            ), last AS (
                SELECT pid, max(l) AS last_line FROM (
                    SELECT pid, greatest(line, coalesce(exit_line, line)) l FROM fg_calls WHERE source_id = $sid
                    UNION ALL SELECT pid, line FROM trace_events WHERE source_id = $sid) GROUP BY pid
            )
            SELECT c.*, n.line AS next_out, w.line AS wake_line, w.t_ns AS wake_ns, w.cpu AS wake_cpu, w.waker_pid,
                   w.waker_comm, last.last_line
            FROM c ASOF LEFT JOIN _stalls_outs n ON c.pid = n.pid AND n.line > c.line
                   ASOF LEFT JOIN _stalls_wk w ON c.pid = w.pid AND w.line > c.line
                   LEFT JOIN last ON last.pid = c.pid
            ORDER BY c.pid, c.line
            """, {**p, "min": MIN_CALL_SLEEP_NS}))
        kept = []
        for c in cands:
            if c["exit_line"] is not None:
                if c["next_out"] is not None and c["next_out"] < c["exit_line"]:
                    continue  # the scheduler events tell this sleep
                kept.append(c)
            elif c["next_out"] is None and (c["wake_line"] is not None or (
                    c["last_line"] is not None and c["last_line"] <= c["line"]
                    and trace_end - c["entry_ns"] >= MIN_CALL_SLEEP_NS)):
                kept.append(c)
        for i, c in enumerate(kept):  # innermost: drop a call that holds the next candidate of its task
            nxt = kept[i + 1] if i + 1 < len(kept) else None
            if nxt and nxt["pid"] == c["pid"] and (c["exit_line"] is None or nxt["line"] < c["exit_line"]):
                continue
            what = f"{c['func']}() (line {c['line']})"
            w = {"source_id": sid, "line": c["line"], "kind": "call", "pid": c["pid"], "comm": c["comm"],
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
    if not waits:
        return []
    for w in waits:
        w.setdefault("duration_ns", w["end_ns"] - w["start_ns"])
        if w.get("waker_pid") is not None and w["waker_pid"] == w["pid"]:  # sched_wakeup written by the wakee
            for k in ("waker_pid", "waker_comm"):
                w[k] = None

    # stacks: of each wait at its line, of each waker at its wake line
    reqs = [(("w", i), w["pid"], w["cpu"], w["line"], w["innermost"]) for i, w in enumerate(waits)]
    reqs += [(("k", i), w["waker_pid"], w["wake_cpu"], w["wake_line"], None)
             for i, w in enumerate(waits) if w.get("waker_pid") is not None]
    stacks = _stacks(con, sid, reqs)
    need_holder: dict[str, list[int]] = defaultdict(list)
    prims = {p.name: p for p in locks.PRIMITIVES}
    for i, w in enumerate(waits):
        frames, lines = stacks.get(("w", i), ([], []))
        w["stack"], w["stack_lines"] = frames, lines
        w["waker_stack"] = stacks.get(("k", i), ([], []))[0] if w.get("waker_pid") is not None else None
        w["lock"], w["lock_key"], w["primitive"], obj = _reason(frames)
        if obj is not None and prims[obj].release:
            need_holder[obj].append(i)
    _holders(con, sid, waits, need_holder, prims)
    held = _stacks(con, sid, [(i, w["holder_pid"], None, w["line"], None) for i, w in enumerate(waits)
                              if w.get("holder_pid") is not None])
    for i, (frames, _) in held.items():
        waits[i]["holder_stack"] = frames
    _insert_waits(con, waits)
    for name in ("_stalls_outs", "_stalls_wk"):
        con.execute(f"DROP TABLE IF EXISTS {name}")
    con.unregister("_stalls_fn")
    return waits


def _reason(frames: list[str]) -> tuple[str | None, str | None, str | None, str | None]:
    """(lock label, lock key, primitive name, object primitive name) of a stack, root first."""
    label = _label(tuple(f for f in frames if _lookup(f)))  # label() looks only at lock frames
    obj = prim = None
    for f in reversed(frames):
        hit = _lookup(f)
        if hit and hit[1] != "release":
            if prim is None:
                prim = hit[0].name
            if hit[0].kind == "object":
                obj = hit[0].name
                break
    if label is not None:
        key = label.split(" via ", 1)[0] if obj else label
        return label, key, (obj or prim), obj
    for f in reversed(frames):
        if _base(f) not in _PLUMBING:
            return f, f, None, None
    return None, None, None, None


def _stacks(con, sid: int, reqs: list) -> dict:
    """key -> (frames, lines) root first: the calls of `pid` open at `line` (or the ancestors-or-self of the
    call `innermost` when given). reqs: (key, pid, cpu, line, innermost)."""
    if not reqs:
        return {}
    keys = [r[0] for r in reqs]
    calls = _call_index(con, sid)
    tops = _tops(calls, reqs)
    if tops is None:
        tops = _tops_sql(con, sid, reqs)
    k, at_line, cur = tops["k"], np.asarray(tops["at_line"], np.int64), np.asarray(tops["line"], np.int64)
    lines, pidx, exit_line, pos_of = calls["line"], calls["pidx"], calls["exit"], calls["pos_of"]
    # the calls' positions by line (lines absent from the calls, or past them, are not found)
    inb = (cur >= 0) & (cur < len(pos_of))
    idx = np.full(len(cur), -1, np.int64)
    idx[inb] = pos_of[cur[inb]]
    alive = np.flatnonzero(idx >= 0)
    idx = idx[alive]
    chain_k, chain_pos, chain_idx = [], [], []
    for pos in range(4096):  # all stacks climb one level per step: calls -> their parents
        if not len(alive):
            break
        open_at = exit_line[idx] >= at_line[alive]  # calls that had already returned are not on the stack
        chain_k.append(alive[open_at])
        chain_pos.append(np.full(int(open_at.sum()), pos))
        chain_idx.append(idx[open_at])
        nxt = pidx[idx]
        keep = nxt >= 0
        alive, idx = alive[keep], nxt[keep]
    if not chain_k:
        return {}
    ks, poss, idxs = np.concatenate(chain_k), np.concatenate(chain_pos), np.concatenate(chain_idx)
    order = np.lexsort((-poss, ks))  # per stack, root first
    ks, idxs = ks[order], idxs[order]
    fl = lines[idxs]
    frames = _funcs(con, sid, fl)
    flines = fl.tolist()
    starts = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1]])
    ends = np.r_[starts[1:], len(ks)].tolist()
    kk = k[ks[starts]].tolist()
    return {keys[kq]: (frames[a:b], flines[a:b]) for kq, a, b in zip(kk, starts.tolist(), ends)}


def _funcs(con, sid: int, flines) -> list[str]:
    """The function names (coalesce(func, '?')) of the calls at these lines, in their order."""
    uniq, inv = np.unique(flines, return_inverse=True)
    con.register("_stalls_fl", pa.table({"line": pa.array(uniq, pa.int64())}))
    t = con.sql("SELECT c.line, coalesce(c.func, '?') AS func FROM fg_calls c SEMI JOIN _stalls_fl l ON c.line = l.line"
                " WHERE c.source_id = $sid ORDER BY c.line", params={"sid": sid}).to_arrow_table()
    con.unregister("_stalls_fl")
    got = t.column("line").to_numpy()
    if len(got) != len(uniq) or not np.array_equal(got, uniq):  # a line with several calls: the first, by line order
        pos = np.searchsorted(got, uniq)
        names = np.array(t.column("func").to_pylist(), dtype=object)[pos]
    else:
        names = np.array(t.column("func").to_pylist(), dtype=object)
    return names[inv.reshape(-1)].tolist()


def _tops_sql(con, sid: int, reqs: list) -> dict:
    _register(con, "_stalls_req", {
        "k": list(range(len(reqs))), "pid": [r[1] for r in reqs],
        "ckey": [(r[2] if r[2] is not None else -2) if r[1] == 0 else -1 for r in reqs],
        "line": [r[3] for r in reqs], "innermost": [r[4] for r in reqs],
    }, {"k": pa.int64(), "pid": pa.int64(), "ckey": pa.int64(), "line": pa.int64(), "innermost": pa.int64()})
    # the last call the task entered before `line`: the calls open at `line` are it and its ancestors,
    # less those that had already returned (a suffix of that chain)
    con.execute("""
        CREATE OR REPLACE TEMP TABLE _stalls_top AS
        SELECT r.k, r.line AS at_line, coalesce(r.innermost, c.line) AS line FROM _stalls_req r
        ASOF LEFT JOIN (SELECT pid, CASE WHEN pid = 0 THEN cpu ELSE -1 END AS ckey, line FROM fg_calls
                        WHERE source_id = $sid AND pid IS NOT NULL) c
        ON r.pid = c.pid AND r.ckey = c.ckey AND c.line < r.line""", {"sid": sid})
    tops = con.execute("SELECT k, at_line, line FROM _stalls_top WHERE line IS NOT NULL ORDER BY k").fetchnumpy()
    con.unregister("_stalls_req")
    con.execute("DROP TABLE _stalls_top")
    return tops


def _tops(calls: dict, reqs: list) -> dict | None:
    """As _tops_sql, on the call index: per request, the last call of its task (per CPU for pid 0) before its
    line (or its `innermost` call); None when the index cannot key the calls (then SQL does it)."""
    grp = calls.get("grp")
    if grp is None:
        return None
    gkeys, gline, span = grp
    n = len(reqs)
    pid = np.array([r[1] if r[1] is not None else 0 for r in reqs], np.int64)
    has_pid = np.array([r[1] is not None for r in reqs], bool)
    ck = np.array([((r[2] if r[2] is not None else -2) if r[1] == 0 else -1) for r in reqs], np.int64)
    at = np.array([r[3] if r[3] is not None else -1 for r in reqs], np.int64)
    has_at = np.array([r[3] is not None for r in reqs], bool)
    inner = np.array([r[4] if r[4] is not None else -1 for r in reqs], np.int64)
    has_inner = np.array([r[4] is not None for r in reqs], bool)
    if n and (ck.max() >= (1 << 15) - 8 or np.abs(pid).max() >= (1 << 45)):
        return None
    g = pid * (1 << 16) + (ck + 8)
    d = np.searchsorted(gkeys, g)
    dd = np.minimum(d, max(len(gkeys) - 1, 0))
    known = has_pid & has_at & (len(gkeys) > 0) & (gkeys[dd] == g) if len(gkeys) else np.zeros(n, bool)
    comb = dd * span + np.minimum(at, span - 1)  # every call line is below span - 1
    j = np.searchsorted(gline, comb) - 1  # the last call of the group before the line
    ok = known & (j >= 0)
    jj = np.maximum(j, 0)
    ok &= (gline[jj] // span == dd) & (j >= 0)
    line = np.where(has_inner, inner, gline[jj] % span)
    found = has_inner | ok
    sel = np.flatnonzero(found)
    return {"k": sel, "at_line": at[sel], "line": line[sel]}


def _call_index(con, sid: int) -> dict:
    """The source's calls as arrays sorted by line (cached on the connection for one derive)."""
    cache = _CALL_INDEX.get(id(con))
    if cache and cache[0] == sid:
        return cache[1]
    t = con.sql("SELECT line, coalesce(parent_line, -1) AS parent, coalesce(exit_line, 9223372036854775807) AS exit,"
                " pid, cpu FROM fg_calls WHERE source_id = $sid AND line IS NOT NULL"
                " ORDER BY line", params={"sid": sid}).to_arrow_table()
    line, parent = t.column("line").to_numpy(), t.column("parent").to_numpy()
    # position of each line among the calls (-1: no call there), and each call's parent by position
    pos_of = np.full(int(line[-1]) + 1 if len(line) else 0, -1, np.int64)
    pos_of[line[::-1]] = np.arange(len(line))[::-1]  # the first call of a line, as a search would find
    ok = (parent >= 0) & (parent < len(pos_of))
    pidx = np.full(len(parent), -1, np.int64)
    pidx[ok] = pos_of[parent[ok]]
    index = {"line": line, "pidx": pidx, "pos_of": pos_of, "grp": _groups(t, line),
             "exit": t.column("exit").to_numpy()}
    _CALL_INDEX.clear()
    _CALL_INDEX[id(con)] = (sid, index)
    return index


_CALL_INDEX: dict = {}


def _groups(t, line):
    """The calls with a pid, grouped as the stacks look them up: by task (pid 0: by CPU), by line in each.
    (sorted group keys, sorted group rank * span + line, span); None when the keys do not fit."""
    pid_c, cpu_c = t.column("pid"), t.column("cpu")
    has = ~np.asarray(pid_c.is_null().to_numpy(zero_copy_only=False), bool)
    pid = np.asarray(pid_c.fill_null(0).to_numpy(), np.int64)
    cpu_null = np.asarray(cpu_c.is_null().to_numpy(zero_copy_only=False), bool)
    cpu = np.asarray(cpu_c.fill_null(0).to_numpy(), np.int64)
    if not len(line):
        return np.zeros(0, np.int64), np.zeros(0, np.int64), 1
    span = int(line[-1]) + 2
    ck = np.where(pid == 0, np.where(cpu_null, -5, cpu), -1)  # -5: pid 0 with no CPU, never looked up
    if has.any() and (np.abs(pid[has]).max() >= (1 << 45) or ck[has].max() >= (1 << 15) - 8 or ck[has].min() < -8):
        return None
    g = (pid * (1 << 16) + (ck + 8))[has]
    ln = line[has]
    order = np.argsort(g, kind="stable")  # lines stay ascending in each group
    g, ln = g[order], ln[order]
    first = np.r_[True, g[1:] != g[:-1]] if len(g) else np.zeros(0, bool)
    rank = np.cumsum(first) - 1
    if len(g) and int(rank[-1]) + 1 >= (1 << 62) // span:
        return None
    return g[first], rank * span + ln, span


def _holders(con, sid: int, waits: list[dict], need: dict[str, list[int]], prims: dict) -> None:
    """Inferred holders (see the module's rules): one SQL pass over the acquire calls of the objects
    waited on, with each acquire's next release by the same task; then a short backward scan per wait."""
    if not need:
        return
    # match the trace's own spellings (with .isra.0 etc.) of those functions
    spelled = _lock_functions(con, sid)
    funcs, pr, ro = [], [], []
    for f, (p, role) in spelled.items():
        if p.name in need and role in ("acquire", "release"):
            funcs.append(f)
            pr.append(p.name)
            ro.append(role)
    if not funcs:
        return
    _register(con, "_stalls_hf", {"func": funcs, "prim": pr, "role": ro},
              {"func": pa.string(), "prim": pa.string(), "role": pa.string()})
    rows = con.execute("""
        WITH a AS (
            SELECT f.prim, c.pid, c.comm, c.line, c.func, c.exit_line, c.exit_ns FROM fg_calls c JOIN _stalls_hf f USING (func)
            WHERE c.source_id = $sid AND f.role = 'acquire' AND c.exit_line IS NOT NULL AND c.pid IS NOT NULL
        ), r AS (
            SELECT f.prim, c.pid, c.line FROM fg_calls c JOIN _stalls_hf f USING (func)
            WHERE c.source_id = $sid AND f.role = 'release' AND c.pid IS NOT NULL
        )
        SELECT a.prim, a.pid, a.comm, a.line, a.func, a.exit_line, a.exit_ns, r.line AS rel_line
        FROM a ASOF LEFT JOIN r ON a.prim = r.prim AND a.pid = r.pid AND r.line > a.exit_line
        ORDER BY a.prim, a.exit_line
        """, {"sid": sid}).fetchall()
    con.unregister("_stalls_hf")
    by_prim: dict[str, list] = defaultdict(list)
    for row in rows:
        by_prim[row[0]].append(row)
    for obj, idxs in need.items():
        acq = by_prim.get(obj, [])
        exits = [r[5] for r in acq]
        rel_names = "/".join(prims[obj].release)
        for i in idxs:
            w = waits[i]
            j = bisect.bisect_left(exits, w["line"]) - 1
            stop = max(-1, j - MAX_HOLDER_SCAN)
            while j > stop:
                _, pid, comm, line, func, exit_line, exit_ns, rel_line = acq[j]
                j -= 1
                if pid == w["pid"] or (rel_line is not None and rel_line < w["line"]):
                    continue
                w.update(holder_pid=pid, holder_comm=comm, holder_line=line, holder_ns=exit_ns, holder_evidence=(
                    f"inferred holder: {_task(comm, pid)} returned from {func}() (line {line}) at {_ts(exit_ns)}, "
                    f"before this wait began, and did not call {rel_names}() "
                    + (f"until line {rel_line}" if rel_line is not None else "in the rest of the trace")))
                break


_WAIT_TYPES = {
    "source_id": pa.int32(), "line": pa.int64(), "kind": pa.string(), "pid": pa.int64(), "comm": pa.string(),
    "cpu": pa.int32(), "start_ns": pa.int64(), "end_ns": pa.int64(), "duration_ns": pa.int64(),
    "end_known": pa.bool_(), "end_line": pa.int64(), "state": pa.string(), "lock": pa.string(),
    "lock_key": pa.string(), "primitive": pa.string(), "stack": pa.list_(pa.string()),
    "stack_lines": pa.list_(pa.int64()), "inferred": pa.bool_(), "evidence": pa.string(), "waker_pid": pa.int64(),
    "waker_comm": pa.string(), "waker_stack": pa.list_(pa.string()), "wake_line": pa.int64(), "wake_ns": pa.int64(),
    "wake_cpu": pa.int32(), "holder_pid": pa.int64(), "holder_comm": pa.string(), "holder_line": pa.int64(),
    "holder_ns": pa.int64(), "holder_evidence": pa.string(), "holder_stack": pa.list_(pa.string()),
}


def _insert_waits(con, waits: list[dict]) -> None:
    _register(con, "_stalls_w", {k: [w.get(k) for w in waits] for k in _WAIT_TYPES}, _WAIT_TYPES)
    cols = ", ".join(_WAIT_TYPES)
    con.execute(f"INSERT INTO waits ({cols}) SELECT {cols} FROM _stalls_w")
    con.unregister("_stalls_w")


# ---- chains ------------------------------------------------------------------------------------

def _has_io_completion(frames) -> str | None:
    for f in reversed(frames or ()):
        if _base(f) in IO_COMPLETION:
            return _base(f)
    return None


class _Index:
    """The waits of one source by task, for 'the wait of task X that overlapped ...' look-ups."""

    def __init__(self, waits: list[dict]):
        self.by_pid: dict[int, list[dict]] = defaultdict(list)
        for w in sorted(waits, key=lambda w: (w["start_ns"], w["line"])):
            self.by_pid[w["pid"]].append(w)
        self.starts = {pid: [w["start_ns"] for w in ws] for pid, ws in self.by_pid.items()}

    def latest(self, pid, before_ns: int, ok) -> dict | None:
        ws = self.by_pid.get(pid)
        if not ws:
            return None
        j = bisect.bisect_left(self.starts[pid], before_ns) - 1
        for k in range(j, max(-1, j - 64), -1):
            if ok(ws[k]):
                return ws[k]
        return None

    def latest_woken(self, w) -> dict | None:
        """latest(waker, wake_ns): a wait of the waker that ended at or before the wake-up, after w began."""
        ws = self.by_pid.get(w["waker_pid"])
        if not ws:
            return None
        wake, start = w["wake_ns"], w["start_ns"]
        j = bisect.bisect_left(self.starts[w["waker_pid"]], wake) - 1
        for k in range(j, max(-1, j - 64), -1):
            v = ws[k]
            if v is not w and v["end_ns"] <= wake and v["end_known"] and v["end_ns"] > start:
                return v
        return None

    def latest_held(self, w, before_ns: int) -> dict | None:
        """latest(holder, before_ns): a wait of the holder begun after it took the lock, ended after w began."""
        ws = self.by_pid.get(w["holder_pid"])
        if not ws:
            return None
        took, start = w["holder_ns"] or 0, w["start_ns"]
        j = bisect.bisect_left(self.starts[w["holder_pid"]], before_ns) - 1
        for k in range(j, max(-1, j - 64), -1):
            v = ws[k]
            if v["start_ns"] >= took and v["end_ns"] > start:
                return v
        return None


def _next(w: dict, idx: _Index) -> tuple[str | None, dict | None, dict | None, str]:
    """(relation, next wait or None, terminal link or None, evidence of the relation)."""
    if w["waker_pid"] is not None:
        waker = _task(w["waker_comm"], w["waker_pid"])
        io = _has_io_completion(w["waker_stack"])
        via = _path(w["waker_stack"])
        term = {"pid": w["waker_pid"], "comm": w["waker_comm"], "lock": None, "start_ns": w["wake_ns"],
                "end_ns": w["wake_ns"], "duration_ns": 0, "end_known": True, "stack": w["waker_stack"] or [],
                "line": w["wake_line"], "source_id": w["source_id"], "inferred": False}
        if io or _is_idle(w["waker_pid"], w["waker_comm"]):
            ctx = "an interrupt on the idle CPU" if _is_idle(w["waker_pid"], w["waker_comm"]) else waker
            term["evidence"] = f"{ctx} woke {_task(w['comm'], w['pid'])} at line {w['wake_line']} from {via}"
            rel = "io_completion" if io else "woken_by"
            return rel, None, term, (f"woken at line {w['wake_line']} by {waker} in the I/O completion {io}()"
                                     if io else f"woken at line {w['wake_line']} by {ctx}")
        v = idx.latest_woken(w)
        ev = f"woken at line {w['wake_line']} by {waker} from {via}"
        if v is not None:
            return "woken_by", v, None, ev + f"; {waker} had itself waited from line {v['line']}"
        term["evidence"] = f"running: woke {_task(w['comm'], w['pid'])} at line {w['wake_line']} from {via}"
        return "woken_by", None, term, ev
    if w["holder_pid"] is not None:
        end = w["end_ns"] if w["end_known"] else None
        v = idx.latest_held(w, end if end is not None else 1 << 62)
        if v is not None:
            return "held_by", v, None, w["holder_evidence"]
        term = {"pid": w["holder_pid"], "comm": w["holder_comm"], "lock": None, "start_ns": w["start_ns"],
                "end_ns": w["end_ns"], "duration_ns": None, "end_known": w["end_known"], "stack": w.get("holder_stack") or [],
                "line": w["holder_line"], "source_id": w["source_id"], "inferred": True,
                "evidence": f"holds the lock and shows no wait of its own that overlaps ({w['holder_evidence']})"}
        return "held_by", None, term, w["holder_evidence"]
    return None, None, None, ""


def _derive_chains(con, analysis_id: str, sids: list[int], derived: dict[int, list[dict]] | None = None) -> None:
    if not sids:
        return
    if derived is None:  # read the waits back
        rows = _fetch(con.execute(
            "SELECT w.*, s.clock_offset_ns AS off FROM waits w JOIN sources s ON s.id = w.source_id"
            " WHERE s.analysis_id = ?", [analysis_id]))
    else:  # the waits just derived and inserted, as they read back
        offs = dict(con.execute("SELECT id, clock_offset_ns FROM sources WHERE analysis_id = ?", [analysis_id]).fetchall())
        names = list(_WAIT_TYPES)
        rows = []
        for sid, ws in derived.items():
            off = offs.get(sid)
            for w in ws:
                r = {k: w.get(k) for k in names}
                r["off"] = off
                rows.append(r)
    by_source: dict[int, list[dict]] = defaultdict(list)
    for w in rows:
        by_source[w["source_id"]].append(w)
    heads = []
    for sid, ws in by_source.items():
        heads.extend(_source_heads(ws))
    # a chain's rank is its first link's: only the chains kept are built
    heads.sort(key=lambda h: (-h[0]["duration_ns"], h[0]["source_id"], h[0]["line"]))
    chains = [_build_chain(h, ctx) for h, ctx in heads[:MAX_CHAINS]]
    _match_requests(con, analysis_id, chains)
    _insert_chains(con, analysis_id, chains)


def _wait_brief(w: dict) -> dict:
    return {"pid": w["pid"], "comm": w["comm"], "lock": w["lock"], "source_id": w["source_id"], "line": w["line"],
            "start_ns": w["start_ns"], "end_ns": w["end_ns"], "duration_ns": w["duration_ns"],
            "end_known": w["end_known"], "inferred": w["inferred"]}


def _source_chains(ws: list[dict]) -> list[dict]:
    return [_build_chain(h, ctx) for h, ctx in _source_heads(ws)]


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
        rel, v, term, _ = nxt[id(w)]
        if rel is None or w["lock_key"] is None:
            continue
        tgt = ("w", v["line"]) if v is not None else ("t", term["pid"], term["line"])
        gkey[id(w)] = (w["lock_key"], rel, tgt)
        groups[gkey[id(w)]].append(w)
    ctx = (nxt, groups, gkey)
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
    nxt, groups, gkey = ctx

    def also(w):
        g = groups.get(gkey.get(id(w)), [])
        return [_wait_brief(o) for o in g if o is not w and o["start_ns"] < w["end_ns"] and o["end_ns"] > w["start_ns"]]

    links, seen, w = [], set(), h
    while w is not None and len(links) < MAX_LINKS:
        seen.add(id(w))
        rel, v, term, rel_ev = nxt[id(w)]
        evidence = w["evidence"] + (f"; {w['holder_evidence']}" if rel == "held_by" and w["holder_evidence"] else "")
        if rel and rel != "held_by":
            evidence += f"; {rel_ev}"
        links.append({"source_id": w["source_id"], "wait_line": w["line"], "pid": w["pid"], "comm": w["comm"],
                      "lock": w["lock"], "start_ns": w["start_ns"], "end_ns": w["end_ns"],
                      "duration_ns": w["duration_ns"], "end_known": w["end_known"], "relation": rel,
                      "inferred": bool(w["inferred"] or rel == "held_by"), "evidence": evidence,
                      "stack": w["stack"], "line": w["line"], "also_waiting": also(w), "_wait": w})
        if term is not None:
            links.append({**term, "wait_line": None, "relation": None, "also_waiting": []})
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


def _insert_chains(con, analysis_id: str, chains: list[dict]) -> None:
    if not chains:
        return
    _register(con, "_stalls_ch", {"chain_id": list(range(1, len(chains) + 1)),
                                  "duration_ns": [c["duration_ns"] for c in chains],
                                  "links": [len(c["links"]) for c in chains]},
              {"chain_id": pa.int32(), "duration_ns": pa.int64(), "links": pa.int32()})
    con.execute("INSERT INTO chains SELECT ?, chain_id, duration_ns, links FROM _stalls_ch", [analysis_id])
    con.unregister("_stalls_ch")
    cols = {k: [] for k in ("chain_id", "pos", "source_id", "wait_line", "pid", "comm", "lock", "start_ns", "end_ns",
                            "duration_ns", "end_known", "relation", "inferred", "evidence", "stack", "line",
                            "also_waiting")}
    req = {k: [] for k in ("source_id", "line", "dev", "sector", "nsect", "rwbs", "pid", "comm", "q_ns", "i_ns", "d_ns",
                           "c_ns")}
    for i, c in enumerate(chains):
        for pos, link in enumerate(c["links"]):
            own = {"chain_id": i + 1, "pos": pos, "also_waiting": json.dumps(link["also_waiting"])}
            for k, col in cols.items():
                col.append(own[k] if k in own else link.get(k))
            r = link.get("request") or {}
            for k in req:
                req[k].append(r.get(k))
    types = {"chain_id": pa.int32(), "pos": pa.int32(), "source_id": pa.int32(), "wait_line": pa.int64(),
             "pid": pa.int64(), "comm": pa.string(), "lock": pa.string(), "start_ns": pa.int64(), "end_ns": pa.int64(),
             "duration_ns": pa.int64(), "end_known": pa.bool_(), "relation": pa.string(), "inferred": pa.bool_(),
             "evidence": pa.string(), "stack": pa.list_(pa.string()), "line": pa.int64(), "also_waiting": pa.string()}
    rtypes = {"source_id": pa.int32(), "line": pa.int64(), "dev": pa.string(), "sector": pa.int64(),
              "nsect": pa.int64(), "rwbs": pa.string(), "pid": pa.int64(), "comm": pa.string(), "q_ns": pa.int64(),
              "i_ns": pa.int64(), "d_ns": pa.int64(), "c_ns": pa.int64()}
    data = {**cols, **{f"req_{k}": v for k, v in req.items()}}
    _register(con, "_stalls_cl", data, {**types, **{f"req_{k}": t for k, t in rtypes.items()}})
    names = ", ".join(data)
    con.execute(f"INSERT INTO chain_links (analysis_id, {names}) SELECT ?, {names} FROM _stalls_cl", [analysis_id])
    con.unregister("_stalls_cl")


# ---- reads -------------------------------------------------------------------------------------

WAIT_COLUMNS = ["source_id", "line", "kind", "pid", "comm", "cpu", "start_ns", "end_ns", "duration_ns", "end_known",
                "end_line", "state", "lock", "primitive", "stack", "inferred", "evidence", "waker_pid", "waker_comm",
                "waker_stack", "wake_line", "wake_ns", "holder_pid", "holder_comm", "holder_line", "holder_ns",
                "holder_evidence"]
_WAIT_ORDER = {"duration": "w.duration_ns DESC, w.source_id, w.line", "start": "w.start_ns, w.source_id, w.line"}
_WAIT_FILTERS = {"pid": "w.pid = $pid", "lock": "contains(w.lock, $lock)", "t0": "w.end_ns >= $t0",
                 "t1": "w.start_ns <= $t1"}


def waits(con, analysis_id: str, order: str = "duration", limit: int = 100, pid=None, lock=None, t0=None,
          t1=None) -> list[dict]:
    given = {k: v for k, v in {"pid": pid, "lock": lock, "t0": t0, "t1": t1}.items() if v is not None}
    where = "".join(f" AND {_WAIT_FILTERS[k]}" for k in given)
    cols = ", ".join(f"w.{c}" for c in WAIT_COLUMNS)
    return _fetch(con.execute(
        f"SELECT {cols} FROM waits w JOIN sources s ON s.id = w.source_id WHERE s.analysis_id = $aid{where}"
        f" ORDER BY {_WAIT_ORDER[order]} LIMIT $limit", {"aid": analysis_id, "limit": limit, **given}))


def chains(con, analysis_id: str, limit: int = 50) -> list[dict]:
    heads = con.execute("SELECT chain_id, duration_ns FROM chains WHERE analysis_id = ? ORDER BY chain_id LIMIT ?",
                        [analysis_id, limit]).fetchall()
    if not heads:
        return []
    links = _fetch(con.execute(
        "SELECT * EXCLUDE (analysis_id) FROM chain_links WHERE analysis_id = ? AND chain_id <= ? ORDER BY chain_id, pos",
        [analysis_id, heads[-1][0]]))
    by_chain: dict[int, list] = defaultdict(list)
    for link in links:
        cid = link.pop("chain_id")
        link.pop("pos")
        req = {k[4:]: link.pop(k) for k in list(link) if k.startswith("req_")}
        link["request"] = req if req["line"] is not None else None
        link["also_waiting"] = json.loads(link["also_waiting"]) if isinstance(link["also_waiting"], str) else []
        by_chain[cid].append(link)
    return [{"id": cid, "duration_ns": dur, "links": by_chain[cid]} for cid, dur in heads]


MAX_CALLS = 20_000


def calls(con, analysis_id: str, pid: int, t0=None, t1=None, max_depth=None, limit: int = 5000,
          source_id=None) -> dict:
    """One task's calls overlapping [t0, t1], for a flame chart (by entry time); at most `limit` (capped)."""
    limit = min(limit, MAX_CALLS)
    given = {k: v for k, v in {"t0": t0, "t1": t1, "depth": max_depth, "source": source_id}.items() if v is not None}
    flt = {"t0": "(c.exit_ns IS NULL OR c.exit_ns >= $t0)", "t1": "c.entry_ns <= $t1", "depth": "c.depth <= $depth",
           "source": "c.source_id = $source"}
    where = "".join(f" AND {flt[k]}" for k in given)
    rows = _fetch(con.execute(
        "SELECT c.source_id, c.line, c.func, c.depth, c.entry_ns, c.exit_ns, c.duration_ns, c.partial, c.comm, c.cpu"
        " FROM fg_calls c JOIN sources s ON s.id = c.source_id"
        f" WHERE s.analysis_id = $aid AND c.pid = $pid{where} ORDER BY c.entry_ns NULLS FIRST, c.line LIMIT $lim",
        {"aid": analysis_id, "pid": pid, "lim": limit + 1, **given}))
    truncated = len(rows) > limit
    return {"pid": pid, "calls": rows[:limit], "truncated": truncated}


def span(con, source_id: int, report) -> tuple[int | None, int | None]:
    """An ftrace source's time span (ns): its first and last timestamp of any kind."""
    return con.execute(
        "SELECT min(lo), max(hi) FROM ("
        " SELECT min(coalesce(entry_ns, exit_ns)) lo, max(coalesce(exit_ns, entry_ns)) hi FROM fg_calls WHERE source_id = $s"
        " UNION ALL SELECT min(t_ns), max(t_ns) FROM sched_switch WHERE source_id = $s"
        " UNION ALL SELECT min(t_ns), max(t_ns) FROM sched_wakeup WHERE source_id = $s"
        " UNION ALL SELECT min(t_ns), max(t_ns) FROM trace_events WHERE source_id = $s)", {"s": source_id}).fetchall()[0]


def marks(con, analysis_id: str, t0: int | None, t1: int | None, limit: int) -> list[dict]:
    cur = con.execute(
        "SELECT e.source_id, e.line, e.t_ns, e.cpu, e.pid, e.comm, e.text FROM trace_events e"
        " JOIN sources s ON s.id = e.source_id WHERE s.analysis_id = $aid AND e.event = 'print'"
        " AND ($t0 IS NULL OR e.t_ns >= $t0) AND ($t1 IS NULL OR e.t_ns <= $t1) ORDER BY e.t_ns, e.line LIMIT $limit",
        {"aid": analysis_id, "t0": t0, "t1": t1, "limit": limit})
    return [dict(zip(("source_id", "line", "t_ns", "cpu", "pid", "comm", "text"), r)) for r in cur.fetchall()]
