"""trace-cmd's binary `trace.dat` (file versions 6 and 7, v7's compressed sections included), uploaded as it is.

The file is decoded by Debian's `trace-cmd report` (libtracecmd + libtraceevent: events from the format files
stored in the file, function names from its kallsyms, comms from its saved cmdlines and tgids, its clock,
timestamp offsets and multipliers, time-shift and CPU buffers all applied) run as a child process, and its
output is read by the ftrace text parser (funcgraph.py) as it streams: the same tables, the same derive steps,
the same result as uploading `trace-cmd report -i` of the file. FORMAT is therefore "ftrace"; the notes say it
came from a trace.dat (version, compression, CPUs, clock, the options applied) and that line numbers are those
of the report.

Why a child process rather than the libraries in the server's process or a decoder of our own
(docs/BENCHMARKS.md has the figures): printing the events through libtraceevent in-process (ctypes) took as long
as trace-cmd report itself (0.24 vs 0.21 s for the v7 sample, 1.6 vs 1.2 s for 414 k events), so decoding
in-process would gain little; a decoder of our own would have to re-implement libtraceevent's print formats and
plugins (kernel_stack, sched_switch, function_graph) to equal it; and a hostile file that crashes or hangs
libtraceevent must not take the server with it. The child gets resource limits (CPU time scaled to the file,
address space, the size of the temporary files it decompresses into, no core file) and is killed when it writes
nothing for STALL_SECONDS or far more text than its trace data can hold. trace-cmd's decoding bounds the ingest:
~0.4x the events/s of the same report uploaded as text.

trace-cmd says little about a damaged file (a v7 file cut short gives an empty report and exit status 0), so
tracedat_layout walks the whole file first and refuses it with the byte offset of the first problem.
"""

from __future__ import annotations

import os
import tempfile
from typing import BinaryIO, Iterator

import pyarrow as pa

from . import funcgraph, tracecmd
from .common import ParseError, ParseReport
from .tracedat_layout import (
    DATE,
    MAGIC,
    OFFSET,
    TIME_SHIFT,
    TRACECLOCK,
    TSC2NSEC,
    UNAME,
    VERSION,
    Layout,
    LayoutError,
    read_layout,
)

FORMAT = funcgraph.FORMAT  # its rows are ftrace's, derived as ftrace's
TABLES = funcgraph.TABLES
VIEWS = funcgraph.VIEWS
COPY_BYTES = 1 << 20
REPORT_CHUNK_BYTES = 4 << 20  # the text parser's chunks: it starts on a report before trace-cmd has written 16 MiB


def recognise(head: bytes, filename: str) -> bool:
    """True when `head` starts with the trace.dat magic; ParseError when it looks like a trace.dat whose magic is
    damaged (a binary file named *.dat, or one that starts as the magic does); False otherwise."""
    if head.startswith(MAGIC):
        return True
    if head and len(head) < len(MAGIC) and MAGIC.startswith(head):
        raise ParseError("the file ends inside the trace.dat magic (truncated?)", filename=filename, offset=len(head))
    binary = b"\0" in head[:4096]
    if (binary and filename.lower().endswith(".dat")) or head[:3] == MAGIC[:3] or head[3:10] == MAGIC[3:]:
        raise ParseError(
            f"not a trace-cmd trace.dat: the magic is {head[:10]!r}, expected {MAGIC!r} (a damaged file, "
            "or not written by trace-cmd)",
            filename=filename,
            offset=0,
        )
    return False


def sniff(head: list[str]) -> float:
    """A trace.dat is binary: detect.py recognises it by its magic (recognise), never from text lines."""
    return 0.0


def parse(
    stream: BinaryIO, report: ParseReport, chunk_bytes: int | None = None
) -> Iterator[tuple[str, pa.RecordBatch]]:
    with tempfile.TemporaryDirectory(prefix="stallscope-tracedat-") as tmp:
        path = os.path.join(tmp, "trace.dat")
        size = _copy(stream, path)  # trace-cmd seeks: an upload in memory (or any stream) becomes a file
        try:
            with open(path, "rb") as f:
                layout = read_layout(f, size)
        except LayoutError as e:
            raise ParseError(e.what, filename=report.filename, offset=e.offset) from None
        except RuntimeError as e:  # libzstd missing
            raise ParseError(str(e), filename=report.filename) from None
        if layout.compression != "none" and layout.compression not in tracecmd.compressions(tracecmd.TRACE_CMD):
            raise ParseError(
                f"the file is compressed with {layout.compression}, which this server's trace-cmd cannot "
                f"decompress (it has: {', '.join(tracecmd.compressions(tracecmd.TRACE_CMD)) or 'none'})",
                filename=report.filename,
                offset=layout.compression_at,
            )
        if any(b.latency for b in layout.buffers):
            report.note("the file holds latency-tracer text: its lines are read as the ftrace text they are")
        child = tracecmd.Report(path, tmp, layout, size, report.filename)
        yield from child.parsed(lambda out: funcgraph.parse(out, report, chunk_bytes or REPORT_CHUNK_BYTES))
        _notes(report, layout, size, child)


def _copy(stream: BinaryIO, path: str) -> int:
    size = 0
    buf = bytearray(COPY_BYTES)
    with open(path, "wb") as out, memoryview(buf) as view:
        while got := stream.readinto(view):
            out.write(view[:got])
            size += got
    return size


def _notes(report: ParseReport, layout: Layout, size: int, child: tracecmd.Report) -> None:
    report.note(
        f"{layout.describe()}, decoded by trace-cmd report {child.version} ({child.text_bytes:,} bytes of "
        f"text, {report.lines:,} lines; line numbers are the report's)"
    )
    clocks = layout.option_text(TRACECLOCK)
    named = [b.clock for b in layout.buffers if b.clock]
    if clocks and "[" in clocks[0]:
        report.note(f"trace clock (the file's trace_clock): {clocks[0]}")
    elif named:
        report.note(f"trace clock: [{named[0]}] (the file's buffer option)")
    else:
        report.note("the file names no trace clock (trace-cmd records with 'local' unless told otherwise)")
    applied = [
        f"{name} {text}"
        for option, name in ((DATE, "date offset"), (OFFSET, "timestamp offset"))
        for text in layout.option_text(option)
    ]
    if TSC2NSEC in layout.options:
        applied.append("TSC-to-ns multiplier and shift")
    if TIME_SHIFT in layout.options:
        applied.append("host/guest time shift")
    if applied:
        report.note("times corrected by trace-cmd as the file says: " + ", ".join(applied))
    instances = [b.name for b in layout.buffers if b.name]
    if instances:
        report.note(
            f"buffer instances {', '.join(map(repr, instances))}: trace-cmd report prefixes each of their events "
            "with the instance's name, so the task of such an event is named '<instance>:   <comm>' (as when "
            "its report is uploaded)"
        )
    for text in layout.option_text(UNAME)[:1]:
        report.note(f"recorded on: {text}")
    for text in layout.option_text(VERSION)[:1]:
        report.note(f"recorded by trace-cmd {text.split()[0]}")
    said = child.stderr_text()
    if said:
        report.note(f"trace-cmd report said: {said}")
    report.bytes_read = size  # the upload's bytes, not the report's
    kind = f"trace.dat v{layout.version}" + (f" ({layout.compression})" if layout.compression != "none" else "")
    report.files = [{"filename": report.filename, "kind": kind}]
