"""Routes of /api: thin — validate, call the store or analysis, return JSON. No SQL here."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated, Literal

import duckdb
import pydantic_core
from fastapi import APIRouter, Depends, HTTPException, Query, Request, Response
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from ..analysis import align, blk, locks, memo, offcpu, stalls, timeline as timeline_analysis
from ..store import IngestError, InputFile, Store
from . import models
from .deps import Cursor, ProgressBoard, get_store

router = APIRouter(prefix="/api")

MAX_FILES = 64
NOT_FOUND = {404: {"model": models.ErrorBody, "description": "no analysis with this id"}}


def _utc(naive: datetime) -> datetime:
    return naive.replace(tzinfo=timezone.utc)


class TooLarge(Exception):
    pass


def _analysis_or_404(con, analysis_id: str) -> dict:
    rows = con.execute("SELECT id, name, created_at FROM analyses WHERE id = ?", [analysis_id]).fetchall()
    row = rows[0] if rows else None
    if row is None:
        raise HTTPException(404, f"no analysis with id {analysis_id!r}: it may have been mistyped or deleted")
    return {"id": row[0], "name": row[1], "created_at": _utc(row[2])}


AnalysisId = Annotated[str, "analysis id"]


@router.post(
    "/analyses",
    status_code=201,
    response_model=models.Created,
    responses={400: {"model": models.ErrorBody}, 413: {"model": models.ErrorBody}, 422: {"model": models.ErrorBody}},
)
async def create_analysis(
    request: Request,
    store: Annotated[Store, Depends(get_store)],
    board: ProgressBoard,
    progress: Annotated[str | None, Query(max_length=64, description="a token to poll /api/progress/{token}")] = None,
):
    """Upload one or more trace files (multipart `files`, optional `name`): one analysis is created from them."""
    limit = request.app.state.max_upload_bytes
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise HTTPException(413, f"upload of {int(declared)} bytes is larger than the limit of {limit} bytes")
    prog = board.start(progress)
    seen = 0
    receive = request._receive

    async def counting_receive():
        nonlocal seen
        message = await receive()
        seen += len(message.get("body", b""))
        prog.update(bytes_read=seen)
        if seen > limit:
            raise TooLarge()
        return message

    request._receive = counting_receive
    try:
        form = await request.form(max_files=MAX_FILES, max_fields=16)
    except TooLarge:
        prog.update(phase="error", error="too large")
        raise HTTPException(413, f"upload is larger than the limit of {limit} bytes")
    except Exception as e:  # malformed multipart body
        raise HTTPException(400, f"could not read the upload as multipart/form-data: {e}")
    try:
        uploads = [f for f in form.getlist("files") if isinstance(f, UploadFile)]
        if not uploads:
            raise HTTPException(422, "no file: send one or more files in multipart fields named 'files'")
        name = form.get("name")
        name = name.strip()[:200] if isinstance(name, str) and name.strip() else None
        files = []
        for u in uploads:
            u.file.seek(0, 2)
            size = u.file.tell()
            u.file.seek(0)
            files.append(InputFile(filename=(u.filename or "upload")[:255], stream=u.file, size=size))
        try:
            created = await run_in_threadpool(store.ingest, files, name, prog)
        except IngestError as e:
            prog.update(phase="error", error=e.detail)
            return JSONResponse(
                status_code=422,
                content={"detail": e.detail,
                         "files": [{"filename": f.filename, "error": f.message, "line": f.line, "offset": f.offset}
                                   for f in e.files]},
            )
        if request.app.state.warmer:  # once this response is sent (warm.py)
            request.app.state.warmer.add(created["id"])
        return created
    finally:
        await form.close()


@router.get("/progress/{token}", response_model=models.IngestProgress, responses={404: {"model": models.ErrorBody}})
def get_progress(token: str, board: ProgressBoard):
    """How far the upload that was sent with ?progress=token has got."""
    prog = board.get(token)
    if prog is None:
        raise HTTPException(404, f"no upload in progress with token {token!r}")
    return prog.as_dict()


@router.get("/analyses", response_model=list[models.AnalysisItem])
def list_analyses(con: Cursor):
    """Every analysis, newest first."""
    rows = con.execute(
        "SELECT a.id, a.name, a.created_at, count(s.id) FROM analyses a LEFT JOIN sources s ON s.analysis_id = a.id"
        " GROUP BY ALL ORDER BY a.created_at DESC, a.id"
    ).fetchall()
    return [{"id": r[0], "name": r[1], "created_at": _utc(r[2]), "source_count": r[3]} for r in rows]


@router.get("/analyses/{analysis_id}", response_model=models.Analysis, responses=NOT_FOUND)
def get_analysis(analysis_id: AnalysisId, con: Cursor):
    """An analysis, its sources (with what was skipped) and its time span."""
    analysis = _analysis_or_404(con, analysis_id)
    sources = _sources(con, analysis_id)
    starts = [s["t_min_ns"] + s["clock_offset_ns"] for s in sources if s["t_min_ns"] is not None]
    ends = [s["t_max_ns"] + s["clock_offset_ns"] for s in sources if s["t_max_ns"] is not None]
    return {**analysis, "sources": sources, "t_min_ns": min(starts, default=None), "t_max_ns": max(ends, default=None)}


def _sources(con, analysis_id: str, source_id: int | None = None) -> list[dict]:
    cur = con.execute(
        "SELECT id, filename, format, events, skipped_lines, lines, bytes, sha256, skipped_examples, notes, clock_offset_ns,"
        " clock, alignment, t_min_ns, t_max_ns, files FROM sources WHERE analysis_id = ? AND (? IS NULL OR id = ?)"
        " ORDER BY id", [analysis_id, source_id, source_id],
    )
    names = [d[0] for d in cur.description]
    sources = [dict(zip(names, r)) for r in cur.fetchall()]
    wakes = offcpu.waker_stacks_by_source(con, analysis_id)
    for s in sources:
        for k in ("skipped_examples", "notes", "alignment", "files"):
            s[k] = blk.loads(s[k])
        if s["files"] is None:  # written before sources had files: its one file
            s["files"] = [{"filename": s["filename"], "bytes": s["bytes"], "kind": s["format"], "sha256": s["sha256"]}]
        s["waker_stacks"] = wakes.get(s["id"], 0)
    return sources


@router.patch("/analyses/{analysis_id}/sources/{source_id}", response_model=models.SourceDetail,
              responses={**NOT_FOUND, 409: {"model": models.ErrorBody}, 422: {"model": models.ErrorBody}})
def place_source(analysis_id: AnalysisId, source_id: int, body: models.SourcePlacement, con: Cursor,
                 request: Request):
    """Place a source on the analysis timeline: set its clock offset (ns), or give it the same span as another
    source. The chains are linked again to block requests with the new times. Kept in the analysis, for every
    link to it."""
    _analysis_or_404(con, analysis_id)
    if (body.clock_offset_ns is None) == (body.same_span_as is None):
        raise HTTPException(422, "give exactly one of clock_offset_ns (ns) or same_span_as (a source id)")
    con.begin()
    try:
        align.set_offset(con, analysis_id, source_id, body.clock_offset_ns, body.same_span_as)
        stalls.relink(con, analysis_id)
        con.commit()
        memo.forget(analysis_id)  # results kept with the old offsets or chains
        if request.app.state.warmer:  # computed again, once this response is sent (warm.py)
            request.app.state.warmer.add(analysis_id)
    except LookupError as e:
        con.rollback()
        raise HTTPException(404, str(e))
    except ValueError as e:
        con.rollback()
        raise HTTPException(422, str(e))
    except duckdb.TransactionException as e:
        con.rollback()
        raise HTTPException(409, f"the analysis was changed by another request at the same time; try again ({e})")
    return _sources(con, analysis_id, source_id)[0]


TimeFilter = Annotated[int | None, Query(description="ns, on the analysis timeline")]


@router.get("/analyses/{analysis_id}/requests", response_model=list[models.BlockRequest], responses=NOT_FOUND)
def list_requests(
    analysis_id: AnalysisId,
    con: Cursor,
    order: Literal["i2d", "d2c", "q2c", "time"] = "i2d",
    limit: Annotated[int, Query(ge=1, le=10000)] = 100,
    pid: int | None = None,
    dev: Annotated[str | None, Query(max_length=32, pattern=r"^\d+,\d+$")] = None,
    t0_ns: TimeFilter = None,
    t1_ns: TimeFilter = None,
):
    """Block requests rebuilt from the trace, slowest first for i2d/d2c/q2c, or in time order."""
    _analysis_or_404(con, analysis_id)
    return blk.requests(con, analysis_id, order, limit, pid, dev, t0_ns, t1_ns)


@router.get("/analyses/{analysis_id}/requests/{source_id}/{line}", response_model=models.RequestDetail,
            responses={404: {"model": models.ErrorBody}})
def get_request(
    analysis_id: AnalysisId,
    source_id: int,
    line: int,
    con: Cursor,
    max_messages: Annotated[int, Query(ge=1, le=blk.MAX_MESSAGES, description="scheduler messages at most: more are"
                                       " sampled evenly over the wait")] = blk.MESSAGES,
):
    """One request with the trace lines it was rebuilt from and the scheduler messages of its wait."""
    _analysis_or_404(con, analysis_id)
    detail = blk.request_detail(con, analysis_id, source_id, line, max_messages)
    if detail is None:
        raise HTTPException(404, f"no block request at source {source_id}, line {line} in this analysis")
    return detail


@router.get("/analyses/{analysis_id}/dispatch-summary", response_model=list[models.DispatchGroup], responses=NOT_FOUND)
def dispatch_summary(
    analysis_id: AnalysisId,
    con: Cursor,
    by: Literal["process", "device"] = "process",
    t0_ns: TimeFilter = None,
    t1_ns: TimeFilter = None,
):
    """Per process or device: request count and p50/p95/p99/max of I2D, D2C and Q2C (ns)."""
    _analysis_or_404(con, analysis_id)
    return blk.dispatch_summary(con, analysis_id, by, t0_ns, t1_ns)


@router.get("/analyses/{analysis_id}/latency-over-time", response_model=models.LatencyOverTime, responses=NOT_FOUND)
def latency_over_time(
    analysis_id: AnalysisId,
    con: Cursor,
    buckets: Annotated[int, Query(ge=1, le=5000)] = 400,
    pid: int | None = None,
    dev: Annotated[str | None, Query(max_length=32, pattern=r"^\d+,\d+$")] = None,
    t0_ns: TimeFilter = None,
    t1_ns: TimeFilter = None,
):
    """I2D and D2C aggregated per time bucket: count, p50, max and the request behind the max."""
    _analysis_or_404(con, analysis_id)
    return blk.latency_over_time(con, analysis_id, buckets, pid, dev, t0_ns, t1_ns)


@router.get("/analyses/{analysis_id}/timeline", response_model=models.Timeline, responses=NOT_FOUND)
def get_timeline(
    analysis_id: AnalysisId,
    con: Cursor,
    t0_ns: TimeFilter = None,
    t1_ns: TimeFilter = None,
    width_px: Annotated[int, Query(ge=10, le=4000, description="pixels the window is drawn on")] = 1200,
    lanes: Annotated[str | None, Query(max_length=4000, description="comma-separated lane ids to return")] = None,
    max_lanes: Annotated[int, Query(ge=1, le=200)] = 40,
):
    """Every source on one time axis, aggregated for the window and its pixel width: per task (scheduler states,
    waits by lock, calls at least a pixel long), per block device and process (I→D and D→C, requests in flight),
    offcputime windows, print markers, and the chains as arrows across lanes."""
    _analysis_or_404(con, analysis_id)
    if t0_ns is not None and t1_ns is not None and t1_ns <= t0_ns:
        raise HTTPException(422, f"t1_ns ({t1_ns}) must be after t0_ns ({t0_ns})")
    wanted = [x for x in (lanes or "").split(",") if x] or None
    # the body as built, in the model's shape, serialised without validating it again (tests/test_timeline.py
    # checks bodies against the model): thousands of items per response
    body = timeline_analysis.timeline(con, analysis_id, t0_ns, t1_ns, width_px, wanted, max_lanes)
    return Response(pydantic_core.to_json(body), media_type="application/json")


Side = Literal["target", "waker"]
Unit = Annotated[Literal["us", "stacks"], Query(description="us: µs off CPU; stacks: count stack records")]
ByTask = Annotated[bool, Query(description="the task (comm) as the root frame")]


@router.get("/analyses/{analysis_id}/flamegraph", response_model=models.FlameGraph, responses=NOT_FOUND)
def flamegraph(
    analysis_id: AnalysisId,
    con: Cursor,
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
    _analysis_or_404(con, analysis_id)
    body = offcpu.flamegraph_json(con, analysis_id, side=side, invert=invert, filter=filter, unit=unit,
                                  by_task=by_task, source=source, pid=pid, comm=comm)
    return Response(body, media_type="application/json")


@router.get("/analyses/{analysis_id}/flamegraph/diff", response_model=models.FlameDiff, responses=NOT_FOUND)
def flamegraph_diff(
    analysis_id: AnalysisId,
    con: Cursor,
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
    _analysis_or_404(con, analysis_id)
    other = b_analysis or analysis_id
    if b_analysis:
        _analysis_or_404(con, b_analysis)
    return offcpu.flamegraph_diff(con, (analysis_id, a), (other, b), side=side, invert=invert, filter=filter,
                                  unit=unit, by_task=by_task)


@router.get("/analyses/{analysis_id}/offcpu-tasks", response_model=list[models.OffcpuTask], responses=NOT_FOUND)
def offcpu_tasks(analysis_id: AnalysisId, con: Cursor, limit: Annotated[int, Query(ge=1, le=1000)] = 100):
    """Tasks by off-CPU time, for the flame graph's task filter."""
    _analysis_or_404(con, analysis_id)
    return offcpu.tasks(con, analysis_id, limit)


@router.get("/analyses/{analysis_id}/wakers", response_model=models.WakerPairs, responses=NOT_FOUND)
def wakers(
    analysis_id: AnalysisId,
    con: Cursor,
    pid: Annotated[int | None, Query(ge=0, le=(1 << 31) - 1, description="the blocked task's pid (with comm:"
                                                                         " pid when records have it, else comm)")] = None,
    comm: Annotated[str | None, Query(min_length=1, max_length=256, description="the blocked task's name")] = None,
    lock: Annotated[str | None, Query(min_length=1, max_length=256, description="pairs whose lock label (of the"
                                      " target stack) contains this, as /waits?lock=")] = None,
    lock_key: Annotated[str | None, Query(min_length=1, max_length=256, description="pairs on this lock, as"
                                          " /waits?lock_key=: the label's object or primitive is this lock of"
                                          " /api/locks, by any of its names (`semaphore` or `down`, not `down_read`;"
                                          " `xfs_ilock_map_shared` is `xfs_ilock`), else the label is exactly"
                                          " this")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 20,
):
    """Wake-up pairs from offwaketime: who woke the blocked task, with both stacks, µs blocked until the wake-up."""
    _analysis_or_404(con, analysis_id)
    return offcpu.wakers(con, analysis_id, pid=pid, comm=comm, lock=lock, lock_key=lock_key, limit=limit)


@router.get("/locks", response_model=list[models.LockPrimitive])
def lock_table():
    """The sleeping primitives recognised on stacks (what a wait was for, who releases it)."""
    return locks.as_table()
