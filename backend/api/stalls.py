"""Routes of the stall analysis: waits, chains of waits, one task's calls for a flame chart, print markers, and the
table of sleeping primitives.

Thin: validate, call backend.queries.stalls (which reads the tables derived at ingest), return JSON.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Query, Response
from pydantic import BaseModel, Field

from .. import locks, wait_kinds
from ..queries import paging
from ..queries import stalls as stall_queries
from .deps import AnalysisId, AnalysisRouter, Cache, Cursor, Int64, OptionalInt64, TimeFilter
from .requests import PageCursor, bad_cursor

router = AnalysisRouter(prefix="/api")


class Wait(BaseModel):
    source_id: int
    line: int = Field(description="the line that starts the wait (the switch-out, or the entry of the call)")
    kind: str = Field(description="sched: from sched_switch; call: inferred from a long call of a sleeping primitive")
    pid: int
    comm: str | None
    cpu: int | None
    start_ns: int
    end_ns: int = Field(description="when end_known is false: the trace's last timestamp (a lower bound)")
    duration_ns: int
    end_known: bool
    end_line: int | None = Field(description="the switch-in, wake-up or call exit that ends the wait")
    state: str | None = Field(
        description="prev_state of the switch-out (D, S, ...); null for a wait inferred from a call"
    )
    lock: str | None = Field(description="lock or reason, e.g. `xfs_ilock via down_write`")
    primitive: str | None = Field(description="the entry of /api/locks behind `lock` (null: innermost frame only)")
    stack: list[str] = Field(description="the task's open calls when the wait began, root first")
    inferred: bool
    evidence: str
    waker_pid: int | None
    waker_comm: str | None
    waker_stack: list[str] | None = Field(description="the waker's open calls at the wake-up, root first")
    wake_line: int | None
    wake_ns: int | None
    holder_pid: int | None = Field(description="inferred holder of the lock (see holder_evidence)")
    holder_comm: str | None
    holder_line: int | None = Field(description="line of the holder's acquire call")
    holder_ns: int | None = Field(description="when the holder's acquire call returned")
    holder_evidence: str | None
    wait_kind: str | None = Field(
        description="why it waited (/api/wait-kinds): lock, io, memory, task, idle (not a stall) or other"
    )
    wait_rule: str | None = Field(description="the rule of /api/wait-kinds that says so, e.g. `buffer under I/O`")
    wait_why: str | None = Field(description="that rule in a sentence")


class AlsoWaiting(BaseModel):
    pid: int
    comm: str | None
    lock: str | None
    source_id: int
    line: int
    start_ns: int
    end_ns: int
    duration_ns: int
    end_known: bool
    inferred: bool


class LinkedRequest(BaseModel):
    source_id: int
    line: int = Field(
        description="with source_id, identifies the request: /api/analyses/{id}/requests/{source_id}/{line}"
    )
    dev: str
    sector: int
    nsect: int | None
    rwbs: str | None
    pid: int | None
    comm: str | None
    q_ns: int | None
    i_ns: int | None
    d_ns: int | None
    c_ns: int | None


class ChainLink(BaseModel):
    source_id: int
    wait_line: int | None = Field(
        description="the link's wait (see /waits); null for the task or interrupt that ends the chain"
    )
    pid: int | None
    comm: str | None
    lock: str | None
    lock_key: str | None = Field(
        description="the lock `lock` names, as /waits and /wakers take it as lock_key: the"
        " /api/locks entry of its object, else of its primitive, else `lock`"
    )
    start_ns: int | None
    end_ns: int | None
    duration_ns: int | None
    end_known: bool | None
    relation: Literal["woken_by", "held_by", "io_completion"] | None = Field(
        description="how this link's wait depends on the next link; null on the last link"
    )
    inferred: bool
    evidence: str
    stack: list[str]
    line: int | None
    also_waiting: list[AlsoWaiting] = Field(description="other tasks waiting on the same lock for the same next link")
    request: LinkedRequest | None = Field(
        description="on an io_completion link: the block request whose completion fits"
    )
    wait_kind: str | None = Field(description="its wait's kind, as /waits gives it (null: no wait)")
    wait_rule: str | None = Field(description="... and the rule of /api/wait-kinds that says so")
    wait_why: str | None = Field(description="that rule in a sentence")


class Chain(BaseModel):
    id: int = Field(description="rank: 1 = the longest stall of a first task")
    duration_ns: int = Field(description="how long the first task stalled")
    links: list[ChainLink]


class Call(BaseModel):
    source_id: int
    line: int
    func: str | None
    depth: int
    entry_ns: int | None
    exit_ns: int | None
    duration_ns: int | None
    partial: bool
    comm: str | None
    cpu: int | None


class Mark(BaseModel):
    source_id: int
    line: int
    t_ns: int
    cpu: int | None
    pid: int | None
    comm: str | None
    text: str = Field(description="what the program wrote to trace_marker")


class Calls(BaseModel):
    pid: int
    calls: list[Call]
    truncated: bool = Field(description="more calls matched than the limit: next_cursor asks for them")
    next_cursor: str | None = Field(
        None, description="pass it as `cursor`, with the same parameters, for the next calls; null: no more"
    )


Starting = Annotated[
    bool,
    Query(
        description="with t0_ns: only the waits starting at or after t0_ns, not those begun before it and still"
        " waiting (by default a window keeps every wait overlapping it); how /compare counts a range's waits"
    ),
]


@router.get("/analyses/{analysis_id}/waits", response_model=list[Wait])
def list_waits(
    analysis_id: AnalysisId,
    con: Cursor,
    cache: Cache,
    order: Literal["duration", "start"] = "duration",
    limit: Annotated[int, Query(ge=1, le=10000)] = 100,
    pid: OptionalInt64 = None,
    lock: Annotated[str | None, Query(max_length=256, description="waits whose lock contains this")] = None,
    lock_key: Annotated[
        str | None,
        Query(
            max_length=256,
            description="waits on this lock, as flame graphs mark"
            " frames: the object or primitive of the wait's lock label is this lock of"
            " /api/locks, by any of its names (`semaphore` or `down`, not `down_read`;"
            " `xfs_ilock_map_shared` is `xfs_ilock`), else the label is exactly"
            " this",
        ),
    ] = None,
    t0_ns: TimeFilter = None,
    t1_ns: TimeFilter = None,
    idle: Annotated[
        bool,
        Query(
            description="idle waits too (wait_kind idle, /api/wait-kinds): a worker or kernel thread waiting for"
            " work, a poll, a futex, a nanosleep; left out by default (they are not stalls)"
        ),
    ] = False,
    starting: Starting = False,
):
    """Intervals in which a task was off CPU while blocked, with their lock, waker and inferred holder."""
    if pid is None and lock is None and lock_key is None and t0_ns is None and t1_ns is None:  # the first list
        return stall_queries.first_waits(con, cache, analysis_id, order, limit, idle)
    if pid is None and lock is None and lock_key is None:
        body = stall_queries.window_waits_json(con, cache, analysis_id, order, limit, t0_ns, t1_ns, idle, starting)
        return Response(body, media_type="application/json")
    return stall_queries.waits(
        con, analysis_id, order, limit, pid, lock, t0_ns, t1_ns, lock_key, idle, starting=starting
    )


class WaitPage(BaseModel):
    items: list[Wait]
    next_cursor: str | None = Field(
        description="pass it as `cursor`, with the same order and filters, for the next page; null: this is the last"
    )


@router.get(
    "/analyses/{analysis_id}/waits/page",
    response_model=WaitPage,
    responses={422: {"description": "a cursor this list did not make"}},
)
def page_waits(
    analysis_id: AnalysisId,
    con: Cursor,
    cache: Cache,
    order: Literal["duration", "start"] = "duration",
    limit: Annotated[int, Query(ge=1, le=stall_queries.PAGE_LIMIT)] = 500,
    cursor: PageCursor = None,
    pid: OptionalInt64 = None,
    lock: Annotated[str | None, Query(max_length=256, description="waits whose lock contains this")] = None,
    lock_key: Annotated[str | None, Query(max_length=256, description="waits on this lock, as /waits takes it")] = None,
    t0_ns: TimeFilter = None,
    t1_ns: TimeFilter = None,
    idle: Annotated[bool, Query(description="idle sleeps too, as /waits takes it")] = False,
    starting: Starting = False,
):
    """The list of /waits a page at a time, every wait exactly once over the pages: keyset paging on the order's
    key and the wait's (source_id, line), so pages neither repeat nor skip a row."""
    try:
        return stall_queries.waits_page(
            con, cache, analysis_id, order, limit, cursor, pid, lock, t0_ns, t1_ns, lock_key, idle, starting
        )
    except paging.BadCursor as e:
        raise bad_cursor(e) from None


class LockWaits(BaseModel):
    lock_key: str
    waits: int = Field(description="how many waits /waits?lock_key= lists for it (idle sleeps left out)")
    total_ns: int = Field(description="their total duration, ns")


@router.get("/analyses/{analysis_id}/waits/by-lock", response_model=list[LockWaits])
def waits_by_lock(
    analysis_id: AnalysisId,
    con: Cursor,
    lock_key: Annotated[
        list[Annotated[str, Field(max_length=256)]],
        Query(
            min_length=1,
            max_length=100,
            description="locks, as /waits?lock_key= takes them (repeat the parameter: at most 100)",
        ),
    ],
    t0_ns: TimeFilter = None,
    t1_ns: TimeFilter = None,
):
    """How many waits each lock has (overlapping t0_ns..t1_ns when given), and how long they took in all: what a
    link to /waits?lock_key= with the same window will list."""
    return stall_queries.lock_waits(con, analysis_id, lock_key, t0_ns, t1_ns)


@router.get("/analyses/{analysis_id}/chains", response_model=list[Chain])
def list_chains(
    analysis_id: AnalysisId,
    con: Cursor,
    cache: Cache,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    t0_ns: TimeFilter = None,
    t1_ns: TimeFilter = None,
):
    """Chains of waits (waiter → waker or holder → … → running task, interrupt or I/O completion),
    longest stall of the first task first. With t0_ns/t1_ns: the chains whose first link's wait overlaps the
    window (each keeps its rank as id)."""
    if t0_ns is None and t1_ns is None:
        return stall_queries.first_chains(con, cache, analysis_id, limit)
    return Response(
        stall_queries.chains_json(con, cache, analysis_id, limit, t0_ns, t1_ns), media_type="application/json"
    )


@router.get("/analyses/{analysis_id}/calls", response_model=Calls)
def list_calls(
    analysis_id: AnalysisId,
    con: Cursor,
    pid: Int64,
    t0_ns: TimeFilter = None,
    t1_ns: TimeFilter = None,
    max_depth: Annotated[int | None, Query(ge=-4096, le=4096)] = None,
    limit: Annotated[int, Query(ge=1, le=stall_queries.MAX_CALLS)] = 5000,
    source_id: OptionalInt64 = None,
    cursor: PageCursor = None,
):
    """One task's function_graph calls overlapping a window, by entry time, for a flame chart: `limit` at a time,
    the next ones by `cursor` (each call exactly once over the pages)."""
    try:
        return stall_queries.calls(con, analysis_id, pid, t0_ns, t1_ns, max_depth, limit, source_id, cursor)
    except paging.BadCursor as e:
        raise bad_cursor(e) from None


@router.get("/analyses/{analysis_id}/marks", response_model=list[Mark])
def list_marks(
    analysis_id: AnalysisId,
    con: Cursor,
    cache: Cache,
    t0_ns: TimeFilter = None,
    t1_ns: TimeFilter = None,
    limit: Annotated[int, Query(ge=1, le=10000)] = 1000,
):
    """`print` (trace_marker) events, for markers on the time axis."""
    return stall_queries.marks(con, cache, analysis_id, t0_ns, t1_ns, limit)


class LockPrimitive(BaseModel):
    name: str
    kind: str
    acquire: list[str]
    release: list[str]
    sleep: list[str]
    what: str


@router.get("/locks", response_model=list[LockPrimitive])
def lock_table():
    """The sleeping primitives recognised on stacks (what a wait was for, who releases it)."""
    return locks.as_table()


class WaitKindRule(BaseModel):
    name: str = Field(description="the rule, as a wait's wait_rule names it")
    kind: str = Field(description="lock | io | memory | task | idle | other")
    why: str
    frames: list[str] = Field(description="it holds when any frame of the wait's stack is one of these")
    innermost: list[str] = Field(
        description="... and the innermost frame that is not scheduler plumbing is one of these"
    )
    primitives: list[str] = Field(description="... and the wait's /api/locks entry is one of these")
    sleep: str = Field(description="any, or interruptible: a state other than D")


@router.get("/wait-kinds", response_model=list[WaitKindRule])
def wait_kind_table():
    """Why a task waited: the rules, in order (the first that holds names a wait; empty conditions always hold)."""
    return wait_kinds.as_table()
