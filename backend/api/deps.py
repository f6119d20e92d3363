"""Dependencies of the routes, as named Annotated aliases."""

from __future__ import annotations

import functools
import inspect
import secrets
import threading
from collections import OrderedDict
from typing import Annotated, Iterator

import duckdb
from fastapi import APIRouter, Depends, HTTPException, Path, Query, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from .. import access
from ..limits import TIME_MAX, TIME_MIN
from ..queries import analyses
from ..store import Progress, Store
from .models import ErrorBody


def get_store(request: Request) -> Store:
    return request.app.state.store


def get_cursor(request: Request) -> Iterator[duckdb.DuckDBPyConnection]:
    """A cursor of its own for each request: DuckDB connections are not shared across threads."""
    con = request.app.state.store.cursor()
    try:
        yield con
    finally:
        con.close()


class Board:
    """Progress of the uploads in flight, by the token the client chose (bounded: oldest forgotten)."""

    def __init__(self, keep: int = 256):
        self._items: OrderedDict[str, Progress] = OrderedDict()
        self._lock = threading.Lock()
        self._keep = keep

    def start(self, token: str | None) -> Progress:
        prog = Progress()
        with self._lock:
            self._items[token or secrets.token_urlsafe(8)] = prog
            while len(self._items) > self._keep:
                self._items.popitem(last=False)
        return prog

    def get(self, token: str) -> Progress | None:
        with self._lock:
            return self._items.get(token)


def get_board(request: Request) -> Board:
    return request.app.state.progress


Cursor = Annotated[duckdb.DuckDBPyConnection, Depends(get_cursor)]
ProgressBoard = Annotated[Board, Depends(get_board)]


NOT_FOUND = {404: {"model": ErrorBody, "description": "no analysis with this id"}}
TimeFilter = Annotated[
    int | None, Query(ge=TIME_MIN, le=TIME_MAX, description="ns, on the analysis timeline (within ±2^62)")
]
INT64 = (1 << 63) - 1
Int64 = Annotated[int, Query(ge=-INT64, le=INT64)]  # ids and numbers the database holds as BIGINT
OptionalInt64 = Annotated[int | None, Query(ge=-INT64, le=INT64)]
PathInt64 = Annotated[int, Path(ge=-INT64, le=INT64)]


# ---- access (backend/access.py) ----------------------------------------------------------------------------------

_bearer = HTTPBearer(auto_error=False, description="STALLSCOPE_TOKEN, on a server that sets one")
_edit_key = APIKeyHeader(
    name=access.EDIT_KEY_HEADER, auto_error=False, description="the edit key returned when the analysis was created"
)
UNAUTHORIZED = {401: {"model": ErrorBody, "description": "this server needs its token (STALLSCOPE_TOKEN)"}}
FORBIDDEN = {403: {"model": ErrorBody, "description": "neither the token nor this analysis' edit key was given"}}


def get_access(request: Request) -> access.Access:
    return request.app.state.access


def has_token(request: Request, _: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> bool:
    """The request carries this server's token (always False where none is set)."""
    return get_access(request).token_ok(request.headers.get("authorization"))


def require_token(request: Request, token: Annotated[bool, Depends(has_token)]) -> None:
    """On a shared server (STALLSCOPE_TOKEN set): the token, else 401."""
    if get_access(request).shared and not token:
        raise HTTPException(
            401,
            "this server needs its token: send `Authorization: Bearer <token>` (the home page's"
            " Sign in keeps it in this browser)",
            headers={"WWW-Authenticate": "Bearer"},
        )


def require_edit(
    request: Request,
    token: Annotated[bool, Depends(has_token)],
    key: Annotated[str | None, Depends(_edit_key)],
    con: Annotated[duckdb.DuckDBPyConnection, Depends(get_cursor)],
) -> None:
    """On a shared server: the token, or the edit key of the path's analysis, else 401 (none given) or 403."""
    if not get_access(request).shared or token:
        return
    analysis_id = request.path_params.get("analysis_id", "")
    if key and access.edit_key_ok(con, analysis_id, key):
        return
    if not key:
        raise HTTPException(
            401,
            f"changing an analysis needs its edit key (header {access.EDIT_KEY_HEADER}, kept by"
            " the browser that uploaded it) or the server's token",
            headers={"WWW-Authenticate": "Bearer"},
        )
    raise HTTPException(403, "this edit key is not the one of this analysis")


TokenRequired = Depends(require_token)
EditAllowed = Depends(require_edit)


def require_analysis(con: duckdb.DuckDBPyConnection, analysis_id: str) -> dict:
    """The analysis (id, name, created_at), or a 404 that says so."""
    found = analyses.analysis(con, analysis_id)
    if found is None:
        raise HTTPException(404, f"no analysis with id {analysis_id!r}: it may have been mistyped or deleted")
    return found


AnalysisId = Annotated[str, "analysis id"]  # the path's analysis_id: an AnalysisRouter's route finds it first


class AnalysisRouter(APIRouter):
    """The router of a resource of analyses: a route whose path holds {analysis_id} runs only once the analysis is
    found, else answers 404 (require_analysis, on the route's cursor `con`). The check comes after FastAPI has
    validated the request's parameters, so a malformed request is a 422 whether or not the analysis exists."""

    def add_api_route(self, path: str, endpoint, **kwargs) -> None:
        if "{analysis_id}" in path:
            endpoint = _after_finding_analysis(endpoint)
        super().add_api_route(path, endpoint, **kwargs)


def _after_finding_analysis(endpoint):
    @functools.wraps(endpoint)  # FastAPI reads the parameters of `endpoint` (inspect follows __wrapped__)
    def found_first(*args, **kwargs):
        require_analysis(kwargs["con"], kwargs["analysis_id"])
        return endpoint(*args, **kwargs)

    assert not inspect.iscoroutinefunction(endpoint), f"{endpoint.__name__}: an analysis route runs in a thread"
    return found_first
