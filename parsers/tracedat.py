"""trace-cmd's binary `trace.dat` (file versions 6 and 7, v7's compressed sections included), uploaded as it is.

tracedat_layout walks the whole file and refuses a damaged one with the byte offset of its first problem (trace-cmd
says little: a v7 file cut short gives an empty report and exit status 0); nothing is read before it passes, but for
the zstd chunks of trace data the decoder reads itself: the walk checks their headers, and the decoder refuses a
chunk that does not decompress to its stated size, with its offset, as the walk would. The file is decoded (starting
as the walk does, stopped if it refuses) by
Debian's libtracecmd and libtraceevent (events from the format files stored in the file, function names from its
kallsyms, comms from its saved cmdlines, its clock, timestamp offsets and multipliers, plugins: what `trace-cmd
report` applies) in a child process under resource limits, `tracedat-records` (tracedat_records.c; the pages of
uncompressed or zstd data it reads itself, once told where they lie: tracedat_pages.h): it walks the events in the report's
order and writes those the tables take fields from (sched_switch, sched_wakeup[_new],
sched_waking, funcgraph_entry/exit, kernel_stack) as their fields, without printing them, and every other event as
libtraceevent prints it; the ftrace tokenizer folds those records into the rows the report's text would give, with
the report's line numbers (tracedat_records.py). FORMAT is therefore "ftrace": the same tables, derive steps and
result as uploading `trace-cmd report -i` of the file (tests compare them on every trace.dat at hand); the notes say
it came from a trace.dat (version, compression, CPUs, clock, the options applied).

`trace-cmd report` itself, as a child read by the text parser (funcgraph.py), remains for what the records do not
cover: a server built without libtracecmd, buffer instances (the report prefixes their events with the instance's
name), latency-tracer text and timestamps that are a raw counter.

Why a child process (docs/BENCHMARKS.md has the figures): a hostile file that crashes or hangs libtraceevent must not
take the server with it; the child gets limits (CPU time scaled to the file, address space, the size of the temporary
files it decompresses into, no core file) and is killed when it writes nothing for STALL_SECONDS or far more than its
trace data can hold. Why libtracecmd rather than a decoder of our own: trace_events keeps every other event as its
printed text (6-42 % of the events of 7 of the 8 captures at hand: block_*, which the block derive step reads back
from that text, jbd2_*, softirq, irq, writeback, xfs, print), and only libtraceevent's print formats and plugins render
it as the report does."""

from __future__ import annotations

import tempfile
from typing import BinaryIO, Iterator

import pyarrow as pa

from . import child, funcgraph, tracecmd, tracedat_records
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
        file = child.DecodedFile(stream, tmp, "trace.dat")  # libtracecmd seeks: the file itself, or a copy
        path, size = file.path, file.size
        # the decoder starts at once, its limits bounded by the file's size, and decodes while the layout is walked
        records = (
            tracedat_records.Records(path, tmp, size, report.filename, file.fds)
            if tracedat_records.available()
            else None
        )
        try:  # (compressed chunks the decoder reads are decompressed there, a damaged one refused with its offset)
            layout = _layout(path, size, report, decompress_chunks=records is None)
            if records and any(b.name or b.latency for b in layout.buffers):  # the report's text covers these
                records.stop()
                records = None
            if not layout.chunks_decompressed and (records is None or not tracedat_records.reads_pages(layout)):
                layout = _layout(path, size, report)  # libtracecmd decompresses them: each checked here first
        except BaseException:
            if records:
                records.stop()
            raise
        if any(b.latency for b in layout.buffers):
            report.note("the file holds latency-tracer text: its lines are read as the ftrace text they are")
        if records:
            records.bound(layout)
            try:
                yield from records.parsed(lambda out: tracedat_records.parse(out, report))
                _notes(report, layout, size, records, "'s libraries (libtracecmd) into records")
                return
            except tracedat_records.NotNative:
                if not layout.chunks_decompressed:
                    layout = _layout(path, size, report)
        text = tracecmd.Report(path, tmp, layout, size, report.filename, file.fds)
        yield from text.parsed(lambda out: funcgraph.parse(out, report, chunk_bytes or REPORT_CHUNK_BYTES))
        _notes(report, layout, size, text, f" {text.version} ({text.text_bytes:,} bytes of text)")


def _layout(path: str, size: int, report: ParseReport, decompress_chunks: bool = True) -> Layout:
    """The file's layout, walked whole (tracedat_layout), or its first problem refused with its byte offset."""
    try:
        with open(path, "rb") as f:
            layout = read_layout(f, size, decompress_chunks)
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
    return layout


def _notes(report: ParseReport, layout: Layout, size: int, child, how: str) -> None:
    report.note(
        f"{layout.describe()}, decoded by trace-cmd report{how} ({report.lines:,} lines; line numbers are the report's)"
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
        report.note(f"{child.tool} said: {said}")
    report.bytes_read = size  # the upload's bytes, not the report's
    kind = f"trace.dat v{layout.version}" + (f" ({layout.compression})" if layout.compression != "none" else "")
    report.files = [{"filename": report.filename, "kind": kind}]
