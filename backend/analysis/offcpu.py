"""Off-CPU stacks (bcc offcputime/offwaketime, folded stacks) -> flame-graph trees, merged on the server."""
from __future__ import annotations

from . import flame, locks

_FILTERS = {"source": "o.source_id = $source", "pid": "o.pid = $pid", "comm": "o.comm = $comm"}
_SIDES = {"target": "o.frames", "waker": "o.waker_frames"}


def _stacks(con, analysis_id: str, side: str, unit: str = "us", by_task: bool = True,
            **filters) -> list[tuple[list[str], int]]:
    """Identical stacks summed, for the filters given (not None): µs off CPU, or the number of records
    (unit="stacks", which also counts records without a total, such as a stack quoted by hand).
    by_task puts the task (comm) as the root frame, as flamegraph.pl does."""
    given = {k: v for k, v in filters.items() if v is not None}
    where = "".join(f" AND {_FILTERS[k]}" for k in given)
    col = _SIDES[side]
    if by_task:
        col = f"list_prepend(coalesce(o.comm, '?'), {col})"
    value, complete = ("sum(o.value_us)::BIGINT", " AND o.value_us IS NOT NULL") if unit == "us" else ("count(*)", "")
    return con.execute(
        f"SELECT {col} AS frames, {value} FROM offcpu_stacks o JOIN sources s ON s.id = o.source_id"
        f" WHERE s.analysis_id = $aid{complete} AND {_SIDES[side]} IS NOT NULL{where} GROUP BY 1",
        {"aid": analysis_id, **given},
    ).fetchall()


def _mark_locks(node: dict) -> dict:
    """Marks frames that take or sleep on a known lock with the name waits are labelled by."""
    key = locks.key(node["name"])
    if key:
        node["lock"] = key
    for child in node.get("children", ()):
        _mark_locks(child)
    return node


def flamegraph(con, analysis_id: str, *, side: str = "target", invert: bool = False, filter: str | None = None,
               unit: str = "us", by_task: bool = True, source: int | None = None, pid: int | None = None,
               comm: str | None = None) -> dict:
    rows = _stacks(con, analysis_id, side, unit, by_task, source=source, pid=pid, comm=comm)
    tree = flame.build_tree(rows, invert=invert, filter=filter or None)
    matched = None
    if filter:
        matched = sum(v for frames, v in rows if any(filter in f for f in frames))
    total = sum(v for _, v in rows)
    return {"unit": unit, "total": total, "stacks": len(rows), "matched": matched, "root": _mark_locks(tree)}


def flamegraph_diff(con, a: tuple[str, int | None], b: tuple[str, int | None], *, side: str = "target",
                    invert: bool = False, filter: str | None = None, unit: str = "us", by_task: bool = True) -> dict:
    """Differential tree: value = b, delta = b - a; a and b are (analysis id, source id or None)."""
    rows_a = _stacks(con, a[0], side, unit, by_task, source=a[1])
    rows_b = _stacks(con, b[0], side, unit, by_task, source=b[1])
    tree = flame.diff_trees(rows_a, rows_b, invert=invert, filter=filter or None)
    return {"unit": unit, "total_a": sum(v for _, v in rows_a), "total_b": sum(v for _, v in rows_b),
            "root": _mark_locks(tree)}


def tasks(con, analysis_id: str, limit: int) -> list[dict]:
    cur = con.execute(
        "SELECT o.comm, o.pid, sum(o.value_us)::BIGINT AS value_us, count(*) AS stacks FROM offcpu_stacks o"
        " JOIN sources s ON s.id = o.source_id WHERE s.analysis_id = ? AND o.value_us IS NOT NULL"
        " GROUP BY ALL ORDER BY value_us DESC, o.comm LIMIT ?",
        [analysis_id, limit],
    )
    return [dict(zip(("comm", "pid", "value_us", "stacks"), r)) for r in cur.fetchall()]
