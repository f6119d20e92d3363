"""Routes of analyses: upload (one analysis from one or more trace files) and its progress, the list, one analysis
with its sources, and a source's placement on the analysis timeline. Thin: validate, call the store or
backend.queries, return JSON; no SQL here."""

from __future__ import annotations

import asyncio
import functools
from typing import Annotated

import duckdb
from fastapi import Depends, HTTPException, Query, Request
from fastapi.responses import JSONResponse, Response
from pydantic import Field
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

from .. import access
from ..derive.pipeline import place_source as derive_placement
from ..ingest import IngestError
from ..ingest.arrivals import Arrivals, ReceiveAborted
from ..limits import RETRY_AFTER_S, BodyTimeout, Busy, Limits, Slot, UploadPace
from ..queries import analyses, first_views, stored
from ..store import Store
from . import models, upload_body
from .deps import (
    AnalysisId,
    AnalysisRouter,
    Cursor,
    EditAllowed,
    PathInt64,
    ProgressBoard,
    TokenRequired,
    get_access,
    get_store,
    has_token,
    refuse_without_token,
)
from .sql import forget_copies

router = AnalysisRouter(prefix="/api")

MAX_FILES = 64
RETRY_AFTER = {"Retry-After": {"description": "seconds", "required": True, "schema": {"type": "integer"}}}


class TooLarge(Exception):
    pass


@router.post(
    "/analyses",
    status_code=201,
    response_model=models.Created,
    dependencies=[TokenRequired],
    responses={
        400: {"description": "the body is not multipart/form-data, or was not received whole"},
        408: {
            "description": "the upload stopped arriving or was too slow (STALLSCOPE_UPLOAD_MIN_RATE) and was dropped"
        },
        413: {"description": "the upload is larger than the limit (STALLSCOPE_MAX_UPLOAD)"},
        422: {"description": "no file could be read as a trace (`files` says why, each)"},
        503: {"description": "the server takes no more uploads now (Retry-After)", "headers": RETRY_AFTER},
    },
)
async def create_analysis(
    request: Request,
    store: Annotated[Store, Depends(get_store)],
    board: ProgressBoard,
    progress: Annotated[str | None, Query(max_length=64, description="a token to poll /api/progress/{token}")] = None,
):
    """Upload one or more trace files (multipart `files`, optional `name`): one analysis is created from them, each
    file parsed as its bytes arrive. The answer holds the analysis' edit key, given this once (needed to change or
    delete it on a shared server)."""
    limits: Limits = request.app.state.limits
    limit = limits.max_upload_bytes
    declared = request.headers.get("content-length")
    declared = int(declared) if declared and declared.isdigit() and len(declared) < 20 else None
    if declared is not None and declared > limit:
        raise HTTPException(413, f"upload of {declared} bytes is larger than the limit of {limit} bytes")
    try:
        slot = request.app.state.uploads.take(client=request.client.host if request.client else None)
    except Busy as e:
        raise HTTPException(503, str(e), headers={"Retry-After": str(RETRY_AFTER_S)})
    prog = board.start(progress)
    arrivals = Arrivals()
    # the ingest reads the files as they arrive, in a thread, while this reads the body (upload_body.py); it frees
    # the slot when it ends, whatever this request does meanwhile
    ingesting = asyncio.get_running_loop().run_in_executor(  # on the app's ingest threads (ingest_pool.py)
        request.app.state.ingests,
        functools.partial(_ingest_and_precompute, store, request.app.state.cache, arrivals, prog, declared or 0, slot),
    )
    try:
        loop = asyncio.get_running_loop()
        pace = UploadPace(limits, loop.time())
        receive = request._receive

        async def counting_receive():
            # at most limits.body_timeout_s each (limits.ReadTimeouts), and the upload must keep its pace
            try:
                message = await asyncio.wait_for(receive(), pace.wait_s(loop.time()))
            except TimeoutError:
                raise pace.too_slow(loop.time()) from None
            pace.seen += len(message.get("body", b""))
            if pace.seen > limit:
                raise TooLarge()
            return message

        request._receive = counting_receive
        try:
            await upload_body.read_parts(
                request.stream(),
                request.headers.get("content-type"),
                arrivals,
                max_files=MAX_FILES,
                max_fields=16,
                spool=slot.count,  # a file sent in pieces is kept on disk as it comes
            )
        except BaseException as e:  # the body is not complete: the ingest stops and writes nothing
            arrivals.abort(ReceiveAborted(f"the upload was not received whole: {e!r}"))
            await _ended(ingesting)
            if isinstance(e, TooLarge):
                prog.update(phase="error", error="too large")
                raise HTTPException(413, f"upload is larger than the limit of {limit} bytes")
            if isinstance(e, BodyTimeout):
                prog.update(phase="error", error="timed out")
            if isinstance(e, upload_body.MalformedBody):
                prog.update(phase="error", error="malformed body")
                raise HTTPException(400, f"could not read the upload as multipart/form-data: {e}")
            if isinstance(e, Busy):  # the pieces kept on disk passed the server's spool limit (limits.py)
                prog.update(phase="error", error="server busy")
                raise HTTPException(503, str(e), headers={"Retry-After": str(RETRY_AFTER_S)})
            if isinstance(e, ClientDisconnect):
                prog.update(phase="error", error="the client went away")
                raise HTTPException(400, "the upload was not received whole: the client went away")
            raise
        arrivals.end()
        try:
            created = await asyncio.shield(ingesting)
        except IngestError as e:
            prog.update(phase="error", error=e.detail)
            return JSONResponse(
                status_code=422,
                content={
                    "detail": e.detail,
                    "files": [
                        {"filename": f.filename, "error": f.message, "line": f.line, "offset": f.offset}
                        for f in e.files
                    ],
                },
            )
        except Busy as e:  # the files copied to disk passed the server's limit (limits.py)
            prog.update(phase="error", error="server busy")
            raise HTTPException(503, str(e), headers={"Retry-After": str(RETRY_AFTER_S)})
        edit_key = access.new_edit_key()
        await run_in_threadpool(_keep_edit_key, store, created["id"], edit_key)
        if request.app.state.warmer:  # once this response is sent (warm.py)
            request.app.state.warmer.add(created["id"])
        return {**created, "edit_key": edit_key}
    finally:
        if not ingesting.done():  # this request was cancelled: the ingest ends (aborted) in its thread
            arrivals.abort(ReceiveAborted("the request was cancelled"))


def _ingest_and_precompute(store, cache, arrivals, prog, bytes_total: int, slot: Slot) -> dict:
    """The upload's ingest, then its first views computed and stored (first_views.precompute: what the page's first
    requests read), in this thread: the response is sent once both are done. The upload's slot is freed when they
    end, however (files copied to disk are counted against it: `spool`)."""
    try:
        created = store.ingest(arrivals, None, prog, bytes_total=bytes_total, spool=slot.count)
        first_views.precompute(store.db, cache, created["id"])
        return created
    finally:
        slot.release()


async def _ended(ingesting: asyncio.Future) -> None:
    """Waits for an aborted ingest to end (it deletes what it staged), whatever it raised."""
    try:
        await asyncio.shield(ingesting)
    except BaseException:  # noqa: BLE001 - the abort's own consequence
        pass


def _keep_edit_key(store: Store, analysis_id: str, key: str) -> None:
    con = store.cursor()
    try:
        access.keep_edit_key(con, analysis_id, key)
    finally:
        con.close()


@router.get(
    "/progress/{token}",
    response_model=models.IngestProgress,
    responses={404: {"description": "no upload in progress with this token"}},
)
def get_progress(token: str, board: ProgressBoard):
    """How far the upload that was sent with ?progress=token has got."""
    prog = board.get(token)
    if prog is None:
        raise HTTPException(404, f"no upload in progress with token {token!r}")
    return prog.as_dict()


@router.get("/analyses", response_model=list[models.AnalysisItem])
def list_analyses(
    con: Cursor,
    request: Request,
    id: Annotated[
        list[Annotated[str, Field(max_length=64)]] | None,
        Query(max_length=500, description="only these analyses (those this browser created): no token needed"),
    ] = None,
    token: Annotated[bool, Depends(has_token)] = False,
):
    """Every analysis, newest first; or, with `id=...&id=...`, those of them that exist. On a shared server
    (STALLSCOPE_TOKEN set) the whole list needs the token: an analysis is read by whoever has its link, not found
    by browsing."""
    if id is None and get_access(request).shared and not token:
        refuse_without_token(request, token)
    return analyses.analyses(con, id)


@router.get("/analyses/{analysis_id}", response_model=models.Analysis)
def get_analysis(analysis_id: AnalysisId, con: Cursor):
    """An analysis, its sources (with what was skipped) and its time span."""
    return analyses.with_span(con, analyses.analysis(con, analysis_id))


@router.patch(
    "/analyses/{analysis_id}/sources/{source_id}",
    response_model=models.SourceDetail,
    dependencies=[EditAllowed],
    responses={
        404: {"description": "no analysis with this id, or no such source in it"},
        409: {"description": "the analysis was changed by another request at the same time: try again"},
        422: {"description": "not exactly one of clock_offset_ns and same_span_as, or a placement out of range"},
    },
)
def place_source(
    analysis_id: AnalysisId, source_id: PathInt64, body: models.SourcePlacement, con: Cursor, request: Request
):
    """Place a source on the analysis timeline: set its clock offset (ns), or give it the same span as another
    source. The chains are linked again to block requests with the new times. Kept in the analysis, for every
    link to it."""
    if (body.clock_offset_ns is None) == (body.same_span_as is None):
        raise HTTPException(422, "give exactly one of clock_offset_ns (ns) or same_span_as (a source id)")
    con.begin()
    try:
        derive_placement(con, analysis_id, source_id, body.clock_offset_ns, body.same_span_as)
        stored.drop_timed(con, analysis_id)  # the first views that hold times or chains (queries/stored.py)
        con.commit()
        request.app.state.cache.forget(analysis_id)  # everything kept with the old offsets or chains
        if request.app.state.warmer:  # its first views precomputed again, once this response is sent (warm.py)
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
    return analyses.sources(con, analysis_id, source_id)[0]


@router.delete(
    "/analyses/{analysis_id}",
    status_code=204,
    response_class=Response,
    dependencies=[EditAllowed],
    responses={204: {"description": "deleted"}},
)
def delete_analysis(analysis_id: AnalysisId, con: Cursor, request: Request):  # con: the router checks it exists
    """Delete an analysis and all its rows; their space is reused by the next uploads, and given back to the system
    when the server next starts (backend/disk.py). Needs its edit key or the token on a shared server."""
    request.app.state.store.delete_analysis(analysis_id)
    request.app.state.cache.forget(analysis_id)
    forget_copies(request, analysis_id)  # the SQL console's copy of its rows
    return Response(status_code=204)
