"""The rows of `wait_rows`, made a window of waits at a time (derive/waits.py finds the waits; the rules are in its
docstring): a source's waits are staged in a temporary table of their own columns (`base_table`), and each window of
WAIT_ROWS waits is inserted joined with what was found for it in Python (locks, holders, stacks as text), so no
wait is ever held as a Python object for the whole trace.

Also the inferred holders (`HolderFinder`, `infer_holders`), whose evidence is written as their windows are inserted."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..db import arrow, execute
from ..distinct import distinct
from .arrays import key_ids
from .frames import task_text, time_text

WAIT_ROWS = 16384  # waits inserted per statement
MAX_HOLDER_SCAN = 10_000  # acquire calls looked at, backwards, per wait

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
    "wait_kind": pa.string(),
    "wait_rule": pa.string(),
}
# the columns found in Python per window; the others are the base table's (its `evidence`: before the recorded
# stacks' `tail`)
FOUND = (
    "lock",
    "lock_key",
    "primitive",
    "stack_text",
    "waker_stack_text",
    "holder_pid",
    "holder_comm",
    "holder_line",
    "holder_ns",
    "holder_evidence",
    "holder_stack_text",
    "wait_kind",
    "wait_rule",
)
BASE_TYPES = {"seq": pa.int64(), **{k: t for k, t in WAIT_TYPES.items() if k not in FOUND}, "innermost": pa.int64()}
_SQL_TYPES = {pa.int32(): "INTEGER", pa.int64(): "BIGINT", pa.string(): "VARCHAR", pa.bool_(): "BOOLEAN"}

# what the timeline's summaries need of each wait (timeline.summarize, as soon as the locks are known)
SUMMARY_COLUMNS = ("source_id", "pid", "comm", "start_ns", "end_ns", "lock_key", "lock", "line")


def base_table(con, sid: int) -> str:
    """A new temporary table for the source's waits' own columns (BASE_TYPES; `seq`: the wait's place, 0...)."""
    name = f"_stalls_wb{sid}"
    cols = ", ".join(f"{k} {_SQL_TYPES[t]}" for k, t in BASE_TYPES.items())
    execute(con, f"CREATE OR REPLACE TEMP TABLE {name} ({cols})")
    return name


def empty_summary() -> pa.Table:
    return pa.table({k: pa.array([], WAIT_TYPES[k]) for k in SUMMARY_COLUMNS})


def summary(con, base: str, reasons: list[tuple]) -> pa.Table:
    """The SUMMARY_COLUMNS of the waits, as they will be stored (reasons: per wait (lock, lock_key, ...))."""
    t = arrow(con, f"SELECT source_id, pid, comm, start_ns, end_ns, line FROM {base} ORDER BY seq")
    cols = {k: t.column(k) for k in t.column_names}
    cols["lock_key"] = pa.array([r[1] for r in reasons], pa.string())
    cols["lock"] = pa.array([r[0] for r in reasons], pa.string())
    return pa.table({k: cols[k].cast(WAIT_TYPES[k]) for k in SUMMARY_COLUMNS})


class Holders:
    """The inferred holders of a source's waits: per wait its row in `rows` (-1: none), the acquire call that
    returned last before it (pid, comm, line, func, exit_ns, rel_line) and the release functions it did not call."""

    def __init__(self, n: int):
        self.row = np.full(n, -1, np.int64)
        self.parts: list[pa.Table] = []
        self.release: list[str] = []  # per row
        self._count = 0

    def add(self, waits: np.ndarray, rows: pa.Table, release: str) -> None:
        self.row[waits] = np.arange(self._count, self._count + len(waits))
        self._count += len(waits)
        self.parts.append(rows)
        self.release += [release] * len(waits)

    def done(self) -> Holders:
        types = {"pid": pa.int64(), "comm": pa.string(), "line": pa.int64(), "func": pa.string()}
        types.update(exit_ns=pa.int64(), rel_line=pa.int64())
        empty = pa.table({k: pa.array([], t) for k, t in types.items()})
        t = pa.concat_tables([p.cast(empty.schema) for p in self.parts]) if self.parts else empty
        self.pid, self.line = (t.column(c).to_numpy(zero_copy_only=False) for c in ("pid", "line"))
        self.ns = t.column("exit_ns").fill_null(0).to_numpy(zero_copy_only=False)  # (chains: `holder_ns or 0`)
        self.rows = t
        self.parts = []
        return self

    def columns(self, r: slice) -> dict[str, pa.Array]:
        """holder_* of the waits r (but the stack)."""
        at = self.row[r]
        has = at >= 0
        t = self.rows.take(at[has])
        pos = np.cumsum(has) - 1
        out = {"holder_pid": [], "holder_comm": [], "holder_line": [], "holder_ns": [], "holder_evidence": []}
        rows = t.to_pylist()
        for k, ok in enumerate(has.tolist()):
            if not ok:
                for v in out.values():
                    v.append(None)
                continue
            h = rows[pos[k]]
            out["holder_pid"].append(h["pid"])
            out["holder_comm"].append(h["comm"])
            out["holder_line"].append(h["line"])
            out["holder_ns"].append(h["exit_ns"])
            out["holder_evidence"].append(
                f"inferred holder: {task_text(h['comm'], h['pid'])} returned from {h['func']}() (line "
                f"{h['line']}) at {time_text(h['exit_ns'])}, before this wait began, and did not call "
                f"{self.release[at[k]]}() "
                + (f"until line {h['rel_line']}" if h["rel_line"] is not None else "in the rest of the trace")
            )
        return {k: pa.array(v, WAIT_TYPES[k]) for k, v in out.items()}


class HolderFinder:
    """Inferred holders (see waits.py's rules): one SQL pass over the acquire and release calls of the objects
    (locks.py entries with release functions, those of `objects` when given) whose functions the source names
    (`lockfn`: by name, (primitive, role, id into `names`, the source's names by id)), each acquire's next release by
    the same task found on arrays; then `find`, a short backward scan per wait, all of an object's waits of a batch at
    once (a batch of waits at a time: their holders do not depend on each other). `tasks`: the tasks (pids) that may
    be found holding (for the stacks' scan, which looks up their stacks at the waits' lines)."""

    def __init__(self, con, sid: int, lockfn: dict, prims: dict, names: list[str], objects: list[str] | None = None):
        if objects is None:
            objects = list(dict.fromkeys(p.name for p, _, _ in lockfn.values() if prims[p.name].release))
        self.objs, self.prims, self.names = {name: k for k, name in enumerate(objects)}, prims, names
        # the trace's own spellings (with .isra.0 etc.) of those functions
        spelled = [
            (i, self.objs[p.name], role == "acquire")
            for _, (p, role, i) in lockfn.items()
            if p.name in self.objs and role in ("acquire", "release")
        ]
        self.obj = None
        self.tasks = np.zeros(0, np.int64)
        if not spelled:
            return
        con.register(
            "_stalls_hf",
            pa.table(
                [pa.array(v, t) for v, t in zip(zip(*spelled), (pa.int32(), pa.int32(), pa.bool_()))],
                names=["func_id", "obj", "acquire"],
            ),
        )
        try:
            t = arrow(
                con,
                """
                SELECT f.obj, f.acquire, c.pid, coalesce(c.comm_id, -1) AS comm_id, c.line, c.func_id, c.exit_line,
                       c.exit_ns
                FROM fg_call_rows c JOIN _stalls_hf f USING (func_id)
                WHERE c.source_id = $sid AND c.pid IS NOT NULL AND (NOT f.acquire OR c.exit_line IS NOT NULL)
                """,
                params={"sid": sid},
            )
        finally:
            con.unregister("_stalls_hf")
        col = {k: t.column(k) for k in t.column_names}
        t = None
        acq = col["acquire"].to_numpy(zero_copy_only=False)
        obj, pid, line = (col[k].to_numpy().astype(np.int64) for k in ("obj", "pid", "line"))
        # the acquires by object, then exit line (each line is one call's exit: no ties)
        a = np.flatnonzero(acq)
        exit_line = col["exit_line"].fill_null(0).to_numpy()[a]
        a = a[np.lexsort((exit_line, obj[a]))]
        self.obj, self.apid, self.exit_line = obj[a], pid[a], col["exit_line"].take(a).to_numpy().astype(np.int64)
        self.comm_id, self.line, self.func_id = (
            col[k].take(a).to_numpy().astype(np.int64) for k in ("comm_id", "line", "func_id")
        )
        self.exit_ns = col["exit_ns"].take(a)
        # each acquire's next release of its object by its task (none: never); the calls' columns dropped first (the
        # derivation's peak: 3.5 M lock calls in the 1 GiB trace.dat)
        r = np.flatnonzero(~acq)
        r_obj, r_pid, r_line = obj[r], pid[r], line[r]
        col = acq = obj = pid = line = None
        self.rel = np.full(len(a), np.iinfo(np.int64).max, np.int64)
        if len(r):
            group = key_ids(np.concatenate([self.obj, r_obj]), np.concatenate([self.apid, r_pid]))
            key = np.sort((group[len(a) :] << 40) | r_line)
            j = np.searchsorted(key, (group[: len(a)] << 40) | self.exit_line, "right")
            hit = j < len(key)
            hit[hit] = key[j[hit]] >> 40 == group[: len(a)][hit]
            self.rel[hit] = key[j[hit]] & ((1 << 40) - 1)
        self.tasks = distinct(self.apid[self.apid != 0])

    def _rows(self, at: np.ndarray) -> pa.Table:
        """The acquires at (indexes) as Holders rows."""
        names, n = self.names, len(self.names)
        rel = self.rel[at]
        return pa.table(
            {
                "pid": pa.array(self.apid[at], pa.int64()),
                "comm": pa.array([names[c] if 0 <= c < n else None for c in self.comm_id[at].tolist()], pa.string()),
                "line": pa.array(self.line[at], pa.int64()),
                "func": pa.array([names[f] for f in self.func_id[at].tolist()], pa.string()),
                "exit_ns": self.exit_ns.take(at),
                "rel_line": pa.array(rel, pa.int64(), mask=rel == np.iinfo(np.int64).max),
            }
        )

    def find(self, out: Holders, need: dict[str, np.ndarray], line, pid) -> tuple[np.ndarray, np.ndarray]:
        """The holders of the waits `need`[object] (arrays of wait indexes), added to `out`; returns the waits given
        a holder and the holders' pids, in the order added. `line`, `pid`: the waits' (arrays)."""
        found_waits, found_pids = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
        if self.obj is None:
            return found_waits[0], found_pids[0]
        obj, apid, exit_line, rel = self.obj, self.apid, self.exit_line, self.rel
        for name, waits in need.items():
            k = self.objs.get(name)
            if k is None:  # a wait found on this object by its recorded stack: none of its calls were traced
                continue
            a, b = np.searchsorted(obj, [k, k + 1])  # the object's acquires, by exit line
            at, who = line[waits], pid[waits]
            j = np.searchsorted(exit_line[a:b], at) + a - 1  # the last acquire that returned before the wait began
            stop = np.maximum(j - MAX_HOLDER_SCAN, a - 1)
            hit = np.full(len(waits), -1)
            todo = np.flatnonzero(j > stop)
            while len(todo):  # back, past the waiter's own acquires and those released before the wait began
                jj = j[todo]
                ok = (apid[jj] != who[todo]) & (rel[jj] >= at[todo])
                hit[todo[ok]] = jj[ok]
                todo = todo[~ok]
                j[todo] -= 1
                todo = todo[j[todo] > stop[todo]]
            found = np.flatnonzero(hit >= 0)
            out.add(waits[found], self._rows(hit[found]), "/".join(self.prims[name].release))
            found_waits.append(waits[found])
            found_pids.append(apid[hit[found]])
        return np.concatenate(found_waits), np.concatenate(found_pids).astype(np.int64)


def infer_holders(
    con, sid: int, line, pid, need: dict[str, list[int]], prims: dict, lockfn: dict, names: list[str]
) -> Holders:
    """Inferred holders of the waits need[object] (lists of wait indexes), all at once (HolderFinder). `line`,
    `pid`: the waits' (arrays)."""
    out = Holders(len(line))
    if need:
        finder = HolderFinder(con, sid, lockfn, prims, names, list(need))
        finder.find(out, {k: np.array(v, np.int64) for k, v in need.items()}, line, pid)
    return out.done()


def insert_window(con, base: str, a: int, found: dict[str, pa.Array], tail: list[str]) -> None:
    """Inserts the waits a.. (as many as `found` has rows) of the base table, with the columns found for them and
    the tail of their evidence (the recorded stacks'), in their order. As an Arrow relation, not a registered table:
    DuckDB keeps a table registered and inserted from until the transaction ends (every window's strings)."""
    b = arrow(
        con,
        f"SELECT * EXCLUDE (seq, innermost) FROM {base} WHERE seq >= $a AND seq < $b ORDER BY seq",
        params={"a": a, "b": a + len(tail)},
    )
    cols = {}
    for k, typ in WAIT_TYPES.items():
        if k == "evidence":
            col = pc.binary_join_element_wise(b.column(k), pa.array(tail, pa.string()), "")
        else:
            col = found[k] if k in FOUND else b.column(k)
        cols[k] = col.cast(typ)
    insert_arrow(con, "wait_rows", pa.table(cols))


def insert_arrow(con, table: str, rows: pa.Table) -> None:
    """Appends rows (the table's columns, in its order) to a table."""
    con.from_arrow(rows).insert_into(table)
