"""Off-CPU stacks (bcc offcputime/offwaketime, folded stacks) -> flame-graph trees, merged on the server."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pyarrow as pa
import pydantic_core

from .. import locks
from . import flame, stored
from .run import run

if TYPE_CHECKING:
    from ..cache import AnalysisCache

_FILTERS = {"source": "o.source_id = $source", "pid": "o.pid = $pid", "comm": "o.comm = $comm"}
_SIDES = {"target": "o.frames", "waker": "o.waker_frames"}


def _stacks(
    con, analysis_id: str, side: str, unit: str = "us", by_task: bool = True, **filters
) -> list[tuple[list[str], int]]:
    """Identical stacks summed, for the filters given (not None): µs off CPU, or the number of records
    (unit="stacks", which also counts records without a total, such as a stack quoted by hand).
    by_task puts the task (comm) as the root frame, as flamegraph.pl does."""
    sql, params = _records_sql(analysis_id, side, unit, by_task, filters)
    return run(con, f"SELECT paths AS frames, sum(v)::BIGINT FROM ({sql}) GROUP BY 1", params)


def _records_sql(analysis_id: str, side: str, unit: str, by_task: bool, filters: dict) -> tuple[str, dict]:
    """The query of one row per record (paths: root first, the task first with by_task; v: µs, or 1 per record)
    for the filters given (not None), and its parameters."""
    given = {k: v for k, v in filters.items() if v is not None}
    where = "".join(f" AND {_FILTERS[k]}" for k in given)
    col = _SIDES[side]
    if by_task:
        col = f"list_prepend(coalesce(o.comm, '?'), {col})"
    value, complete = ("o.value_us", " AND o.value_us IS NOT NULL") if unit == "us" else ("1", "")
    return (
        f"SELECT {col} AS paths, {value}::BIGINT AS v FROM offcpu_stacks o JOIN sources s ON s.id = o.source_id"
        f" WHERE s.analysis_id = $aid{complete} AND {_SIDES[side]} IS NOT NULL{where}",
        {"aid": analysis_id, **given},
    )


def _mark_locks(node: dict, keys: dict | None = None) -> dict:
    """Marks frames that take or sleep on a known lock with that lock (locks.identity: xfs_ilock_map_shared is
    xfs_ilock), the key /waits?lock_key= and /wakers?lock_key= take."""
    keys = {} if keys is None else keys
    name = node["name"]
    key = keys[name] if name in keys else keys.setdefault(name, locks.identity(name))
    if key:
        node["lock"] = key
    for child in node.get("children", ()):
        _mark_locks(child, keys)
    return node


def _records(con, analysis_id: str, side: str, unit: str, by_task: bool, **filters) -> pa.Table:
    """The records of _records_sql, identical paths merged (their values summed) by DuckDB: the flame graph, its
    totals and its locks are the same (each counts a path's records by their values; children are ordered by value
    and name, not by the records' order), from ~5x fewer rows (20 k distinct stacks of 100 k records: the graph's
    build took ~280 MiB more at its peak from the records as they were)."""
    sql, params = _records_sql(analysis_id, side, unit, by_task, filters)
    return run(con, f"SELECT paths, sum(v)::BIGINT AS v FROM ({sql}) GROUP BY paths", params, shape="arrow")


def flamegraph(
    con,
    analysis_id: str,
    *,
    side: str = "target",
    invert: bool = False,
    filter: str | None = None,
    unit: str = "us",
    by_task: bool = True,
    source: int | None = None,
    pid: int | None = None,
    comm: str | None = None,
) -> dict:
    """The flame graph of the analysis' off-CPU records (flame.build_tree over them, built from columns)."""
    rec = _records(con, analysis_id, side, unit, by_task, source=source, pid=pid, comm=comm)
    tree, total, stacks, matched = flame.build_tree_columns(
        rec.column("paths"), rec.column("v").to_numpy(), invert=invert, filter=filter or None
    )
    return {
        "unit": unit,
        "total": total,
        "stacks": stacks,
        "matched": matched if filter else None,
        "locks": flame.lock_totals_columns(
            rec.column("paths"), rec.column("v").to_numpy(), locks.identity, filter=filter or None
        ),
        "root": _mark_locks(tree),
    }


def flamegraph_json(
    con,
    cache: AnalysisCache,
    analysis_id: str,
    *,
    side: str = "target",
    invert: bool = False,
    filter: str | None = None,
    unit: str = "us",
    by_task: bool = True,
    source: int | None = None,
    pid: int | None = None,
    comm: str | None = None,
) -> bytes:
    """The flame graph as the route sends it (JSON, leaves without `children`): an analysis' records never change,
    so it is built once per set of parameters and kept (stored.py: it holds no time)."""
    args = {
        "side": side,
        "invert": invert,
        "filter": filter,
        "unit": unit,
        "by_task": by_task,
        "source": source,
        "pid": pid,
        "comm": comm,
    }
    return stored.get(
        con,
        cache,
        analysis_id,
        "flamegraph",
        tuple(args.values()),
        lambda: pydantic_core.to_json(_leaves_bare(flamegraph(con, analysis_id, **args))),
        timed=False,
        raw=True,
    )


def _leaves_bare(graph: dict) -> dict:
    """Drops the empty `children` of the leaves: 7 % of the body (0.87 MB instead of 0.94 MB for 16,660 nodes)."""
    stack = [graph["root"]]
    while stack:
        node = stack.pop()
        if node.get("children"):
            stack.extend(node["children"])
        else:
            node.pop("children", None)
    return graph


def flamegraph_rows(
    con,
    analysis_id: str,
    *,
    side: str = "target",
    invert: bool = False,
    filter: str | None = None,
    unit: str = "us",
    by_task: bool = True,
    source: int | None = None,
    pid: int | None = None,
    comm: str | None = None,
) -> dict:
    """The same graph from identical stacks summed in SQL and flame.build_tree (the reference tests compare
    flamegraph with; ~25x slower on 100 k records)."""
    rows = _stacks(con, analysis_id, side, unit, by_task, source=source, pid=pid, comm=comm)
    tree = flame.build_tree(rows, invert=invert, filter=filter or None)
    matched = None
    if filter:
        matched = sum(v for frames, v in rows if any(filter in f for f in frames))
    total = sum(v for _, v in rows)
    return {
        "unit": unit,
        "total": total,
        "stacks": len(rows),
        "matched": matched,
        "locks": flame.lock_totals(rows, locks.identity, filter=filter or None),
        "root": _mark_locks(tree),
    }


def flamegraph_diff(
    con,
    a: tuple[str, int | None],
    b: tuple[str, int | None],
    *,
    side: str = "target",
    invert: bool = False,
    filter: str | None = None,
    unit: str = "us",
    by_task: bool = True,
) -> dict:
    """Differential tree: value = b, delta = b - a; a and b are (analysis id, source id or None)."""
    rows_a = _stacks(con, a[0], side, unit, by_task, source=a[1])
    rows_b = _stacks(con, b[0], side, unit, by_task, source=b[1])
    tree = flame.diff_trees(rows_a, rows_b, invert=invert, filter=filter or None)
    return {
        "unit": unit,
        "total_a": sum(v for _, v in rows_a),
        "total_b": sum(v for _, v in rows_b),
        "root": _mark_locks(tree),
    }


def tasks(con, cache: AnalysisCache, analysis_id: str, limit: int) -> list[dict]:
    """The tasks by off-CPU time (the flame graph's task filter, the Off-CPU tab's first: stored.py)."""
    return stored.get(
        con, cache, analysis_id, "offcpu-tasks", (limit,), lambda: _tasks(con, analysis_id, limit), timed=False
    )


def _tasks(con, analysis_id: str, limit: int) -> list[dict]:
    rows = run(
        con,
        "SELECT o.comm, o.pid, sum(o.value_us)::BIGINT AS value_us, count(*) AS stacks FROM offcpu_stacks o"
        " JOIN sources s ON s.id = o.source_id WHERE s.analysis_id = ? AND o.value_us IS NOT NULL"
        " GROUP BY ALL ORDER BY value_us DESC, o.comm LIMIT ?",
        [analysis_id, limit],
    )
    return [dict(zip(("comm", "pid", "value_us", "stacks"), r)) for r in rows]


def waker_stacks_by_source(con, analysis_id: str) -> dict[int, int]:
    """How many records of each source have a waker stack (bcc offwaketime, wakeuptime)."""
    return dict(
        run(
            con,
            "SELECT o.source_id, count(*) FROM offcpu_stacks o JOIN sources s ON s.id = o.source_id"
            " WHERE s.analysis_id = $aid AND len(o.waker_frames) > 0 GROUP BY o.source_id",
            {"aid": analysis_id},
        )
    )


WAKER_ROWS = 10  # row references kept per pair


_LOCK_FUNCTIONS = sorted({n for p in locks.PRIMITIVES for n in p.acquire + p.sleep})
# A stack with one of these frames (compiler suffix, offset or annotation allowed after the name): only such a
# stack can be on a lock. A superset of what locks.lookup finds, checked exactly in Python afterwards.
_ANY_LOCK_FRAME = "(^|;)(" + "|".join(re.escape(n) for n in _LOCK_FUNCTIONS) + r")([._+;]|$)"

_PAIRS = """
    WITH pairs AS (
        SELECT o.comm, o.pid, o.frames, o.waker_comm, o.waker_pid, o.waker_frames,
               coalesce(sum(o.value_us), 0)::BIGINT AS value_us, count(*) AS records,
               list(struct_pack(source_id := o.source_id, line := o.line) ORDER BY o.source_id, o.line)[1:$nrows] AS rows
        FROM offcpu_stacks o JOIN sources s ON s.id = o.source_id
        WHERE s.analysis_id = $aid AND len(o.waker_frames) > 0 {where}
        GROUP BY o.comm, o.pid, o.frames, o.waker_comm, o.waker_pid, o.waker_frames)
    SELECT *, sum(value_us) OVER () AS total_us, sum(records) OVER () AS total_records, count(*) OVER () AS pairs
    FROM pairs ORDER BY value_us DESC, records DESC, rows[1].source_id, rows[1].line {limit}"""
_PAIR_COLUMNS = ("comm", "pid", "frames", "waker_comm", "waker_pid", "waker_frames", "value_us", "records", "rows")


def wakers(
    con,
    analysis_id: str,
    *,
    pid: int | None = None,
    comm: str | None = None,
    lock: str | None = None,
    lock_key: str | None = None,
    limit: int = 20,
) -> dict:
    """Wake-up pairs from offwaketime (and wakeuptime) records, the rows that have a waker stack: summed by
    (target comm/pid, target stack, waker comm/pid, waker stack), µs blocked until the wake-up descending.

    pid and comm pick the blocked task. Given both, pid wins when any record of the analysis has that pid,
    else comm is used (old bcc prints no pid; matched_by says which). Each pair has the lock label of its target
    stack (locks.label) and where its records are: the first WAKER_ROWS (source_id, line), in file order. lock and
    lock_key keep pairs by that label as /waits does: lock, the label contains it; lock_key, the label is on that
    lock (locks.on_lock: its object or primitive is it, by any of the lock's names, else the label is it).
    A record without a total (a stack quoted by hand) counts in records but adds nothing to value_us.

    Without a lock filter, SQL ranks and cuts to `limit` (totals by a window over every pair); with one, SQL keeps
    the stacks that have a lock frame at all (only they have a label) and Python labels and matches them."""
    matched_by, task = "all", {}
    if pid is not None:
        has_pid = run(
            con,
            "SELECT count(*) FROM offcpu_stacks o JOIN sources s ON s.id = o.source_id"
            " WHERE s.analysis_id = $aid AND len(o.waker_frames) > 0 AND o.pid = $pid",
            {"aid": analysis_id, "pid": pid},
        )[0][0]
        if has_pid or comm is None:
            matched_by, task = "pid", {"pid": pid}
    if not task and comm is not None:
        matched_by, task = "comm", {"comm": comm}
    where = "".join(f" AND {_FILTERS[k]}" for k in task)
    params = {"aid": analysis_id, "nrows": WAKER_ROWS, **task}
    filtered = lock is not None or lock_key is not None
    if not filtered:
        sql, params["limit"] = _PAIRS.format(where=where, limit="LIMIT $limit"), limit
    else:
        sql = _PAIRS.format(where=where + " AND regexp_matches(array_to_string(o.frames, ';'), $anylock)", limit="")
        params["anylock"] = _ANY_LOCK_FRAME
    rows = run(con, sql, params)
    labels: dict[tuple[str, ...], str | None] = {}
    items = []
    for r in rows:
        item = dict(zip(_PAIR_COLUMNS, r))
        key = tuple(item["frames"])
        if key not in labels:
            labels[key] = locks.label(key)
        item["lock"] = labels[key]
        if (lock is None or (item["lock"] is not None and lock in item["lock"])) and (
            lock_key is None or locks.on_lock(item["lock"], lock_key)
        ):
            items.append(item)
    if not filtered:
        total_us, records, pairs = (rows[0][-3], rows[0][-2], rows[0][-1]) if rows else (0, 0, 0)
    else:
        total_us, records, pairs = sum(i["value_us"] for i in items), sum(i["records"] for i in items), len(items)
    return {
        "matched_by": matched_by,
        "total_us": int(total_us),
        "records": int(records),
        "pairs": int(pairs),
        "items": items[:limit],
    }
