"""What the Stalls view reads: waits, chains of waits, one task's calls and print markers (derive/waits.py and
derive/chains.py say how the waits and chains are found). All times out are on the analysis timeline."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from .. import locks, wait_kinds
from . import paging, stored
from .catalogue import offsets, offsets_now
from .run import run
from .stall_windows import chain_texts, wait_columns, window_wait_texts

if TYPE_CHECKING:
    from ..cache import AnalysisCache

_WAIT_ORDER = {
    "duration": "w.duration_ns DESC, w.source_id, w.line",
    "start": "w.start_ns + s.clock_offset_ns, w.source_id, w.line",
}
_WAIT_FILTERS = {
    "pid": "w.pid = $pid",
    "lock": "contains(w.lock, $lock)",
    "t0": "w.end_ns + s.clock_offset_ns >= $t0",
    "t1": "w.start_ns + s.clock_offset_ns <= $t1",
    "t0_start": "w.start_ns + s.clock_offset_ns >= $t0",  # starting: waits begun before t0 left out
    # on a lock as flame graphs mark frames: the label's object or primitive is that lock of the table
    # (any of its names: $lock_names, locks.label_names), or the label is the key exactly
    "lock_key": "(w.lock = $lock_key OR list_contains($lock_names, split_part(w.lock, ' via ', 1))"
    " OR list_contains($lock_names, split_part(w.lock, ' via ', 2)))",
}


def wait_range(t0=None, t1=None, starting: bool = False) -> tuple[str, dict]:
    """The " AND …" conditions (on `waits w JOIN sources s`) of `waits`' t0/t1 filters and their parameters: the
    waits overlapping [t0, t1], or with `starting` those starting in it (the Stalls list with w_start, /compare)."""
    where, params = "", {}
    if t0 is not None:
        where += f" AND {_WAIT_FILTERS['t0_start' if starting else 't0']}"
        params["t0"] = t0
    if t1 is not None:
        where += f" AND {_WAIT_FILTERS['t1']}"
        params["t1"] = t1
    return where, params


def waits(
    con,
    analysis_id: str,
    order: str = "duration",
    limit: int = 100,
    pid=None,
    lock=None,
    t0=None,
    t1=None,
    lock_key=None,
    idle: bool = False,
    after: tuple[str, dict] = ("TRUE", {}),
    starting: bool = False,
) -> list[dict]:
    """Waits by duration or start; lock: the label contains it (free text); lock_key: the label's object or primitive
    is that lock of locks.py, by any of its names (`xfs_buf_lock via down` is on xfs_buf_lock, semaphore and down,
    not on down_read; xfs_ilock_map_shared is xfs_ilock), else the label is it exactly; idle: idle sleeps too (see
    `stall_waits`); t0/t1: the waits overlapping [t0, t1], or with `starting` those starting in it (as /compare
    counts them); after: a keyset condition on the rows (paging) and its parameters."""
    given = {
        k: v for k, v in {"pid": pid, "lock": lock, "t0": t0, "t1": t1, "lock_key": lock_key}.items() if v is not None
    }
    where = "".join(f" AND {_WAIT_FILTERS['t0_start' if k == 't0' and starting else k]}" for k in given)
    where += f" AND {after[0]}"
    if lock_key is not None:
        given["lock_names"] = locks.label_names(lock_key)
    given.update(after[1])
    cols = wait_columns("s.clock_offset_ns")  # times on the analysis timeline: the source's own + its clock offset
    rows = f" FROM {'waits' if idle else 'stall_waits'} w JOIN sources s ON s.id = w.source_id"
    rows += f" WHERE s.analysis_id = $aid{where}"
    # the first `limit` waits found by their ids, then read whole: the view's stacks (a split of each stack's text)
    # are made for them only (read whole, all the waits': 0.052 CPU-s for 53 k waits, then 0.020)
    found = run(
        con,
        f"SELECT {cols}{rows} AND (w.source_id, w.line) IN"
        f" (SELECT (w.source_id, w.line){rows} ORDER BY {_WAIT_ORDER[order]} LIMIT $limit)"
        f" ORDER BY {_WAIT_ORDER[order]} LIMIT $limit",
        {"aid": analysis_id, "limit": limit, **given},
        shape="dicts",
    )
    for w in found:  # the rule in a sentence
        w["wait_why"] = wait_kinds.why(w["wait_rule"])
    return found


def window_waits(
    con,
    cache: AnalysisCache,
    analysis_id: str,
    order: str = "duration",
    limit: int = 100,
    pid=None,
    lock=None,
    t0=None,
    t1=None,
    lock_key=None,
    idle: bool = False,
    starting: bool = False,
) -> list[dict]:
    """`waits`' answer; a window without other filters from the analysis' ranked waits (stall_windows.py)."""
    if pid is not None or lock is not None or lock_key is not None:
        return waits(con, analysis_id, order, limit, pid, lock, t0, t1, lock_key, idle, starting=starting)
    return [json.loads(t) for t in window_wait_texts(con, cache, analysis_id, order, limit, t0, t1, idle, starting)]


def window_waits_json(
    con, cache: AnalysisCache, analysis_id: str, order: str, limit: int, t0, t1, idle: bool, starting: bool
) -> bytes:
    """A window's waits without other filters (window_waits) as JSON text (the route sends it without validating)."""
    return b"[" + b",".join(window_wait_texts(con, cache, analysis_id, order, limit, t0, t1, idle, starting)) + b"]"


PAGE_LIMIT = 5000  # waits of a page at most
_WAIT_KEYS = {
    "duration": [paging.SortKey("w.duration_ns", desc=True, nullable=False)],
    "start": [paging.SortKey("w.start_ns + s.clock_offset_ns", nullable=False)],
}
_WAIT_ID = [paging.SortKey("w.source_id", nullable=False), paging.SortKey("w.line", nullable=False)]


def waits_page(
    con,
    cache: AnalysisCache,
    analysis_id: str,
    order: str = "duration",
    limit: int = 100,
    cursor: str | None = None,
    pid=None,
    lock=None,
    t0=None,
    t1=None,
    lock_key=None,
    idle: bool = False,
    starting: bool = False,
) -> dict:
    """A page of `waits` (same filters, same order), each wait once over all the pages: {items, next_cursor};
    `cursor` (a page's next_cursor) starts after its last row. BadCursor for a cursor this list, analysis, order
    and filters did not make."""
    filters = {"order": order, "pid": pid, "lock": lock, "t0": t0, "t1": t1, "lock_key": lock_key, "idle": idle}
    if starting and t0 is not None:  # another list than the overlapping one: its cursors are its own
        filters["starting"] = True
    if order == "start":  # a key on the analysis timeline: moved by a source's clock offset
        filters["clock"] = offsets(con, cache, analysis_id)
    keys = [*_WAIT_KEYS[order], *_WAIT_ID]
    start = paging.decode(cursor, "waits", analysis_id, filters, len(keys)) if cursor is not None else None
    time_key = "duration_ns" if order == "duration" else "start_ns"
    key_of = lambda w: [w[time_key], w["source_id"], w["line"]]  # noqa: E731
    unfiltered = pid is None and lock is None and lock_key is None and t0 is None and t1 is None
    if start is None and unfiltered:  # the Stalls tab's first page: stored (stored.py)
        return stored.get(
            con,
            cache,
            analysis_id,
            "waits-page",
            (order, limit, idle),
            lambda: paging.page(
                waits(con, analysis_id, order, limit + 1, idle=idle), limit, key_of, "waits", analysis_id, filters
            ),
            timed=True,
        )
    if start is None:
        rows = window_waits(con, cache, analysis_id, order, limit + 1, pid, lock, t0, t1, lock_key, idle, starting)
    else:
        after = paging.after(keys, start)
        rows = waits(
            con, analysis_id, order, limit + 1, pid, lock, t0, t1, lock_key, idle, after=after, starting=starting
        )
    return paging.page(rows, limit, key_of, "waits", analysis_id, filters)


def first_waits(
    con, cache: AnalysisCache, analysis_id: str, order: str = "duration", limit: int = 100, idle: bool = False
) -> list[dict]:
    """The unfiltered list of waits (/waits' first), kept per analysis and clock offsets (stored.py)."""
    return stored.get(
        con,
        cache,
        analysis_id,
        "waits",
        (order, limit, idle),
        lambda: waits(con, analysis_id, order, limit, idle=idle),
        timed=True,
    )


def first_chains(con, cache: AnalysisCache, analysis_id: str, limit: int = 50) -> list[dict]:
    """The chains over the whole analysis (the Stalls tab's first), kept as first_waits is."""
    return stored.get(
        con, cache, analysis_id, "chains", (limit,), lambda: chains(con, cache, analysis_id, limit), timed=True
    )


def lock_waits(con, analysis_id: str, lock_keys: list[str], t0=None, t1=None) -> list[dict]:
    """Per lock key, what /waits?lock_key= lists (its filters, stall waits only; in the window t0..t1 when given):
    how many waits and their total duration, so that a link to them can say so before it is followed (the off-CPU
    view's sleeping primitives)."""
    window = {k: v for k, v in {"t0": t0, "t1": t1}.items() if v is not None}
    where = "".join(f" AND {_WAIT_FILTERS[k]}" for k in ("lock_key", *window))
    out = []
    for key in dict.fromkeys(lock_keys):
        n, total = run(
            con,
            "SELECT count(*), coalesce(sum(w.duration_ns), 0)::BIGINT FROM stall_waits w JOIN sources s"
            f" ON s.id = w.source_id WHERE s.analysis_id = $aid{where}",
            {"aid": analysis_id, "lock_key": key, "lock_names": locks.label_names(key), **window},
        )[0]
        out.append({"lock_key": key, "waits": n, "total_ns": total})
    return out


def chains(con, cache: AnalysisCache, analysis_id: str, limit: int = 50, t0=None, t1=None) -> list[dict]:
    """The first `limit` chains by rank; with t0/t1 (the analysis timeline), those whose first link's wait overlaps
    [t0, t1]. A chain keeps its rank (id) in a window."""
    return [json.loads(t) for t in chain_texts(con, cache, analysis_id, limit, t0, t1)]


def chains_json(con, cache: AnalysisCache, analysis_id: str, limit: int = 50, t0=None, t1=None) -> bytes:
    """chains()'s answer as JSON text, made of the kept texts (the route sends it without validating it)."""
    return b"[" + b",".join(chain_texts(con, cache, analysis_id, limit, t0, t1)) + b"]"


MAX_CALLS = 20_000


_CALL_KEYS = [
    paging.SortKey("c.entry_ns + s.clock_offset_ns", nulls_last=False),
    paging.SortKey("c.line", nullable=False),
    paging.SortKey("c.source_id", nullable=False),
]


def calls(
    con, analysis_id: str, pid: int, t0=None, t1=None, max_depth=None, limit: int = 5000, source_id=None, cursor=None
) -> dict:
    """One task's calls overlapping [t0, t1], for a flame chart (by entry time); at most `limit` (capped) a page:
    `next_cursor` (null at the end) asks for the next, after the last call of this one (BadCursor for a cursor
    this list, analysis, task and filters did not make)."""
    limit = min(limit, MAX_CALLS)
    filters = {"pid": pid, "t0": t0, "t1": t1, "depth": max_depth, "source": source_id}
    filters["clock"] = offsets_now(con, analysis_id)  # the key (entry) is on the analysis timeline: moved by them
    start = paging.decode(cursor, "calls", analysis_id, filters, len(_CALL_KEYS)) if cursor is not None else None
    given = {k: v for k, v in {"t0": t0, "t1": t1, "depth": max_depth, "source": source_id}.items() if v is not None}
    flt = {
        "t0": "(c.exit_ns IS NULL OR c.exit_ns + s.clock_offset_ns >= $t0)",
        "t1": "c.entry_ns + s.clock_offset_ns <= $t1",
        "depth": "c.depth <= $depth",
        "source": "c.source_id = $source",
    }
    where = "".join(f" AND {flt[k]}" for k in given)
    if start is not None:
        cond, key_params = paging.after(_CALL_KEYS, start)
        where += f" AND {cond}"
        given.update(key_params)
    rows = run(
        con,  # times on the analysis timeline
        "SELECT c.source_id, c.line, c.func, c.depth, c.entry_ns + s.clock_offset_ns AS entry_ns,"
        " c.exit_ns + s.clock_offset_ns AS exit_ns, c.duration_ns, c.partial, c.comm, c.cpu"
        " FROM fg_calls c JOIN sources s ON s.id = c.source_id"
        f" WHERE s.analysis_id = $aid AND c.pid = $pid{where}"
        f" ORDER BY {paging.order_by(_CALL_KEYS)} LIMIT $lim",
        {"aid": analysis_id, "pid": pid, "lim": limit + 1, **given},
        shape="dicts",
    )
    out = paging.page(rows, limit, lambda c: [c["entry_ns"], c["line"], c["source_id"]], "calls", analysis_id, filters)
    return {"pid": pid, "calls": out["items"], "truncated": len(rows) > limit, "next_cursor": out["next_cursor"]}


def marks(con, cache: AnalysisCache, analysis_id: str, t0: int | None, t1: int | None, limit: int) -> list[dict]:
    """The `print` events in [t0, t1] (aligned), in time order; the whole analysis' (the Stalls tab's first) kept
    per clock offsets (stored.py)."""
    if t0 is None and t1 is None:
        return stored.get(
            con, cache, analysis_id, "marks", (limit,), lambda: _marks(con, analysis_id, None, None, limit), timed=True
        )
    return _marks(con, analysis_id, t0, t1, limit)


def _marks(con, analysis_id: str, t0: int | None, t1: int | None, limit: int) -> list[dict]:
    rows = run(
        con,
        "SELECT e.source_id, e.line, e.t_ns + s.clock_offset_ns AS t, e.cpu, e.pid, e.comm, e.text FROM trace_events e"
        " JOIN sources s ON s.id = e.source_id WHERE s.analysis_id = $aid AND e.event = 'print'"
        " AND ($t0 IS NULL OR t >= $t0) AND ($t1 IS NULL OR t <= $t1) ORDER BY t, e.line LIMIT $limit",
        {"aid": analysis_id, "t0": t0, "t1": t1, "limit": limit},
    )
    return [dict(zip(("source_id", "line", "t_ns", "cpu", "pid", "comm", "text"), r)) for r in rows]
