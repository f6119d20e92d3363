"""`perf script` text of scheduler and block tracepoints -> the ftrace format's tables, and block requests.

What is read: the text `perf script` prints for a `perf record -e sched:sched_switch -e sched:sched_wakeup
[-e sched:sched_waking] -e block:block_rq_insert -e block:block_rq_issue -e block:block_rq_complete [-g] -a`
capture, with its default fields or any `-F` selection that keeps the task, the time, the event and its text
(`-F comm,tid,cpu,time,event,trace[,ip,sym,symoff,dso]`, `--ns`, `perf sched script`):

    comm  pid[/tid] [cpu] secs.frac: [period] subsystem:event: fields
    <TAB> addr sym[+off] [(dso)]        (with -g: the call chain, innermost first; a blank line ends it)

An event's fields are the tracepoint's print format, as ftrace prints them (sched_switch `prev_comm=...
prev_pid=... prev_prio=... prev_state=S ==> next_comm=... next_pid=... next_prio=...`, or the older
`comm:pid [prio] S ==> comm:pid [prio]`; sched_wakeup `comm=... pid=... prio=... target_cpu=...`; block_rq_issue
`8,0 WS 4096 () 123456 + 8 [comm]`, ...).

The tables are those of the ftrace format (parsers/funcgraph.py: FORMAT "ftrace"), so the ftrace derive steps read
a perf capture as they read an ftrace one: `sched_switch`, `sched_wakeup` (the waker is the task that wrote the
line), `trace_events` for every other event (its name without the subsystem: `block_rq_issue`, which clock
alignment matches to a blktrace's requests) and, for a call chain, the stack events ftrace's `-T` would have
recorded right after it (`kernel_stack` for the kernel frames, `user_stack` for the others, each as `<stack
trace>` and one `=> frame` line per frame, at the chain's first line, same CPU and task): a wait's or a waker's
stack is then the one recorded with its switch-out or wake-up (derive/recorded.event_stacks). A frame is its
symbol without the offset (`__schedule`), `[unknown]` kept as perf prints it.

Block requests: block_rq_insert / issue / complete are rendered as the blkparse lines I / D / C they stand for and
rebuilt into requests by the blkparse rebuilder (parsers/_blkparse.c), each at its own line of the perf text: the
tables blk_requests, blk_events, blk_bios, blk_btt as a blktrace of the capture would give them (without Q, G and
merges: those tracepoints were not recorded), and report.facts for derive/blk.

The scan is C (parsers/_perf.c), 16 MiB chunks, a line read once: the same rows, byte for byte, as the Python
reader it replaced (parsers/perf_python.py, kept as the reference: tests/test_perf_c.py), with two differences
where that reader failed: a number too large for its column (a pid past int64, a CPU or priority past int32, a time
past int64 ns) makes its line skipped with its reason instead of failing the file, and a stack's text stops at 256
KiB (the frames past it are counted in a note). Digits are ASCII ones.
"""

from __future__ import annotations

import re
from typing import BinaryIO, Iterator

import numpy as np
import pyarrow as pa

from . import _blkparse, _perf, blkparse, funcgraph
from .common import CHUNK_BYTES, ParseError, ParseReport, chunks_of_lines

FORMAT = "ftrace"  # read by the ftrace derive steps; the Sources listing says it was perf script (report.files)
KIND = "perf script text"
TABLES = {
    **{k: v for k, v in funcgraph.TABLES.items() if k != "fg_call_rows" and k != "fg_names"},
    **blkparse.TABLES,
}
GENERATED = blkparse.GENERATED

# comm (may hold spaces; absent with -F without comm), pid[/tid], [cpu], time:, [period], event:, fields
_HEADER = re.compile(
    rb"^\s*(?:(?P<comm>\S.*?)\s+)?(?P<pid>-?\d+)(?:/(?P<tid>-?\d+))?\s+(?:\[(?P<cpu>\d+)\]\s+)?"
    rb"(?P<sec>\d+)\.(?P<frac>\d{1,9}):\s+(?:\d+\s+)?(?P<event>[A-Za-z_][\w.-]*(?::[\w.-]+)+):\s?(?P<text>.*?)\s*$"
)
_FRAME_SPACED = re.compile(rb"^\s+[0-9a-fA-F]+ \S")  # a call-chain line indented by spaces (older perf)

REASONS = {
    1: "not a perf script line (expected 'comm pid [cpu] seconds.fraction: subsystem:event: fields' or a "
    "call-chain line 'address symbol (dso)')",
    2: "bad sched_switch fields (expected 'prev_comm=... prev_pid=... prev_prio=... prev_state=... ==> "
    "next_comm=... next_pid=... next_prio=...')",
    3: "bad sched_wakeup fields (expected 'comm=... pid=... prio=... target_cpu=...')",
    4: "bad block request fields (expected 'major,minor rwbs [bytes] (cmd) sector + count [comm]')",
    5: "call-chain line without an event before it",
}
_SNIFF_HEADER = re.compile(_HEADER.pattern.decode())
MAX_SKIPS = 64  # skipped lines the tokenizer lists per chunk (the others counted): the report keeps the first 20


def sniff(head: list[str]) -> float:
    """Event headers whose event is `subsystem:name` (perf's spelling; ftrace prints the name alone), and call-chain
    lines."""
    lines = [ln for ln in head if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines:
        return 0.0
    hits = frames = 0
    for ln in lines:
        if _SNIFF_HEADER.match(ln):
            hits += 1
        elif ln[:1] == "\t" or _FRAME_SPACED.match(ln.encode("utf-8", "replace")):
            frames += 1
    return (hits + frames) / len(lines) if hits else 0.0


_I64, _I32, _BOOL = pa.int64(), pa.int32(), pa.bool_()


def _num(cols: dict, key: str, kind: pa.DataType, n: int) -> pa.Array:
    """The tokenizer's numeric column `key` without a copy: its values (a bool column's as bits) and, when some are
    null, its validity bitmap (`key`_valid)."""
    nulls = cols[key + "_nulls"]
    valid = pa.py_buffer(cols[key + "_valid"]) if nulls else None
    return pa.Array.from_buffers(kind, n, [valid, pa.py_buffer(cols[key])], null_count=nulls)


def _str(cols: dict, key: str, n: int) -> pa.Array:
    nulls = cols[key + "_nulls"]
    valid = pa.py_buffer(cols[key + "_valid"]) if nulls else None
    return pa.StringArray.from_buffers(
        n, pa.py_buffer(cols[key + "_off"]), pa.py_buffer(cols[key + "_data"]), valid, nulls
    )


def _batches(cols: dict) -> Iterator[tuple[str, pa.RecordBatch]]:
    if n := cols["ns"]:
        arrays = [
            _num(cols, "s_line", _I64, n),
            _num(cols, "s_t", _I64, n),
            _num(cols, "s_cpu", _I32, n),
            _str(cols, "s_pcomm", n),
            _num(cols, "s_ppid", _I64, n),
            _num(cols, "s_pprio", _I32, n),
            _str(cols, "s_pstate", n),
            _str(cols, "s_ncomm", n),
            _num(cols, "s_npid", _I64, n),
            _num(cols, "s_nprio", _I32, n),
        ]
        yield "sched_switch", pa.RecordBatch.from_arrays(arrays, schema=funcgraph.SCHED_SWITCH)
    if n := cols["nw"]:
        arrays = [
            _num(cols, "w_line", _I64, n),
            _num(cols, "w_t", _I64, n),
            _num(cols, "w_cpu", _I32, n),
            _str(cols, "w_event", n),
            _num(cols, "w_wpid", _I64, n),
            _str(cols, "w_wcomm", n),
            _num(cols, "w_pid", _I64, n),
            _str(cols, "w_comm", n),
            _num(cols, "w_prio", _I32, n),
            _num(cols, "w_tcpu", _I32, n),
            _num(cols, "w_succ", _BOOL, n),
        ]
        yield "sched_wakeup", pa.RecordBatch.from_arrays(arrays, schema=funcgraph.SCHED_WAKEUP)
    if n := cols["ne"]:
        arrays = [
            _num(cols, "e_line", _I64, n),
            _num(cols, "e_t", _I64, n),
            _num(cols, "e_cpu", _I32, n),
            _num(cols, "e_pid", _I64, n),
            _str(cols, "e_comm", n),
            _str(cols, "e_event", n),
            _str(cols, "e_text", n),
        ]
        yield "trace_events", pa.RecordBatch.from_arrays(arrays, schema=funcgraph.TRACE_EVENTS)


def _skips(report: ParseReport, cols: dict, chunk) -> None:
    """The chunk's skipped lines into the report (the text of each: its line, or its event's fields)."""
    lines = np.frombuffer(cols["k_line"], np.int64).tolist()
    starts = np.frombuffer(cols["k_start"], np.int64).tolist()
    lens = np.frombuffer(cols["k_len"], np.int64).tolist()
    reasons = np.frombuffer(cols["k_reason"], np.int32).tolist()
    for line, start, n, reason in zip(lines, starts, lens, reasons):
        report.skip(line, REASONS[reason], bytes(chunk[start : start + n]))
    report.skipped += cols["k_more"]


def parse(
    stream: BinaryIO, report: ParseReport, chunk_bytes: int = CHUNK_BYTES
) -> Iterator[tuple[str, pa.RecordBatch]]:
    report.files = [{"kind": KIND}]
    state = _perf.new_state()
    rebuilder = _blkparse.Rebuilder(top=blkparse.TOP)
    lines = 0
    for chunk in chunks_of_lines(stream, report, chunk_bytes):
        cols = _perf.tokenize(state, chunk, lines + 1, MAX_SKIPS)
        _skips(report, cols, chunk)
        first, lines = lines + 1, lines + cols["lines"]
        report.lines = lines
        report.events += cols["counted"]
        yield from _batches(cols)
        if cols["blk"] is not None:
            yield from blkparse._batches(rebuilder.feed(memoryview(cols["blk"]), first))
        if report.events == 0 and report.skipped > 1000:
            raise ParseError(
                f"no perf script event in the first {report.skipped} lines{report.first_problem()}",
                filename=report.filename,
                line=report.examples[0].line,
            )
    final = _perf.finish(state)
    report.events += final["counted"]
    yield from _batches(final)
    if report.events == 0:
        raise ParseError(
            f"no perf script event in the file{report.first_problem()}",
            filename=report.filename,
            line=report.examples[0].line if report.examples else None,
        )
    yield from blkparse._batches(rebuilder.finish())  # (requests are not events of their own)
    if final["n_block"]:
        report.facts = rebuilder.facts()
        btt = blkparse.btt_batch(rebuilder)
        if btt is not None:
            yield "blk_btt", btt
    report.note(
        f"perf script text: {final['n_events']} events, {final['n_frames']} call-chain frames"
        + (f", {final['n_block']} block request events rebuilt into requests" if final["n_block"] else "")
    )
    if final["n_frames"] == 0:
        report.note("no call chains (recorded without -g): waits have no stacks, so no lock labels")
    if final["n_cut"]:
        report.note(f"{final['n_cut']} call-chain frames beyond 256 KiB of text per stack were dropped")
