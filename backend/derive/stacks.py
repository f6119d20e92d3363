"""The stacks of tasks at given lines of an ftrace source: the calls open there, root first, found by one scan of the
source's calls in line order per batch of look-ups (`stacks_at_many`: a window of calls at a time and the open ones
carried across, so memory does not grow with the trace) rather than by SQL per wait."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..schema.tables import STACK_SEP
from .frames import is_not_plumbing, is_object_function, is_own_object_function, lock_reason, takes_or_sleeps


class Stacks:
    """The stacks of a list of requests, flat: request i's frames are codes[off[i]:off[i + 1]] (indexes into
    names), root first; none when no call was found."""

    def __init__(self, off: np.ndarray, codes: np.ndarray, names: list[str]):
        self.off, self.codes, self.names = off, codes, names
        self._o = off.tolist()
        self._frames = np.array(names, dtype=object)[codes].tolist()

    def found(self, i: int) -> bool:
        return self._o[i + 1] > self._o[i]

    def frames(self, i: int) -> list[str]:
        return self._frames[self._o[i] : self._o[i + 1]]

    def reasons(self, n: int) -> list[tuple[str | None, str | None, str | None, str | None]]:
        """Per request i < n, what its stack waits on: (lock label, lock key, primitive name, object primitive
        name). From its frames that take or sleep on a known lock, the outermost primitive and the innermost object
        (an object's own function before a sleep function objects share: locks.label); with none, the innermost
        frame that is not plumbing (label and key), else all None. Each name's kind is looked up once; the frames
        are scanned as arrays."""
        kinds = np.array(
            [
                (takes_or_sleeps(f), is_object_function(f), is_own_object_function(f), is_not_plumbing(f))
                for f in self.names
            ],
            bool,
        ).reshape(-1, 4)
        codes = self.codes[: self.off[n]]
        stack = np.repeat(np.arange(n), np.diff(self.off[: n + 1]))
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
            if w >= 0:  # lock_reason keeps each (primitive, object, innermost) it has seen
                out.append(lock_reason(names[p] if p >= 0 else None, names[o] if o >= 0 else None, names[w]))
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
        return pc.binary_join(
            pa.LargeListArray.from_arrays(offsets, values, mask=pa.array(null, pa.bool_())), STACK_SEP
        )


def stacks_at(con, sid: int, calls: dict, pid: list, cpu: list, line: list, innermost: list | None = None) -> Stacks:
    """The stacks of the requests i: the calls of task pid[i] open at line[i] (or the ancestors-or-self of the call
    innermost[i] when given), root first; the idle task (pid 0) has one per CPU (cpu[i]). One scan of the calls."""
    return stacks_at_many(con, sid, calls, [(pid, cpu, line, innermost)])[0]


def stacks_at_many(con, sid: int, calls: dict, groups: list[tuple]) -> list[Stacks]:
    """stacks_at for several lists of requests (pid, cpu, line, innermost or None) in one scan of the source's calls
    in line order, a window of lines holding about _SCAN_ROWS calls at a time (memory: a window and the calls carried across, not the
    trace). A request is answered in the window that holds the last line it needs: the call its task entered last
    before its line (or its innermost call), then that call's parents, less those that had already returned. Carried
    to the next window: the calls still open at its first line, each task's last call, and their parents (the
    parent of a call carried is the nearest one carried: a call that returned before the window is in no stack
    asked there); `calls["ahead"]` (call_index) is in every window."""
    sizes = [len(g[0]) for g in groups]
    (pid, has_pid), (cpu, has_cpu), (at, has_at), (inner, has_inner) = (
        _ints([v for g in groups for v in (g[c] if g[c] is not None else [None] * len(g[0]))]) for c in range(4)
    )
    n = len(pid)
    task = np.where(pid == 0, _IDLE - cpu, pid)
    by_task = has_pid & ((pid != 0) | has_cpu) & has_at & ~has_inner
    need = np.where(has_inner, inner, at - 1)  # the last line a request needs the scan to have passed
    asked = np.flatnonzero(has_inner | by_task)
    tasks = np.unique(task[by_task])  # the tasks whose last calls are looked for
    asked = asked[np.argsort(need[asked], kind="stable")]
    at = np.where(has_at, at, -1)
    levels, depth = [], np.zeros(n, np.int64)  # per level: requests, their frame's level from the top, its function
    carried, answered, span = None, 0, calls["span"]
    query = (
        f"SELECT {_CALL_COLUMNS.format(names=len(calls['names']) - 1)} FROM fg_call_rows"
        " WHERE source_id = $sid AND line >= $a AND line < $b"
    )  # (the calls are stored about in line order, as they returned: each window's query reads a few row groups)
    for start in range(0, calls["bound"] + span, span):
        if answered == len(asked):
            break
        end = start + span if start < calls["bound"] else np.iinfo(np.int64).max  # (the last: what is left)
        got = None
        if start < calls["bound"]:
            t = con.sql(query, params={"sid": sid, "a": start, "b": end}).to_arrow_table()
            got = _calls_of(t, calls["code_type"]) if t.num_rows else None
        parts = [p for p in (carried, calls["ahead"], got) if p is not None]
        if not parts:
            continue
        w = _union(parts, start)
        upto = answered + int(np.searchsorted(need[asked[answered:]], end - 1, "right"))
        ks = asked[answered:upto]
        answered = upto
        if len(ks):
            _walk(w, ks, tasks, task, at, inner, has_inner, levels, depth)
        carried = _carry(w, end, tasks)
    off = np.zeros(n + 1, np.int64)
    np.cumsum(depth, out=off[1:])
    codes = np.zeros(off[-1], calls["code_type"])
    for ks, level, code in levels:  # root first: the frame found last goes first
        codes[off[ks] + depth[ks] - 1 - level] = code
    out, r = [], 0
    for size in sizes:
        out.append(Stacks(off[r : r + size + 1] - off[r], codes[off[r] : off[r + size]], calls["names"]))
        r += size
    return out


def _walk(w: dict, ks: np.ndarray, tasks, task, at, inner, has_inner, levels: list, depth: np.ndarray) -> None:
    """The stacks of requests ks, from window w (_union): each one's first call (its innermost, else its task's last
    before its line), then parents, the ones open at its line (not returned before it) kept."""
    cur = np.full(len(ks), -1, np.int64)
    own = has_inner[ks]
    if own.any():
        want = inner[ks[own]]
        j = np.minimum(np.searchsorted(w["line"], want), len(w["line"]) - 1)
        cur[own] = np.where(w["line"][j] == want, j, -1)
    if (~own).any():
        q = ks[~own]
        packed, shift = _task_order(w, tasks)
        mine = np.searchsorted(tasks, task[q])  # (every asked task is in `tasks`)
        before = np.searchsorted(w["line"], at[q])  # the calls before the line
        j = np.searchsorted(packed, (mine << shift) | before) - 1  # the task's last call before
        if len(packed):
            last = packed[np.maximum(j, 0)]
            cur[~own] = np.where((j >= 0) & (last >> shift == mine), last & ((1 << shift) - 1), -1)
    ok = cur >= 0
    k, cur = ks[ok], cur[ok]
    for _ in range(4096):
        if not len(k):
            break
        open_at = w["exit"][cur] >= at[k]
        levels.append((k[open_at], depth[k[open_at]], w["code"][cur[open_at]]))
        depth[k[open_at]] += 1
        nxt = w["up"][cur]
        ok = nxt >= 0
        k, cur = k[ok], nxt[ok]


# calls per window of the stacks' scan: its arrays stay under glibc's mmap threshold (1 MiB, ingest/memory.py), so
# they reuse the heap instead of being mapped and faulted in afresh per window (262 k calls: +0.5 s of system time
# per scan of a 1 GiB capture)
_SCAN_ROWS = 100_000
_IDLE = -(1 << 24)  # the idle task (pid 0) is a task per CPU: _IDLE - its CPU
_NO_EXIT = np.iinfo(np.int64).max
_CALL_COLUMNS = (
    "line, coalesce(parent_line, -1) AS parent, coalesce(exit_line, %d) AS exit, coalesce(func_id, {names}) AS code,"
    " CASE WHEN pid = 0 THEN %d - cpu ELSE pid END AS task" % (_NO_EXIT, _IDLE)
)
_FIELDS = ("line", "parent", "exit", "code", "task", "has_task")


def _calls_of(batch, code_type) -> dict:
    """A table of _CALL_COLUMNS as arrays (`has_task`: the call has a task to be looked up by)."""
    t = batch.column("task")
    return {
        "line": batch.column("line").to_numpy(),
        "parent": batch.column("parent").to_numpy(),
        "exit": batch.column("exit").to_numpy(),
        "code": batch.column("code").to_numpy().astype(code_type),
        "task": t.fill_null(0).to_numpy(zero_copy_only=False),
        "has_task": t.is_valid().to_numpy(zero_copy_only=False),
    }


def _union(parts: list[dict], lo: int) -> dict:
    """The calls of parts by line, each line once, with `up`: the index of each one's parent
    (-1: none here). `lo`: the first line of the window's own calls."""
    w = {f: np.concatenate([p[f] for p in parts]) for f in _FIELDS} if len(parts) > 1 else dict(parts[0])
    by = np.argsort(w["line"], kind="stable")  # (about sorted already: a merge of runs)
    line = w["line"][by]
    first = by[np.append(True, line[1:] != line[:-1])] if len(line) else by
    w = {f: v[first] for f, v in w.items()}
    w["up"] = _index_of(w["line"], w["parent"], lo)
    return w


def _index_of(line: np.ndarray, want: np.ndarray, lo: int) -> np.ndarray:
    """The index in `line` (sorted, each once) of each wanted line, -1 where none. Lines from `lo` on through a
    dense map of that range (a window's lines are dense there), the others by binary search."""
    out = np.full(len(want), -1, np.int64)
    if not len(line):
        return out
    a = int(np.searchsorted(line, lo))
    hi = int(line[-1])
    dense = (want >= lo) & (want <= hi)
    if a < len(line) and hi - lo < 4 * (len(line) - a) + (1 << 16):
        where = np.full(hi - lo + 1, -1, np.int32 if len(line) < 1 << 31 else np.int64)
        where[line[a:] - lo] = np.arange(a, len(line))
        out[dense] = where[want[dense] - lo]
        rest = np.flatnonzero(~dense & (want >= 0))
    else:
        rest = np.flatnonzero(want >= 0)
    j = np.minimum(np.searchsorted(line, want[rest]), len(line) - 1)
    out[rest] = np.where(line[j] == want[rest], j, -1)
    return out


def _task_order(w: dict, tasks: np.ndarray) -> tuple[np.ndarray, int]:
    """w's calls of the tasks asked for (`tasks`, sorted), by task then line: the task's index in `tasks` * 2**shift +
    the call's index in w (w is in line order), and shift (once per window: a search in the few tasks asked for and
    a radix sort of their indexes)."""
    shift = int(len(w["line"]) + 1).bit_length()
    if "by_task" not in w:
        at = np.minimum(np.searchsorted(tasks, w["task"]), max(len(tasks) - 1, 0))
        mine = np.flatnonzero(w["has_task"] & (tasks[at] == w["task"])) if len(tasks) else np.zeros(0, np.int64)
        which = at[mine].astype(np.uint16 if len(tasks) <= 1 << 16 else np.int64)
        by = np.argsort(which, kind="stable")  # (16 bits: a radix sort; the calls stay in line order per task)
        w["by_task"] = (which[by].astype(np.int64) << shift) | mine[by]
    return w["by_task"], shift


def _carry(w: dict, start: int, tasks: np.ndarray) -> dict:
    """What a window carries to the next one, which starts at line `start`: the calls open there (not returned
    before it), the last call before it of each task asked for (`tasks`), with as parent the nearest of its parents
    carried too."""
    keep = w["exit"] >= start
    packed, shift = _task_order(w, tasks)
    seen = packed[w["line"][packed & ((1 << shift) - 1)] < start]
    if len(seen):
        t = seen >> shift
        keep[seen[np.append(t[1:] != t[:-1], True)] & ((1 << shift) - 1)] = True
    idx = np.flatnonzero(keep)
    up = w["up"][idx]
    for _ in range(4096):
        skip = np.flatnonzero(up >= 0)
        skip = skip[~keep[up[skip]]]
        if not len(skip):
            break
        up[skip] = w["up"][up[skip]]
    out = {f: w[f][idx] for f in _FIELDS}
    out["parent"] = np.where(up >= 0, w["line"][np.maximum(up, 0)], -1)
    return out


def _ints(values: list) -> tuple[np.ndarray, np.ndarray]:
    """(values with nulls as 0, valid) of a list of ints or None."""
    a = pa.array(values, pa.int64())
    return a.fill_null(0).to_numpy(), a.is_valid().to_numpy(zero_copy_only=False)


def call_index(con, sid: int, names: list[str]) -> dict:
    """What the stacks' look-ups (stacks_at) need of a source before their scan: its names by id ("?" for a call
    without one), the smallest integer type that holds their indexes, and `ahead`: the calls that are the parent of a
    call before them (a call whose entry the trace missed is known by its exit line, after the calls it holds), which
    the scan in line order would reach too late."""
    code_type = np.int16 if len(names) < np.iinfo(np.int16).max else np.int32
    last, count = con.execute(
        "SELECT max(line), count(*) FROM fg_call_rows WHERE source_id = ? AND line >= 0", [sid]
    ).fetchall()[0]
    bound = (last or 0) + 1
    ahead = con.sql(
        f"SELECT {_CALL_COLUMNS.format(names=len(names))} FROM fg_call_rows WHERE source_id = $sid AND line >= 0"
        " AND line IN (SELECT parent_line FROM fg_call_rows WHERE source_id = $sid AND parent_line > line)"
        " ORDER BY line",
        params={"sid": sid},
    ).to_arrow_table()
    return {
        "names": names + ["?"],
        "code_type": code_type,
        "bound": bound,  # above every call's line
        "span": max(1, _SCAN_ROWS * bound // max(count, 1)),  # lines per window: about _SCAN_ROWS calls
        "ahead": _calls_of(ahead, code_type) if ahead.num_rows else None,
    }


# Stack-trace events: trace-cmd record -T (the `stacktrace` option), the `stacktrace` event trigger (a post trigger)
# and the userstacktrace option record the stack right after the event they belong to, in the same context: on the
# same CPU, as the same task, before anything else that CPU records (a kernel stack, then a user stack). The text
# forms: `kernel_stack: <stack trace >` / `user_stack: <user stack trace>` (trace-cmd report) and `<stack trace>` /
# `<user stack trace>` (tracefs), each followed by its `=> frame` lines, innermost first (parsers/funcgraph.py folds
# them into the event's text).
STACK_EVENTS = ("kernel_stack", "user_stack")
# frames of the tracing machinery itself, innermost in a stack recorded at a tracepoint
_TRACING_FRAME = re.compile(r"^(__traceiter_|__bpf_trace_|trace_event_raw_event_|perf_trace_|__probestub_)")
_FRAME_ADDR = re.compile(r"\s+\((?:[0-9a-fA-F]+|[0-9a-fA-Fx]+)\)$")


def frames_of_stack_text(text: str | None, read: dict[str, str] | None = None) -> list[str]:
    """The frames of a folded stack event's text (`<stack trace >` then `=> func (addr)` lines, innermost first),
    root first, without the tracing machinery's frames (`__traceiter_sched_switch`) at the top. `read`: the frame
    of each line already read (a caller's, for many texts: their lines repeat; "" for a line that is no frame)."""
    if read is None:
        read = {}
    frames = []
    for ln in (text or "").split("\n")[1:]:
        f = read.get(ln)
        if f is None:
            f = ln.strip()
            f = _FRAME_ADDR.sub("", f[2:].strip()) if f.startswith("=>") else ""
            read[ln] = f
        if f:
            frames.append(f)
    while frames and _TRACING_FRAME.match(frames[0]):
        frames.pop(0)
    frames.reverse()
    return frames


@dataclass
class EventStack:
    """The stack recorded for the event at a line: its frames (user stack, then kernel stack, root first) and the
    lines of the stack events it was read from."""

    frames: list[str]
    lines: list[int]
    kinds: list[str]
    after_ns: int | None  # the kernel stack's time after its event's

    def evidence(self, whose: str = "stack") -> str:
        where = " and ".join(f"{k} event at line {ln}" for ln, k in sorted(zip(self.lines, self.kinds)))
        late = f", {self.after_ns / 1e3:.1f} µs after it" if self.after_ns is not None and self.after_ns >= 0 else ""
        return f"{whose} from the {where} (same CPU and task{late})"


def event_stacks(con, sid: int, lines: list[int]) -> dict[int, EventStack]:
    """The stacks the trace recorded for the events at `lines` (scheduler switches and wake-ups, any event): the
    stack events that follow an event on its CPU with no other event of that CPU in between, written as the same
    task (see STACK_EVENTS). The first stack of each kind counts. {event line: EventStack}."""
    wanted = sorted({ln for ln in lines if ln is not None})
    if not wanted:
        return {}
    has = con.execute(
        "SELECT count(*) FROM trace_events WHERE source_id = ? AND event IN ('kernel_stack', 'user_stack')", [sid]
    ).fetchall()[0][0]
    if not has:
        return {}
    con.register("_stacks_need", pa.table({"line": pa.array(wanted, pa.int64())}))
    try:
        rows = con.execute(
            """
            WITH ev AS (
                SELECT line, t_ns, cpu, prev_pid AS pid, FALSE AS stack, NULL AS event, NULL AS text
                FROM sched_switch WHERE source_id = $sid AND cpu IS NOT NULL
                UNION ALL SELECT line, t_ns, cpu, waker_pid, FALSE, NULL, NULL
                FROM sched_wakeup WHERE source_id = $sid AND cpu IS NOT NULL
                UNION ALL SELECT line, t_ns, cpu, pid, event IN ('kernel_stack', 'user_stack'), event, text
                FROM trace_events WHERE source_id = $sid AND cpu IS NOT NULL
            ), o AS (
                SELECT *, last_value(CASE WHEN NOT stack THEN line END IGNORE NULLS)
                              OVER (PARTITION BY cpu ORDER BY line ROWS UNBOUNDED PRECEDING) AS owner,
                          last_value(CASE WHEN NOT stack THEN pid END IGNORE NULLS)
                              OVER (PARTITION BY cpu ORDER BY line ROWS UNBOUNDED PRECEDING) AS owner_pid,
                          last_value(CASE WHEN NOT stack THEN t_ns END IGNORE NULLS)
                              OVER (PARTITION BY cpu ORDER BY line ROWS UNBOUNDED PRECEDING) AS owner_ns
                FROM ev
            )
            SELECT owner, event, min(line) AS line, arg_min(text, line) AS text, arg_min(t_ns - owner_ns, line) AS dt
            FROM o WHERE stack AND owner IN (SELECT line FROM _stacks_need)
              AND (pid IS NULL OR owner_pid IS NULL OR pid = owner_pid)
            GROUP BY owner, event ORDER BY owner, event DESC
            """,
            {"sid": sid},
        ).fetchall()
    finally:
        con.unregister("_stacks_need")
    out: dict[int, EventStack] = {}
    read: dict[str, str] = {}  # each distinct frame line read once
    for owner, event, line, text, dt in rows:  # per owner: user_stack first, then kernel_stack
        frames = frames_of_stack_text(text, read)
        if not frames:
            continue
        s = out.get(owner)
        if s is None:
            out[owner] = EventStack(frames, [line], [event], dt if event == "kernel_stack" else None)
        else:
            s.frames = s.frames + frames
            s.lines.append(line)
            s.kinds.append(event)
            if event == "kernel_stack":
                s.after_ns = dt
    return out


def with_frames(st: Stacks, n: int, replace: dict[int, list[str]]) -> Stacks:
    """The first n stacks of st, with request i's frames replaced by replace[i] where given."""
    if not replace:
        return st
    names = list(st.names)
    ids = {name: i for i, name in enumerate(names)}
    parts, counts = [], np.zeros(n, np.int64)
    off = st.off
    for i in range(n):
        frames = replace.get(i)
        if frames is None:
            part = st.codes[off[i] : off[i + 1]].astype(np.int64)
        else:
            for f in frames:
                if f not in ids:
                    ids[f] = len(names)
                    names.append(f)
            part = np.array([ids[f] for f in frames], np.int64)
        parts.append(part)
        counts[i] = len(part)
    new_off = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=new_off[1:])
    codes = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    return Stacks(new_off, codes, names)
