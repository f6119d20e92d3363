"""A file of an upload sent in pieces: the parts named `chunk` of one filename, interleaved in the body with the pieces
of other files (the browser sends a blktrace per-CPU set so, backend/api/upload_body.py says the rule), so that a set
whose records are merged across its files in time order can be parsed while it arrives.

PiecedInput keeps the file's bytes in a temporary file on disk as its pieces arrive, and is read from there. A write
never waits for a reader: the merger of a set may wait for CPU 0's bytes while the body brings CPU 2's, and the body
must go on to bring them. So what is held is bounded on disk (the server's spool limit, `spool(n)`), never in memory,
whatever the order of the pieces. Who does what, and where:

    the event loop (upload_body.read_parts) | the ingest's thread (pipeline.py)  | the hash thread (start_hash)
    ----------------------------------------+------------------------------------+-------------------------------
    write: appends a piece to the file      | head, readinto: read by position   | reads by position what was
    (os.pwrite, page cache) and wakes the   | (os.preadv), waiting while nothing | written, SHA-256 of the file
    readers; end, abort                     | is left unread and the file is not | as it grows
                                            | ended; close: the file is removed  |

`_cond` guards the counters (`written`, `_ended`, `_error`, `_closed`) and every read, write and the close of the
file, so that no read meets a closed descriptor (each holds it for one piece or 1 MiB of the page cache: well under a
millisecond). The file is closed (and so removed: an unnamed temporary file) by close(), after the hash thread has
stopped.
"""

from __future__ import annotations

import os
import tempfile
import threading
from typing import Callable

from .arrivals import ReceiveAborted, ReceivedInput

READ_BYTES = 1 << 20  # the hash thread's reads


class PiecedInput(ReceivedInput):
    """One file sent in pieces, on disk as they arrive. Written from the event loop (never waiting), read from the
    ingest's thread and hashed in a thread of its own. `spool(n)` is told of every n bytes written (it may refuse by
    raising: the server's spool limit, limits.Slot.count); the write is then not made."""

    HASH_THREAD = "sha256 of a file sent in pieces"

    def __init__(self, spool: Callable[[int], None] | None = None):
        super().__init__()
        self._file = tempfile.TemporaryFile(prefix="stallscope-pieces-")
        self._fd = self._file.fileno()
        self._spool = spool
        self.written = 0  # bytes in the file
        self.pieces = 0  # pieces written
        self._read_at = 0  # the reader's position
        self._first_done = False  # the first piece is complete
        self._closed = False  # the reader is gone: writes are dropped, the file is closed

    @property
    def ended(self) -> bool:
        with self._cond:
            return self._ended

    # -- the event loop's side --------------------------------------------------------------------------------
    async def write(self, data) -> None:
        """Appends a piece's bytes (the same call as StreamedInput's; this one never waits for a reader)."""
        if not len(data):
            return
        with self._cond:
            if self._closed or self._ended:
                return
            if self._spool is not None:
                self._spool(len(data))
            with memoryview(data) as view:
                at = 0
                while at < len(view):
                    at += os.pwrite(self._fd, view[at:], self.written + at)
            self.written += at
            self._cond.notify_all()

    def next_piece(self) -> None:
        """Another piece of the file begins (counted, for the tests and the logs)."""
        with self._cond:
            self.pieces += 1

    def piece_ended(self) -> None:
        """A piece of the file is complete (its part ended): the first one is all head() waits for."""
        with self._cond:
            self._first_done = True
            self._cond.notify_all()

    # -- the ingest's side ------------------------------------------------------------------------------------
    def _wait_for(self, n: int, first_piece: bool = False) -> int:
        """Waits until the file holds n bytes or has ended (or, with first_piece, its first piece is complete); the
        bytes it holds (under the lock)."""
        while self.written < n and not self._ended and not self._closed and not (first_piece and self._first_done):
            self._cond.wait()
        if self._error is not None:
            raise self._error
        if self._closed:
            raise ReceiveAborted("the file's pieces were dropped")
        return self.written

    def head(self, n: int) -> bytes:
        """The file's first n bytes, without reading them: fewer if the file, or its first piece, is shorter (the
        other pieces of a set's small member may come only at the end of the body)."""
        with self._cond:
            return os.pread(self._fd, min(n, self._wait_for(n, first_piece=True)), 0)

    def readinto(self, b) -> int:
        """Reads the file's next bytes into b, as a pipe does: as many as are there (at least one, waiting for them),
        0 only at its end. A set's merger (parsers/blktrace.py) asks each member for up to 1 MiB at a time: it gets
        what has come and goes on, rather than waiting for bytes that may come only at the end of the body. Raises
        what aborted the file."""
        with memoryview(b) as view, view.cast("B") as out, self._cond:
            have = self._wait_for(self._read_at + 1) - self._read_at
            if have <= 0 or not len(out):  # ended
                return 0
            n = os.preadv(self._fd, [out[:have]], self._read_at)
            self._read_at += n
            return n

    def drain(self) -> None:
        """The reader is gone (the ingest failed, refused the file, or is done): what comes next is dropped and the
        file is closed (removed) once the hash thread has stopped. From any thread; more than once is harmless."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        hasher = self._hasher
        if hasher is not None and hasher is not threading.current_thread():
            hasher.join()
        with self._cond:  # no read or write is under way: they hold the lock
            self._file.close()

    close = drain

    def digest(self) -> str:
        """The file's SHA-256 (hex), once it is complete and hashed; refused if its pieces were dropped first."""
        hexdigest = super().digest()
        if self._closed:
            raise ReceiveAborted("the file's pieces were dropped before it was hashed")
        return hexdigest

    def _hash(self) -> None:
        buf = bytearray(READ_BYTES)
        at = 0
        try:
            with memoryview(buf) as view:
                while True:
                    with self._cond:
                        while self.written == at and not self._ended and not self._closed:
                            self._cond.wait()
                        if self._closed or self._error is not None:
                            return
                        have = self.written - at
                        if have == 0:  # ended, all hashed
                            return
                        n = os.preadv(self._fd, [view[: min(have, READ_BYTES)]], at)
                    self._sha.update(view[:n])  # outside the lock; releases the GIL
                    at += n
        finally:
            self._hashed.set()
