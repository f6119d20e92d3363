"""blktrace binary captures -> the same block events as the blkparse text of that capture.

What can be read as it comes from the tracer:
  * the per-CPU files of a capture, `NAME.blktrace.0..N` (`blktrace -d /dev/sda` writes `sda.blktrace.<cpu>`):
    the files of one NAME form one source, merged in time as `blkparse -i NAME` merges them; a CPU without its
    file is noted, and an empty file (a CPU that did no I/O) is part of its set;
  * any other file of blktrace records is one merged stream, read as `blkparse -i - < file` reads it: a
    `blkparse -d` dump, `blktrace -o -` output;
  * `struct blk_io_trace` (version 7) and `blk_io_trace2` (version 8, 64-byte header and a 64-bit action, from the
    2025 kernels), in either byte order.

The records are read in C, in the order `blkparse -i` prints them (parsers/_blktrace.c says what is read and how it
is ordered), and each becomes the event the blkparse text reader would read from its line, folded into the same
columns by the same rebuilder (parse_set: parsers/_blkparse_binary.h): no text is written or tokenized, but for the
rare record whose line that does not reproduce (a passthrough payload, a cgroup, a name or message that is not plain
text), which is written and read as text. So a binary capture gives the requests, names, remaps, merges and messages
its blkparse text gives, and a line number in a source read from binary is the line of that event in `blkparse -i`
output. parse_set_as_text reads a capture the other way, all its lines written and read as text: the same tables
(tests/test_blktrace_native.py).
"""

from __future__ import annotations

import re
from typing import BinaryIO, Iterator

import pyarrow as pa

from . import _blkparse, _blktrace, blkparse
from .common import CHUNK_BYTES, ParseError, ParseReport

FORMAT = blkparse.FORMAT  # the same tables, analysed as blkparse text is
TABLES = blkparse.TABLES
GENERATED = blkparse.GENERATED

PER_CPU = re.compile(r"^(?P<name>.+)\.blktrace\.(?P<cpu>\d+)$")
MAGIC = 0x65617400
READ_BYTES = 1 << 20  # read from each file at a time
LINE_BYTES = 70  # a blkparse event line's usual length: a batch holds the events a chunk of their text holds


def recognise(head: bytes, filename: str) -> bool:
    """Whether a file is blktrace's: its first record's magic (either byte order, version 7 or 8), or an empty
    per-CPU file of a capture (a CPU that did no I/O)."""
    if not head:
        return PER_CPU.match(filename) is not None
    if len(head) < 4:
        return False
    for order in ("little", "big"):
        magic = int.from_bytes(head[:4], order)
        if magic & 0xFFFFFF00 == MAGIC:
            return True
    return False


def _cpu(filename: str) -> int | None:
    m = PER_CPU.match(filename)
    return int(m["cpu"]) if m else None


def group(filenames: list[str]) -> list[list[int]]:
    """The per-CPU files of one capture (NAME.blktrace.<cpu>, one NAME) form one source, read in CPU order; any
    other file is a source alone. Groups come in the order of their first file."""
    sets: dict[str, list[int]] = {}
    groups: list[list[int]] = []
    for i, name in enumerate(filenames):
        m = PER_CPU.match(name)
        if m is None:
            groups.append([i])
        elif m["name"] in sets:
            sets[m["name"]].append(i)
        else:
            sets[m["name"]] = [i]
            groups.append(sets[m["name"]])
    for g in groups:
        g.sort(key=lambda i: _cpu(filenames[i]) or 0)
    return groups


def _ranges(cpus: list[int]) -> str:
    """0-3,5,7-8"""
    out, start = [], None
    for k, c in enumerate(cpus):
        if start is None:
            start = c
        if k + 1 == len(cpus) or cpus[k + 1] != c + 1:
            out.append(str(start) if start == c else f"{start}-{c}")
            start = None
    return ",".join(out)


def source_name(filenames: list[str]) -> str:
    """A set's name: `sda.blktrace.0-7`, `sdb.blktrace.0,1,5` (one file: its name)."""
    if len(filenames) == 1:
        return filenames[0]
    m = PER_CPU.match(filenames[0])
    return f"{m['name']}.blktrace.{_ranges(sorted(_cpu(f) for f in filenames))}"


def parse(
    stream: BinaryIO, report: ParseReport, chunk_bytes: int = CHUNK_BYTES
) -> Iterator[tuple[str, pa.RecordBatch]]:
    """One file: a per-CPU file alone (by its name), else a merged stream."""
    yield from parse_set([(report.filename, stream)], report, chunk_bytes)


def parse_set(
    members: list[tuple[str, BinaryIO]], report: ParseReport, chunk_bytes: int = CHUNK_BYTES
) -> Iterator[tuple[str, pa.RecordBatch]]:
    """The files of one capture as one source: their records folded natively (Rebuilder.read), a batch per about
    chunk_bytes of the text they would print."""
    names, per_cpu = _describe(members, report)
    records = _blkparse.Records(len(members), per_cpu)
    rebuilder = _blkparse.Rebuilder(top=blkparse.TOP)
    max_lines = max(1, chunk_bytes // LINE_BYTES)
    while True:
        try:
            cols = rebuilder.read(records, max_lines)
        except _blkparse.BlktraceError as e:
            stream, offset, message = e.args
            raise ParseError(message, filename=names[stream], offset=offset) from None
        if cols is None:  # a stream needs its next bytes
            need = records.need()
            data = members[need][1].read(READ_BYTES)
            report.bytes_read += len(data)
            records.feed(need, data)
            continue
        blkparse.account(cols, memoryview(cols["sk_text"]), report)
        yield from blkparse._batches(cols)
        if records.done():
            break
    yield from blkparse.finish(rebuilder, report)
    _notes(records.stats(), names, per_cpu, report)


def parse_set_as_text(
    members: list[tuple[str, BinaryIO]], report: ParseReport, chunk_bytes: int = CHUNK_BYTES
) -> Iterator[tuple[str, pa.RecordBatch]]:
    """The same source read the other way: its records rendered as blkparse's lines (parsers/_blktrace.c), read by the
    blkparse text reader (blkparse.rebuild). parse_set gives the same tables (the tests compare them)."""
    names, per_cpu = _describe(members, report)
    renderer = _blktrace.Renderer(len(members), per_cpu)

    def chunks() -> Iterator[memoryview]:
        out = bytearray(chunk_bytes)
        end = 0
        while True:
            try:
                end, _, done = renderer.render(out, end)
            except _blktrace.Error as e:
                stream, offset, message = e.args
                raise ParseError(message, filename=names[stream], offset=offset) from None
            need = renderer.need()
            if need >= 0:
                data = members[need][1].read(READ_BYTES)
                report.bytes_read += len(data)
                renderer.feed(need, data)
                continue
            if end:
                with memoryview(out) as view:
                    yield view[:end]
                end = 0
            if done:
                return

    yield from blkparse.rebuild(chunks(), report)
    _notes(renderer.stats(), names, per_cpu, report)


def _describe(members: list[tuple[str, BinaryIO]], report: ParseReport) -> tuple[list[str], bool]:
    """The members' names and whether they are per-CPU files; report.files and the note of a missing CPU."""
    names = [name for name, _ in members]
    per_cpu = all(PER_CPU.match(n) for n in names)
    if len(members) > 1 and not per_cpu:
        raise ParseError(
            "several files read as one must be the per-CPU files of one capture (NAME.blktrace.<cpu>)",
            filename=", ".join(names),
        )
    report.files = [
        {
            "filename": n,
            "kind": f"blktrace per-CPU file, CPU {_cpu(n)}"
            if per_cpu
            else "blktrace stream (blkparse -d dump or blktrace -o -)",
        }
        for n in names
    ]
    if per_cpu and len(members) > 1:
        cpus = sorted(_cpu(n) for n in names)
        missing = sorted(set(range(cpus[-1] + 1)) - set(cpus))
        if missing:
            base = PER_CPU.match(names[0])["name"]
            report.note(
                f"{base}: no file for CPU {_ranges(missing)} ({', '.join(f'{base}.blktrace.{c}' for c in missing[:8])}"
                f"{', ...' if len(missing) > 8 else ''}): the I/O traced on "
                f"{'that CPU' if len(missing) == 1 else 'those CPUs'} is not in this source (requests whose"
                " phases ran there are incomplete)"
            )
    return names, per_cpu


def _notes(stats: dict, names: list[str], per_cpu: bool, report: ParseReport) -> None:
    report.facts["blktrace"] = stats
    for name, s, f in zip(names, stats["streams"], report.files):
        f["records"] = s["records"]
        cpu = _cpu(name)
        if per_cpu and s["records"] and (s["cpu_min"] != cpu or s["cpu_max"] != cpu):
            said = s["cpu_min"] if s["cpu_min"] == s["cpu_max"] else f"{s['cpu_min']}-{s['cpu_max']}"
            report.note(
                f"{name}: its records say CPU {said}, not {cpu} as its name does; they are read as recorded"
                " (stock blkparse drops them: 'cpu N trace info has error')"
            )
        if per_cpu and not s["records"] and not s["notify"]:
            report.note(f"{name}: empty (no I/O was traced on CPU {cpu})")
    if stats["left_out"]:
        report.note(
            f"{stats['left_out']:,} records blkparse does not print (abort, driver data, unknown actions) were"
            " left out, as blkparse leaves them out"
        )
    if stats["forced"]:
        report.note(
            f"{stats['forced']:,} records were placed without waiting for a missing sequence number (more than"
            " 4 M records waited): their order may differ from blkparse's"
        )
    if stats["version8"]:
        report.note(
            "blk_io_trace2 records (version 8, 64-bit actions): read as blkparse reads version 7; zone"
            " operations show as RWBS ZA/ZR/ZX/ZF/ZO/ZC"
        )
