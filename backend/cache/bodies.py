"""Response bodies of an analysis' reads, kept and sent again without running the route.

An analysis' rows do not change after its ingest, except when a clock offset is set (PATCH) or it is deleted; both,
and the retention's deletions, call `AnalysisCache.forget`, which moves the analysis to a new generation. So the body
of a `GET /api/analyses/<id>[/...]` that answered 200 is kept under (path, query string) with the generation it was
computed in, and sent as it was while the generation is the same: no thread, no query, no JSON serialisation. A read
that began before a change is kept under the old generation, so it is never sent after the change. Reads of an
analysis need only its link (docs/SECURITY.md), so one body serves every client. A query naming another analysis (a
flame graph diff's `b_analysis`) is kept under that one's generation too: every query value is taken for an id.
Budget: max_bytes in all, bodies up to max_body each (larger ones, such as exports, are not kept), least recently
used dropped first.

Why: under uploads, 30 readers of analysis pages waited ~430 ms per read on average (docs/BENCHMARKS.md, issue 24),
mostly re-running the same reads; a page's reads repeat per viewer and per tab switch.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Message, Receive, Scope, Send

if TYPE_CHECKING:
    from .analysis_cache import AnalysisCache

PREFIX = "/api/analyses/"
KEPT_HEADERS = (b"content-type", b"content-length", b"content-disposition")


class Bodies:
    """The kept bodies: (analysis id, method, path, query string) -> (generation, status, headers, body)."""

    def __init__(self, max_bytes: int, max_body: int):
        self.max_bytes, self.max_body = max_bytes, max_body
        self._items: OrderedDict[tuple, tuple[tuple, int, list, bytes]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def find(self, key: tuple, generation: tuple) -> tuple[int, list, bytes] | None:
        with self._lock:
            hit = self._items.get(key)
            if hit is None or hit[0] != generation:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return hit[1:]

    def keep(self, key: tuple, generation: tuple, status: int, headers: list, body: bytes) -> None:
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= len(old[3])
            self._items[key] = (generation, status, headers, body)
            self._bytes += len(body)
            while self._items and self._bytes > self.max_bytes:
                self._bytes -= len(self._items.popitem(last=False)[1][3])

    def forget(self, analysis_id: str | None) -> None:
        with self._lock:
            for key in [k for k in self._items if analysis_id is None or k[0] == analysis_id]:
                self._bytes -= len(self._items.pop(key)[3])

    def used_bytes(self) -> int:
        return self._bytes

    def count(self, analysis_id: str) -> int:
        with self._lock:
            return sum(1 for k in self._items if k[0] == analysis_id)


class ResponseCache:
    """ASGI middleware answering GET /api/analyses/<id>[/...] from the cache's kept bodies (see the module)."""

    def __init__(self, app: ASGIApp, cache: AnalysisCache):
        self.app, self.cache = app, cache

    def _generation(self, analysis_id: str, query_string: bytes) -> tuple:
        """The generations of the analysis and of every analysis a query value may name."""
        values = {v for _, v in parse_qsl(query_string.decode("latin-1")) if 0 < len(v) <= 64}
        return (self.cache.generation(analysis_id), *(self.cache.generation(v) for v in sorted(values)))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if scope.get("method") not in ("GET", "HEAD") or not path.startswith(PREFIX) or len(path) > 2048:
            await self.app(scope, receive, send)
            return
        analysis_id = path[len(PREFIX) :].split("/", 1)[0]
        if not analysis_id:
            await self.app(scope, receive, send)
            return
        bodies = self.cache.bodies
        key = (analysis_id, scope["method"], path, scope.get("query_string", b""))
        gen = self._generation(analysis_id, key[3])
        hit = bodies.find(key, gen)
        if hit is not None:
            status, headers, body = hit
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return

        start: Message | None = None
        chunks: list[bytes] = []
        size = 0
        keep = True

        async def capture(message: Message) -> None:
            nonlocal start, size, keep
            if message["type"] == "http.response.start":
                start = message
                keep = message["status"] == 200
            elif message["type"] == "http.response.body" and keep:
                body = message.get("body", b"")
                size += len(body)
                if size > bodies.max_body:
                    keep = False
                    chunks.clear()
                else:
                    chunks.append(body)
                if not message.get("more_body", False) and keep and start is not None:
                    if self._generation(analysis_id, key[3]) == gen:  # else the analysis changed while read
                        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() in KEPT_HEADERS]
                        bodies.keep(key, gen, start["status"], headers, b"".join(chunks))
            await send(message)

        await self.app(scope, receive, capture)
