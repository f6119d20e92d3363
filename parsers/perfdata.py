"""perf's binary `perf.data` (perf record's file, or its pipe form `perf record -o -`), uploaded as it is.

The file is decoded by Debian's `perf script` run as a child process (child.ChildText: limits on its CPU time,
scaled to the file, its address space and the files it may write; no core file; killed when it writes nothing for
STALL_SECONDS or far more text than the file can hold), and its output is read by the perf script text reader
(perf.py) as it streams: the same tables as uploading that text. perf script is asked for the fields that reader
needs (`-F trace:comm,tid,cpu,time,event,trace` and, when every tracepoint was recorded with its call chain,
`ip,sym,symoff,dso`), only those the file's events hold (perf refuses a field its samples lack), and is told to print
nothing of the events that are not tracepoints (`-F hw: -F sw: -F raw:`, for the kinds the file holds).

perf script says nothing about a file cut short (it prints what it read and exits with 0), so the header is read
first (read_layout): the magic, the sections (attributes, data, the feature sections after the data) within the
file, each event's attributes (its kind, what its samples hold). A problem refuses the file with its byte offset; a
record that perf script cannot decode refuses it with perf's message.

Call-chain symbols are what this server's perf resolves: perf.data holds addresses, not names. Kernel frames are
named from this server's /proc/kallsyms only when the file's kernel build-id is this server's; other frames read
`[unknown]`. For a capture from another machine, the `perf script` text made there keeps its names.
"""

from __future__ import annotations

import os
import resource
import shutil
import struct
import tempfile
from dataclasses import dataclass, field
from typing import BinaryIO, Iterator

import pyarrow as pa

from . import child, perf
from .common import ParseError, ParseReport

FORMAT = perf.FORMAT
TABLES = perf.TABLES
GENERATED = perf.GENERATED
KIND = "perf script (perf.data)"  # (the frontend's chip for a source of this kind says `perf.data`)
MAGIC = b"PERFILE2"  # as a little-endian file starts; a big-endian one starts "2ELIFREP"
MAGIC_BE = MAGIC[::-1]
PERF = os.environ.get("STALLSCOPE_PERF", "perf")
STALL_SECONDS = 60  # the child is killed when it writes nothing for this long
CPU_SECONDS_BASE, CPU_SECONDS_PER_MB = 60, 4  # its CPU time limit
MEMORY_BYTES = 4 << 30  # its address space (perf maps the data section in windows, and its symbol tables)
OUTPUT_PER_DATA_BYTE = 64  # bytes of text at most per byte of the file (the fixture's: 3.5)
TEXT_CHUNK_BYTES = 4 << 20  # the text reader's chunks: it starts before perf script has written 16 MiB
INSTALL_HINT = (
    "perf is not installed on the server, and reading a perf.data needs it: install it (Debian/Ubuntu: "
    "`apt-get install linux-perf`; `make run` and the Docker image do), or upload the output of "
    "`perf script -i <file>` instead"
)

# perf_event_attr: type, size, config, sample_period, sample_type (tools/include/uapi/linux/perf_event.h)
TYPE_HARDWARE, TYPE_SOFTWARE, TYPE_TRACEPOINT, TYPE_RAW = 0, 1, 2, 4
SW_DUMMY = 9  # the software event perf record adds to follow mmaps and comms: it has no samples
SAMPLE_TID, SAMPLE_TIME, SAMPLE_CALLCHAIN, SAMPLE_CPU, SAMPLE_RAW = 1 << 1, 1 << 2, 1 << 5, 1 << 7, 1 << 10
HEADER_BYTES, PIPE_HEADER_BYTES = 104, 16
ATTR_MIN = 64  # PERF_ATTR_SIZE_VER0
HEADER_ATTR = 64  # PERF_RECORD_HEADER_ATTR: a pipe file's event attributes, at its start
PIPE_SCAN_BYTES = 16 << 20  # a pipe file's header records are read this far at most
KINDS = {TYPE_HARDWARE: "hardware", TYPE_SOFTWARE: "software", TYPE_TRACEPOINT: "tracepoint", 3: "hardware cache",
         TYPE_RAW: "raw", 5: "breakpoint"}  # fmt: skip


class LayoutError(ValueError):
    def __init__(self, what: str, offset: int):
        self.what, self.offset = what, offset
        super().__init__(f"byte {offset}: {what}")


@dataclass
class Attr:
    type: int
    config: int
    sample_type: int


@dataclass
class Layout:
    pipe: bool
    big_endian: bool
    data_bytes: int
    attrs: list[Attr] = field(default_factory=list)

    def tracepoints(self) -> list[Attr]:
        return [a for a in self.attrs if a.type == TYPE_TRACEPOINT]

    def others(self) -> list[Attr]:
        """The events that are not tracepoints (perf record's dummy event left out)."""
        return [a for a in self.attrs if a.type != TYPE_TRACEPOINT and (a.type, a.config) != (TYPE_SOFTWARE, SW_DUMMY)]

    def describe(self) -> str:
        form = "perf.data, pipe form (perf record -o -)" if self.pipe else "perf.data"
        return form + (", big-endian" if self.big_endian else "")


def recognise(head: bytes, filename: str) -> bool:
    """True when `head` starts with the perf.data magic; ParseError when it looks like a perf.data whose magic is
    damaged (a binary file that starts as the magic does), or one of perf's first format (PERFFILE)."""
    if head.startswith((MAGIC, MAGIC_BE)):
        return True
    if head.startswith(b"PERFFILE"):
        raise ParseError(
            "a perf.data of perf's first file format (PERFFILE), which this server's perf does not read: record it "
            "again with a perf of 2010 or later, or upload its `perf script` text",
            filename=filename,
            offset=0,
        )
    binary = b"\0" in head[:4096]
    if binary and (head[:4] == MAGIC[:4] or head[4:8] == MAGIC[4:]):
        raise ParseError(
            f"not a perf.data: the magic is {head[:8]!r}, expected {MAGIC!r} (a damaged file, or not written by perf)",
            filename=filename,
            offset=0,
        )
    return False


def sniff(head: list[str]) -> float:
    """A perf.data is binary: detect.py recognises it by its magic (recognise), never from text lines."""
    return 0.0


def read_layout(f: BinaryIO, size: int) -> Layout:
    """The header of the perf.data in f (size bytes): LayoutError at the first thing that is wrong."""
    head = f.read(HEADER_BYTES)
    if len(head) < PIPE_HEADER_BYTES:
        raise LayoutError(f"the file ends after {len(head)} bytes, inside its 16-byte header", len(head))
    big = head[:8] == MAGIC_BE
    e = ">" if big else "<"
    (header_size,) = struct.unpack_from(e + "Q", head, 8)
    if header_size == PIPE_HEADER_BYTES:
        return _pipe_layout(f, size, e, big)
    if header_size != HEADER_BYTES:
        raise LayoutError(
            f"the header says it is {header_size} bytes long: a perf.data's is {HEADER_BYTES} (or {PIPE_HEADER_BYTES} "
            "in the pipe form)",
            8,
        )
    if len(head) < HEADER_BYTES:
        raise LayoutError(f"the file ends after {len(head)} bytes, inside its {HEADER_BYTES}-byte header", len(head))
    attr_size, attrs_at, attrs_bytes, data_at, data_bytes = struct.unpack_from(e + "5Q", head, 16)
    features = int.from_bytes(head[72:104], "big" if big else "little")
    if not ATTR_MIN + 16 <= attr_size <= 4096:
        raise LayoutError(f"an event's attributes are said to take {attr_size} bytes (expected 80 to 4096)", 16)
    if attrs_bytes == 0 or attrs_bytes % attr_size:
        raise LayoutError(f"the attributes section's size ({attrs_bytes}) is not a multiple of {attr_size}", 32)
    _within(attrs_at, attrs_bytes, size, "the attributes section", 24)
    if data_bytes == 0:
        raise LayoutError(
            "the data section is empty: perf record was stopped before it wrote its header (killed?), or "
            "recorded nothing",
            48,
        )
    _within(data_at, data_bytes, size, "the data section", 40)
    nfeatures = bin(features).count("1")
    if nfeatures:  # their table right after the data: a file cut short loses it first
        _within(data_at + data_bytes, 16 * nfeatures, size, f"the table of the {nfeatures} feature sections", 40)
    f.seek(attrs_at)
    raw = f.read(attrs_bytes)
    attrs = []
    for at in range(0, attrs_bytes, attr_size):
        kind, asize, config, _, sample_type = struct.unpack_from(e + "IIQQQ", raw, at)
        if not ATTR_MIN <= asize <= attr_size - 16:
            raise LayoutError(f"an event's attributes say they are {asize} bytes long", attrs_at + at + 4)
        attrs.append(Attr(kind, config, sample_type))
    return Layout(pipe=False, big_endian=big, data_bytes=data_bytes, attrs=attrs)


def _within(at: int, n: int, size: int, what: str, field_at: int) -> None:
    if at + n > size:
        raise LayoutError(
            f"{what} ({n:,} bytes at byte {at:,}) goes past the end of the file ({size:,} bytes): the file was cut "
            "short",
            field_at,
        )


def _pipe_layout(f: BinaryIO, size: int, e: str, big: bool) -> Layout:
    """A pipe file: its events' attributes are the HEADER_ATTR records it starts with (perf writes them first)."""
    f.seek(PIPE_HEADER_BYTES)
    raw = f.read(min(size, PIPE_SCAN_BYTES) - PIPE_HEADER_BYTES)
    at, attrs = 0, []
    while at + 8 <= len(raw):
        kind, _, rsize = struct.unpack_from(e + "IHH", raw, at)
        if kind != HEADER_ATTR:
            break
        if rsize < 8 + ATTR_MIN or at + rsize > len(raw):
            raise LayoutError(f"an event's attributes record says it is {rsize} bytes long", PIPE_HEADER_BYTES + at + 6)
        atype, _, config, _, sample_type = struct.unpack_from(e + "IIQQQ", raw, at + 8)
        attrs.append(Attr(atype, config, sample_type))
        at += rsize
    if not attrs:
        raise LayoutError(
            "no event attributes at its start (a pipe-form perf.data starts with them)", PIPE_HEADER_BYTES
        )
    return Layout(pipe=True, big_endian=big, data_bytes=size - PIPE_HEADER_BYTES, attrs=attrs)


def script_args(layout: Layout, path: str) -> tuple[list[str], list[str]]:
    """perf script's command line for the file, and notes on what it leaves out."""
    points = layout.tracepoints()
    common = ~0
    for a in points:
        common &= a.sample_type
    notes = []
    fields = ["comm", "tid"]
    if common & SAMPLE_CPU:
        fields.append("cpu")
    fields += ["time", "event", "trace"]
    if all(a.sample_type & SAMPLE_CALLCHAIN for a in points):
        fields += ["ip", "sym", "symoff", "dso"]
    elif any(a.sample_type & SAMPLE_CALLCHAIN for a in points):
        notes.append("only some of its tracepoints were recorded with call chains: none is read (perf script prints "
                     "the others' sample address in their text)")  # fmt: skip
    args = [PERF, "script", "-f", "-i", path, "-F", "trace:" + ",".join(fields)]
    others = layout.others()
    silenced = {TYPE_HARDWARE: "hw", TYPE_SOFTWARE: "sw", TYPE_RAW: "raw"}
    for kind in sorted({a.type for a in others} & silenced.keys()):
        args += ["-F", silenced[kind] + ":"]
    left = sorted({KINDS.get(a.type, f"type {a.type}") for a in others if a.type not in silenced})
    if others:
        notes.append(
            f"it also holds {len(others)} events that are not tracepoints: not read"
            + (f" (those of kind {', '.join(left)} are listed as skipped lines)" if left else "")
        )
    return args, notes


def parse(
    stream: BinaryIO, report: ParseReport, chunk_bytes: int | None = None
) -> Iterator[tuple[str, pa.RecordBatch]]:
    with tempfile.TemporaryDirectory(prefix="stallscope-perfdata-") as tmp:
        file = child.DecodedFile(stream, tmp, "perf.data")  # perf seeks: the file itself, or a copy
        path, size = file.path, file.size
        try:
            with open(path, "rb") as f:
                layout = read_layout(f, size)
        except LayoutError as e:
            raise ParseError(e.what, filename=report.filename, offset=e.offset) from None
        points = layout.tracepoints()
        if not points:
            kinds = sorted({KINDS.get(a.type, f"type {a.type}") for a in layout.others()})
            raise ParseError(
                f"the perf.data holds no tracepoint events (its events are of kind {', '.join(kinds) or 'none'}): "
                "Stallscope reads sched:sched_switch, sched:sched_wakeup and block:block_rq_* (perf record -e "
                "sched:sched_switch -e sched:sched_wakeup -e block:block_rq_issue -e block:block_rq_complete -g -a)",
                filename=report.filename,
            )
        common = ~0
        for a in points:
            common &= a.sample_type
        if common & (SAMPLE_TID | SAMPLE_TIME) != SAMPLE_TID | SAMPLE_TIME:
            raise ParseError(
                "its tracepoints were recorded without the task or the time of each event, which Stallscope needs",
                filename=report.filename,
            )
        args, notes = script_args(layout, path)
        if shutil.which(PERF) is None:
            raise ParseError(INSTALL_HINT, filename=report.filename)
        version = child.version(PERF, "version")
        proc = child.ChildText(
            args,
            cwd=tmp,
            env={
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "HOME": tmp,  # no ~/.perfconfig, no build-id cache of the server's user
                "LC_ALL": "C",
                "PERF_CONFIG_NOSYSTEM": "1",
                "DEBUGINFOD_URLS": "",
            },
            limits=[
                (resource.RLIMIT_CPU, CPU_SECONDS_BASE + CPU_SECONDS_PER_MB * size // (1 << 20)),
                (resource.RLIMIT_AS, MEMORY_BYTES),
                (resource.RLIMIT_CORE, 0),
                (resource.RLIMIT_FSIZE, 16 << 20),
            ],
            max_text=OUTPUT_PER_DATA_BYTE * size + (16 << 20),
            stall_seconds=STALL_SECONDS,
            tool="`perf script`",
            data_bytes=size,
            what="perf.data",
            filename=report.filename,
            install_hint=INSTALL_HINT,
            pass_fds=file.fds,
        )
        yield from proc.parsed(lambda out: perf.parse(out, report, chunk_bytes or TEXT_CHUNK_BYTES))
        report.note(
            f"{layout.describe()}, decoded by perf script {version} ({proc.text_bytes:,} bytes of text, "
            f"{report.lines:,} lines; line numbers are perf script's)"
        )
        for n in notes:
            report.note(n)
        if any(a.sample_type & SAMPLE_CALLCHAIN for a in points):
            report.note(
                "call-chain symbols as this server's perf resolved them: kernel frames only when the file's kernel is "
                "this server's, other frames [unknown]; the perf script text made where it was recorded keeps them"
            )
        said = proc.stderr_text()
        if said:
            report.note(f"perf script said: {said}")
        report.bytes_read = size  # the upload's bytes, not the text's
        report.files = [
            {"filename": report.filename, "kind": KIND.replace(")", ", pipe form)") if layout.pipe else KIND}
        ]
