"""A trace.dat's events read natively: `tracedat-records` (parsers/tracedat_records.c, built by setup.py against
Debian's libtracecmd and libtraceevent) run as a child process under the limits `trace-cmd report` gets, its record
stream folded by the ftrace tokenizer (_funcgraph.records) into the rows the report's text would give, with the
report's line numbers.

Used by tracedat.py when the program is built and the file's events are all in its top buffer; otherwise (buffer
instances, latency-tracer text, no libtracecmd at build time, timestamps that are not in nanoseconds) the report's
text is read, as before.
"""

from __future__ import annotations

import os
import re
import resource
from pathlib import Path
from typing import Iterator

import pyarrow as pa

from . import _funcgraph, child, funcgraph, tracecmd, tracedat_layout
from .common import ParseError, ParseReport
from .tracedat_layout import Layout

PROGRAM = Path(__file__).with_name("tracedat-records")
CHUNK_BYTES = 4 << 20  # read at a time; grown for a record larger than that
MAX_RECORD_BYTES = 1 << 30
NOT_NANOSECONDS = 3  # its exit status when the file's times are a raw counter (the report prints them as it is)
DAMAGED = 4  # its exit status when a zstd chunk does not decompress to its stated size (stderr: "damaged at byte N: ")
_DAMAGED_AT = re.compile(rb"damaged at byte (\d+): ([^\n]*)")
# its output per byte of trace data at most (records are more compact than the report's text)
OUTPUT_PER_DATA_BYTE = tracecmd.OUTPUT_PER_DATA_BYTE


class NotNative(Exception):
    """The program cannot read this file as records (NOT_NANOSECONDS): the report's text is read instead."""


def available() -> bool:
    return PROGRAM.is_file() and os.access(PROGRAM, os.X_OK)


class Records(child.ChildText):
    """`tracedat-records path`, its stdout read as a stream, under the limits of tracecmd.Report. It starts before
    the layout is walked, its limits bounded by what the walk allows a file of its size (MAX_EXPANSION); bound()
    then brings them down to what the layout says."""

    def __init__(self, path: str, tmp: str, size: int, filename: str, fds: tuple[int, ...] = ()):
        self.size = size
        most = tracedat_layout.MAX_EXPANSION * size + tracedat_layout.MAX_TRACE_CHUNK  # decompressed, at most
        super().__init__(
            [str(PROGRAM), path, "--sections"],
            cwd=tmp,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tmp, "LC_ALL": "C"},
            limits=[(resource.RLIMIT_AS, tracecmd.MEMORY_BYTES), (resource.RLIMIT_CORE, 0), *_limits(size, most)],
            max_text=_max_output(size + most),
            stall_seconds=tracecmd.STALL_SECONDS,
            tool="the trace.dat decoder (libtracecmd)",
            data_bytes=size,
            what="trace data",
            filename=filename,
            install_hint=tracecmd.INSTALL_HINT,
            stdin=True,
            pass_fds=fds,
        )

    def bound(self, layout: Layout) -> None:
        """The limits of tracecmd.Report for this layout (CPU time, temporary files, output); and, on its stdin, where
        each CPU's data lies (sections_line)."""
        self.tell(sections_line(layout))
        self.data_bytes = layout.trace_bytes
        self.max_text = _max_output(layout.trace_bytes + layout.uncompressed_bytes)
        for which, value in _limits(self.size, layout.uncompressed_bytes):
            try:
                resource.prlimit(self.proc.pid, which, (value, value))
            except (OSError, ValueError):  # it already ended: its status says how
                pass

    def failure(self) -> ParseError | None:
        """A damaged chunk is refused as the layout's walk refuses it: what, and its byte offset."""
        failure = super().failure()
        found = _DAMAGED_AT.search(self.err) if failure and self.proc.poll() == DAMAGED else None
        if found:
            return ParseError(found[2].decode("utf-8", "replace"), filename=self.filename, offset=int(found[1]))
        return failure

    def leftovers(self) -> list[str]:
        return tracecmd.temp_files(self.proc.pid)


def sections_line(layout: Layout) -> str:
    """What tracedat-records reads on its stdin with --sections: "N cpu offset size ..." of the top buffer's CPUs, in
    the file's order (libtracecmd's), when their pages can be read as they are stored (or in zstd chunks: "Z" first)
    and their times are the pages' plus a constant offset (it then reads them itself: tracedat_pages.h); "-" otherwise
    (zlib data, a TSC multiplier, a host/guest time shift, buffer instances, latency text: libtracecmd reads the
    pages)."""
    corrected = {tracedat_layout.TSC2NSEC, tracedat_layout.TIME_SHIFT} & set(layout.options)
    if layout.compression not in ("none", "zstd") or corrected or len(layout.buffers) != 1:
        return "-\n"
    top = layout.buffers[0]
    if top.name or top.latency or not top.cpus:
        return "-\n"
    cpus = " ".join([str(len(top.cpus)), *(f"{cpu} {offset} {size}" for cpu, offset, size in top.cpus)])
    return ("Z " if layout.compression == "zstd" else "") + cpus + "\n"


def reads_pages(layout: Layout) -> bool:
    """Whether the decoder reads the pages (and decompresses the chunks) itself, rather than libtracecmd."""
    return sections_line(layout) != "-\n"


def _limits(size: int, decompressed: int) -> list[tuple[int, int]]:
    cpu = tracecmd.CPU_SECONDS_BASE + tracecmd.CPU_SECONDS_PER_MB * (size + decompressed) // (1 << 20)
    return [(resource.RLIMIT_CPU, cpu), (resource.RLIMIT_FSIZE, decompressed + (16 << 20))]


def _max_output(data_bytes: int) -> int:
    return OUTPUT_PER_DATA_BYTE * data_bytes + (16 << 20)


def parse(out: Records, report: ParseReport) -> Iterator[tuple[str, pa.RecordBatch]]:
    """The tables of the records `out` writes, as funcgraph.parse gives them from the report's text."""
    state = _funcgraph.new_state()
    buf = bytearray(CHUNK_BYTES)
    have, read, folded = 0, 0, 0  # bytes in buf, read, folded before buf
    while True:
        with memoryview(buf) as view:
            got = out.readinto(view[have:])
        have += got
        read += got
        if have == 0 and got == 0:
            break
        with memoryview(buf) as view, view[:have] as chunk:
            try:
                cols = _funcgraph.records(state, chunk, report.lines + 1, folded)
            except ValueError as e:
                raise ParseError(f"{e} (a damaged file?)", filename=report.filename) from None
            report.lines += cols["lines"]
            yield from funcgraph.take(report, cols, chunk)
            used = cols["consumed"]
            buf[: have - used] = chunk[used:have].tobytes()
        have -= used
        folded += used
        if got == 0:
            if have:
                raise ParseError("the records end inside a record", filename=report.filename)
            break
        if used == 0 and have == len(buf):  # one record larger than the buffer
            if len(buf) >= MAX_RECORD_BYTES:
                raise ParseError("a record of more than 1 GiB", filename=report.filename)
            buf.extend(bytes(len(buf)))
    if read == 0 and out.proc.wait() == NOT_NANOSECONDS:
        raise NotNative
    yield from funcgraph.finish(state, report)
