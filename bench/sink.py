"""The bare transfer of `make bench`'s server part: an endpoint that only reads an upload's body.

    python -m bench.sink --port PORT

Served as `stallscope serve` serves the app (backend.server.config: uvicorn, h11, the same limits), POST /sink reads
the request body to its end as it comes (request.stream(), as the upload route does) and answers its byte count: the
time to send the same multipart bytes here is what the wire costs, and `drop to view` is compared with it.
"""
from __future__ import annotations

import argparse

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from backend.limits import Limits
from backend.server import serve


async def sink(request: Request) -> JSONResponse:
    n = 0
    async for piece in request.stream():
        n += len(piece)
    return JSONResponse({"bytes": n})


async def ready(_: Request) -> JSONResponse:
    return JSONResponse([])


app = Starlette(routes=[Route("/sink", sink, methods=["POST"]), Route("/api/analyses", ready)])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True)
    a = ap.parse_args()
    serve(app, "127.0.0.1", a.port, Limits())


if __name__ == "__main__":
    main()
