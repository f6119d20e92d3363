"""The stacks of tasks at given lines of an ftrace source: the calls open there, root first, found by one scan of the
source's calls in line order per batch of look-ups (`stacks_at_many`: a window of calls at a time and the open ones
carried across, so memory does not grow with the trace) rather than by SQL per wait. Look-ups that follow from the
answers of others (the holders' stacks at the lines of the waits whose locks their stacks show) are answered in the
same scan, from the window that answered those (`more`)."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..db import arrow, execute
from ..distinct import distinct
from ..schema.tables import STACK_SEP
from .frames import FrameKinds


class Stacks:
    """The stacks of a list of requests, flat: request i's frames are codes[off[i]:off[i + 1]] (indexes into
    names), root first; none when no call was found."""

    def __init__(self, off: np.ndarray, codes: np.ndarray, names: list[str]):
        self.off, self.codes, self.names = off, codes, names
        self._values = None

    def found(self, i: int) -> bool:
        return self.off[i + 1] > self.off[i]

    def frames(self, i: int) -> list[str]:
        names = self.names
        return [names[c] for c in self.codes[self.off[i] : self.off[i + 1]].tolist()]

    def any_frame(self, rows: np.ndarray, mark: np.ndarray) -> np.ndarray:
        """Per request rows[j]: whether a frame of its stack is one of the names marked (mark: a bool per name)."""
        out = np.zeros(len(rows), bool)
        for a in range(0, len(rows), _CHUNK):
            r = rows[a : a + _CHUNK]
            lo, size = self.off[r], self.off[r + 1] - self.off[r]
            ends = np.cumsum(size)
            pos = np.repeat(lo - (ends - size), size) + np.arange(ends[-1] if len(ends) else 0)
            hit = np.zeros(len(pos) + 1, np.int64)
            np.cumsum(mark[self.codes[pos]], out=hit[1:])
            out[a : a + _CHUNK] = hit[ends] > hit[ends - size]
        return out

    def reasons(
        self, n: int, frames: FrameKinds, kinds: np.ndarray | None = None
    ) -> list[tuple[str | None, str | None, str | None, str | None]]:
        """Per request i < n, what its stack waits on: (lock label, lock key, primitive name, object primitive
        name). From its frames that take or sleep on a known lock, the outermost primitive and the innermost object
        (an object's own function before a sleep function objects share: locks.label); with none, the innermost
        frame that is not plumbing (label and key), else all None. Each name's kind is looked up once (`frames`, the
        derivation's; `kinds`: name_kinds of these names, when already known); the frames are scanned as arrays."""
        if kinds is None:
            kinds = name_kinds(self.names, frames)
        out = []
        for a in range(0, n, _CHUNK):  # a chunk of requests at a time: arrays of their frames, not of all
            out += self._reasons(frames, kinds, a, min(a + _CHUNK, n))
        return out

    def take(self, rows: np.ndarray) -> Stacks:
        """The stacks of requests rows[j], as requests j."""
        count = self.off[rows + 1] - self.off[rows]
        off = np.zeros(len(rows) + 1, np.int64)
        np.cumsum(count, out=off[1:])
        pos = np.repeat(self.off[rows] - off[:-1], count) + np.arange(off[-1])
        return Stacks(off, self.codes[pos], self.names)

    def _reasons(self, frames: FrameKinds, kinds: np.ndarray, a: int, b: int) -> list[tuple]:
        n = b - a
        codes = self.codes[self.off[a] : self.off[b]]
        stack = np.repeat(np.arange(n), np.diff(self.off[a : b + 1]))
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
        names, out, lock_reason = self.names, [], frames.lock_reason
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
        if self._values is None:
            self._values = pa.array(self.names, pa.string())
        values = self._values.take(self.codes[take])
        return pc.binary_join(
            pa.LargeListArray.from_arrays(offsets, values, mask=pa.array(null, pa.bool_())), STACK_SEP
        )


def name_kinds(names: list[str], frames: FrameKinds) -> np.ndarray:
    """Per name, what Stacks.reasons needs of it: (takes or sleeps, an object function, an object's own function,
    not plumbing)."""
    kinds = map(frames.of, names)
    return np.array([(k.waiting, k.obj, k.own, k.plain) for k in kinds], bool).reshape(-1, 4)


def stacks_at(con, sid: int, calls: dict, pid: list, cpu: list, line: list, innermost: list | None = None) -> Stacks:
    """The stacks of the requests i: the calls of task pid[i] open at line[i] (or the ancestors-or-self of the call
    innermost[i] when given), root first; the idle task (pid 0) has one per CPU (cpu[i]). One scan of the calls."""
    return stacks_at_many(con, sid, calls, [(pid, cpu, line, innermost)])[0]


def stacks_at_many(con, sid: int, calls: dict, groups: list[tuple], more=None) -> list[Stacks]:
    """stacks_at for several lists of requests (pid, cpu, line, innermost or None; each a list of ints or None, or
    arrays (values, valid)) in one scan of the source's calls
    in line order, a window of lines holding about _SCAN_ROWS calls at a time (memory: a window and the calls carried across, not the
    trace). A request is answered in the window that holds the last line it needs: the call its task entered last
    before its line (or its innermost call), then that call's parents, less those that had already returned. Carried
    to the next window: the calls still open at its first line, each task's last call, and their parents (the
    parent of a call carried is the nearest one carried: a call that returned before the window is in no stack
    asked there); `calls["ahead"]` (call_index) is in every window.

    `more`, when given: more(ks, their Stacks) is called with the requests answered in a window (indexes into the
    groups' requests one after the other) and returns further requests (pids, lines: by task, no CPU; or None),
    answered in that same window, right after (a request at line L needs the calls before L: the window that answered
    a request at L or at L + 1 has them, its carried calls included); their stacks are one more Stacks at the end of
    the list, in the order asked. `more.tasks`: the tasks (pids) it may ask for, known before the scan (each task's
    last call is carried from window to window)."""
    sizes = [len(g[2]) if isinstance(g[2], list) else len(g[2][0]) for g in groups]
    (pid, has_pid), (cpu, has_cpu), (at, has_at), (inner, has_inner) = (
        _ints_of([g[c] for g in groups], sizes) for c in range(4)
    )
    n = len(pid)
    task = np.where(pid == 0, _IDLE - cpu, pid)
    by_task = has_pid & ((pid != 0) | has_cpu) & has_at & ~has_inner
    need = np.where(has_inner, inner, at - 1)  # the last line a request needs the scan to have passed
    asked = np.flatnonzero(has_inner | by_task)
    tasks = distinct(task[by_task])  # the tasks whose last calls are looked for
    if more is not None:
        tasks = np.union1d(tasks, more.tasks)
    extra: list[tuple[np.ndarray, np.ndarray]] = []  # per batch of `more`'s requests: their depths, their codes
    asked = asked[np.argsort(need[asked], kind="stable")]
    at = np.where(has_at, at, -1)
    levels, depth = [], np.zeros(n, np.int64)  # per batch of requests answered: them, their depths, their codes
    carried, answered, span = None, 0, calls["span"]
    query = (
        f"SELECT {_CALL_COLUMNS.format(names=len(calls['names']) - 1)} FROM fg_call_rows"
        " WHERE source_id = $sid AND line >= $a AND line < $b"
    )  # (the calls are stored about in line order, as they returned: each window's query reads a few row groups)
    starts = range(0, calls["bound"] + span, span)
    reads = con.cursor()  # the staged calls, committed: the next window is read there while this one is walked
    try:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="derive-call-windows") as reader:

            def read(start: int) -> Future | None:
                if start >= calls["bound"]:
                    return None
                return reader.submit(arrow, reads, query, params={"sid": sid, "a": start, "b": start + span})

            ahead = read(0)
            for start in starts:
                if answered == len(asked):
                    break
                reading, ahead = ahead, read(start + span)
                got = None
                if reading is not None:
                    t = reading.result()
                    got = _calls_of(t, calls["code_type"]) if t.num_rows else None
                    reading = t = None
                end = start + span if start < calls["bound"] else np.iinfo(np.int64).max  # (the last: what is left)
                parts = [p for p in (carried, calls["ahead"], got) if p is not None]
                if not parts:
                    continue
                w = _union(parts, start)
                upto = answered + int(np.searchsorted(need[asked[answered:]], end - 1, "right"))
                ks = asked[answered:upto]
                answered = upto
                if len(ks):
                    _walk(w, ks, tasks, task, at, inner, has_inner, levels, depth)
                    if more is not None:
                        _more(w, ks, more, tasks, levels[-1], calls["names"], extra)
                carried = _carry(w, end, tasks)
    finally:
        reads.close()
    off = np.zeros(n + 1, np.int64)
    np.cumsum(depth, out=off[1:])
    codes = np.zeros(off[-1], calls["code_type"])
    for ks, count, part in levels:  # each batch's stacks, to their places
        local = np.zeros(len(ks) + 1, np.int64)
        np.cumsum(count, out=local[1:])
        codes[np.repeat(off[ks] - local[:-1], count) + np.arange(local[-1])] = part
    out, r = [], 0
    for size in sizes:
        out.append(Stacks(off[r : r + size + 1] - off[r], codes[off[r] : off[r + size]], calls["names"]))
        r += size
    if more is not None:
        count = np.concatenate([c for c, _ in extra]) if extra else np.zeros(0, np.int64)
        off = np.zeros(len(count) + 1, np.int64)
        np.cumsum(count, out=off[1:])
        codes = np.concatenate([c for _, c in extra]) if extra else np.zeros(0, calls["code_type"])
        out.append(Stacks(off, codes.astype(calls["code_type"]), calls["names"]))
    return out


def _more(w: dict, ks: np.ndarray, more, tasks: np.ndarray, answered: tuple, names: list[str], extra: list) -> None:
    """`more`'s requests after the requests ks were answered from window w (answered: their (ks, depths, codes)),
    answered from w too, their (depths, codes) appended to extra."""
    _, count, codes = answered
    off = np.zeros(len(ks) + 1, np.int64)
    np.cumsum(count, out=off[1:])
    asked = more(ks, Stacks(off, codes, names))
    if asked is None or not len(asked[0]):
        return
    pid, line = (np.asarray(v, np.int64) for v in asked)
    m = len(pid)
    by_task = np.flatnonzero(pid != 0)  # (no CPU: the idle task's stacks are per CPU)
    found: list = []
    depth = np.zeros(m, np.int64)
    if len(by_task):
        _walk(w, by_task, tasks, pid, line, np.zeros(m, np.int64), np.zeros(m, bool), found, depth)
    extra.append((depth, found[0][2] if found else np.zeros(0, codes.dtype)))


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
    k, cur = np.flatnonzero(ok), cur[ok]  # (indexes into ks)
    found, count = [], np.zeros(len(ks), np.int64)  # per level: requests, their frame's level from the top, its code
    for _ in range(4096):
        if not len(k):
            break
        open_at = w["exit"][cur] >= at[ks[k]]
        found.append((k[open_at], count[k[open_at]], w["code"][cur[open_at]]))
        count[k[open_at]] += 1
        nxt = w["up"][cur]
        ok = nxt >= 0
        k, cur = k[ok], nxt[ok]
    # these requests' stacks are whole: their codes, root first (the frame found last goes first), kept as one array
    off = np.zeros(len(ks) + 1, np.int64)
    np.cumsum(count, out=off[1:])
    codes = np.zeros(off[-1], w["code"].dtype)
    for kk, level, code in found:
        codes[off[kk] + count[kk] - 1 - level] = code
    depth[ks] = count
    levels.append((ks, count, codes))


# calls per window of the stacks' scan: its arrays stay under glibc's mmap threshold (1 MiB, backend/memory.py), so
# they reuse the heap instead of being mapped and faulted in afresh per window (262 k calls: +0.5 s of system time
# per scan of a 1 GiB capture)
_SCAN_ROWS = 100_000
_CHUNK = 16384  # requests whose frames are handled as arrays at a time (not the frames of all: ~30 a stack)
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


def _ints_of(parts: list, sizes: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """_ints of the parts one after the other: each a list of ints or None, (values, valid) arrays, or None (all
    null)."""
    out = []
    for p, size in zip(parts, sizes):
        if p is None:
            out.append((np.zeros(size, np.int64), np.zeros(size, bool)))
        elif isinstance(p, tuple):
            out.append((np.where(p[1], p[0], 0).astype(np.int64), p[1].astype(bool)))
        else:
            out.append(_ints(p))
    return np.concatenate([v for v, _ in out]), np.concatenate([ok for _, ok in out])


def call_index(con, sid: int, names: list[str]) -> dict:
    """What the stacks' look-ups (stacks_at) need of a source before their scan: its names by id ("?" for a call
    without one), the smallest integer type that holds their indexes, and `ahead`: the calls that are the parent of a
    call before them (a call whose entry the trace missed is known by its exit line, after the calls it holds), which
    the scan in line order would reach too late."""
    code_type = np.int16 if len(names) < np.iinfo(np.int16).max else np.int32
    last, count = execute(
        con, "SELECT max(line), count(*) FROM fg_call_rows WHERE source_id = ? AND line >= 0", [sid]
    ).fetchall()[0]
    bound = (last or 0) + 1
    ahead = arrow(
        con,
        f"SELECT {_CALL_COLUMNS.format(names=len(names))} FROM fg_call_rows WHERE source_id = $sid AND line >= 0"
        " AND line IN (SELECT parent_line FROM fg_call_rows WHERE source_id = $sid AND parent_line > line)"
        " ORDER BY line",
        params={"sid": sid},
    )
    return {
        "names": names + ["?"],
        "code_type": code_type,
        "bound": bound,  # above every call's line
        "span": max(1, _SCAN_ROWS * bound // max(count, 1)),  # lines per window: about _SCAN_ROWS calls
        "ahead": _calls_of(ahead, code_type) if ahead.num_rows else None,
    }


def concat_stacks(a: Stacks, b: Stacks) -> Stacks:
    """The requests of a, then those of b (the same names)."""
    return Stacks(np.concatenate([a.off, b.off[1:] + a.off[-1]]), np.concatenate([a.codes, b.codes]), a.names)


def with_frames(st: Stacks, n: int, rows: np.ndarray, recorded, which: np.ndarray) -> Stacks:
    """The first n stacks of st, with request rows[j]'s frames replaced by the stack which[j] of `recorded`
    (recorded.Recorded). Copied a chunk of requests at a time."""
    if not len(rows):
        return st
    base = np.int32(len(st.names))
    repl = np.full(n, -1, np.int64)
    repl[rows] = which
    count = np.diff(st.off[: n + 1])
    count[rows] = recorded.off[which + 1] - recorded.off[which]
    off = np.zeros(n + 1, np.int64)
    np.cumsum(count, out=off[1:])
    codes = np.empty(off[-1], np.int32)
    for a in range(0, n, _CHUNK):
        b = min(a + _CHUNK, n)
        r, c = repl[a:b], count[a:b]
        mine = r >= 0
        start = np.where(mine, recorded.off[np.maximum(r, 0)], st.off[a:b])
        pos = np.repeat(start - off[a:b], c) + np.arange(off[a], off[b])
        theirs = np.repeat(mine, c)
        seg = codes[off[a] : off[b]]
        seg[~theirs] = st.codes[pos[~theirs]]
        seg[theirs] = recorded.codes[pos[theirs]] + base
    return Stacks(off, codes, st.names + recorded.names)
