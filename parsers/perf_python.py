"""The Python reader of `perf script` text that parsers/perf.py used before its C scan (parsers/_perf.c), kept as the
reference the C reader is held to: tests/test_perf_c.py compares every table both give on each perf capture and on
mutated lines, and bench/perf_script.py measures both on the same input. The ingest never uses it.

What it reads and the tables it fills: parsers/perf.py. A regular expression per event header, one per sched or block
event's fields, and a call chain's lines handed to one `findall`.
"""

from __future__ import annotations

import itertools
import re
from typing import BinaryIO, Iterator

import pyarrow as pa

from . import _blkparse, blkparse, funcgraph
from .common import CHUNK_BYTES, ParseError, ParseReport, chunks_of_lines
from .perf import _FRAME_SPACED, _HEADER, KIND, REASONS

_SWITCH = re.compile(  # key=value (kernel print format); comms may hold spaces
    r"^prev_comm=(?P<pc>.*?) prev_pid=(?P<pp>-?\d+) prev_prio=(?P<ppr>-?\d+) prev_state=(?P<ps>\S+) ==> "
    r"next_comm=(?P<nc>.*?) next_pid=(?P<np>-?\d+) next_prio=(?P<npr>-?\d+)$"
)
_SWITCH_OLD = re.compile(  # libtraceevent's plugin: comm:pid [prio] S ==> comm:pid [prio]
    r"^(?P<pc>.*?):(?P<pp>-?\d+) \[(?P<ppr>-?\d+)\] (?P<ps>\S+) ==> (?P<nc>.*?):(?P<np>-?\d+) \[(?P<npr>-?\d+)\]$"
)
_WAKE = re.compile(
    r"^comm=(?P<c>.*?) pid=(?P<p>-?\d+) prio=(?P<pr>-?\d+)(?: success=(?P<s>\d+))?(?: target_cpu=(?P<t>\d+))?$"
)
_WAKE_OLD = re.compile(r"^(?P<c>.*?):(?P<p>-?\d+) \[(?P<pr>-?\d+)\](?: success=(?P<s>\d+))?(?: CPU:(?P<t>\d+))?$")
_BLOCK = re.compile(  # insert/issue: dev rwbs bytes (cmd) sector + n [ioprio] [comm]; complete: dev rwbs (cmd) sector + n [ioprio] [error]
    r"^(?P<maj>\d+),(?P<min>\d+) (?P<rwbs>\S+) (?:\d+ )?\((?P<cmd>[^)]*)\) (?P<sector>\d+) \+ (?P<n>\d+)"
    r"(?: \S+)?(?: \[(?P<tail>[^\]]*)\])?$"
)
_BLOCK_ACTION = {"block_rq_insert": "I", "block_rq_issue": "D", "block_rq_complete": "C"}
_SWITCH_EVENTS = {"sched_switch"}
_WAKE_EVENTS = {"sched_wakeup", "sched_waking", "sched_wakeup_new"}
# a call-chain line: TAB, address, symbol[+offset], [(dso)]; as the `=> symbol` line of an ftrace stack event
_FRAME = re.compile(rb"^\t[ \t]*[0-9a-fA-F]+ ([^\n]*?)(?:\+0x[0-9a-fA-F]+)?(?: \([^()\n]*\))?[ \t\r]*\n", re.M)
# the kernel's frames, innermost first: before any user frame (an address at or above 0xffff800000000000, as x86-64
# and arm64 place the kernel; or the dso [kernel.kallsyms] / a module's [name.ko])
_KERNEL_FRAMES = re.compile(
    rb"(?:\t[ \t]*(?:[fF]{4}[89a-fA-F][0-9a-fA-F]{11} [^\n]*|[^\n]*\((?:\[kernel[^\n]*|\[[^\n]*\.ko\])\)[ \t\r]*)\n)*"
)
_CHAIN = re.compile(rb"(?:\t[^\n]*\n)*")  # call-chain lines (a chunk may begin with the rest of one)
_RECORD = re.compile(rb"([^\n]*)\n((?:\t[^\n]*\n)*)")  # a line that is not a call-chain line, then its chain


class _Columns:
    """The rows of one chunk, table by table, as lists of column values."""

    def __init__(self):
        self.switch = [[] for _ in funcgraph.SCHED_SWITCH]
        self.wake = [[] for _ in funcgraph.SCHED_WAKEUP]
        self.events = [[] for _ in funcgraph.TRACE_EVENTS]

    def batches(self) -> Iterator[tuple[str, pa.RecordBatch]]:
        for name, schema, cols in (
            ("sched_switch", funcgraph.SCHED_SWITCH, self.switch),
            ("sched_wakeup", funcgraph.SCHED_WAKEUP, self.wake),
            ("trace_events", funcgraph.TRACE_EVENTS, self.events),
        ):
            if cols[0]:
                yield (
                    name,
                    pa.RecordBatch.from_arrays([pa.array(c, f.type) for c, f in zip(cols, schema)], schema=schema),
                )


class _Chain:
    """The call chain being read: its first line, the event it follows and its frames (symbols), kernel and user
    apart."""

    __slots__ = ("line", "t_ns", "cpu", "pid", "comm", "kernel", "user", "nkernel")

    def __init__(self, line: int, t_ns: int, cpu, pid: int, comm: str | None):
        self.line, self.t_ns, self.cpu, self.pid, self.comm = line, t_ns, cpu, pid, comm
        self.kernel: list[bytes] = []
        self.user: list[bytes] = []
        self.nkernel = 0

    def add(self, lines: bytes) -> int:
        """Adds call-chain lines (each ending in a newline); returns how many."""
        k = _KERNEL_FRAMES.match(lines).end() if not self.user else 0
        if k:
            self.kernel += _FRAME.findall(lines, 0, k)
            self.nkernel += lines.count(b"\n", 0, k)
        if k < len(lines):
            self.user += _FRAME.findall(lines, k)
        return lines.count(b"\n")

    def emit(self, cols: _Columns) -> None:
        """The stack events ftrace -T would have written for the chain's event: kernel stack, then user stack (at
        the line of its first frame)."""
        ev = cols.events
        for kind, parts, line in (
            ("kernel_stack", self.kernel, self.line),
            ("user_stack", self.user, self.line + self.nkernel),
        ):
            if parts:
                title = b"<stack trace>\n=> " if kind == "kernel_stack" else b"<user stack trace>\n=> "
                text = (title + b"\n=> ".join(parts)).decode("utf-8", "replace")
                for col, v in zip(ev, (line, self.t_ns, self.cpu, self.pid, self.comm, kind, text)):
                    col.append(v)


def parse(
    stream: BinaryIO, report: ParseReport, chunk_bytes: int = CHUNK_BYTES
) -> Iterator[tuple[str, pa.RecordBatch]]:
    report.files = [{"kind": KIND}]
    rebuilder = _blkparse.Rebuilder(top=blkparse.TOP)
    line_no = 0  # the last line read
    chain: _Chain | None = None
    orphan = False  # in call-chain lines that follow no event (reported once)
    counts = {"events": 0, "frames": 0, "block": 0}
    for chunk in chunks_of_lines(stream, report, chunk_bytes):
        cols = _Columns()
        block: list[bytes] = []  # blkparse text: a line per perf line of the chunk, blank where no block event
        first = line_no + 1
        data = bytes(chunk)
        if not data.endswith(b"\n"):
            data += b"\n"
        lead = _CHAIN.match(data).end()  # the rest of a chain the previous chunk began
        records = _RECORD.finditer(data, lead)
        pending = [(None, data[:lead])] if lead else []
        for head, frames in itertools.chain(pending, ((r.group(1), r.group(2)) for r in records)):
            if head is not None:
                line_no += 1
                if chain is not None and head[:1] == b" " and _FRAME_SPACED.match(head) and not _HEADER.match(head):
                    frames = b"\t" + head.lstrip() + b"\n" + frames  # a frame indented by spaces
                    line_no -= 1
                else:
                    if chain is not None:
                        chain.emit(cols)
                        chain = None
                    orphan = False
                    block.append(_line(head, line_no, cols, report, counts))
                    if block[-1] is not None:
                        chain = _Chain(line_no + 1, *block[-1][1])
                        block[-1] = block[-1][0]
                    else:
                        block[-1] = b""
            if frames:
                n = frames.count(b"\n")
                if chain is not None:
                    chain.add(frames)
                    counts["frames"] += n
                elif not orphan:
                    orphan = True
                    report.skip(line_no + 1, REASONS[5], frames.split(b"\n", 1)[0])
                line_no += n
                block.append(b"\n" * (n - 1))
        yield from _emit(cols, report)
        if counts["block"]:
            yield from _requests(rebuilder, b"\n".join(block) + b"\n", first)
        if report.events == 0 and report.skipped > 1000:
            raise ParseError(
                f"no perf script event in the first {report.skipped} lines{report.first_problem()}",
                filename=report.filename,
                line=report.examples[0].line,
            )
    report.lines = line_no
    cols = _Columns()
    if chain is not None:
        chain.emit(cols)
    yield from _emit(cols, report)
    if report.events == 0:
        raise ParseError(
            f"no perf script event in the file{report.first_problem()}",
            filename=report.filename,
            line=report.examples[0].line if report.examples else None,
        )
    yield from blkparse._batches(rebuilder.finish())  # (requests are not events of their own)
    if counts["block"]:
        report.facts = rebuilder.facts()
        yield from _btt(rebuilder)
    report.note(
        f"perf script text: {counts['events']} events, {counts['frames']} call-chain frames"
        + (f", {counts['block']} block request events rebuilt into requests" if counts["block"] else "")
    )
    if counts["frames"] == 0:
        report.note("no call chains (recorded without -g): waits have no stacks, so no lock labels")


def _line(head: bytes, line: int, cols: _Columns, report: ParseReport, counts: dict):
    """A line that is not a call-chain line: None when blank, a comment or not an event (skipped), else (its
    blkparse line, b'' when not a block request event; what a chain after it needs: t_ns, cpu, pid, comm)."""
    s = head.strip()
    if not s or s.startswith(b"#"):
        return None
    m = _HEADER.match(head)
    if m is None:
        report.skip(line, REASONS[1], head)
        return None
    return _event(m, line, cols, report, counts)


def _emit(cols: _Columns, report: ParseReport) -> Iterator[tuple[str, pa.RecordBatch]]:
    for name, batch in cols.batches():
        if name != "trace_events":
            report.events += batch.num_rows
        else:  # stack events are not events of their own
            kinds = batch.column(5).to_pylist()
            report.events += sum(1 for k in kinds if k not in ("kernel_stack", "user_stack"))
        yield name, batch


def _event(m: re.Match, line: int, cols: _Columns, report: ParseReport, counts: dict) -> tuple[bytes, tuple]:
    """Adds the event of header m to its table; returns its blkparse line (b'' when it is not a block request
    event) and the event's (t_ns, cpu, pid, comm)."""
    event = m.group("event").decode("ascii").rsplit(":", 1)[-1]
    text = m.group("text").decode("utf-8", "replace")
    comm_b = m.group("comm")
    comm = comm_b.decode("utf-8", "replace") if comm_b is not None else None
    pid = int(m.group("tid") or m.group("pid"))
    cpu_b = m.group("cpu")
    cpu = int(cpu_b) if cpu_b is not None else None
    frac = m.group("frac")
    sec = m.group("sec")
    t_ns = int(sec) * 1_000_000_000 + int(frac) * 10 ** (9 - len(frac))
    counts["events"] += 1
    who = (t_ns, cpu, pid, comm)
    if event in _SWITCH_EVENTS:
        f = _SWITCH.match(text) or _SWITCH_OLD.match(text)
        if f is None:
            report.skip(line, REASONS[2], text)
            return b"", who
        for col, v in zip(
            cols.switch,
            (
                line,
                t_ns,
                cpu,
                f["pc"],
                int(f["pp"]),
                int(f["ppr"]),
                f["ps"],
                f["nc"],
                int(f["np"]),
                int(f["npr"]),
            ),
        ):
            col.append(v)
        return b"", who
    if event in _WAKE_EVENTS:
        f = _WAKE.match(text) or _WAKE_OLD.match(text)
        if f is None:
            report.skip(line, REASONS[3], text)
            return b"", who
        success = f["s"]
        for col, v in zip(
            cols.wake,
            (
                line,
                t_ns,
                cpu,
                event,
                pid,
                comm,
                int(f["p"]),
                f["c"],
                int(f["pr"]),
                int(f["t"]) if f["t"] is not None else None,
                None if success is None else success != "0",
            ),
        ):
            col.append(v)
        return b"", who
    for col, v in zip(cols.events, (line, t_ns, cpu, pid, comm, event, text)):
        col.append(v)
    action = _BLOCK_ACTION.get(event)
    if action is None:
        return b"", who
    f = _BLOCK.match(text)
    if f is None:
        report.skip(line, REASONS[4], text)
        return b"", who
    counts["block"] += 1
    seq = counts["block"]
    tail = f["tail"]
    if action == "C":  # the tail is the error
        tail = tail if tail is not None and re.fullmatch(r"-?\d+", tail) else "0"
    else:
        tail = tail if tail else (comm or "")
    return (
        f"{f['maj']},{f['min']} {cpu if cpu is not None else 0} {seq} {sec.decode()}.{int(frac) * 10 ** (9 - len(frac)):09d}"
        f" {pid} {action} {f['rwbs']} {f['sector']} + {f['n']} [{tail}]"
    ).encode("utf-8", "replace"), who


def _requests(rebuilder, text: bytes, first: int) -> Iterator[tuple[str, pa.RecordBatch]]:
    """The requests rebuilt from a chunk's block events (text: a blkparse line at each block event's line)."""
    yield from blkparse._batches(rebuilder.feed(memoryview(text), first))


def _btt(rebuilder) -> Iterator[tuple[str, pa.RecordBatch]]:
    btt = blkparse.btt_batch(rebuilder)
    if btt is not None:
        yield "blk_btt", btt
