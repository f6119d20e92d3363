"""The bare transfer of `make bench`'s server part: an endpoint that only reads an upload's body.

    python -m bench.sink --port PORT

Served as `stallscope serve` serves the app (backend.server.config: uvicorn, httptools, the same limits, and the same
malloc settings, which a Store sets in its process: memory.return_freed_blocks), POST /sink reads the request body to
its end as it comes (request.stream(), as the upload route does) and answers its byte count: the time to send the same
multipart bytes here is what the wire costs, and `drop to view` is compared with it. Without those malloc settings
every 256 KiB piece of the body was a fresh mapping: the sink used 2.2 s of CPU per GiB instead of ~0.5 and the bare
transfer of 1 GiB took 2.2 s instead of ~1.75 (a baseline slower than the server's own receiving).
"""

from __future__ import annotations

import argparse

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from backend.limits import Limits
from backend.memory import return_freed_blocks
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
    return_freed_blocks()
    serve(app, "127.0.0.1", a.port, Limits())


if __name__ == "__main__":
    main()
