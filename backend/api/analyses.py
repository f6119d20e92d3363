"""Routes of analyses: upload (one analysis from one or more trace files) and its progress, the list, one analysis
with its sources, and a source's placement on the analysis timeline. Thin: validate, call the store or
backend.queries, return JSON; no SQL here."""
from __future__ import annotations

from typing import Annotated

import duckdb
from fastapi import Depends, HTTPException, Query, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from ..derive import align, chains
from ..queries import analyses, memo
from ..store import IngestError, InputFile, Store
from . import models
from .deps import (
    NOT_FOUND,
    AnalysisId,
    AnalysisRouter,
    Cursor,
    ProgressBoard,
    get_store,
)

router = AnalysisRouter(prefix="/api")

MAX_FILES = 64


class TooLarge(Exception):
    pass


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
    return analyses.analyses(con)


@router.get("/analyses/{analysis_id}", response_model=models.Analysis, responses=NOT_FOUND)
def get_analysis(analysis_id: AnalysisId, con: Cursor):
    """An analysis, its sources (with what was skipped) and its time span."""
    return analyses.with_span(con, analyses.analysis(con, analysis_id))


@router.patch("/analyses/{analysis_id}/sources/{source_id}", response_model=models.SourceDetail,
              responses={**NOT_FOUND, 409: {"model": models.ErrorBody}, 422: {"model": models.ErrorBody}})
def place_source(analysis_id: AnalysisId, source_id: int, body: models.SourcePlacement, con: Cursor,
                 request: Request):
    """Place a source on the analysis timeline: set its clock offset (ns), or give it the same span as another
    source. The chains are linked again to block requests with the new times. Kept in the analysis, for every
    link to it."""
    if (body.clock_offset_ns is None) == (body.same_span_as is None):
        raise HTTPException(422, "give exactly one of clock_offset_ns (ns) or same_span_as (a source id)")
    con.begin()
    try:
        align.set_offset(con, analysis_id, source_id, body.clock_offset_ns, body.same_span_as)
        chains.relink(con, analysis_id)
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
    return analyses.sources(con, analysis_id, source_id)[0]

