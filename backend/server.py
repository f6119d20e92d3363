"""The HTTP server of `stallscope serve`: uvicorn (h11), with a deadline on reading a request's headers.

uvicorn closes a connection that stays idle between requests (timeout_keep_alive), but each byte received restarts
that timer and nothing bounds the time a client takes to send its headers: 200 connections sending a header byte
now and then held their sockets (and file descriptors) for as long as they liked. Here a connection must complete a
request's headers within limits.header_timeout_s of its opening (or of the previous response, when kept alive), or
it is closed. Request bodies have their own idle timeout (limits.ReadTimeouts).
"""

from __future__ import annotations

import asyncio
import sys

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from .limits import Limits

MAX_CONNECTIONS = 1000  # connections and requests at once; past it uvicorn answers 503


class HeaderDeadlineH11(H11Protocol):
    """H11Protocol that closes a connection whose request headers are not complete in `header_timeout` seconds."""

    header_timeout: float = 10.0
    _deadline: asyncio.TimerHandle | None = None

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.header_timeout, self._headers_too_slow)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _headers_too_slow(self) -> None:
        self._deadline = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():  # still waiting for headers
            self.transport.close()

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:  # the request line and headers are in
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:  # the next request's headers
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)


def protocol(limits: Limits) -> type[H11Protocol]:
    return type("HeaderDeadlineH11", (HeaderDeadlineH11,), {"header_timeout": limits.header_timeout_s})


def config(app, host: str, port: int, limits: Limits) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        http=protocol(limits),
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
