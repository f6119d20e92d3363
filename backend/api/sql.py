"""Routes of the SQL console: one SELECT over an analysis' documented views, in a sandbox (backend/queries/sql.py),
and the list of those views with their columns.

The query is a POST (its text may be long) but changes nothing: the same-origin rule of state-changing requests
(backend/access.py) applies to it as to any POST, and reading needs only the analysis' link, as every GET does.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import HTTPException, Request, Response
from pydantic import BaseModel, Field

from ..queries import sql as sql_queries
from .deps import AnalysisId, AnalysisRouter, Cursor


def console(request: Request) -> sql_queries.Console:
    """The app's SQL console: made by the app's lifespan (backend/app.py), its workers stopped at shutdown."""
    found = getattr(request.app.state, "sql_console", None)
    if found is None:
        raise HTTPException(503, "the SQL console is not running (the server is starting or stopping)")
    return found


def forget_copies(request: Request, analysis_id: str) -> None:
    """The console's copies of a deleted analysis: deleted (and closed by its workers)."""
    found = getattr(request.app.state, "sql_console", None)
    if found is not None:
        found.forget(analysis_id)
    else:
        sql_queries.delete_copies(request.app.state.store.path, analysis_id)


router = AnalysisRouter(prefix="/api")


class QueryIn(BaseModel):
    sql: Annotated[str, Field(max_length=100_000, description="one SELECT over the views of GET /api/sql/views")]
    max_rows: Annotated[int, Field(ge=1, le=sql_queries.MAX_ROWS_LIMIT)] = sql_queries.MAX_ROWS


class Column(BaseModel):
    name: str
    type: str = Field(description="DuckDB's name of the type: BIGINT, VARCHAR, VARCHAR[], DECIMAL(18,3), ...")


class QueryResult(BaseModel):
    columns: list[Column]
    rows: list[list[Any]] = Field(
        description="one array per row, values in the order of columns, each exactly: a value JSON cannot hold"
        " exactly (an infinite or out-of-range date, NaN, an integer past 64 bits, a decimal of more than 15 digits,"
        " an interval) comes as the text DuckDB writes for it; the column's type says what it is"
    )
    truncated: bool = Field(
        description="the result had more rows than max_rows, or its rows more than the console's byte cap (16 MiB):"
        " the first ones are here"
    )
    elapsed_ms: float


class ViewDoc(BaseModel):
    name: str
    about: str
    columns: list[Column]


QUERY_ERRORS = {
    400: {"description": "not one SELECT, or DuckDB refused it (its message)"},
    403: {"description": "a file, network or extension access, or the server's settings or files: not available here"},
    503: {"description": "stopped at the time, memory or CPU limit, or the console is busy"},
}


@router.post("/analyses/{analysis_id}/query", response_model=QueryResult, responses=QUERY_ERRORS)
def run_query(analysis_id: AnalysisId, con: Cursor, body: QueryIn, request: Request):
    """Runs one SELECT over the analysis' views (requests, waits, calls, chains, links, ... as GET /api/sql/views
    lists them; times in ns on the analysis timeline) in a sandbox: no file, network or extension access, only this
    analysis' rows, a time limit, a memory limit and a row cap."""
    try:
        answer = console(request).answer(con, analysis_id, body.sql, body.max_rows)
    except sql_queries.SqlError as e:
        raise HTTPException(e.status, str(e)) from e
    return Response(answer, media_type="application/json")


@router.get("/sql/views", response_model=list[ViewDoc])
def list_views(con: Cursor):
    """The views the SQL console reads, what each holds, and their columns."""
    return sql_queries.catalog(con)
