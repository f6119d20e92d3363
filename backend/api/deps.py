"""Dependencies of the routes, as named Annotated aliases."""

from __future__ import annotations

import functools
import inspect
import secrets
import threading
from collections import OrderedDict
from typing import Annotated, Iterator

import duckdb
from fastapi import APIRouter, Depends, HTTPException, Query, Request

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
TimeFilter = Annotated[int | None, Query(description="ns, on the analysis timeline")]


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
