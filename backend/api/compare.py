"""Route of before/after: two analyses, or two time ranges of one, side by side on one scale with deltas
(backend/queries/compare.py says what is compared and how).

Reading needs only the analyses' links (backend/access.py: ids are capabilities), so a comparison needs both ids;
an unknown one is a 404 naming it, a reversed range or one that misses its analysis a 422."""

from __future__ import annotations

from typing import Annotated, Literal

import pydantic_core
from fastapi import HTTPException, Query, Response
from pydantic import BaseModel, Field

from ..queries import compare as compare_queries
from .deps import AnalysisRouter, Cache, Cursor, TimeFilter, require_analysis
from .heatmaps import Percentiles
from .requests import Stats

router = AnalysisRouter(prefix="/api")

IdQuery = Annotated[str, Query(min_length=1, max_length=64, description="an analysis id")]


class Delta(BaseModel):
    metric: str = Field(description="what is compared: count, i2d.p99, waits, total_ns, p50_ns, …")
    unit: str = Field(description="ns, requests or waits")
    a: float | None = Field(description="side a's figure (before); null: side a has none")
    b: float | None = Field(description="side b's figure (after)")
    abs: float | None = Field(description="b − a, in unit")
    rel: float | None = Field(description="(b − a) / a; null when a is 0 or missing")
    verdict: Literal["better", "worse", "same"] | None = Field(
        description="b against a: lower latency, fewer or shorter waits are better; same within 5 % of a;"
        " null for a figure that is neither better nor worse (a number of requests) or missing on a side"
    )


class DispatchSide(BaseModel):
    pids: list[int] = Field(description="per process: the pids of this command name on this side (per device: [])")
    count: int
    i2d: Stats
    d2c: Stats
    q2c: Stats


class DispatchPair(BaseModel):
    key: str = Field(description="the device (maj,min) or the command name")
    a: DispatchSide | None = Field(description="null: side a has no request of this key in its range")
    b: DispatchSide | None
    deltas: list[Delta] = Field(description="count, then {i2d,d2c,q2c}.{avg,p50,p95,p99,max} (ns)")


class DispatchCompare(BaseModel):
    total: int = Field(description="keys of either side (rows holds the first `limit`)")
    rows: list[DispatchPair] = Field(description="most requests on either side first")


class LockSide(BaseModel):
    waits: int
    total_ns: int
    p50_ns: int
    p90_ns: int
    p99_ns: int
    max_ns: int
    locks: list[str] = Field(description="the lock labels of its waits (xfs_ilock via down_write, …)")
    ends_known: bool = Field(description="false: a wait was still open at the end of the trace (a lower bound)")


class LockPair(BaseModel):
    lock_key: str | None = Field(description="the lock, as /waits?lock_key= takes it; null: waits on no known lock")
    a: LockSide | None
    b: LockSide | None
    deltas: list[Delta] = Field(description="waits, total_ns, p50_ns, p90_ns, p99_ns, max_ns")


class LockCompare(BaseModel):
    total: int
    rows: list[LockPair] = Field(description="largest total wait on either side first")


class CellRef(BaseModel):
    source_id: int
    line: int
    pid: int | None


class CompareCell(BaseModel):
    x: int = Field(description="time bin: [t0_ns + x·x_bin_ns, t0_ns + (x+1)·x_bin_ns) of this side")
    y: int = Field(description="latency bin: [y_edges_ns[y], y_edges_ns[y+1]) (the same edges on both sides)")
    count: int
    max_ns: int
    max_ref: CellRef = Field(description="the event behind max_ns (a request or a wait of this side's analysis)")


class HeatmapSide(BaseModel):
    t0_ns: int = Field(description="the side's start (its from, or its first such event if later): x counts from here")
    t1_ns: int = Field(description="its end (its to, or its last such event if earlier)")
    x_bin_ns: int = Field(description="its time-bin width: the pair's (x_time shared) or its own (x_time own)")
    x_bins: int = Field(description="this side's bins (shared: the shorter side has fewer)")
    cells: list[CompareCell]
    percentiles: Percentiles = Field(description="exact (quantile_disc) over the side's events")


class HeatmapPair(BaseModel):
    metric: Literal["i2d", "d2c", "wait"]
    kind: Literal["request", "wait"]
    x_time: Literal["shared", "own"] = Field(
        description="shared: one time-bin width for both sides; own: each side's span in x_bins bins of its own width"
    )
    x_bin_ns: int = Field(description="the longer side's time-bin width (shared: both sides')")
    x_bins: int = Field(description="bins of the longer side")
    y_bins: int
    y_edges_ns: list[int] = Field(description="latency bin edges over both sides' events (ns, equal steps in log10)")
    max_count: int = Field(description="the largest cell of either side: one colour scale")
    a: HeatmapSide | None = Field(description="null: side a has no such event in its range")
    b: HeatmapSide | None
    deltas: list[Delta] = Field(description="count, p50_ns, p90_ns, p99_ns, max_ns")


class CompareSide(BaseModel):
    analysis_id: str
    name: str | None
    from_ns: int | None = Field(description="the range asked (ns, analysis timeline, inclusive); null: open")
    to_ns: int | None
    span_ns: list[int] | None = Field(description="first and last time of the analysis' sources")
    requests: int = Field(description="block requests starting in the range")
    waits: int = Field(description="stall waits starting in the range")
    offcpu_stacks: int = Field(description="off-CPU records of the analysis (they have no time: never ranged)")
    offcpu_us: int


class Comparison(BaseModel):
    a: CompareSide
    b: CompareSide
    same_analysis: bool = Field(description="two ranges of one analysis")
    dispatch_by_device: DispatchCompare
    dispatch_by_process: DispatchCompare = Field(description="processes matched by command name")
    locks: LockCompare
    heatmaps: list[HeatmapPair] = Field(description="the metrics with events on either side")


BAD = {
    404: {"description": "no analysis with one of these ids"},
    422: {"description": "a range is reversed or holds nothing of its analysis"},
}


@router.get("/compare", response_model=Comparison, responses=BAD)
def compare(
    con: Cursor,
    cache: Cache,
    a: IdQuery,
    b: Annotated[
        str | None, Query(min_length=1, max_length=64, description="the 'after' analysis (default: a, in b's range)")
    ] = None,
    a_from: TimeFilter = None,
    a_to: TimeFilter = None,
    b_from: TimeFilter = None,
    b_to: TimeFilter = None,
    x_bins: Annotated[int, Query(ge=1, le=400)] = 80,
    y_bins: Annotated[int, Query(ge=1, le=100)] = 30,
    limit: Annotated[int, Query(ge=1, le=1000, description="rows per table at most")] = 200,
    x_time: Annotated[
        Literal["shared", "own"],
        Query(
            description="the heatmaps' time axis: one bin width for both sides (a shorter side fills part of it),"
            " or each side's own (its span over the whole width); the latency edges and colours stay shared"
        ),
    ] = "shared",
):
    """Side a (before) and side b (after): dispatch summary per device and per process, stall waits per lock,
    I2D/D2C/wait heatmaps on one scale with their percentiles, each figure with its delta (b − a)."""
    b = b or a
    found = require_analysis(con, cache, a), require_analysis(con, cache, b)
    sides = compare_queries.Side(a, a_from, a_to), compare_queries.Side(b, b_from, b_to)
    try:
        body = compare_queries.compare(
            con, cache, *sides, tuple(f["name"] for f in found), x_bins, y_bins, limit, x_time
        )
    except compare_queries.BadRange as e:
        raise HTTPException(422, str(e)) from None
    return Response(pydantic_core.to_json(body), media_type="application/json")  # validated by the tests
