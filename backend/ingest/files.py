"""What an ingest is given and tells: the input files, its progress, its refusal; which files form which source.

Detection happens here, before anything is written: every file is sniffed first, so that all the files that
cannot be read are reported at once (IngestError), and a format that reads a group of files as one source
(blktrace's per-CPU files) says which go together.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from types import ModuleType
from typing import BinaryIO, Callable

from parsers.common import ParseError
from parsers.detect import SNIFF_BYTES, detect


@dataclass
class InputFile:
    """A file to ingest: a seekable stream (the CLI's files, a spooled upload) of `size` bytes, or a stream read as it
    arrives (arrivals.StreamedInput: size 0 until it is read, its SHA-256 computed as it passes)."""

    filename: str
    stream: BinaryIO
    size: int = 0

    @property
    def streamed(self) -> bool:
        return hasattr(self.stream, "digest")


def read_head(f: InputFile) -> bytes:
    """The file's first SNIFF_BYTES (what format detection reads), its stream left at its start."""
    if f.streamed:
        return f.stream.head(SNIFF_BYTES)
    head = f.stream.read(SNIFF_BYTES)
    f.stream.seek(0)
    return head


@dataclass
class Progress:
    """What an ingest has done so far, for the browser's progress bar and the CLI."""

    phase: str = "uploading"
    filename: str | None = None
    bytes_read: int = 0
    bytes_total: int = 0
    events: int = 0
    error: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def update(self, **kw) -> None:
        with self._lock:
            for k, v in kw.items():
                setattr(self, k, v)

    def as_dict(self) -> dict:
        with self._lock:
            return {k: getattr(self, k) for k in ("phase", "filename", "bytes_read", "bytes_total", "events", "error")}


class IngestError(Exception):
    """One or more files were refused; nothing was written."""

    def __init__(self, files: list[ParseError]):
        self.files = files
        super().__init__("; ".join(str(f) for f in files))

    @property
    def detail(self) -> str:
        if len(self.files) == 1:
            return str(self.files[0])
        return f"{len(self.files)} files could not be read: " + "; ".join(str(f) for f in self.files)


class CountingReader:
    """A read-through wrapper that reports the bytes read (the progress bar's)."""

    def __init__(self, stream: BinaryIO, on_read: Callable[[int], None]):
        self.stream, self.on_read, self.n = stream, on_read, 0

    def readinto(self, b) -> int:
        got = self.stream.readinto(b) or 0
        self.n += got
        self.on_read(self.n)
        return got

    def read(self, size: int = -1) -> bytes:
        data = self.stream.read(size)
        self.n += len(data)
        self.on_read(self.n)
        return data

    # a parser whose decoder reads the file where it lies (parsers/child.py DecodedFile) takes its descriptor, then
    # seeks to its end: the bytes it skips are counted as read
    def fileno(self) -> int:
        return self.stream.fileno()

    def tell(self) -> int:
        return self.stream.tell()

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        at = self.stream.seek(offset, whence)
        self.n = at
        self.on_read(self.n)
        return at


def detect_sources(files: list[InputFile]) -> list[tuple[ModuleType, list[int]]]:
    """Each source's parser and the indices of its files, in the order of each source's first file. Raises
    IngestError naming every file that was refused."""
    parsers, errors = [], []
    for f in files:
        try:
            parsers.append(detect(read_head(f), f.filename))
        except ParseError as e:
            errors.append(e)
    if errors:
        raise IngestError(errors)
    return group_sources(files, parsers)


def group_sources(files: list[InputFile], parsers: list[ModuleType]) -> list[tuple[ModuleType, list[int]]]:
    """Which files form which source, in the order of each source's first file: a format with group() (blktrace:
    the per-CPU files of one capture) says how its files go together; any other file is a source alone."""
    by_parser: dict[int, list[int]] = {}
    for i, parser in enumerate(parsers):
        by_parser.setdefault(id(parser), []).append(i)
    groups = []
    for indices in by_parser.values():
        parser = parsers[indices[0]]
        if hasattr(parser, "group"):
            groups += [(parser, [indices[k] for k in g]) for g in parser.group([files[i].filename for i in indices])]
        else:
            groups += [(parser, [i]) for i in indices]
    return sorted(groups, key=lambda g: min(g[1]))


def source_name(parser: ModuleType, filenames: list[str]) -> str:
    """A source's name: its file's, or the one its format gives a group of files (`NAME.blktrace`)."""
    return parser.source_name(filenames) if hasattr(parser, "source_name") else filenames[0]
