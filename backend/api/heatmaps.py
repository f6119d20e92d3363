"""Routes of the latency heatmaps: the binned matrix, the events inside a box of it, the metrics to pick from.

Thin: validate, call backend.queries.heatmaps, return JSON. Times are on the analysis timeline (ns).
"""

from __future__ import annotations

from typing import Annotated, Literal

import pydantic_core
from fastapi import HTTPException, Query, Response
from pydantic import BaseModel, Field

from ..limits import TIME_MAX, TIME_MIN
from ..queries import heatmap_events as heatmap_event_queries
from ..queries import heatmaps as heatmap_queries
from .deps import INT64, AnalysisId, AnalysisRouter, Cache, Cursor, TimeFilter

router = AnalysisRouter(prefix="/api")

Metric = Literal["i2d", "d2c", "q2c", "func", "wait"]
Kind = Literal["request", "call", "wait"]
MetricQuery = Annotated[
    Metric,
    Query(
        description="i2d | d2c | q2c: block requests (I→D at I, D→C at D, Q→C at Q);"
        " func: calls of the function named by `filter`, at entry;"
        " wait: waits, at their start"
    ),
]
FilterQuery = Annotated[
    str | None,
    Query(
        max_length=256,
        description="func: the function name (exact, required); wait: a lock_key or lock label (none: all)",
    ),
]
IdleQuery = Annotated[
    bool,
    Query(
        description="metric=wait: idle sleeps too (a thread waiting for work, a poll, a nanosleep: wait_kind idle),"
        " left out by default as they are not stalls"
    ),
]
PidQuery = Annotated[int | None, Query(ge=-INT64, le=INT64, description="the task (block: the request's issuer)")]
DevQuery = Annotated[str | None, Query(max_length=32, pattern=r"^\d+,\d+$", description="block metrics only")]
BAD = {
    422: {"description": "a parameter is missing, malformed or does not apply to the metric"},
}


class EventRef(BaseModel):
    kind: Kind = Field(
        description="request: /requests/{source_id}/{line}; call: the function_graph call entered at"
        " that line; wait: the wait starting at that line (/waits)"
    )
    source_id: int
    line: int = Field(description="with source_id, identifies the event within the analysis")
    pid: int | None = Field(description="the task (a request's issuer; null where the trace does not say)")


class HeatmapCell(BaseModel):
    x: int = Field(description="time bin: [t0_ns + x·x_bin_ns, t0_ns + (x+1)·x_bin_ns)")
    y: int = Field(
        description="latency bin: [y_edges_ns[y], y_edges_ns[y+1]); bin 0 also holds anything below,"
        " the top bin the max"
    )
    count: int
    max_ns: int
    max_ref: EventRef = Field(description="the event behind max_ns (the first in source, line order on ties)")


class Percentiles(BaseModel):
    count: int
    p50_ns: int | None
    p90_ns: int | None
    p99_ns: int | None
    p999_ns: int | None
    p9999_ns: int | None
    max_ns: int | None


class Heatmap(BaseModel):
    metric: Metric
    idle: bool = Field(description="metric=wait: idle sleeps are counted too (idle=true was asked)")
    filter: str | None
    kind: Kind = Field(description="what the counted events are")
    t0_ns: int | None
    t1_ns: int | None
    x_bins: int
    x_bin_ns: int | None
    y_bins: int = Field(description="as asked, or fewer when the latency range holds fewer distinct ns")
    y_edges_ns: list[int] = Field(
        description="y_bins + 1 strictly increasing latency bin edges (ns), equal steps in log10"
    )
    cells: list[HeatmapCell] = Field(description="the non-empty cells only")
    percentiles: Percentiles = Field(description="exact (quantile_disc) over the same filter and window")


class HeatmapEvent(BaseModel):
    ref: EventRef
    t_ns: int = Field(description="where it is placed: the request's I/D/Q, the call's entry, the wait's start")
    latency_ns: int = Field(description="the metric: I2D/D2C/Q2C, the call's duration, the wait's duration")
    end_known: bool = Field(description="false: a wait still open at the end of the trace (latency is a lower bound)")
    comm: str | None
    dev: str | None = Field(description="requests: the device")
    rwbs: str | None
    sector: int | None
    nsect: int | None = Field(description="requests: size in 512-byte sectors")
    func: str | None = Field(description="calls: the function")
    lock: str | None = Field(description="waits: the lock label; calls: that of the wait inside the call")
    lock_key: str | None = Field(description="waits: the locked object (the wait heatmap's filter)")
    wait: EventRef | None = Field(description="calls: the longest wait of the task that began during the call")
    chain_id: int | None = Field(description="waits (calls: their wait): the chain explaining it (/chains)")
    link: int | None = Field(description="... and the 1-based link in it: the wait, or the one it waits alongside")


class HeatmapEvents(BaseModel):
    metric: Metric
    idle: bool = Field(description="metric=wait: idle sleeps are counted too (idle=true was asked)")
    filter: str | None
    kind: Kind
    count: int = Field(description="all events in the box (events holds at most `limit` of them)")
    events: list[HeatmapEvent] = Field(description="slowest first")


class MetricCount(BaseModel):
    metric: Metric
    count: int = Field(description="events that can be drawn")


class FunctionChoice(BaseModel):
    func: str
    calls: int = Field(description="calls with a known duration")
    total_ns: int
    max_ns: int


class LockChoice(BaseModel):
    lock_key: str = Field(description="the locked object, e.g. xfs_ilock: use it as `filter` of metric=wait")
    waits: int
    total_ns: int
    max_ns: int
    locks: list[str] = Field(description="the lock labels of its waits (xfs_ilock via down_read, ...)")


class HeatmapMetrics(BaseModel):
    metrics: list[MetricCount] = Field(description="the metrics with events in this analysis")
    functions: list[FunctionChoice] = Field(description="functions by total duration of their calls")
    locks: list[LockChoice] = Field(description="locks by total duration of their waits")


def _json(content: dict) -> Response:
    """The body as built by backend.queries.heatmaps, already in the shape of the response model, serialised
    without validating it again: thousands of cells took ~15 ms to validate and dump, 1.5 ms this way
    (tests/test_heatmap.py checks the bodies against the models)."""
    return Response(pydantic_core.to_json(content), media_type="application/json")


def _check(metric: str, filter: str | None, dev: str | None, idle: bool) -> str | None:
    """The filter to use; a 422 when a parameter does not apply to the metric."""
    filter = filter.strip() if filter else None
    if idle and metric != "wait":
        raise HTTPException(422, f"idle does not apply to metric={metric}: only waits can be idle sleeps")
    if metric == "func" and not filter:
        raise HTTPException(
            422,
            "metric=func needs filter=<function name> (exact); "
            "GET /api/analyses/{id}/heatmap/metrics lists the traced functions",
        )
    if metric in heatmap_queries.BLOCK_METRICS and filter:
        raise HTTPException(
            422,
            f"filter does not apply to metric={metric}: it names the function (metric=func)"
            " or the lock (metric=wait); filter block requests with pid and dev",
        )
    if dev is not None and metric not in heatmap_queries.BLOCK_METRICS:
        raise HTTPException(422, f"dev does not apply to metric={metric}: only block requests have a device")
    return filter


@router.get("/analyses/{analysis_id}/heatmap", response_model=Heatmap, responses=BAD)
def heatmap(
    analysis_id: AnalysisId,
    con: Cursor,
    cache: Cache,
    metric: MetricQuery = "i2d",
    x_bins: Annotated[int, Query(ge=1, le=1000)] = 120,
    y_bins: Annotated[int, Query(ge=1, le=200)] = 40,
    filter: FilterQuery = None,
    pid: PidQuery = None,
    dev: DevQuery = None,
    t0_ns: TimeFilter = None,
    t1_ns: TimeFilter = None,
    idle: IdleQuery = False,
):
    """Events counted per time bin × log latency bin, each cell with the event behind its max; and exact
    p50…p99.99/max/count of the latency over the same filter and window."""
    filter = _check(metric, filter, dev, idle)
    key = heatmap_queries.spec_key(metric, idle)
    return _json(
        heatmap_queries.heatmap(con, cache, analysis_id, key, x_bins, y_bins, pid, dev, t0_ns, t1_ns, filter=filter)
    )


@router.get("/analyses/{analysis_id}/heatmap/events", response_model=HeatmapEvents, responses=BAD)
def heatmap_events(
    analysis_id: AnalysisId,
    con: Cursor,
    cache: Cache,
    metric: MetricQuery = "i2d",
    filter: FilterQuery = None,
    pid: PidQuery = None,
    dev: DevQuery = None,
    t0_ns: Annotated[
        int | None, Query(ge=TIME_MIN, le=TIME_MAX, description="placed at or after (ns, analysis timeline)")
    ] = None,
    t1_ns: Annotated[
        int | None, Query(ge=TIME_MIN, le=TIME_MAX, description="placed at or before (ns, analysis timeline)")
    ] = None,
    lat_min_ns: Annotated[int | None, Query(ge=0, le=INT64, description="latency at least this (ns)")] = None,
    lat_max_ns: Annotated[int | None, Query(ge=0, le=INT64, description="latency below this (ns)")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    idle: IdleQuery = False,
):
    """The events inside a box of the heatmap (a time range × a latency range), slowest first, with their
    references (request, call or wait) and the count of all in the box."""
    filter = _check(metric, filter, dev, idle)
    if t0_ns is not None and t1_ns is not None and t1_ns < t0_ns:
        raise HTTPException(422, f"t1_ns ({t1_ns}) is before t0_ns ({t0_ns})")
    if lat_min_ns is not None and lat_max_ns is not None and lat_max_ns <= lat_min_ns:
        raise HTTPException(
            422,
            f"lat_max_ns ({lat_max_ns}) must be above lat_min_ns ({lat_min_ns}):"
            " the box holds lat_min_ns <= latency < lat_max_ns",
        )
    return heatmap_event_queries.events(
        con,
        cache,
        analysis_id,
        heatmap_queries.spec_key(metric, idle),
        filter=filter,
        pid=pid,
        dev=dev,
        t0=t0_ns,
        t1=t1_ns,
        lat_min=lat_min_ns,
        lat_max=lat_max_ns,
        limit=limit,
    )


@router.get("/analyses/{analysis_id}/heatmap/metrics", response_model=HeatmapMetrics)
def heatmap_metrics(
    analysis_id: AnalysisId,
    con: Cursor,
    cache: Cache,
    limit: Annotated[int, Query(ge=1, le=1000, description="at most this many functions")] = 50,
    idle: Annotated[bool, Query(description="count idle sleeps among the waits and their locks too")] = False,
):
    """What a heatmap can show for this analysis: the metrics with events, the traced functions (metric=func)
    and the locks waited on (metric=wait; with idle, idle sleeps' too)."""
    return heatmap_queries.metrics(con, cache, analysis_id, limit, idle)
