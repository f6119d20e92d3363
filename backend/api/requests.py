"""Routes of block requests: the list, one request with its trace lines, the dispatch summary, latency over time."""

from __future__ import annotations

from typing import Annotated, Literal

import pydantic_core
from fastapi import HTTPException, Query, Response
from pydantic import BaseModel, Field

from ..queries import paging
from ..queries import requests as request_queries
from .deps import AnalysisId, AnalysisRouter, Cache, Cursor, OptionalInt64, PathInt64, TimeFilter

router = AnalysisRouter(prefix="/api")


class BlockRequest(BaseModel):
    source_id: int
    line: int = Field(description="file line of the request's first event; (source_id, line) identifies it")
    dev: str
    sector: int
    nsect: int | None = Field(description="size in 512-byte sectors")
    rwbs: str | None
    pid: int | None
    comm: str | None
    q_ns: int | None
    g_ns: int | None
    i_ns: int | None
    d_ns: int | None
    c_ns: int | None
    q2g_ns: int | None
    g2i_ns: int | None
    i2d_ns: int | None
    d2c_ns: int | None
    q2c_ns: int | None
    error: int | None = Field(description="errno of the completion, 0 = success")
    merged_bios: int
    requeues: int
    from_dev: str | None
    from_sector: int | None


class BlockEvent(BaseModel):
    line: int
    t_ns: int
    cpu: int | None
    pid: int | None = Field(description="null where the trace does not say (completions run in interrupt context)")
    action: str
    rwbs: str | None
    sector: int | None
    nsect: int | None
    comm: str | None
    error: int | None


class SchedulerMessage(BaseModel):
    line: int
    t_ns: int
    cpu: int
    message: str


class BlockLayer(BaseModel):
    source_id: int
    line: int = Field(description="the line of this layer's request in its source (its first event)")
    dev: str = Field(description="major,minor")
    name: str | None = Field(description="the device's name when the capture names it (a blktrace set's NAME)")
    sector: int | None
    nsect: int | None
    rwbs: str | None
    pid: int | None
    comm: str | None
    q_ns: int | None
    i_ns: int | None
    d_ns: int | None
    c_ns: int | None
    q2c_ns: int | None
    d2c_ns: int | None
    held_ns: int | None = Field(
        description="how long this layer held the I/O (ns): until the layer below queued it; the bottom layer's, from its"
        " own start to its completion"
    )
    share: float | None = Field(description="held_ns over the sum of every layer's (0-1)")
    kind: str = Field(
        description="bio-based (remapped down) | request-based (remapped down) | the device that served it"
    )


class RequestDetail(BaseModel):
    request: BlockRequest
    events: list[BlockEvent]
    messages: list[SchedulerMessage] = Field(
        description="I/O scheduler `m` lines logged on the device while the request waited (from I, else Q, G or D,"
        " to D, else C), in time order: all of them, or max_messages spread evenly over the whole wait"
        " (the first and the last included) when there are more"
    )
    messages_total: int = Field(description="scheduler messages logged on the device while the request waited")
    messages_truncated: bool = Field(description="messages holds fewer than messages_total (a sample)")
    layers: list[BlockLayer] = Field(
        [],
        description="the block stack's layers this I/O went through, top (a dm/md/LVM device's bio) to bottom (the"
        " disk's request), each with the time it held the I/O; empty for an I/O of one layer",
    )


class Stats(BaseModel):
    n: int = Field(description="requests with this duration (each request counted once)")
    min: int | None = None
    avg: float | None = Field(None, description="mean (ns)")
    p50: int | None
    p95: int | None
    p99: int | None
    max: int | None


class BttRow(BaseModel):
    metric: str = Field(description="btt's row: Q2Q Q2A Q2G S2G G2I Q2M I2D M2D D2C Q2C (Q2Qdm Q2Adm Q2Cdm: dm/md)")
    n: int
    min_ns: int
    avg_ns: float = Field(description="total_ns / n (btt prints (total_ns / 1e9) / n to 9 decimals)")
    max_ns: int
    total_ns: int


class DispatchGroup(BaseModel):
    key: str
    pid: int | None
    comm: str | None
    dev: str | None
    count: int
    i2d: Stats
    d2c: Stats
    q2c: Stats
    btt: list[BttRow] | None = Field(
        None,
        description="btt's figures for this device or pid, as `btt -A` prints them (N, MIN, AVG, MAX), over the "
        "whole trace (null with a time window). btt counts per queued bio, not per request: merged bios each get a "
        "D2C and Q2C; the halves of a split bio get a Q2G and G2I each and no I2D, D2C or Q2C",
    )


class LatencyPoint(BaseModel):
    t_ns: int = Field(description="start of the time bucket")
    count: int
    p50_ns: int
    max_ns: int
    max_source_id: int = Field(description="the request behind max_ns: (max_source_id, max_line)")
    max_line: int


class LatencySeries(BaseModel):
    i2d: list[LatencyPoint] = Field(description="placed at each request's I (insert) time")
    d2c: list[LatencyPoint] = Field(description="placed at each request's D (dispatch) time")


class LatencyOverTime(BaseModel):
    t0_ns: int | None
    t1_ns: int | None
    bucket_ns: int | None
    series: LatencySeries


@router.get("/analyses/{analysis_id}/requests", response_model=list[BlockRequest])
def list_requests(
    analysis_id: AnalysisId,
    con: Cursor,
    cache: Cache,
    order: Literal["i2d", "d2c", "q2c", "time"] = "i2d",
    limit: Annotated[int, Query(ge=1, le=10000)] = 100,
    pid: OptionalInt64 = None,
    dev: Annotated[str | None, Query(max_length=32, pattern=r"^\d+,\d+$")] = None,
    t0_ns: TimeFilter = None,
    t1_ns: TimeFilter = None,
):
    """Block requests rebuilt from the trace, slowest first for i2d/d2c/q2c, or in time order."""
    if pid is None and dev is None and (t0_ns is not None or t1_ns is not None):
        body = request_queries.window_requests_json(con, cache, analysis_id, order, limit, t0_ns, t1_ns)
        return Response(body, media_type="application/json")
    return request_queries.requests(con, cache, analysis_id, order, limit, pid, dev, t0_ns, t1_ns)


class RequestPage(BaseModel):
    items: list[BlockRequest]
    next_cursor: str | None = Field(
        description="pass it as `cursor`, with the same order and filters, for the next page; null: this is the last"
    )


PageCursor = Annotated[
    str | None,
    Query(
        max_length=paging.MAX_CURSOR_CHARS,
        description="the next_cursor of the previous page (same order and filters); none: the first page",
    ),
]


def bad_cursor(e: paging.BadCursor) -> HTTPException:
    return HTTPException(422, str(e))


@router.get(
    "/analyses/{analysis_id}/requests/page",
    response_model=RequestPage,
    responses={422: {"description": "a cursor this list did not make"}},
)
def page_requests(
    analysis_id: AnalysisId,
    con: Cursor,
    cache: Cache,
    order: Literal["i2d", "d2c", "q2c", "time"] = "i2d",
    limit: Annotated[int, Query(ge=1, le=request_queries.PAGE_LIMIT)] = 500,
    cursor: PageCursor = None,
    pid: OptionalInt64 = None,
    dev: Annotated[str | None, Query(max_length=32, pattern=r"^\d+,\d+$")] = None,
    t0_ns: TimeFilter = None,
    t1_ns: TimeFilter = None,
):
    """The list of /requests a page at a time, every request exactly once over the pages: keyset paging on the
    order's key and the request's (source_id, line), so pages neither repeat nor skip a row."""
    try:
        return request_queries.requests_page(con, cache, analysis_id, order, limit, cursor, pid, dev, t0_ns, t1_ns)
    except paging.BadCursor as e:
        raise bad_cursor(e) from None


@router.get(
    "/analyses/{analysis_id}/requests/{source_id}/{line}",
    response_model=RequestDetail,
    responses={404: {"description": "no analysis with this id, or no block request at this source and line"}},
)
def get_request(
    analysis_id: AnalysisId,
    source_id: PathInt64,
    line: PathInt64,
    con: Cursor,
    max_messages: Annotated[
        int,
        Query(
            ge=1,
            le=request_queries.MAX_MESSAGES,
            description="scheduler messages at most: more are sampled evenly over the wait",
        ),
    ] = request_queries.MESSAGES,
):
    """One request with the trace lines it was rebuilt from and the scheduler messages of its wait."""
    detail = request_queries.request_detail(con, analysis_id, source_id, line, max_messages)
    if detail is None:
        raise HTTPException(404, f"no block request at source {source_id}, line {line} in this analysis")
    return detail


@router.get("/analyses/{analysis_id}/dispatch-summary", response_model=list[DispatchGroup])
def dispatch_summary(
    analysis_id: AnalysisId,
    con: Cursor,
    cache: Cache,
    by: Literal["process", "device"] = "process",
    t0_ns: TimeFilter = None,
    t1_ns: TimeFilter = None,
):
    """Per process or device: request count and n/min/avg/p50/p95/p99/max of I2D, D2C and Q2C (ns), per request;
    and btt's figures (per queued bio, whole trace)."""
    body = request_queries.dispatch_summary(con, cache, analysis_id, by, t0_ns, t1_ns)
    return Response(pydantic_core.to_json(body), media_type="application/json")  # complete: sent as it is


@router.get("/analyses/{analysis_id}/latency-over-time", response_model=LatencyOverTime)
def latency_over_time(
    analysis_id: AnalysisId,
    con: Cursor,
    cache: Cache,
    buckets: Annotated[int, Query(ge=1, le=5000)] = 400,
    pid: OptionalInt64 = None,
    dev: Annotated[str | None, Query(max_length=32, pattern=r"^\d+,\d+$")] = None,
    t0_ns: TimeFilter = None,
    t1_ns: TimeFilter = None,
):
    """I2D and D2C aggregated per time bucket: count, p50, max and the request behind the max."""
    body = request_queries.latency_over_time(con, cache, analysis_id, buckets, pid, dev, t0_ns, t1_ns)
    return Response(pydantic_core.to_json(body), media_type="application/json")  # complete: sent as it is
