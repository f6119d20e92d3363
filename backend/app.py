"""The FastAPI application: the JSON API under /api and the built frontend at / (with /a/<id> links)."""

from __future__ import annotations

import dataclasses
import logging
import secrets
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from . import disk
from .access import Access, HostAndOrigin
from .api import analyses, capabilities, compare, export, heatmaps, offcpu, requests, sql, stalls, timeline
from .api.deps import Board
from .api.models import ErrorBody
from .cache import AnalysisCache, ResponseCache
from .headers import SecurityHeaders
from .ingest_pool import ingest_pool
from .limits import BodyTimeout, Limits, ReadTimeouts, UploadSlots
from .queries.run import QueryTimeout, TooManyRows
from .queries.sql import Console
from .store import Store
from .warm import CountRequests, Warmer

# a router per resource
ROUTERS = (analyses, requests, timeline, stalls, heatmaps, offcpu, sql, export, capabilities, compare)

FRONTEND_DIST = Path(__file__).resolve().parent.parent / "frontend" / "dist"
log = logging.getLogger("stallscope")


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(x) for x in err.get("loc", ()) if x not in ("query", "path", "body"))
        parts.append(f"{where}: {err.get('msg')}" if where else str(err.get("msg")))
    return "invalid request: " + "; ".join(parts)


def error(status: int, detail: str, headers: dict | None = None, **more) -> JSONResponse:
    """An error answer: its body an ErrorBody (backend/api/models.py), as every error of the API is."""
    return JSONResponse(ErrorBody(detail=detail, **more).model_dump(exclude_none=True), status, headers=headers)


def _methods_at(path: str) -> set[str]:
    """The methods the API answers at a path: those of its routes that match it (whatever their method)."""
    methods = {m for resource in ROUTERS for r in resource.router.routes if r.path_regex.match(path) for m in r.methods}
    return methods | {"OPTIONS"} if methods else methods


def _allow(methods: set[str]) -> str:
    return ", ".join(sorted(methods))


def create_app(
    store: Store,
    *,
    max_upload_bytes: int | None = None,
    static_dir: Path = FRONTEND_DIST,
    warm: bool = True,
    access: Access | None = None,
    limits: Limits | None = None,
) -> FastAPI:
    """warm: while the app runs (between its startup and shutdown), fill the caches of the newest analyses and of
    each new one in the background (backend/warm.py). access (who may do what, backend/access.py) and limits (what
    the server takes at once, backend/limits.py) default to the environment's settings. What the app remembers of
    each analysis is one AnalysisCache (backend/cache/), app.state.cache."""
    cache = AnalysisCache()
    warmer = Warmer(store, cache) if warm else None
    days = disk.retention_days()
    retention = disk.Retention(store, days, on_delete=cache.forget) if days else None
    access = access or Access.from_env()
    limits = limits or Limits.from_env(max_upload_bytes=max_upload_bytes)
    if access.shared and not limits.one_upload_per_client:  # a team's server: one upload per client address
        limits = dataclasses.replace(limits, one_upload_per_client=True)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        if warmer:
            warmer.start()
        if retention:
            retention.start()
        # the SQL console's worker processes (backend/queries/sql_pool.py): started on the first query, stopped here
        app.state.sql_console = Console(store.path)
        yield
        app.state.sql_console.close()
        app.state.sql_console = None
        if retention:
            retention.stop()
        if warmer:
            warmer.stop()
        app.state.ingests.shutdown(wait=True, cancel_futures=True)

    app = FastAPI(
        title="Stallscope",
        version="0.1.0",
        description="Explains Linux latency stalls from raw kernel traces. All times are integer nanoseconds.",
        lifespan=lifespan,
    )
    app.state.store = store
    app.state.cache = cache
    app.state.warmer = warmer
    app.state.access = access
    app.state.limits = limits
    app.state.uploads = UploadSlots(limits)
    app.state.ingests = ingest_pool(limits.max_uploads, limits.ingest_nice)  # the uploads' analysis threads
    app.state.sql_console = None  # the lifespan's
    if warmer:
        app.add_middleware(CountRequests, warmer=warmer)
    app.add_middleware(
        ResponseCache, cache=cache
    )  # outside CountRequests: a body sent again does not hold the warm-up back
    app.add_middleware(ReadTimeouts, limits=limits)
    app.add_middleware(HostAndOrigin, access=access)  # before any route runs; its refusals get the headers below
    app.add_middleware(SecurityHeaders)  # added last: the outermost, so every response (errors too) gets them
    app.state.max_upload_bytes = limits.max_upload_bytes
    app.state.progress = Board()
    for resource in ROUTERS:
        app.include_router(resource.router)

    # every error is an ErrorBody (the OpenAPI document declares it on every operation: backend/api/deps.py)
    @app.exception_handler(StarletteHTTPException)  # FastAPI's HTTPException too, and Starlette's 404s and 405s
    async def http_error(request: Request, exc: StarletteHTTPException):
        headers = dict(exc.headers or {})
        path = request.scope["path"]
        if exc.status_code == 405 and path.startswith("/api/"):  # every method at the path, not the first route's
            methods = _methods_at(path)
            if not methods:  # only the catch-all (api_not_found) matched
                return error(404, f"no API endpoint {path}; see /docs")
            headers["Allow"] = _allow(methods)
        return error(exc.status_code, str(exc.detail), headers)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_: Request, exc: RequestValidationError):
        errors = [
            {"loc": list(e.get("loc", ())), "msg": str(e.get("msg")), "type": str(e.get("type"))} for e in exc.errors()
        ]
        return error(422, _validation_message(exc), errors=errors)

    @app.exception_handler(BodyTimeout)
    async def body_timeout(_: Request, exc: BodyTimeout):
        return error(408, str(exc), {"Connection": "close"})

    @app.exception_handler(QueryTimeout)
    @app.exception_handler(TooManyRows)
    async def query_limit(_: Request, exc: QueryTimeout | TooManyRows):  # a read stopped by its limits (queries/run.py)
        return error(exc.status, str(exc))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception):
        """A defect: the answer names an id to quote, nothing of the internals (they go to the server's log)."""
        ref = secrets.token_hex(6)
        log.error("internal error %s on %s %s", ref, request.method, request.url.path, exc_info=exc)
        return error(500, f"internal error (reference {ref}): the server's log has the details")

    @app.get("/api/{rest:path}", include_in_schema=False)
    def api_not_found(rest: str):
        raise HTTPException(404, f"no API endpoint /api/{rest}; see /docs")

    @app.options("/api/{rest:path}", include_in_schema=False)
    def api_options(rest: str, request: Request):
        """The methods of an endpoint (Allow): those its OpenAPI operations list, with HEAD and OPTIONS."""
        methods = _methods_at(request.scope["path"])
        if not methods:
            raise HTTPException(404, f"no API endpoint /api/{rest}; see /docs")
        return Response(status_code=204, headers={"Allow": _allow(methods)})

    index = static_dir / "index.html"
    if (static_dir / "assets").is_dir():
        app.mount("/assets", StaticFiles(directory=static_dir / "assets"), name="assets")

    @app.get("/", include_in_schema=False)
    @app.get("/a/{analysis_id}", include_in_schema=False)
    @app.get("/compare", include_in_schema=False)
    def spa(analysis_id: str | None = None):
        if not index.is_file():
            raise HTTPException(503, "the web UI is not built: run `make build` (or `npm run build`) first")
        return FileResponse(index, headers={"Cache-Control": "no-cache"})

    return app
