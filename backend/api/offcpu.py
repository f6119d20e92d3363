"""Routes of off-CPU stacks: flame graphs (and their difference), tasks by off-CPU time, wake-up pairs."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Query, Response
from pydantic import BaseModel, Field

from ..queries import offcpu as offcpu_queries
from .deps import AnalysisId, AnalysisRouter, Cache, Cursor, require_analysis

router = AnalysisRouter(prefix="/api")


class FlameNode(BaseModel):
    name: str
    value: int = Field(description="in the graph's unit (µs off CPU, or stacks), this frame and all it called")
    delta: int | None = Field(None, description="differential graphs: after − before, in the graph's unit")
    lock: str | None = Field(
        None,
        description="this frame takes or sleeps on a known lock: the function name"
        " waits are labelled with (e.g. down for __down); /waits?lock= finds them",
    )
    children: list["FlameNode"] = []


class LockTotal(BaseModel):
    lock: str = Field(description="a lock of /api/locks (as FlameNode.lock names it)")
    value: int = Field(description="in the graph's unit, the stacks with a frame on this lock: each counted once")


class FlameGraph(BaseModel):
    unit: str = Field(description="us: µs off CPU; stacks: number of stack records (also those without a total)")
    total: int
    stacks: int = Field(description="distinct stacks merged")
    matched: int | None = Field(description="with filter: the part of total in stacks with a matching frame")
    locks: list[LockTotal] = Field(
        [],
        description="per lock, the stacks (kept by filter) on it, each counted once per lock whatever frames sit"
        " between its frames on that lock; by value descending",
    )
    root: FlameNode


class FlameDiff(BaseModel):
    unit: str
    total_a: int
    total_b: int
    root: FlameNode


class OffcpuTask(BaseModel):
    comm: str | None
    pid: int | None
    value_us: int
    stacks: int


class RowRef(BaseModel):
    source_id: int
    line: int = Field(description="first line of the record in its source file")


class WakerPair(BaseModel):
    comm: str | None = Field(description="the blocked task (bcc's target)")
    pid: int | None = Field(description="its pid as bcc prints it (a thread id); null when the dump has none")
    frames: list[str] = Field(
        description="the blocked task's stack, root first; empty for wakeuptime, which records only the waker's stack"
    )
    lock: str | None = Field(
        description="lock or reason of the target stack (as waits are labelled, e.g."
        " `xfs_buf_lock via down`); null when no known lock is on it"
    )
    waker_comm: str | None = Field(description="the task (or interrupt context, e.g. swapper/0) that woke it")
    waker_pid: int | None
    waker_frames: list[str] = Field(description="the waker's stack at the wake-up, root first")
    value_us: int = Field(description="µs blocked until the wake-up, summed over the records of this pair")
    records: int = Field(
        description="offwaketime records merged into this pair (a record without a total counts"
        " here but adds nothing to value_us)"
    )
    rows: list[RowRef] = Field(description="where the records are: the first 10 (source, line), in file order")


class WakerPairs(BaseModel):
    matched_by: Literal["pid", "comm", "all"] = Field(
        description="the task filter used: pid when records have that pid, else comm; all without a filter"
    )
    total_us: int = Field(description="µs over every matching pair (not only those listed): the base of shares")
    records: int = Field(description="records over every matching pair")
    pairs: int = Field(description="matching pairs, of which the first `limit` are listed")
    items: list[WakerPair] = Field(description="largest value_us first")


Side = Literal["target", "waker"]
Unit = Annotated[Literal["us", "stacks"], Query(description="us: µs off CPU; stacks: count stack records")]
ByTask = Annotated[bool, Query(description="the task (comm) as the root frame")]


@router.get("/analyses/{analysis_id}/flamegraph", response_model=FlameGraph)
def flamegraph(
    analysis_id: AnalysisId,
    con: Cursor,
    cache: Cache,
    source: int | None = None,
    pid: int | None = None,
    comm: Annotated[str | None, Query(max_length=256)] = None,
    filter: Annotated[str | None, Query(max_length=256, description="keep stacks with a frame containing this")] = None,
    invert: bool = False,
    side: Side = "target",
    unit: Unit = "us",
    by_task: ByTask = True,
):
    """Off-CPU time as a flame-graph tree merged on the server, pruned to what 1920 px can draw. Nodes without
    children have no `children`; `lock` is there only on marked frames."""
    body = offcpu_queries.flamegraph_json(
        con,
        cache,
        analysis_id,
        side=side,
        invert=invert,
        filter=filter,
        unit=unit,
        by_task=by_task,
        source=source,
        pid=pid,
        comm=comm,
    )
    return Response(body, media_type="application/json")


@router.get("/analyses/{analysis_id}/flamegraph/diff", response_model=FlameDiff)
def flamegraph_diff(
    analysis_id: AnalysisId,
    con: Cursor,
    cache: Cache,
    a: Annotated[int | None, Query(description="source of the 'before' side (default: all of this analysis)")] = None,
    b: Annotated[int | None, Query(description="source of the 'after' side")] = None,
    b_analysis: Annotated[str | None, Query(max_length=64, description="take 'after' from another analysis")] = None,
    filter: Annotated[str | None, Query(max_length=256)] = None,
    invert: bool = False,
    side: Side = "target",
    unit: Unit = "us",
    by_task: ByTask = True,
):
    """Differential flame graph: value = after, delta = after − before."""
    other = b_analysis or analysis_id
    if b_analysis:
        require_analysis(con, cache, b_analysis)
    return offcpu_queries.flamegraph_diff(
        con, (analysis_id, a), (other, b), side=side, invert=invert, filter=filter, unit=unit, by_task=by_task
    )


@router.get("/analyses/{analysis_id}/offcpu-tasks", response_model=list[OffcpuTask])
def offcpu_tasks(analysis_id: AnalysisId, con: Cursor, cache: Cache, limit: Annotated[int, Query(ge=1, le=1000)] = 100):
    """Tasks by off-CPU time, for the flame graph's task filter."""
    return offcpu_queries.tasks(con, cache, analysis_id, limit)


@router.get("/analyses/{analysis_id}/wakers", response_model=WakerPairs)
def wakers(
    analysis_id: AnalysisId,
    con: Cursor,
    pid: Annotated[
        int | None,
        Query(
            ge=0,
            le=(1 << 31) - 1,
            description="the blocked task's pid (with comm: pid when records have it, else comm)",
        ),
    ] = None,
    comm: Annotated[str | None, Query(min_length=1, max_length=256, description="the blocked task's name")] = None,
    lock: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=256,
            description="pairs whose lock label (of the target stack) contains this, as /waits?lock=",
        ),
    ] = None,
    lock_key: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=256,
            description="pairs on this lock, as"
            " /waits?lock_key=: the label's object or primitive is this lock of"
            " /api/locks, by any of its names (`semaphore` or `down`, not `down_read`;"
            " `xfs_ilock_map_shared` is `xfs_ilock`), else the label is exactly"
            " this",
        ),
    ] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 20,
):
    """Wake-up pairs from offwaketime: who woke the blocked task, with both stacks, µs blocked until the wake-up."""
    return offcpu_queries.wakers(con, analysis_id, pid=pid, comm=comm, lock=lock, lock_key=lock_key, limit=limit)
