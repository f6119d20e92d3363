"""The stacks an ftrace source recorded itself, attached to the events they belong to (`event_stacks`).

trace-cmd record -T (the `stacktrace` option), the `stacktrace` event trigger (a post trigger) and the userstacktrace
option record the stack right after the event they belong to, in the same context: on the same CPU, as the same task,
before anything else that CPU records (a kernel stack, then a user stack). The text forms: `kernel_stack: <stack trace
>` / `user_stack: <user stack trace>` (trace-cmd report) and `<stack trace>` / `<user stack trace>` (tracefs), each
followed by its `=> frame` lines, innermost first (parsers/funcgraph.py folds them into the event's text).

The stacks are held flat (frame codes into one list of names, each distinct frame once), not as a list per event:
a 5 GiB capture with `-T` has a stack after every event."""

from __future__ import annotations

import re
from array import array

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..db import arrow, batches, execute
from ..distinct import distinct

STACK_EVENTS = ("kernel_stack", "user_stack")
# frames of the tracing machinery itself, innermost in a stack recorded at a tracepoint
_TRACING_FRAME = re.compile(r"^(__traceiter_|__bpf_trace_|trace_event_raw_event_|perf_trace_|__probestub_)")
_FRAME_ADDR = re.compile(r"\s+\((?:[0-9a-fA-F]+|[0-9a-fA-Fx]+)\)$")
_BATCH = 8192  # rows of stack events read at a time


def frame_of_line(ln: str) -> str:
    """The frame a line of a stack event's text names (`=> func (addr)`: "func"), "" for a line that is no frame."""
    f = ln.strip()
    return _FRAME_ADDR.sub("", f[2:].strip()) if f.startswith("=>") else ""


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
            f = read[ln] = frame_of_line(ln)
        if f:
            frames.append(f)
    while frames and _TRACING_FRAME.match(frames[0]):
        frames.pop(0)
    frames.reverse()
    return frames


def _frames_of_texts(texts: pa.Array, read: dict[str, tuple[str, bool]]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """frames_of_stack_text of many texts at once, as arrays: (per text, its number of frames; the frames of all, text
    after text, root first, as indexes into the list of frame names returned). Each distinct line is read once
    (`read`: the callers' lines read before, their (frame, is a tracing frame)); the rest is done on arrays."""
    texts = pc.fill_null(texts, "")
    lists = pc.split_pattern(texts, "\n")
    sizes = pc.list_value_length(lists).to_numpy(zero_copy_only=False).astype(np.int64)
    enc = pc.dictionary_encode(pc.list_flatten(lists))
    idx = enc.indices.to_numpy(zero_copy_only=False)
    names, where, tracing = [], {}, []
    line_frame = np.empty(len(enc.dictionary), np.int64)  # per distinct line: its frame's index, -1: no frame
    for j, ln in enumerate(enc.dictionary.to_pylist()):
        got = read.get(ln)
        if got is None:
            f = frame_of_line(ln)
            got = read[ln] = (f, bool(f) and _TRACING_FRAME.match(f) is not None)
        f = got[0]
        if not f:
            line_frame[j] = -1
            continue
        k = where.get(f)
        if k is None:
            k = where[f] = len(names)
            names.append(f)
            tracing.append(got[1])
        line_frame[j] = k
    n = len(sizes)
    row = np.repeat(np.arange(n), sizes)
    starts = np.zeros(n + 1, np.int64)
    np.cumsum(sizes, out=starts[1:])
    first = np.zeros(len(row), bool)
    first[starts[:-1][sizes > 0]] = True  # each text's header line
    fr = line_frame[idx]
    keep = ~first & (fr >= 0)
    fr, row = fr[keep], row[keep]
    # the tracing machinery's frames at the top (innermost, first in the text) dropped: those before the first other
    other = ~np.asarray(tracing, bool)[fr] if len(fr) else np.zeros(0, bool)
    seen = np.cumsum(other)
    count = np.bincount(row, minlength=n)
    before = np.zeros(n + 1, np.int64)
    np.cumsum(count, out=before[1:])
    base = np.concatenate([[0], seen])[before[:-1]]  # the others seen before each text's frames
    keep = seen - base[row] > 0
    fr, row = fr[keep], row[keep]
    count = np.bincount(row, minlength=n)
    off = np.zeros(n + 1, np.int64)
    np.cumsum(count, out=off[1:])
    # root first: each text's frames reversed
    pos = np.arange(len(fr)) - off[row]
    out = np.empty(len(fr), np.int64)
    out[off[row] + count[row] - 1 - pos] = fr
    return count, out, names


class Recorded:
    """The stacks recorded for events, by the event's line (`at`, sorted): stack k's frames are
    codes[off[k]:off[k + 1]] into `names` (user stack, then kernel stack, root first), read from the stack events at
    ev_line[2k], ev_line[2k + 1] (-1: none) of kinds ev_kind (0 kernel_stack, 1 user_stack), the kernel stack's time
    after its event's in after_ns (null: none)."""

    def __init__(self):
        self.names: list[str] = []
        self._ids: dict[str, int] = {}
        self._at, self._off, self._chunks = array("q"), array("q", [0]), []
        self._ev_line, self._ev_kind, self._after = array("q"), array("b"), array("q")
        self._has_after = array("b")

    def _add_batch(
        self, owner: list, kind: list, line: list, dt: list, count: np.ndarray, frames: np.ndarray, names: list[str]
    ) -> None:
        """Adds a batch of stack events (in order: per owner, its user stack first), each with its frames (count[i]
        of `frames`, root first, indexes into `names`); an event without frames is left out. Each distinct frame gets
        its code at its first use."""
        ids, all_names = self._ids, self.names
        firsts = np.unique(frames, return_index=True)[1] if len(frames) else np.zeros(0, np.int64)
        code_of = np.zeros(len(names), np.int32)
        for k in frames[np.sort(firsts)].tolist():  # (in order of first use, as they are met)
            f = names[k]
            c = ids.get(f)
            if c is None:
                c = ids[f] = len(all_names)
                all_names.append(f)
            code_of[k] = c
        self._chunks.append(code_of[frames])
        end = self._off[-1]
        at, off, ev_line, ev_kind = self._at, self._off, self._ev_line, self._ev_kind
        after, has_after = self._after, self._has_after
        for o, e, ln, d, c in zip(owner, kind, line, dt, count.tolist()):
            if not c:
                continue
            end += c
            k = 0 if e == "kernel_stack" else 1
            if at and at[-1] == o:  # its second stack event: the kernel stack after the user stack
                off[-1] = end
                ev_line[-1], ev_kind[-1] = ln, k
            else:
                at.append(o)
                off.append(end)
                ev_line.extend((ln, -1))
                ev_kind.extend((k, 0))
                after.append(0)
                has_after.append(0)
            if k == 0 and d is not None:
                after[-1], has_after[-1] = d, 1

    def done(self) -> Recorded:
        self.at = np.frombuffer(self._at, np.int64) if self._at else np.zeros(0, np.int64)
        self.off = np.frombuffer(self._off, np.int64)
        self.codes = np.concatenate(self._chunks).astype(np.int32) if self._chunks else np.zeros(0, np.int32)
        self._chunks = []
        return self

    def __len__(self) -> int:
        return len(self._at)

    def find(self, lines: np.ndarray, valid: np.ndarray | None = None) -> np.ndarray:
        """Per line, the index of the stack recorded for it, -1 for none (or where not valid)."""
        if not len(self.at):
            return np.full(len(lines), -1, np.int64)
        j = np.minimum(np.searchsorted(self.at, lines), len(self.at) - 1)
        hit = self.at[j] == lines
        if valid is not None:
            hit &= valid
        return np.where(hit, j, -1)

    def evidence(self, k: int, whose: str = "stack") -> str:
        """What says stack k was recorded for its event (the stack events' lines, how long after it)."""
        line, other = self._ev_line[2 * k], self._ev_line[2 * k + 1]
        where = f"{STACK_EVENTS[self._ev_kind[2 * k]]} event at line {line}"
        if other >= 0:  # (two events: in line order)
            also = f"{STACK_EVENTS[self._ev_kind[2 * k + 1]]} event at line {other}"
            where = f"{where} and {also}" if line < other else f"{also} and {where}"
        after = self._after[k]
        late = f", {after / 1e3:.1f} µs after it" if self._has_after[k] and after >= 0 else ""
        return f"{whose} from the {where} (same CPU and task{late})"


def stack_owners(con, sid: int) -> pa.Table | None:
    """Which event each stack event of the source belongs to (None: the trace recorded no stack): the stack events
    that follow an event on its CPU with no other event of that CPU in between, written as the same task (see
    STACK_EVENTS); per owning event's line and kind of stack, the first such stack's line and its time after its
    owner (owner, event, line, dt). It needs no wait: read beside the waits' staging (derive/pipeline.py)."""
    has = execute(
        con, "SELECT count(*) FROM trace_events WHERE source_id = ? AND event IN ('kernel_stack', 'user_stack')", [sid]
    ).fetchall()[0][0]
    if not has:
        return None
    return arrow(
        con,
        """
        WITH ev AS (
            SELECT line, t_ns, cpu, prev_pid AS pid, FALSE AS stack, NULL AS event
            FROM sched_switch WHERE source_id = $sid AND cpu IS NOT NULL
            UNION ALL SELECT line, t_ns, cpu, waker_pid, FALSE, NULL
            FROM sched_wakeup WHERE source_id = $sid AND cpu IS NOT NULL
            UNION ALL SELECT line, t_ns, cpu, pid, event IN ('kernel_stack', 'user_stack'), event
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
        SELECT owner, event, min(line) AS line, arg_min(t_ns - owner_ns, line) AS dt
        FROM o WHERE stack AND owner IS NOT NULL AND (pid IS NULL OR owner_pid IS NULL OR pid = owner_pid)
        GROUP BY owner, event
        """,
        params={"sid": sid},
    )


def event_stacks(con, sid: int, lines: np.ndarray, owners: pa.Table | None) -> Recorded:
    """The stacks the trace recorded for the events at `lines` (scheduler switches and wake-ups, any event), of those
    `owners` (stack_owners of the source) finds. The first stack of each kind counts. The texts are read a batch at
    a time, joined to the stack events found."""
    out = Recorded()
    wanted = distinct(np.asarray(lines, np.int64))
    if owners is None or not len(wanted):
        return out.done()
    mine = owners.filter(pc.is_in(owners.column("owner"), pa.array(wanted)))
    con.register("_stacks_owned", mine)
    try:
        reader = batches(
            con,
            """
            SELECT s.owner, s.event, s.line, e.text, s.dt
            FROM _stacks_owned s JOIN trace_events e ON e.source_id = $sid AND e.line = s.line
            ORDER BY s.owner, s.event DESC
            """,
            params={"sid": sid},
            batch=_BATCH,
        )
        read: dict[str, tuple[str, bool]] = {}  # each distinct frame line read once
        for batch in reader:  # per owner: user_stack first, then kernel_stack
            count, frames, names = _frames_of_texts(batch.column(3), read)
            owner, event, line, dt = (batch.column(k).to_pylist() for k in (0, 1, 2, 4))
            out._add_batch(owner, event, line, dt, count, frames, names)
    finally:
        con.unregister("_stacks_owned")
    # the texts' splits were Arrow's (mimalloc): its freed pages go back now, not while the waits' scan and inserts
    # peak (the derive's VmHWM, 1 GiB function_graph: -25-30 MiB)
    pa.default_memory_pool().release_unused()
    return out.done()
