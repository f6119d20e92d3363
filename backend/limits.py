"""What one server takes at once: the settings that keep slow or many clients from holding it (docs/SECURITY.md).

* uploads at once (STALLSCOPE_MAX_UPLOADS, 2): the next one is answered 503 with Retry-After before its body is read;
* bytes spooled by the uploads in flight together (STALLSCOPE_SPOOL_LIMIT, 4 GiB): an upload whose files copied to
  disk would pass it is answered 503 with Retry-After. Uploads are parsed as they arrive (backend/ingest/arrivals.py)
  and spool nothing, except the files of a blktrace per-CPU set (a set needs all its files): those are counted as
  they are copied (a set sent whole) or as their pieces are written to disk (a set sent in pieces, ingest/pieces.py);
* an upload's size (STALLSCOPE_MAX_UPLOAD, 8 GiB): larger ones are answered 413 (declared: at once);
* a request body that sends nothing for STALLSCOPE_BODY_TIMEOUT seconds (30) is answered 408 and its spool freed;
* an upload must keep moving: after STALLSCOPE_UPLOAD_GRACE seconds (30) it must have averaged
  STALLSCOPE_UPLOAD_MIN_RATE bytes/s (16384: a 1 Mbit/s link sends 125000), and end within STALLSCOPE_UPLOAD_DEADLINE
  seconds (86400: 8 GiB at 1 Mbit/s takes 19 h); else 408, and its slot is free at once;
* on a shared server (a token set), one upload at a time per client address (the next gets 503);
* uploads are analysed at a lower CPU priority than reads (STALLSCOPE_INGEST_NICE, 5; 0: the same): on a busy
  server a page's reads keep their pace while uploads take longer (backend/ingest_pool.py);
* request headers not complete STALLSCOPE_HEADER_TIMEOUT seconds (10) after the connection opened (or after the
  previous response on a kept-alive connection): the connection is closed (backend/server.py).
"""

from __future__ import annotations

import asyncio
import os
import threading
from dataclasses import dataclass

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

RETRY_AFTER_S = 30
# every time, window end and clock offset the API takes, and every time on an analysis timeline (a source's own time
# plus its offset), lies in [TIME_MIN, TIME_MAX]: ±2^62 ns (±146 years), so that the difference of any two fits in
# a signed 64-bit integer (DuckDB's BIGINT, numpy's int64)
TIME_MIN, TIME_MAX = -(1 << 62), (1 << 62) - 1


@dataclass(frozen=True)
class Limits:
    max_upload_bytes: int = 8 << 30
    max_uploads: int = 2
    spool_bytes: int = 4 << 30
    body_timeout_s: float = 30.0
    header_timeout_s: float = 10.0
    upload_min_rate: float = 16384.0  # bytes/s, averaged from the upload's start
    upload_grace_s: float = 30.0  # the average is not checked before
    upload_deadline_s: float = 86400.0
    one_upload_per_client: bool = False  # a shared server's (create_app sets it)
    ingest_nice: int = 5  # the nice value of the threads that analyse uploads (0-19)

    @classmethod
    def from_env(cls, env: dict | None = None, **overrides) -> "Limits":
        env = os.environ if env is None else env
        d = cls()

        def number(name: str, default, kind):
            value = env.get(name)
            if not value:
                return default
            try:
                got = kind(value)
            except ValueError:
                raise ValueError(f"{name}={value!r} is not a number") from None
            if got <= 0:
                raise ValueError(f"{name}={value!r} must be more than 0")
            return got

        values = {
            "max_upload_bytes": number("STALLSCOPE_MAX_UPLOAD", d.max_upload_bytes, int),
            "max_uploads": number("STALLSCOPE_MAX_UPLOADS", d.max_uploads, int),
            "spool_bytes": number("STALLSCOPE_SPOOL_LIMIT", d.spool_bytes, int),
            "body_timeout_s": number("STALLSCOPE_BODY_TIMEOUT", d.body_timeout_s, float),
            "header_timeout_s": number("STALLSCOPE_HEADER_TIMEOUT", d.header_timeout_s, float),
            "upload_min_rate": number("STALLSCOPE_UPLOAD_MIN_RATE", d.upload_min_rate, float),
            "upload_grace_s": number("STALLSCOPE_UPLOAD_GRACE", d.upload_grace_s, float),
            "upload_deadline_s": number("STALLSCOPE_UPLOAD_DEADLINE", d.upload_deadline_s, float),
        }
        nice = env.get("STALLSCOPE_INGEST_NICE")
        if nice:
            if not nice.isdigit() or int(nice) > 19:
                raise ValueError(f"STALLSCOPE_INGEST_NICE={nice!r} is not a nice value from 0 to 19")
            values["ingest_nice"] = int(nice)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)


class Busy(Exception):
    """No room for this upload now: answered 503 with Retry-After."""


class UploadSlots:
    """The uploads in flight and the bytes they have spooled (thread-safe: counted from the event loop, released from
    wherever the upload ends)."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self._lock = threading.Lock()
        self.uploads = 0
        self.spooled = 0
        self.by_client: dict[str, int] = {}  # uploads in flight per client address

    def take(self, declared: int | None = None, client: str | None = None) -> "Slot":
        """A slot for one upload (`declared` bytes of spool reserved) from `client` (its address), or Busy."""
        with self._lock:
            if self.limits.one_upload_per_client and client is not None and self.by_client.get(client):
                raise Busy(
                    f"an upload from this address ({client}) is being read or analysed: a shared server takes one"
                    f" at a time per address; try again when it is done"
                )
            if self.uploads >= self.limits.max_uploads:
                raise Busy(
                    f"{self.uploads} uploads are being read or analysed, the most this server takes at once;"
                    f" try again in {RETRY_AFTER_S} s"
                )
            reserve = declared or 0
            if self.spooled + reserve > self.limits.spool_bytes:
                raise Busy(
                    f"the uploads in flight hold {self.spooled} bytes; this one would pass the server's"
                    f" limit of {self.limits.spool_bytes} bytes; try again in {RETRY_AFTER_S} s"
                )
            self.uploads += 1
            self.spooled += reserve
            if client is not None:
                self.by_client[client] = self.by_client.get(client, 0) + 1
        return Slot(self, reserve, client)


class Slot:
    def __init__(self, slots: UploadSlots, reserved: int, client: str | None = None):
        self.slots, self.held, self.reserved, self.seen = slots, reserved, reserved, 0
        self.client = client
        self.closed = False

    def count(self, n: int) -> None:
        """n more bytes spooled: past the reservation they are added to the spooled total (Busy past it)."""
        s = self.slots
        with s._lock:  # counted from the event loop (pieces) and from the ingest's thread (whole set members)
            self.seen += n
            extra = self.seen - self.held
            if extra <= 0:
                return
            s.spooled += extra
            self.held += extra
            if s.spooled > s.limits.spool_bytes:
                raise Busy(
                    f"the uploads in flight passed the server's limit of {s.limits.spool_bytes} spooled bytes;"
                    f" try again in {RETRY_AFTER_S} s"
                )

    def release(self) -> None:
        if self.closed:
            return
        self.closed = True
        with self.slots._lock:
            self.slots.uploads -= 1
            self.slots.spooled -= self.held
            if self.client is not None:
                left = self.slots.by_client.pop(self.client) - 1
                if left:
                    self.slots.by_client[self.client] = left


class BodyTimeout(HTTPException):
    """A request body sent nothing for body_timeout_s: answered 408 (app.py). An HTTPException, so that FastAPI's
    reading of a JSON body passes it on instead of answering 400 (a body it could not parse)."""

    def __init__(self, seconds: float, message: str | None = None):
        self.seconds = seconds
        super().__init__(408, message or f"the request body sent nothing for {seconds:g} s: it was dropped")

    def __str__(self) -> str:
        return self.detail


class UploadPace:
    """An upload's clock: how long its next read may wait before the upload is too slow (UploadTooSlow)."""

    def __init__(self, limits: Limits, now: float):
        self.limits, self.started, self.seen = limits, now, 0

    def wait_s(self, now: float) -> float:
        """Seconds until the average falls under the minimum rate or the deadline passes (0: it has)."""
        lim = self.limits
        by_rate = self.started + max(lim.upload_grace_s, self.seen / lim.upload_min_rate)
        return max(0.0, min(by_rate, self.started + lim.upload_deadline_s) - now)

    def too_slow(self, now: float) -> BodyTimeout:
        lim, took = self.limits, now - self.started
        if took >= lim.upload_deadline_s:
            why = f"it did not end within {lim.upload_deadline_s:g} s (STALLSCOPE_UPLOAD_DEADLINE)"
        else:
            why = (
                f"it sent {self.seen} bytes in {took:.0f} s, under {lim.upload_min_rate:g} bytes/s on average"
                " (STALLSCOPE_UPLOAD_MIN_RATE)"
            )
        return BodyTimeout(took, f"the upload was too slow and was dropped: {why}")


class ReadTimeouts:
    """ASGI middleware: until a request's body is complete, each read of it waits at most body_timeout_s, else
    BodyTimeout is raised in the route that reads it. (Reads after the body, a streaming response's wait for the
    client to go, are left as they are.) Pure ASGI: bodies pass through as they come."""

    def __init__(self, app: ASGIApp, limits: Limits):
        self.app, self.timeout = app, limits.body_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        done = False

        async def timed_receive() -> Message:
            nonlocal done
            if done:
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), self.timeout)
            except TimeoutError:
                raise BodyTimeout(self.timeout) from None
            if message["type"] != "http.request" or not message.get("more_body", False):
                done = True
            return message

        await self.app(scope, timed_receive, send)
