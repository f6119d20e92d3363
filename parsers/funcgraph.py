"""ftrace text -> function_graph call trees, scheduler switches and wake-ups, and every other event.

One parser (FORMAT "ftrace") reads the text forms, line by line, so that they may even be mixed:

* the tracefs `trace` file of the function_graph tracer, any display options (shared/FORMATS.md 3.2;
  kernel trace_functions_graph.c): `[abstime |] [cpu)] [comm-pid |] [lat flags |] [mark duration] | body`
  with bodies `func() {`, `func();`, `}`, `} /* func */`, `/* comment */`, funcgraph-args/retaddr/retval
  comments, the `==========>` / `<==========` irq markers (ignored), `------` + ` N) a-1 => b-2`
  context-switch blocks (they tell the task of the next lines of that CPU when funcgraph-proc is off),
  events shown inside the graph as `/* sched_switch: ... */` comments;
* the tracefs `trace` file of event tracers (nop, function) and `trace-cmd report` output (FORMATS.md 3.1,
  3.3): `comm-pid [(tgid)] [cpu] [flags] ts: event: text`, where `funcgraph_entry` / `funcgraph_exit`
  (plugin form `mark dur us |  body`, or the raw `func=0x.. depth=N` / `calltime=.. rettime=..` fields)
  feed the same call trees, `sched_switch` / `sched_wakeup` / `sched_waking` / `sched_wakeup_new` are
  decoded in the old kernel form (`task prev:pid [prio] (S) ==> next:pid [prio]`,
  `task comm:pid [prio] success=1 [007]`), the libtraceevent plugin form (`prev:pid [prio] S ==> ...`,
  `comm:pid [prio] success=1 CPU:007`) and the key=value form (`prev_comm=... ==> next_comm=...`,
  `comm=X pid=N prio=P [success=1] target_cpu=007`), and any other event is kept in `trace_events`
  (`kernel_stack` / `<stack trace>` events with their following `=> frame` lines folded into the text).

The scan is a C tokenizer (parsers/_funcgraph.c) working on 16 MiB chunks; it also keeps, across chunks,
one open-call stack per task (per pid; the idle task per CPU; per CPU when the task is unknown), so calls
are rebuilt per task, right across CPU migrations and context switches. Calls whose entry or exit is not
in the trace are kept as partial calls, never invented.

Tables (times are int64 ns on the trace's own clock; `line` is the 1-based file line):
* fg_call_rows: one row per call. line = the entry's line (the exit's line for an exit-only call): a call's id;
  entry_ns null when the entry was not seen and no duration says when it began, or when the trace has no
  timestamps (tracefs without funcgraph-abstime); exit_ns null for calls still open at the end or whose
  exit was lost; duration_ns from the trace's own duration field when printed, else exit - entry;
  parent_line = line of the enclosing open call's entry (null at a root, or when the parent's entry was
  not seen); depth = nesting level, taken from the indentation (or the raw `depth=` field) of the task's
  first line and kept by the stack (it goes negative when a re-laid trace without indentation shows exits
  of calls entered before the trace); partial = entry or exit not seen; exit_line = line of the exit;
  comm_id, func_id = the task's and the function's name: ids into fg_names (null: not shown).
  A `} /* func */` tail that does not name the innermost open call closes the nearest open call of that
  name; the calls above it are emitted as partial (their exits were lost).
* fg_names: the names the calls use (id, name), the tokenizer's interned strings, written once the file is read.
  Ids instead of the text in every call: DuckDB stores an integer for ~a quarter of the CPU time a string takes
  (6.3 M calls of the benchmark: staging 1.1-1.7 s of CPU less).
* fg_calls (VIEWS): the calls with their names, as every read but the derivation's bulk passes uses them.
* sched_switch, sched_wakeup, trace_events: one row per event line (see TABLES).
"""

from __future__ import annotations

import re
from typing import BinaryIO, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import _funcgraph
from .common import CHUNK_BYTES, ParseError, ParseReport, chunks_of_lines, string_column

FORMAT = "ftrace"

FG_CALLS = pa.schema(
    [
        ("line", pa.int64()),
        ("pid", pa.int64()),
        ("comm_id", pa.int32()),
        ("cpu", pa.int32()),
        ("depth", pa.int32()),
        ("func_id", pa.int32()),
        ("entry_ns", pa.int64()),
        ("exit_ns", pa.int64()),
        ("duration_ns", pa.int64()),
        ("parent_line", pa.int64()),
        ("partial", pa.bool_()),
        ("exit_line", pa.int64()),
    ]
)
FG_NAMES = pa.schema([("id", pa.int32()), ("name", pa.string())])
SCHED_SWITCH = pa.schema(
    [
        ("line", pa.int64()),
        ("t_ns", pa.int64()),
        ("cpu", pa.int32()),
        ("prev_comm", pa.string()),
        ("prev_pid", pa.int64()),
        ("prev_prio", pa.int32()),
        ("prev_state", pa.string()),
        ("next_comm", pa.string()),
        ("next_pid", pa.int64()),
        ("next_prio", pa.int32()),
    ]
)
SCHED_WAKEUP = pa.schema(
    [
        ("line", pa.int64()),
        ("t_ns", pa.int64()),
        ("cpu", pa.int32()),
        ("event", pa.string()),
        ("waker_pid", pa.int64()),
        ("waker_comm", pa.string()),
        ("pid", pa.int64()),
        ("comm", pa.string()),
        ("prio", pa.int32()),
        ("target_cpu", pa.int32()),
        ("success", pa.bool_()),
    ]
)
TRACE_EVENTS = pa.schema(
    [
        ("line", pa.int64()),
        ("t_ns", pa.int64()),
        ("cpu", pa.int32()),
        ("pid", pa.int64()),
        ("comm", pa.string()),
        ("event", pa.string()),
        ("text", pa.string()),
    ]
)
TASK_TGIDS = pa.schema([("pid", pa.int64()), ("tgid", pa.int64())])
# each stack event's text (`-T` stacks: ~120 MB of a 1 GiB report) as zstd, not FSST: 0.8 -> 0.45 CPU-s to insert
# them, 69 -> 30 MB stored
COMPRESSION = {"trace_events": {"text": "zstd"}}
TABLES = {
    "fg_call_rows": FG_CALLS,
    "fg_names": FG_NAMES,
    "sched_switch": SCHED_SWITCH,
    "sched_wakeup": SCHED_WAKEUP,
    "trace_events": TRACE_EVENTS,
    "task_tgids": TASK_TGIDS,
}
CALL_COLUMNS = (
    "source_id",
    "line",
    "pid",
    "comm",
    "cpu",
    "depth",
    "func",
    "entry_ns",
    "exit_ns",
    "duration_ns",
    "parent_line",
    "partial",
    "exit_line",
)  # fg_calls, the view
_NAMED = {"comm": "cn.name", "func": "fn.name"}
VIEWS = {
    "fg_calls": f"""
    SELECT {", ".join(f"{_NAMED.get(c, 'c.' + c)} AS {c}" for c in CALL_COLUMNS)} FROM fg_call_rows c
    LEFT JOIN fg_names cn ON cn.source_id = c.source_id AND cn.id = c.comm_id
    LEFT JOIN fg_names fn ON fn.source_id = c.source_id AND fn.id = c.func_id"""
}

REASONS = {
    1: "not an ftrace line (expected 'comm-pid [cpu] timestamp: event: ...' or a function_graph "
    "'[time |] cpu) [task |] duration | function' line)",
    2: "bad function_graph body (expected 'func() {', 'func();', '}' or '/* comment */' after the '|')",
    3: "bad function_graph columns",
    4: "bad timestamp",
    5: "bad CPU number",
    6: "'=> frame' line without a stack-trace event before it",
    7: "call nesting deeper than 4096 (calls of this task are dropped until it unwinds)",
    8: "bad context-switch marker (expected 'cpu) comm-pid => comm-pid')",
    9: "bad funcgraph_entry/funcgraph_exit text (expected '[mark duration us] | func() {' / '}')",
}

_EVENT_LINE = re.compile(r"^\s*\S.*-\d+\s+(\(\s*[\d-]+\)\s+)?\[\d+\]\s+(\S+\s+)?\d+(\.\d+)?:\s")
_FG_LINE = re.compile(
    r"^\s*(\d+\.\d+\s+\|\s+)?(\d+\)\s+)?(.*-\d+\s+\|\s+)?([.\w]{4,5}\s+\|\s+)?([+!#*@$]?\s*[\d.]+\s+us\s+)?\|\s+"
    r"(\S.*\(.*\)\s*[{;]|}|/\*)"
)
_CTX = re.compile(r"^\s*(\d+\)\s+)?\S.*-\d+\s+=>\s+\S.*-\d+\s*$")


def sniff(head: list[str]) -> float:
    score_hdr = 0.0
    lines = []
    for ln in head:
        s = ln.strip()
        if not s:
            continue
        if s.startswith("#"):
            if s.startswith("# tracer:"):
                score_hdr = 0.5
            continue
        if s.startswith("cpus=") and not lines:
            score_hdr = 0.5
            continue
        if set(s) == {"-"}:
            continue
        lines.append(ln)
    if not lines:
        return score_hdr * 0.6
    hits = sum(1 for ln in lines if _EVENT_LINE.match(ln) or _FG_LINE.match(ln) or _CTX.match(ln))
    frames = sum(1 for ln in lines if ln.lstrip().startswith("=> "))
    frac = (hits + frames) / len(lines) if hits else 0.0
    return min(1.0, frac + score_hdr * 0.2) if hits else score_hdr * 0.6


def _column(cols: dict, name: str, kind: pa.DataType, n: int) -> pa.Array:
    """The n-row numeric column `name` as the tokenizer handed it over, without a copy: its values (a bool column's
    as bits, `name`_bits), its null count (`name`_nulls: INT64_MIN, INT32_MIN, a negative id or a bool's 2 in the
    values) and, when some are null, its validity bitmap (`name`_bitmap)."""
    nulls = cols[name + "_nulls"]
    valid = pa.py_buffer(cols[name + "_bitmap"]) if nulls else None
    values = cols[name + "_bits"] if kind == pa.bool_() else cols[name]
    return pa.Array.from_buffers(kind, n, [valid, pa.py_buffer(values)], null_count=nulls)


_I64, _I32, _BOOL = pa.int64(), pa.int32(), pa.bool_()


def _names(cols: dict) -> pa.RecordBatch:
    """fg_names: every string the tokenizer interned, by id (only finish's result holds them). A stored stack is its
    frames joined by the unit separator (backend/schema/tables.py STACK_SEP): in a name, one becomes '?', as
    bytes that are not UTF-8 do, so that a frame is never read back as two."""
    n = len(cols["dict_off"]) // 4 - 1
    names = pa.StringArray.from_buffers(n, pa.py_buffer(cols["dict_off"]), pa.py_buffer(cols["dict_data"]))
    names = pc.replace_substring(names, "\x1f", "?")
    return pa.RecordBatch.from_arrays([pa.array(np.arange(n, dtype=np.int32)), names], schema=FG_NAMES)


def _batches(cols: dict) -> Iterator[tuple[str, pa.RecordBatch]]:
    n = cols["nc"]
    if n:
        yield (
            "fg_call_rows",
            pa.RecordBatch.from_arrays(
                [
                    _column(cols, "c_line", _I64, n),
                    _column(cols, "c_pid", _I64, n),
                    _column(cols, "c_comm", _I32, n),
                    _column(cols, "c_cpu", _I32, n),
                    _column(cols, "c_depth", _I32, n),
                    _column(cols, "c_func", _I32, n),
                    _column(cols, "c_entry", _I64, n),
                    _column(cols, "c_exit", _I64, n),
                    _column(cols, "c_dur", _I64, n),
                    _column(cols, "c_parent", _I64, n),
                    _column(cols, "c_partial", _BOOL, n),
                    _column(cols, "c_exit_line", _I64, n),
                ],
                schema=FG_CALLS,
            ),
        )
    n = cols["ns"]
    if n:
        yield (
            "sched_switch",
            pa.RecordBatch.from_arrays(
                [
                    _column(cols, "s_line", _I64, n),
                    _column(cols, "s_t", _I64, n),
                    _column(cols, "s_cpu", _I32, n),
                    string_column(cols, "s_pcomm", n),
                    _column(cols, "s_ppid", _I64, n),
                    _column(cols, "s_pprio", _I32, n),
                    string_column(cols, "s_pstate", n),
                    string_column(cols, "s_ncomm", n),
                    _column(cols, "s_npid", _I64, n),
                    _column(cols, "s_nprio", _I32, n),
                ],
                schema=SCHED_SWITCH,
            ),
        )
    n = cols["nw"]
    if n:
        yield (
            "sched_wakeup",
            pa.RecordBatch.from_arrays(
                [
                    _column(cols, "w_line", _I64, n),
                    _column(cols, "w_t", _I64, n),
                    _column(cols, "w_cpu", _I32, n),
                    string_column(cols, "w_event", n),
                    _column(cols, "w_wpid", _I64, n),
                    string_column(cols, "w_wcomm", n),
                    _column(cols, "w_pid", _I64, n),
                    string_column(cols, "w_comm", n),
                    _column(cols, "w_prio", _I32, n),
                    _column(cols, "w_tcpu", _I32, n),
                    _column(cols, "w_succ", _BOOL, n),
                ],
                schema=SCHED_WAKEUP,
            ),
        )
    n = cols["ne"]
    if n:
        yield (
            "trace_events",
            pa.RecordBatch.from_arrays(
                [
                    _column(cols, "e_line", _I64, n),
                    _column(cols, "e_t", _I64, n),
                    _column(cols, "e_cpu", _I32, n),
                    _column(cols, "e_pid", _I64, n),
                    string_column(cols, "e_comm", n),
                    string_column(cols, "e_event", n),
                    string_column(cols, "e_text", n),
                ],
                schema=TRACE_EVENTS,
            ),
        )


_CLOCK = re.compile(r"clock", re.I)
# an event line's task with its thread group, as the record-tgid option prints it: "comm-pid (tgid) [cpu]"
_TGID = re.compile(rb"-(\d+) +\( *(\d+)\) +\[\d+\]")


def _tgid_batch(tgids: dict[int, int]) -> pa.RecordBatch:
    """task_tgids: each task's thread group (its process), as the line prefixes said it (the last one)."""
    pids = np.fromiter(tgids.keys(), np.int64, len(tgids))
    return pa.RecordBatch.from_arrays(
        [pa.array(pids), pa.array(np.fromiter(tgids.values(), np.int64, len(tgids)))], schema=TASK_TGIDS
    )


def _header_notes(report: ParseReport, chunk, cols: dict) -> None:
    starts = np.frombuffer(cols["h_start"], np.int64)
    lens = np.frombuffer(cols["h_len"], np.int64)
    for s, n in zip(starts.tolist(), lens.tolist()):
        text = bytes(chunk[s : s + n]).decode("utf-8", "replace").strip()
        body = text.lstrip("#").strip()
        if text.startswith("cpus="):
            report.note(f"trace-cmd report header: {text}")
        elif body.startswith("tracer:"):
            report.note(body)
        elif "#P:" in body or body.startswith("entries-in-buffer"):
            report.note(body)
        elif _CLOCK.search(body) and len(body) < 200:
            report.note(body)


def take(report: ParseReport, cols: dict, chunk=None) -> Iterator[tuple[str, pa.RecordBatch]]:
    """The tables of one tokenizer result; with the chunk it read, its header lines become notes and its skipped lines
    the report's examples."""
    if chunk is not None:
        _header_notes(report, chunk, cols)
        nsk = len(cols["k_line"]) // 8
        if nsk:
            lines = np.frombuffer(cols["k_line"], np.int64)
            starts = np.frombuffer(cols["k_start"], np.int64)
            lens = np.frombuffer(cols["k_len"], np.int64)
            reasons = np.frombuffer(cols["k_reason"], np.int32)
            shown = min(nsk, 50)
            for i in range(shown):  # (a start < 0: a text not in the chunk, in k_text at -1 - start)
                at, n = int(starts[i]), int(lens[i])
                text = chunk[at : at + n] if at >= 0 else memoryview(cols["k_text"])[-1 - at : -1 - at + n]
                report.skip(int(lines[i]), REASONS[int(reasons[i])], bytes(text))
            report.skipped += nsk - shown
    for name, batch in _batches(cols):
        report.events += batch.num_rows
        yield name, batch


def parse(
    stream: BinaryIO, report: ParseReport, chunk_bytes: int = CHUNK_BYTES
) -> Iterator[tuple[str, pa.RecordBatch]]:
    state = _funcgraph.new_state()
    tgids: dict[int, int] | None = {}  # None: the first chunk had no "(tgid)" (not recorded with record-tgid)
    for chunk in chunks_of_lines(stream, report, chunk_bytes):
        if tgids is not None:
            for pid, tgid in _TGID.findall(chunk):
                tgids[int(pid)] = int(tgid)
            if not tgids:
                tgids = None
        cols = _funcgraph.tokenize(state, chunk, report.lines + 1)
        report.lines += cols["lines"]  # counted by the tokenizer, not by a second scan for newlines
        yield from take(report, cols, chunk)
        if report.events == 0 and cols["n_fgtext"] == 0 and cols["n_evline"] == 0 and report.skipped > 1000:
            raise ParseError(
                f"no ftrace line in the first {report.skipped} lines{report.first_problem()}",
                filename=report.filename,
            )
    yield from finish(state, report, tgids)


def finish(state, report: ParseReport, tgids: dict[int, int] | None = None) -> Iterator[tuple[str, pa.RecordBatch]]:
    """The rows the tokenizer state still holds (open calls, a pending stack event), the names, the notes."""
    final = _funcgraph.finish(state)
    if report.events == 0 and final["nc"] + final["ns"] + final["nw"] + final["ne"] == 0:
        if report.examples:
            raise ParseError(
                f"no ftrace line in the file{report.first_problem()}",
                filename=report.filename,
                line=report.examples[0].line,
            )
        raise ParseError("no ftrace event or function_graph line in the file", filename=report.filename)
    yield from take(report, final)
    if len(final["dict_off"]) > 4:  # the names the calls use (and the tasks' of context-switch markers): not events
        yield "fg_names", _names(final)
    if tgids:  # not events either
        yield "task_tgids", _tgid_batch(tgids)
    forms = []
    if final["n_fgtext"]:
        forms.append(f"tracefs function_graph text ({final['n_fgtext']} lines)")
    if final["n_evline"]:
        tc = (
            any(n.startswith("trace-cmd report header") for n in report.notes)
            or final["n_evline_noflags"] * 2 > final["n_evline"]
        )
        forms.append(f"{'trace-cmd report' if tc else 'tracefs event text'} ({final['n_evline']} event lines)")
    report.note("ftrace form: " + ", ".join(forms))
    if final["n_lost"]:
        report.note(f"{final['n_lost']} 'events lost/dropped' markers: call trees near them may have partial calls")
    if final["n_tail_mismatch"]:
        report.note(
            f"{final['n_tail_mismatch']} exits named a function other than the innermost open call "
            "(lost events): the calls in between were kept as partial calls"
        )
    if final["n_folded_cut"]:
        report.note(f"{final['n_folded_cut']} stack frame lines beyond 256 KiB per stack were dropped")
