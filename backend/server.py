"""The HTTP server of `stallscope serve`: uvicorn on uvloop with httptools' parser, with a deadline and a size cap on
a request's headers.

uvicorn closes a connection that stays idle between requests (timeout_keep_alive), but each byte received restarts
that timer and nothing bounds the time a client takes to send its headers: 200 connections sending a header byte
now and then held their sockets (and file descriptors) for as long as they liked. Here a connection must complete a
request's headers within limits.header_timeout_s of its opening (or of the previous response, when kept alive), or
it is closed; headers past MAX_HEADER_BYTES are answered 431 (httptools, unlike h11, sets no limit of its own).
Request bodies have their own idle timeout (limits.ReadTimeouts).

Why httptools and uvloop rather than h11 on asyncio: the server is one process whose reads share one interpreter
lock, and parsing, writing and scheduling in Python took ~10 % of it under load (docs/BENCHMARKS.md, "Reads under
ingest").
"""

from __future__ import annotations

import asyncio
import sys

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from .limits import Limits

MAX_CONNECTIONS = 1000  # connections and requests at once; past it uvicorn answers 503
MAX_HEADER_BYTES = 64 << 10  # a request line and headers at most (h11's own limit was 16 KiB)


class HeaderDeadline(HttpToolsProtocol):
    """uvicorn's httptools protocol that closes a connection whose request headers are not complete in
    `header_timeout` seconds, and answers 431 to headers longer than MAX_HEADER_BYTES."""

    header_timeout: float = 10.0
    _deadline: asyncio.TimerHandle | None = None  # armed: waiting for a request's headers
    _header_bytes = 0  # received since it was armed

    def _arm(self) -> None:
        self._disarm()
        self._header_bytes = 0
        self._deadline = self.loop.call_later(self.header_timeout, self._headers_too_slow)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _headers_too_slow(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            self.transport.close()

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._deadline is not None and not self.transport.is_closing():  # all of it was headers
            self._header_bytes += len(data)
            if self._header_bytes > MAX_HEADER_BYTES:
                self._disarm()
                self._send_431()

    def _send_431(self) -> None:
        msg = f"the request's headers passed {MAX_HEADER_BYTES} bytes".encode()
        self.transport.write(
            b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain; charset=utf-8\r\n"
            b"content-length: " + str(len(msg)).encode() + b"\r\nconnection: close\r\n\r\n" + msg
        )
        self.transport.close()

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        pipelined = bool(self.pipeline)  # the next request, its headers complete, starts now
        super().on_response_complete()
        if not pipelined and not self.transport.is_closing():  # the next request's headers
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)


def protocol(limits: Limits) -> type[HeaderDeadline]:
    return type("HeaderDeadline", (HeaderDeadline,), {"header_timeout": limits.header_timeout_s})


def config(app, host: str, port: int, limits: Limits) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        http=protocol(limits),
        loop="uvloop",
        timeout_keep_alive=5,
        limit_concurrency=MAX_CONNECTIONS,
        timeout_graceful_shutdown=10,
    )


# how often a thread holding the GIL hands it over (CPython's default: 5 ms). A read waits for the GIL each time one
# of its queries returns; beside an ingest's Python work, 5 ms a wait made a page's reads slow
SWITCH_INTERVAL_S = 0.001


def serve(app, host: str, port: int, limits: Limits) -> None:
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    uvicorn.Server(config(app, host, port, limits)).run()
