"""Routes that take an analysis elsewhere: every documented view as Parquet or CSV (streamed, every row), the whole
analysis as a Perfetto / Chrome JSON trace, and a chain as a bug report's text."""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import HTTPException, Path, Request
from fastapi.responses import PlainTextResponse, Response, StreamingResponse

from ..queries import analyses as analysis_queries
from ..queries import export as export_queries
from ..queries import perfetto, report, views
from .deps import INT64, AnalysisId, AnalysisRouter, Cache, Cursor

router = AnalysisRouter(prefix="/api")

_VIEW_FILE = re.compile(r"^([a-z_]+)\.(parquet|csv)$")


def _download_name(name: str, suffix: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-")[:80] or "analysis"
    return f"{stem}-{suffix}"


def _attachment(filename: str) -> dict:
    return {"Content-Disposition": f'attachment; filename="{filename}"', "Cache-Control": "no-store"}


@router.get(
    "/analyses/{analysis_id}/export/perfetto.json",
    responses={200: {"content": {"application/json": {}}, "description": "Chrome JSON trace events"}},
    response_class=StreamingResponse,
)
def export_perfetto(analysis_id: AnalysisId, con: Cursor, request: Request):
    """The analysis as a Chrome JSON trace for ui.perfetto.dev or trace_processor: tasks as threads with their
    calls and waits as slices, block requests as async slices per device with their phases, chains as flows."""
    name = analysis_queries.analysis(con, analysis_id)["name"]
    body = perfetto.stream(request.app.state.store.cursor(), analysis_id, name)
    return StreamingResponse(body, media_type="application/json",
                             headers=_attachment(_download_name(name, "perfetto.json")))  # fmt: skip


@router.get(
    "/analyses/{analysis_id}/export/{filename}",
    responses={
        200: {"content": {f: {} for f in export_queries.FORMATS.values()}, "description": "every row of the view"},
        404: {"description": "no analysis with this id, or no such view"},
    },
    response_class=StreamingResponse,
)
def export_view(
    analysis_id: AnalysisId,
    con: Cursor,
    request: Request,
    filename: Annotated[str, Path(description="VIEW.parquet or VIEW.csv, VIEW one of GET /api/sql/views")],
):
    """Every row of a view of the analysis (requests, waits, calls, ... as GET /api/sql/views lists them), streamed:
    no row limit. CSV: a list column's items joined by ';'."""
    m = _VIEW_FILE.match(filename)
    if not m or m.group(1) not in views.BY_NAME:
        raise HTTPException(
            404, f"no export {filename!r}: ask for VIEW.parquet or VIEW.csv, VIEW one of {', '.join(views.BY_NAME)}"
        )
    view, fmt = m.groups()
    name = analysis_queries.analysis(con, analysis_id)["name"]
    body = export_queries.stream(request.app.state.store.cursor(), analysis_id, view, fmt)
    return StreamingResponse(body, media_type=export_queries.FORMATS[fmt],
                             headers=_attachment(_download_name(name, filename)))  # fmt: skip


@router.get(
    "/analyses/{analysis_id}/chains/{rank}/report.txt",
    response_class=Response,  # the errors are JSON (ErrorBody), the report text
    responses={
        200: {"content": {"text/plain": {"schema": {"type": "string"}}}, "description": "the report, ASCII"},
        404: {"description": "no analysis with this id, or no chain of this rank"},
    },
)
def chain_report(analysis_id: AnalysisId, con: Cursor, cache: Cache, rank: Annotated[int, Path(ge=1, le=INT64)]):
    """A chain of waits as plain ASCII text of at most 80 columns, for a bug report: the tasks, pids, locks and
    durations, each link's stack and evidence (trace line numbers), the block request with its phases."""
    text = report.chain_report(con, cache, analysis_id, rank)
    if text is None:
        raise HTTPException(404, f"no chain of rank {rank} in this analysis")
    return PlainTextResponse(text)
