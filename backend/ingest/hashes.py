"""The SHA-256 of every input file, computed beside the ingest on CPU time nothing else wants."""

from __future__ import annotations

import hashlib
import os
import queue
import stat
import threading
from typing import BinaryIO

from .files import InputFile


class FileHashes:
    """The SHA-256 of each file, in the order they are added. A file read as it arrives (a streamed upload) hashes
    itself as its bytes pass (StreamedInput.digest). The others are read a second time in a thread of its own at the
    lowest CPU priority (Linux's SCHED_IDLE, else nice 19), from the moment they are added: it takes the CPU time
    parsing, inserting and deriving leave idle. (At nice 19 it still took some from them: blkparse's ingest,
    interleaved runs, median 6.25 -> 6.09 s with SCHED_IDLE.) A file with a descriptor is read by position
    (os.pread: the parser's offset is untouched); any other stream once parsing is done (`parsed`). hashlib and the
    reads release the GIL."""

    def __init__(self, files: list[InputFile] | None = None):
        self.files: list[InputFile] = []
        self.digests: list[str | None] = []
        self.error: BaseException | None = None  # a read that failed: raised by result()
        self.stop = threading.Event()
        self.parsed = threading.Event()
        self._todo: queue.Queue = queue.Queue()  # (index, file, descriptor); None: no more
        self._worker = threading.Thread(target=self._hash, name="sha256", daemon=True)
        for f in files or []:
            self.add(f)

    def start(self) -> None:
        """Starts the hash thread (ingest/pipeline.py); result() or cancel() ends it."""
        self._worker.start()

    def add(self, f: InputFile) -> None:
        self.files.append(f)
        self.digests.append(None)
        if not f.streamed:
            # asked here, not in the worker: fileno() of an upload spooled in memory moves it to disk (not while it
            # is read)
            self._todo.put((len(self.files) - 1, f, file_descriptor(f.stream)))

    def _hash(self) -> None:
        try:  # this thread only
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
            os.sched_setscheduler(threading.get_native_id(), os.SCHED_IDLE, os.sched_param(0))
        except (AttributeError, OSError):
            pass
        buf = bytearray(1 << 20)
        try:
            while (item := self._todo.get()) is not None:
                i, f, fd = item
                sha = hashlib.sha256()
                with memoryview(buf) as view:
                    if fd is not None:
                        at = 0
                        while not self.stop.is_set() and (got := os.preadv(fd, [view], at)):
                            sha.update(view[:got])
                            at += got
                    else:
                        self.parsed.wait()
                        f.stream.seek(0)
                        while not self.stop.is_set() and (got := f.stream.readinto(view)):
                            sha.update(view[:got])
                self.digests[i] = sha.hexdigest()
        except BaseException as e:  # noqa: BLE001 - handed to the ingest's thread
            self.error = e

    def result(self) -> list[str]:
        self.parsed.set()
        self._todo.put(None)
        self._worker.join()
        if self.error is not None:
            raise self.error
        for i, f in enumerate(self.files):
            if f.streamed:
                self.digests[i] = f.stream.digest()
        return self.digests

    def cancel(self) -> None:
        self.stop.set()
        self.parsed.set()
        self._todo.put(None)
        self._worker.join()


def file_descriptor(stream: BinaryIO) -> int | None:
    """The OS file descriptor of a stream that is a plain file (uploads spooled to disk, the CLI's files), else None."""
    try:
        fd = stream.fileno()
        return fd if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError and a ValueError
        return None


def source_digest(unit: list[InputFile], digests: list[str]) -> str:
    """A source's SHA-256: its file's; for several files, the SHA-256 of the lines `sha256sum` prints for them
    (`<hex>  <name>`), the names sorted as bytes: `sha256sum NAME.blktrace.* | LC_ALL=C sort -k2 | sha256sum`."""
    if len(unit) == 1:
        return digests[0]
    lines = sorted((f.filename.encode(), f"{d}  {f.filename}\n".encode()) for f, d in zip(unit, digests))
    return hashlib.sha256(b"".join(line for _, line in lines)).hexdigest()
