"""What every trace parser shares: the report of what was read and skipped, the error that refuses a
file, and the chunked reader that feeds the bulk tokenizers whole lines.

A parser is a module with
  FORMAT: str                     the format's name, as shown to the user
  TABLES: dict[str, pa.Schema]    the tables it fills (name -> Arrow schema)
  GENERATED (optional)            {table: {column: SQL expression}}: columns computed from the others when read
  COMPRESSION (optional)          {table: {column: DuckDB compression}}: a column stored with that method, not the
                                  one DuckDB picks (zstd for long texts: FSST's analysis costs more CPU and bytes)
  VIEWS (optional)                {view: SQL}: views over its tables (e.g. ids resolved to names)
  sniff(head: list[str]) -> float a score in [0, 1]: how sure it is that these first lines are its format
  parse(stream, report) -> Iterator[tuple[str, pa.RecordBatch]]
                                  streams (table name, batch) pairs, in bounded memory
and raises ParseError to refuse a file whole.

A format whose capture can be several files read as one (blktrace's per-CPU files) also has
  group(filenames: list[str]) -> list[list[int]]
                                  which of its files form one source (indices, in reading order; every file once)
  source_name(filenames) -> str   the name of the source a group forms
  parse_set(members: list[tuple[str, BinaryIO]], report) -> Iterator[tuple[str, pa.RecordBatch]]
                                  parse() over a group's files at once; report.files describes each file
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import BinaryIO, Iterator

import numpy as np
import pyarrow as pa

CHUNK_BYTES = 16 << 20
MAX_EXAMPLES = 20


class ParseError(ValueError):
    """The file is refused whole. Says which file, which line or byte offset (when there is one) and what was
    expected."""

    def __init__(
        self, message: str, *, filename: str | None = None, line: int | None = None, offset: int | None = None
    ):
        self.message = message
        self.filename = filename
        self.line = line
        self.offset = offset
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.filename or "input"
        if self.line is not None:
            where += f", line {self.line}"
        if self.offset is not None:
            where += f", byte {self.offset}"
        return f"{where}: {self.message}"


@dataclass(frozen=True)
class SkippedLine:
    line: int
    reason: str
    text: str


@dataclass
class ParseReport:
    """What a parser read: counts, the first skipped lines with their numbers and reasons, notes."""

    filename: str
    lines: int = 0
    bytes_read: int = 0
    events: int = 0
    skipped: int = 0
    examples: list[SkippedLine] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    facts: dict = field(default_factory=dict)  # what the parser learnt while streaming, for its format's derive steps
    files: list[dict] = field(default_factory=list)  # a source of several files: each one's filename and kind

    def skip(self, line: int, reason: str, text: str | bytes) -> None:
        self.skipped += 1
        if len(self.examples) < MAX_EXAMPLES:
            if isinstance(text, bytes):
                text = text.decode("utf-8", "replace")
            self.examples.append(SkippedLine(line, reason, text.rstrip("\r\n")[:200]))

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def first_problem(self) -> str:
        """'; first problem at line N: reason' for the first skipped line, '' when no line was skipped: the tail of
        the errors that refuse a file in which nothing could be used."""
        first = self.examples[0] if self.examples else None
        return f"; first problem at line {first.line}: {first.reason}" if first else ""

    def nothing_usable(self, expected: str = "") -> ParseError:
        """The error that refuses a file in which no line could be used, naming the first problem."""
        return ParseError(
            "no usable event in the file" + (f" ({expected})" if expected else "") + self.first_problem(),
            filename=self.filename,
        )

    def as_dict(self) -> dict:
        return {
            "lines": self.lines,
            "bytes": self.bytes_read,
            "events": self.events,
            "skipped_lines": self.skipped,
            "skipped_examples": [e.__dict__ for e in self.examples],
            "notes": list(self.notes),
        }


def chunks_of_lines(stream: BinaryIO, report: ParseReport, chunk_bytes: int = CHUNK_BYTES) -> Iterator[memoryview]:
    """Yields chunks of whole lines (a parser that counts lines itself sets report.lines).

    A chunk is a view into one reused buffer: it is valid until the next chunk is asked for, so a
    consumer copies what it keeps. The last line of the stream may lack its newline; it is yielded as
    is. Memory stays bounded by chunk_bytes plus the longest line. report.bytes_read advances.
    """
    buf = bytearray(chunk_bytes)
    have = 0  # bytes carried over from the previous read, at the start of buf
    while True:
        if have == len(buf):  # a single line longer than the buffer: a new, larger one (the
            bigger = bytearray(2 * len(buf))  # consumer may still hold a view of the old one)
            bigger[:have] = buf
            buf = bigger
        got = stream.readinto(memoryview(buf)[have:])
        if not got:
            break
        report.bytes_read += got
        end = have + got
        cut = buf.rfind(b"\n", have, end) + 1
        if cut == 0:
            have = end
            continue
        with memoryview(buf) as view:
            yield view[:cut]
        buf[: end - cut] = buf[cut:end]
        have = end - cut
    if have:
        with memoryview(buf) as view:
            yield view[:have]


def line_chunks(
    stream: BinaryIO, report: ParseReport, chunk_bytes: int = CHUNK_BYTES
) -> Iterator[tuple[memoryview, int]]:
    """Like chunks_of_lines, with the number of each chunk's first line; report.lines advances."""
    first_line = 1
    for chunk in chunks_of_lines(stream, report, chunk_bytes):
        n = chunk.obj.count(b"\n", 0, len(chunk))
        yield chunk, first_line
        first_line += n
        report.lines = first_line - 1
        if len(chunk) and chunk[-1] != 10:  # the last line, without its newline
            report.lines += 1


def masked(values: np.ndarray, null: np.ndarray) -> pa.Array:
    """A C tokenizer's numeric column as Arrow, null where `null`: with no validity bitmap when nothing is null
    (none to build, none for DuckDB to read)."""
    return pa.array(values, mask=null if null.any() else None)


def string_column(cols: dict, name: str, n: int) -> pa.Array:
    """The n-row string column `name` a C tokenizer handed over as buffers: `name`_off (int32 offsets), `name`_data
    (UTF-8) and `name`_valid (a byte per row, 0: null)."""
    valid = np.frombuffer(cols[name + "_valid"], dtype=np.uint8).astype(bool)
    nulls = n - int(np.count_nonzero(valid)) if n else 0
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little").tobytes()) if nulls else None
    return pa.StringArray.from_buffers(
        n, pa.py_buffer(cols[name + "_off"]), pa.py_buffer(cols[name + "_data"]), bitmap, nulls
    )


def head_lines(data: bytes, limit: int = 200) -> list[str]:
    """The first lines of a file's first bytes, decoded leniently, for sniff()."""
    text = data.decode("utf-8", "replace")
    lines = text.splitlines()
    if len(lines) > 1 and not text.endswith("\n"):
        lines = lines[:-1]  # the last one may be cut mid-way
    return lines[:limit]
