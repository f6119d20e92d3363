"""Files that are read as they arrive: an upload's file parts, written by the server's event loop as its body comes in,
read by the ingest in its own thread (parse while receiving).

* ReceivedInput: what every file received for the ingest shares (StreamedInput, pieces.PiecedInput): end and abort,
  read() over its readinto(), its hash thread and digest.
* StreamedInput: one file part, a bounded pipe of bytes. The event loop writes each piece of the body as it comes
  (`await write`: it waits while PIPE_BYTES are unread, so a slow ingest slows the sender, never fills memory); the
  ingest reads it as a file (`readinto` fills the buffer it is given, or ends at the end of the part) after looking
  at its first bytes (`head`, for format detection). A thread of its own, started by the ingest when it takes the
  part (`start_hash`, ingest/pipeline.py), computes its SHA-256 from the same pieces as they pass (`digest`): a piece
  is kept until both the reader and the hash thread are past it, so a hash started late still sees every byte.
* Arrivals: the file parts of one upload in the order they begin, iterated by the ingest (it waits for the next part
  or the end of the body). The name field, which may come before or after the files, is read at the end. Files sent
  in pieces (ingest/pieces.py: a blktrace set's members, interleaved) begin with their first piece; once every such
  file has begun (a second piece of one came, or a part that is not a piece), the iteration yields PIECES_BEGUN, so
  that the ingest may parse their sets while the rest of their pieces arrive.

Either side can stop the other: the event loop ends a part with an error (the client went away, the body was too
large or too slow: `abort`), and the ingest, once it fails, closes the arrivals (`close`): what is written after that
is dropped, so that the rest of the body can be read (and refused) without waiting for a reader.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections import deque
from typing import Iterator

from .files import InputFile

PIPE_BYTES = 32 << 20  # unread bytes of a part before the event loop waits for the ingest
READ_BYTES = 1 << 20  # read() at a time, when asked for all


class ReceiveAborted(Exception):
    """The upload ended before its body was complete (the client went away, or a limit refused it)."""


class ReceivedInput:
    """What a file received for the ingest has, whichever way it comes (StreamedInput here, pieces.PiecedInput): its
    lock and state (`_cond` guards `_ended` and `_error`), its end and abort from the event loop, read() and the file
    protocol over the subclass' readinto(), and the thread that hashes it (the subclass' `_hash`, named HASH_THREAD),
    with its result."""

    HASH_THREAD = "sha256 of an upload"

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._ended = False  # the file is complete
        self._error: BaseException | None = None  # given to the reader (abort)
        self._sha = hashlib.sha256()
        self._hashed = threading.Event()
        self._hasher: threading.Thread | None = None  # started by start_hash

    def readinto(self, b) -> int:
        raise NotImplementedError

    def _hash(self) -> None:
        raise NotImplementedError

    # -- the event loop's side --------------------------------------------------------------------------------
    def end(self) -> None:
        """The file is complete."""
        with self._cond:
            self._ended = True
            self._cond.notify_all()

    def abort(self, error: BaseException) -> None:
        """The file will not be complete: the reader gets `error`; the hash is never given."""
        with self._cond:
            if self._error is None and not self._ended:
                self._error = error
            self._ended = True
            self._cond.notify_all()

    # -- the ingest's side ------------------------------------------------------------------------------------
    def read(self, size: int = -1) -> bytes:
        """What readinto gives, up to size bytes; all of it with size < 0."""
        if size is None or size < 0:
            chunks = []
            while chunk := self.read(READ_BYTES):
                chunks.append(chunk)
            return b"".join(chunks)
        buf = bytearray(size)
        got = self.readinto(buf)
        return bytes(buf[:got])

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def start_hash(self) -> None:
        """Starts the thread that hashes the file as it comes (once; ingest/pipeline.py, when the ingest takes the
        file). It ends at the file's end, or when it is aborted or drained."""
        assert self._hasher is None, "start_hash() twice"
        self._hasher = threading.Thread(target=self._hash, name=self.HASH_THREAD, daemon=True)
        self._hasher.start()

    def digest(self) -> str:
        """The file's SHA-256 (hex), once it is complete and hashed (start_hash() must have been called)."""
        assert self._hasher is not None, "digest() before start_hash()"
        self._hashed.wait()
        if self._error is not None:
            raise self._error
        return self._sha.hexdigest()


class StreamedInput(ReceivedInput):
    """One file part of an upload, as its bytes arrive. Written from the event loop, read from the ingest's thread.
    Until its hash thread starts, no piece is dropped but by drain(): a part the ingest never takes is drained
    (Arrivals.close) and never hashed."""

    def __init__(self, loop: asyncio.AbstractEventLoop, capacity: int | None = None):
        super().__init__()
        self.loop, self.capacity = loop, capacity or PIPE_BYTES
        self._pieces: deque[bytes] = deque()  # unread (or unhashed) pieces; _first is the number of the leftmost
        self._first = 0
        self._read_at, self._read_off = 0, 0  # the reader's piece and offset in it
        self._hashed_at = 0  # the next piece the hash thread takes
        self._held = 0  # bytes in _pieces
        self._dropped = False  # the reader is gone: writes are dropped
        self._space = asyncio.Event()
        self._writer_waits = False
        self.received = 0

    # -- the event loop's side --------------------------------------------------------------------------------
    async def write(self, data: bytes) -> None:
        """Adds the next bytes of the part; waits while the pipe holds `capacity` unread bytes."""
        if not data:
            return
        with self._cond:
            if self._dropped:
                return
            self._pieces.append(data)
            self._held += len(data)
            self.received += len(data)
            self._cond.notify_all()
        while True:
            with self._cond:
                if self._held <= self.capacity or self._dropped:
                    self._writer_waits = False
                    return
                self._space.clear()
                self._writer_waits = True
            await self._space.wait()

    # -- the ingest's side ------------------------------------------------------------------------------------
    def head(self, n: int) -> bytes:
        """The part's first n bytes (fewer if it is shorter), without reading them."""
        with self._cond:
            assert self._read_at == 0 and self._read_off == 0, "head() after reading"
            while self._held < n and not self._ended:  # nothing is released before the reader starts
                self._cond.wait()
            if self._error is not None:
                raise self._error
            return b"".join(self._pieces)[:n]

    def readinto(self, b) -> int:
        """Fills b with the next bytes of the part; fewer only at its end. Raises what aborted the part."""
        with memoryview(b) as view, view.cast("B") as out, self._cond:
            want, got = len(out), 0
            while got < want:
                idx = self._read_at - self._first
                if idx < len(self._pieces):
                    piece = self._pieces[idx]
                    n = min(len(piece) - self._read_off, want - got)
                    with memoryview(piece) as src:
                        out[got : got + n] = src[self._read_off : self._read_off + n]
                    got += n
                    self._read_off += n
                    if self._read_off == len(piece):
                        self._read_at += 1
                        self._read_off = 0
                        self._release()
                    continue
                if self._error is not None:
                    raise self._error
                if self._ended:
                    break
                self._cond.wait()
            return got

    def drain(self) -> None:
        """The reader is gone (the ingest failed or refused the file): drops what is held and what comes next."""
        with self._cond:
            self._dropped = True
            self._pieces.clear()
            self._first = self._read_at = self._hashed_at = 0
            self._read_off = self._held = 0
            self._cond.notify_all()
            self._wake_writer()

    # -- both ---------------------------------------------------------------------------------------------------
    def _release(self) -> None:
        """Drops the pieces both the reader and the hash thread are past (under the lock)."""
        past = min(self._read_at, self._hashed_at)
        while self._first < past:
            self._held -= len(self._pieces.popleft())
            self._first += 1
        if self._held <= self.capacity // 2:
            self._wake_writer()

    def _wake_writer(self) -> None:
        if self._writer_waits:
            self._writer_waits = False
            self.loop.call_soon_threadsafe(self._space.set)

    def _hash(self) -> None:
        try:
            while True:
                with self._cond:
                    while self._hashed_at - self._first >= len(self._pieces) and not self._ended and not self._dropped:
                        self._cond.wait()
                    if self._dropped or self._error is not None:
                        return
                    idx = self._hashed_at - self._first
                    if idx >= len(self._pieces):  # ended, all hashed
                        return
                    piece = self._pieces[idx]
                self._sha.update(piece)  # releases the GIL
                with self._cond:
                    if self._dropped:
                        return
                    self._hashed_at += 1
                    self._release()
        finally:
            self._hashed.set()


PIECES_BEGUN = object()  # yielded by Arrivals once every file sent in pieces has begun (no other will)


class Arrivals:
    """The file parts of one upload, in the order they begin: iterating yields each as an InputFile (its stream a
    StreamedInput, or a PiecedInput for a file sent in pieces) as soon as its headers are in, and PIECES_BEGUN once
    (pieces_begun), and ends with the body. Thread-safe."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._files: list = []  # InputFile, and PIECES_BEGUN where it came
        # the files' streams as they came, StreamedInput or PiecedInput (the ingest may replace a file's)
        self._streams: list = []
        self._taken = 0
        self._ended = False
        self._error: BaseException | None = None
        self.closed = False  # the ingest is done with them (failed): parts that still come are dropped
        self.name: str | None = None  # the upload's name field, set when it has been read

    def add(self, f: InputFile) -> None:
        with self._cond:
            if self.closed:
                f.stream.drain()
            self._files.append(f)
            self._streams.append(f.stream)
            self._cond.notify_all()

    def pieces_begun(self) -> None:
        """Every file sent in pieces has begun: the iteration yields PIECES_BEGUN after the files added so far (once)."""
        with self._cond:
            if PIECES_BEGUN not in self._files:
                self._files.append(PIECES_BEGUN)
                self._cond.notify_all()

    def end(self) -> None:
        """The body is complete: no more parts."""
        with self._cond:
            self._ended = True
            self._cond.notify_all()

    def abort(self, error: BaseException) -> None:
        """The body will not be complete: every part still open, and the iteration, end with `error`."""
        with self._cond:
            self._error = self._error or error
            self._ended = True
            streams = list(self._streams)
            self._cond.notify_all()
        for stream in streams:
            stream.abort(error)

    def close(self) -> None:
        """Called by the ingest when it stops reading (it failed): every part's bytes are dropped from now on."""
        with self._cond:
            self.closed = True
            streams = list(self._streams)
            self._cond.notify_all()
        for stream in streams:
            stream.drain()

    def __iter__(self) -> Iterator:
        while True:
            with self._cond:
                while self._taken == len(self._files) and not self._ended:
                    self._cond.wait()
                if self._taken < len(self._files):
                    f = self._files[self._taken]
                    self._taken += 1
                elif self._error is not None:
                    raise self._error
                else:
                    return
            yield f
