"""Dependencies of the routes, as named Annotated aliases."""

from __future__ import annotations

import functools
import inspect
import secrets
import threading
from collections import OrderedDict
from typing import Annotated, AsyncIterator, Iterator

from fastapi import APIRouter, Depends, HTTPException, Path, Query, Request
from fastapi.routing import APIRoute
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from .. import access
from ..cache import AnalysisCache
from ..db import Connection
from ..limits import TIME_MAX, TIME_MIN
from ..queries.catalogue import catalogue
from ..store import Progress, Store
from .models import ErrorBody

# The dependencies below that only look something up are coroutines: FastAPI calls a plain function dependency in a
# worker thread, a hop there and back through the event loop for each, which cost a busy server's reads ~10 % of its
# interpreter lock (py-spy, docs/BENCHMARKS.md "Reads under ingest"). The routes themselves run in threads.


async def get_store(request: Request) -> Store:
    return request.app.state.store


async def get_cursor(request: Request) -> AsyncIterator[Connection]:
    """A cursor of its own for each request: DuckDB connections are not shared across threads. (Opening and closing
    one waits for nothing: no query runs in either.)"""
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


async def get_board(request: Request) -> Board:
    return request.app.state.progress


Cursor = Annotated[Connection, Depends(get_cursor)]


async def get_cache(request: Request) -> AnalysisCache:
    """What the app remembers of each analysis (backend/cache/): the queries read and keep their answers there."""
    return request.app.state.cache


Cache = Annotated[AnalysisCache, Depends(get_cache)]
ProgressBoard = Annotated[Board, Depends(get_board)]


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


def get_access(request: Request) -> access.Access:
    return request.app.state.access


async def has_token(request: Request, _: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> bool:
    """The request carries this server's token (always False where none is set)."""
    return get_access(request).token_ok(request.headers.get("authorization"))


def refuse_without_token(request: Request, token: bool) -> None:
    """On a shared server (STALLSCOPE_TOKEN set): the token, else 401."""
    if get_access(request).shared and not token:
        raise HTTPException(
            401,
            "this server needs its token: send `Authorization: Bearer <token>` (the home page's"
            " Sign in keeps it in this browser)",
            headers={"WWW-Authenticate": "Bearer"},
        )


async def require_token(request: Request, token: Annotated[bool, Depends(has_token)]) -> None:
    refuse_without_token(request, token)


def require_edit(
    request: Request,
    token: Annotated[bool, Depends(has_token)],
    key: Annotated[str | None, Depends(_edit_key)],
    con: Annotated[Connection, Depends(get_cursor)],
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


def require_analysis(con: Connection, cache: AnalysisCache, analysis_id: str) -> dict:
    """The analysis (id, name, created_at), or a 404 that says so (from its catalogue: kept once found)."""
    found = catalogue(con, cache, analysis_id)
    if found is None:
        raise HTTPException(404, f"no analysis with id {analysis_id!r}: it may have been mistyped or deleted")
    return {"id": found.id, "name": found.name, "created_at": found.created_at}


AnalysisId = Annotated[str, "analysis id"]  # the path's analysis_id: an AnalysisRouter's route finds it first


class DeclaredErrors(APIRoute):
    """A route whose OpenAPI responses declare its errors (error_responses): what it answers depends on its
    parameters and dependencies, known once FastAPI has read them, so the route is made again with them."""

    def __init__(self, path: str, endpoint, *, responses: dict | None = None, **kwargs) -> None:
        super().__init__(path, endpoint, responses=responses, **kwargs)
        if self.include_in_schema:
            super().__init__(path, endpoint, responses=error_responses(self, responses or {}), **kwargs)


class AnalysisRouter(APIRouter):
    """The router of a resource of analyses: a route whose path holds {analysis_id} runs only once the analysis is
    found, else answers 404 (require_analysis, on the route's cursor `con`). The check comes after FastAPI has
    validated the request's parameters, so a malformed request is a 422 whether or not the analysis exists.

    Each route's errors are declared in the OpenAPI document from what the route is (DeclaredErrors): every error
    the app answers has one body, ErrorBody (backend/app.py). A route's `responses` name only its own reasons
    ({status: {"description": ...}}), added to those."""

    def __init__(self, **kwargs) -> None:
        super().__init__(route_class=DeclaredErrors, **kwargs)

    def add_api_route(self, path: str, endpoint, **kwargs) -> None:
        if "{analysis_id}" in path:
            endpoint = _after_finding_analysis(endpoint)
        super().add_api_route(path, endpoint, **kwargs)


def _calls(dependant) -> Iterator:
    yield dependant
    for sub in dependant.dependencies:
        yield from _calls(sub)


# why a route answers each status, by what it is
HOST = "the Host header does not name this server (STALLSCOPE_ALLOWED_HOSTS)"
ORIGIN = "a page of another origin may not change anything here"
MALFORMED = "a parameter or the body is missing or malformed (`errors` says which)"
TOO_MANY_ROWS = "the result has more rows than its cap"
NO_ANALYSIS = "no analysis with this id"
BODY_TIMEOUT = "the request body stopped arriving (STALLSCOPE_BODY_TIMEOUT) and was dropped"
QUERY_TIMEOUT = "a query ran past its time limit (STALLSCOPE_QUERY_SECONDS) and was stopped"
DEFECT = "a defect: the answer names a reference to quote; the server's log has the details"
TOKEN = "this server needs its token (STALLSCOPE_TOKEN)"
EDIT_KEY = "this server needs its token (STALLSCOPE_TOKEN) or the analysis' edit key"
WRONG_EDIT_KEY = "the edit key given is not this analysis'"
CHALLENGE = {"WWW-Authenticate": {"required": True, "schema": {"type": "string", "const": "Bearer"}}}


def error_responses(route, own: dict) -> dict:
    """The OpenAPI responses of a route: its own (a 2xx, and the reasons of its errors it names) and the errors it
    answers by what it is: any request a Host refused (400) or a defect (500); a state-changing one a page of
    another origin (403, backend/access.py); a request with parameters or a body, malformed (422); a body that
    stops arriving (408, backend/limits.py); a read of the database, too long or too large (503, 422:
    queries/run.py); an analysis in the path, unknown (404); a token or an edit key, missing or wrong (401, 403).
    Every error status gets the body ErrorBody, as JSON whatever the route's success is."""
    dependant = route.dependant
    deps = [d.call for d in _calls(dependant)]
    takes_params = any(d.path_params or d.query_params or d.header_params or d.cookie_params for d in _calls(dependant))
    has_body = route.body_field is not None
    reads = get_cursor in deps
    why: dict[int, list[str]] = {400: [HOST], 500: [DEFECT]}
    if route.methods - set(access.SAFE_METHODS):
        why.setdefault(403, []).append(ORIGIN)
    if takes_params or has_body:
        why.setdefault(422, []).append(MALFORMED)
    if has_body:
        why.setdefault(408, []).append(BODY_TIMEOUT)
    if reads:
        why.setdefault(422, []).append(TOO_MANY_ROWS)
        why.setdefault(503, []).append(QUERY_TIMEOUT)
    if "{analysis_id}" in route.path:
        why.setdefault(404, []).append(NO_ANALYSIS)
    if require_edit in deps:
        why.setdefault(401, []).append(EDIT_KEY)
        why.setdefault(403, []).append(WRONG_EDIT_KEY)
    elif has_token in deps:
        why.setdefault(401, []).append(TOKEN)
    responses = {k: dict(v) for k, v in own.items()}
    for status, reasons in why.items():
        responses.setdefault(status, {})
    for status, response in responses.items():
        if int(status) < 400:
            continue
        if response.get("model") is not ErrorBody:
            assert "model" not in response and "content" not in response, f"{route.path}: {status} is an ErrorBody"
        reasons = [response["description"]] if response.get("description") else []
        reasons += [r for r in why.get(int(status), ()) if not any(r in known for known in reasons)]
        response.update(model=ErrorBody, description="; or ".join(reasons))
        if int(status) == 401:
            response.setdefault("headers", {}).update(CHALLENGE)
    response_class = getattr(route.response_class, "value", route.response_class)  # FastAPI's Default(JSONResponse)
    media_type = response_class.media_type
    assert media_type in (None, "application/json"), (
        f"{route.path}: FastAPI would declare its errors as {media_type}; use response_class=Response and declare"
        " the success's content in responses[200]"
    )
    return responses


def _after_finding_analysis(endpoint):
    """The endpoint, run once its analysis is found (require_analysis on its `con`, with the app's cache: the
    analysis' catalogue is kept there). FastAPI reads the endpoint's parameters (inspect follows __wrapped__); an
    endpoint that does not take the cache is given it by this wrapper's signature, and the wrapper keeps it."""
    signature = inspect.signature(endpoint)
    gives_cache = "cache" not in signature.parameters

    @functools.wraps(endpoint)
    def found_first(*args, **kwargs):
        cache = kwargs.pop("cache") if gives_cache else kwargs["cache"]
        require_analysis(kwargs["con"], cache, kwargs["analysis_id"])
        return endpoint(*args, **kwargs)

    if gives_cache:
        cache = inspect.Parameter("cache", inspect.Parameter.KEYWORD_ONLY, annotation=Cache)
        found_first.__signature__ = signature.replace(parameters=[*signature.parameters.values(), cache])
    assert not inspect.iscoroutinefunction(endpoint), f"{endpoint.__name__}: an analysis route runs in a thread"
    return found_first
