"""Route of the timeline: every source on one time axis, aggregated for the window and its pixel width."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import HTTPException, Query, Response
from pydantic import BaseModel, Field

from ..queries import timeline as timeline_queries
from .deps import AnalysisId, AnalysisRouter, Cache, Cursor, TimeFilter

router = AnalysisRouter(prefix="/api")


class TimelineSegments(BaseModel):
    """A lane's items as columns (item i is the i-th value of each list): compact, since a response holds thousands.
    An item is one segment (n = 1), or segments shorter than the lane's bucket merged per bucket, with runs of
    consecutive buckets of the same state joined."""

    states: list[str] = Field(
        description="the names `state` indexes: running | runnable | blocked, a lock, a function, queued | service"
    )
    track: list[int] = Field(
        description="index into TRACKS: 0 state (task scheduler state; on a CPU lane, the task running), 1 wait (a wait, state = "
        "its lock), 2 call (a function), 3 queued (block I→D), 4 service (block D→C)"
    )
    state: list[int] = Field(description="index into states")
    t0: list[int] = Field(description="start, ns after the response's t0_ns (clipped to the window)")
    t1: list[int] = Field(description="end, ns after the response's t0_ns")
    n: list[int] = Field(description="segments merged into the item (1: a single segment)")
    max: list[int] = Field(description="duration of the longest merged segment (ns)")
    line: list[int] = Field(description="the line of that segment in the lane's source: the event behind the item")
    depth: list[int | None] = Field(description="call nesting depth (track call), else null")


class TimelineCounter(BaseModel):
    name: str
    unit: str
    points: list[list[int]] = Field(description="[t_ns, value]: the value at the end of each bucket (first: at t0)")
    max: int


class TimelineBand(BaseModel):
    t0_ns: int
    t1_ns: int | None = Field(description="null: the window's length is unknown (no header said it)")


class TimelineLane(BaseModel):
    id: str = Field(
        description="task:<source>:<pid> | dev:<source>:<dev> | proc:<source>:<pid> | cpu:<source>:<cpu> | window:<source>"
    )
    kind: Literal["task", "device", "process", "cpu", "window"] = Field(
        description="cpu: what ran on one CPU (track 0, state = the task's comm; idle is not drawn), dev = its number"
    )
    source_id: int
    label: str
    group: str | None
    pid: int | None
    dev: str | None
    why: str = Field(description="why this lane is shown (its rank)")
    tgid: int | None = Field(
        None, description="a task's thread group (its process' pid), when the capture recorded it (record-tgid)"
    )
    segs: TimelineSegments | None = Field(None, description="the lane's items (none for a window)")
    bucket_ns: int | None = Field(
        None,
        description="this lane's bucket (ns): segments shorter are merged per "
        "bucket. The pixel (bucket_ns of the response) or up to 4 times "
        "it (the precomputed level read), doubled again for dense lanes "
        "when the response would exceed max_items",
    )
    counter: TimelineCounter | None = None
    band: TimelineBand | None = None


class TimelineArrow(BaseModel):
    chain_id: int
    relation: str = Field(description="woken_by | held_by | io_completion: from the waker/holder/device to the waiter")
    from_lane: str
    to_lane: str
    from_ns: int
    to_ns: int
    request: dict | None = Field(description="io_completion: the block request {source_id, line}")


class TimelineMark(BaseModel):
    source_id: int
    line: int
    t_ns: int
    pid: int | None
    comm: str | None
    text: str | None


class Timeline(BaseModel):
    t0_ns: int | None
    t1_ns: int | None
    width_px: int
    bucket_ns: int | None = Field(description="ns per pixel: segments shorter than this are merged per bucket")
    lanes: list[TimelineLane]
    arrows: list[TimelineArrow]
    marks: list[TimelineMark] = []
    total_lanes: int = Field(description="lanes with something in the window (those not returned: ask with lanes=)")
    tracks: list[str] = Field(["state", "wait", "call", "queued", "service"], description="the names track codes index")
    max_items: int = Field(description="items at most in one response (dense lanes get wider buckets to fit)")


@router.get("/analyses/{analysis_id}/timeline", response_model=Timeline)
def get_timeline(
    analysis_id: AnalysisId,
    con: Cursor,
    cache: Cache,
    t0_ns: TimeFilter = None,
    t1_ns: TimeFilter = None,
    width_px: Annotated[int, Query(ge=10, le=4000, description="pixels the window is drawn on")] = 1200,
    lanes: Annotated[str | None, Query(max_length=4000, description="comma-separated lane ids to return")] = None,
    max_lanes: Annotated[int, Query(ge=1, le=200)] = 40,
):
    """Every source on one time axis, aggregated for the window and its pixel width: per task (scheduler states,
    waits by lock, calls at least a pixel long), per block device and process (I→D and D→C, requests in flight),
    offcputime windows, print markers, and the chains as arrows across lanes."""
    if t0_ns is not None and t1_ns is not None and t1_ns <= t0_ns:
        raise HTTPException(422, f"t1_ns ({t1_ns}) must be after t0_ns ({t0_ns})")
    wanted = [x for x in (lanes or "").split(",") if x] or None
    # the body as built, in the model's shape, serialised without validating it again (tests/test_timeline.py
    # checks bodies against the model): thousands of items per response
    body = timeline_queries.timeline_json(con, cache, analysis_id, t0_ns, t1_ns, width_px, wanted, max_lanes)
    return Response(body, media_type="application/json")
