"""The stacks of tasks at given lines of an ftrace source: the calls open there, root first, found in a call index
built once per source (`call_index`: numpy arrays by line) rather than by SQL per wait."""

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
    """The stacks of the requests i: the calls (call_index) of task pid[i] open at line[i] (or the ancestors-or-self
    of the call innermost[i] when given), root first; the idle task (pid 0) has one per CPU (cpu[i])."""
    req = {"pid": _ints(pid), "cpu": _ints(cpu), "line": _ints(line), "inner": _ints(innermost or [None] * len(pid))}
    tops = _last_calls(calls, req) if calls["keys"] is not None else _last_calls_sql(con, sid, req)
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
    return Stacks(off, code[lines], calls["names"])


def _ints(values: list) -> tuple[np.ndarray, np.ndarray]:
    """(values with nulls as 0, valid) of a list of ints or None."""
    a = pa.array(values, pa.int64())
    return a.fill_null(0).to_numpy(), a.is_valid().to_numpy(zero_copy_only=False)


def _stack_key(req: dict) -> np.ndarray:
    """Which stack of its task a request looks at: per CPU for the idle task (-2: CPU unknown), else -1."""
    (pid, has_pid), (cpu, has_cpu) = req["pid"], req["cpu"]
    return np.where(has_pid & (pid == 0), np.where(has_cpu, cpu, -2), -1)


def _last_calls_sql(con, sid: int, req: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """As _last_calls, in SQL, for call indexes whose keys do not fit in numbers."""
    cols = {"pid": req["pid"], "line": req["line"], "innermost": req["inner"]}
    con.register(
        "_stalls_req",
        pa.table(
            {
                "k": np.arange(len(req["pid"][0])),
                "stack_key": _stack_key(req),
                **{c: pa.array(v, mask=~ok) for c, (v, ok) in cols.items()},
            }
        ),
    )
    # the last call the task entered before `line`
    tops = con.execute(
        """
        SELECT r.k, coalesce(r.line, -1) AS at_line, coalesce(r.innermost, c.line) AS line FROM _stalls_req r
        ASOF LEFT JOIN (SELECT pid, CASE WHEN pid = 0 THEN cpu ELSE -1 END AS stack_key, line FROM fg_call_rows
                        WHERE source_id = $sid AND pid IS NOT NULL) c
        ON r.pid = c.pid AND r.stack_key = c.stack_key AND c.line < r.line
        WHERE coalesce(r.innermost, c.line) IS NOT NULL ORDER BY r.k""",
        {"sid": sid},
    ).fetchnumpy()
    con.unregister("_stalls_req")
    return tuple(np.asarray(tops[c], np.int64) for c in ("k", "at_line", "line"))


def _last_calls(calls: dict, req: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per request, the last call of its task (per CPU for pid 0) before its line, or its `innermost` call:
    (requests found, their lines, those calls' lines)."""
    keys, bits = calls["keys"]
    (pid, has_pid), (cpu, has_cpu), (at, has_at), (inner, has_inner) = req["pid"], req["cpu"], req["line"], req["inner"]
    task = np.where(pid > 0, pid, np.where(has_cpu, -10 - cpu, -8))  # as call_index's; -8: pid 0, CPU unknown
    fits = has_pid & has_at & ((pid > 0) | ((pid == 0) & (cpu >= 0))) & (np.abs(task) < 1 << (62 - bits))
    # the last key below (task, line): the task's last call before the line, if that key is the task's
    j = np.searchsorted(keys, np.where(fits, task, 0) * (1 << bits) + np.clip(at, 0, (1 << bits) - 1)) - 1
    last = keys[np.maximum(j, 0)] if len(keys) else np.zeros(len(j), np.int64)
    ok = fits & ~has_inner & (j >= 0) & (last >> bits == task)
    line = np.where(ok, last & ((1 << bits) - 1), inner)
    sel = np.flatnonzero(ok | has_inner)
    return sel, np.where(has_at, at, -1)[sel], line[sel]


_NO_CALL = -2  # the function code of a line where no call is


def call_index(con, sid: int, names: list[str]) -> dict:
    """The source's calls by line (a line has at most one call): each call's parent line (-1: none), exit line
    (the integer type's max: none) and function (an index into names; _NO_CALL: no call at this line), in the
    smallest integers that hold every line of the calls (`bound`: above them all) and every name; and `keys`, for
    the stacks' look-ups of a task's last call before a line: (the sorted task * 2**bits + line of the calls with a
    task, bits), None when a key would not fit. A call's task is its pid, for the idle task (pid 0) -10 - its CPU (-5:
    CPU unknown, never looked up)."""
    last, pid_lo, pid_hi, cpu_lo, cpu_hi, ncalls = con.execute(
        "SELECT max(greatest(line, exit_line)), min(pid), max(pid), min(cpu) FILTER (pid = 0),"
        " max(cpu) FILTER (pid = 0), count(*) FROM fg_call_rows WHERE source_id = ? AND line >= 0",
        [sid],
    ).fetchall()[0]
    bound = (last or 0) + 1
    bits = bound.bit_length()
    limit = 1 << (62 - bits)  # |task| < limit: task * 2**bits + line fits in 63 bits
    unfit = (pid_lo is not None and (pid_lo < 0 or pid_hi >= limit)) or (
        cpu_lo is not None and (cpu_lo < 0 or cpu_hi >= limit - 10)
    )
    key = f"CASE WHEN c.pid > 0 THEN c.pid WHEN c.pid = 0 THEN coalesce(-10 - c.cpu::BIGINT, -5) END * {1 << bits}"
    sql_type, dtype = ("INTEGER", np.int32) if bound < np.iinfo(np.int32).max else ("BIGINT", np.int64)
    code_type = np.int16 if len(names) < np.iinfo(np.int16).max else np.int32
    index = {
        "names": names + ["?"],
        "bound": bound,
        "parent": np.full(bound, -1, dtype),
        "exit": np.zeros(bound, dtype),
        "code": np.full(bound, _NO_CALL, code_type),
        "keys": None,
    }
    keys, nkeys = np.empty(0 if unfit else ncalls, np.int64), 0
    # batch by batch: the whole result at once would be ~24 bytes a call more at the derivation's peak
    reader = con.sql(
        f"""
        SELECT c.line::{sql_type} AS line, coalesce(c.parent_line, -1)::{sql_type} AS parent,
               coalesce(c.exit_line, {np.iinfo(dtype).max})::{sql_type} AS exit,
               coalesce(c.func_id, {len(names)}) AS code,
               {"NULL::BIGINT" if unfit else key} + c.line AS key
        FROM fg_call_rows c WHERE c.source_id = $sid AND c.line >= 0
        """,
        params={"sid": sid},
    ).to_arrow_reader(1 << 20)
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
