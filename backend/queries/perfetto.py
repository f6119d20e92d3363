"""An analysis as a Chrome JSON trace (the trace-event format ui.perfetto.dev and trace_processor open), streamed.

* Each task is a process of its own, named "comm (pid)", with two threads: tid = pid ("comm", its function_graph
  calls as nested complete slices, X) and tid = pid + WAITS_TID ("waits": each wait as a slice named by its lock,
  with its stack, state, waker, holder, evidence and trace line in args). Waits never overlap on one task, calls
  nest, so neither track is misnested.
* Each block device is a process ("block 8,0") whose requests are nestable async slices (b/e, one id per request):
  the request from its first phase to its completion, inside it "I2D (scheduler)" from I to D and "D2C (device)"
  from D to C; args: the request's phase times, lines, pid and comm.
* Each chain link that depends on the next is a flow (s -> f) from a 1 ns "wakes <task>" slice on the next
  link's waits track (at the wake-up, else the wait's end) to the end of the waiting link's wait slice.
Times are the analysis timeline's, in µs with ns precision (ts, dur: exact decimals); the trace's `metadata` counts
what is in it.

How: DuckDB renders each event's JSON text (`to_json` of a struct: its escaping, its numbers) in one SELECT per kind of
event, a row per task, wait, call, request or flow (a request's up to six events joined in its row), read in record
batches (run.stream, under the export's time limit) that Arrow joins into one string each: no Python object per
event. Memory: a batch at a time (DuckDB streams the scans; nothing is sorted but the tasks, a row each, and the
chain links), whatever the size of the analysis.
"""

from __future__ import annotations

import json
import time
from typing import Iterator

import numpy as np
import pyarrow as pa

from ..db import Connection
from . import run as query
from . import views

WAITS_TID = 1 << 22  # pid_max is at most 2^22: a task's waits track never takes another task's id
DEVICE_PID = 1 << 23  # block devices' "processes" from here on
BATCH = 2048  # rows read at a time: a DuckDB vector (16 k took 50 MiB more and was 10 % slower)
SEP = ",\n"


def _view(name: str) -> str:
    return f"({views.select(views.BY_NAME[name])})"


def _us(ns: str) -> str:
    """The µs of a time in ns, as an exact decimal (JSON number with 3 decimals)."""
    return f"(({ns})::DECIMAL(19, 0) * 0.001)"


def _task(pid: str, comm: str) -> str:
    """'comm (pid)', as the API's lists name a task ('None' where a waker or holder has no comm)."""
    return f"coalesce({comm}, 'None') || ' (' || {pid} || ')'"


TASKS = f"""
SELECT concat_ws(',\n',
    to_json({{ph: 'M', name: 'process_name', pid: pid, tid: pid, args: {{name: coalesce(comm, '?') || ' (' || pid || ')'}}}}),
    to_json({{ph: 'M', name: 'thread_name', pid: pid, tid: pid, args: {{name: coalesce(comm, '?')}}}}),
    to_json({{ph: 'M', name: 'thread_name', pid: pid, tid: pid + {WAITS_TID}, args: {{name: 'waits'}}}}),
    to_json({{ph: 'M', name: 'thread_sort_index', pid: pid, tid: pid + {WAITS_TID}, args: {{sort_index: 1}}}})
) FROM (
    SELECT pid, any_value(comm ORDER BY n DESC, comm) AS comm FROM (  -- its most frequent name (ties: by name)
        SELECT pid, comm, count(*) AS n FROM {_view("waits")} GROUP BY ALL
        UNION ALL SELECT pid, comm, count(*) FROM {_view("calls")} GROUP BY ALL
        UNION ALL SELECT pid, comm, count(*) FROM {_view("tasks")} GROUP BY ALL
    ) WHERE pid IS NOT NULL GROUP BY pid
) ORDER BY pid  -- a row per task (few): sorted, so that an analysis always gives the same bytes
"""

WAITS = f"""
SELECT to_json({{
    ph: 'X', cat: 'wait', name: coalesce(lock, 'off CPU (' || coalesce(state, '?') || ')'),
    pid: pid, tid: pid + {WAITS_TID}, ts: {_us("start_ns")}, dur: {_us("duration_ns")},
    args: {{source_id: source_id, line: line, state: state, lock: lock, stack: stack, end_known: end_known,
           inferred: inferred, idle: idle,
           waker: CASE WHEN waker_pid IS NOT NULL THEN {_task("waker_pid", "waker_comm")} END,
           holder: CASE WHEN holder_pid IS NOT NULL THEN {_task("holder_pid", "holder_comm")} END,
           evidence: evidence}}
}}) FROM {_view("waits")}"""

_CALL_ARGS = "args: {source_id: source_id, line: line, depth: depth}"
CALLS = f"""
SELECT CASE WHEN exit_ns IS NULL  -- no return in the trace: open until its end
    THEN to_json({{cat: 'call', name: coalesce(func, '?'), pid: pid, tid: pid, ts: {_us("entry_ns")}, {_CALL_ARGS},
                  ph: 'B'}})
    ELSE to_json({{cat: 'call', name: coalesce(func, '?'), pid: pid, tid: pid, ts: {_us("entry_ns")}, {_CALL_ARGS},
                  ph: 'X', dur: {_us("greatest(0, exit_ns - entry_ns)")}}})
END FROM {_view("calls")} WHERE entry_ns IS NOT NULL AND pid IS NOT NULL"""

CALLS_WITHOUT_ENTRY = f"SELECT count(*) FROM {_view('calls')} WHERE entry_ns IS NULL OR pid IS NULL"

DEVICES = f"SELECT DISTINCT dev FROM {_view('requests')} ORDER BY dev"

_REQUEST_ARGS = (
    "source_id: source_id, line: line, dev: dev, sector: sector, nsect: nsect, rwbs: rwbs, pid: pid, comm: comm,"
    " q_ns: q_ns, i_ns: i_ns, d_ns: d_ns, c_ns: c_ns, i2d_ns: i2d_ns, d2c_ns: d2c_ns, q2c_ns: q2c_ns, q_line: q_line,"
    " i_line: i_line, d_line: d_line, c_line: c_line, error: error"
)


def _async(ph: str, name: str, ts: str, args: str = "") -> str:
    return (
        f"to_json({{cat: 'block', pid: dev_pid, tid: dev_pid, id2: {{local: rid}}, ph: '{ph}', name: {name},"
        f" ts: {_us(ts)}{', args: {' + args + '}' if args else ''}}})"
    )


REQUESTS = f"""
SELECT concat_ws(',\n',
    {_async("b", "name", "t_start", _REQUEST_ARGS)},
    CASE WHEN i_ns IS NOT NULL AND d_ns IS NOT NULL AND d_ns >= i_ns THEN
        {_async("b", "'I2D (scheduler)'", "i_ns")} || ',\n' || {_async("e", "'I2D (scheduler)'", "d_ns")} END,
    CASE WHEN d_ns IS NOT NULL AND c_ns IS NOT NULL AND c_ns >= d_ns THEN
        {_async("b", "'D2C (device)'", "d_ns")} || ',\n' || {_async("e", "'D2C (device)'", "c_ns")} END,
    {_async("e", "name", "t_end")}
) FROM (
    SELECT r.*, {DEVICE_PID} + list_position($devs, r.dev) - 1 AS dev_pid, r.source_id || ':' || r.line AS rid,
        least(a_ns, q_ns, g_ns, i_ns, d_ns, c_ns) AS t_start, greatest(a_ns, q_ns, g_ns, i_ns, d_ns, c_ns) AS t_end,
        trim(coalesce(rwbs, '') || ' ' || coalesce(sector::VARCHAR, 'None')
             || coalesce('+' || nsect, '') || ' ' || coalesce(comm, '')) AS name
    FROM {_view("requests")} r
) WHERE t_start IS NOT NULL"""

# a link that depends on the next one (relation) and a next link with a task: a flow from the next link's task (at
# the wake-up, else the link's wait end) into the end of this link's wait
FLOWS = f"""
SELECT concat_ws(',\n',
    to_json({{pid: next_pid, tid: next_pid + {WAITS_TID}, ts: {_us("at_ns")}, ph: 'X', cat: 'chain', name: label,
             dur: 0.001, args: {{chain: chain_id, link: pos + 1, relation: relation}}}}),
    to_json({{pid: next_pid, tid: next_pid + {WAITS_TID}, ts: {_us("at_ns")}, ph: 's', cat: 'chain',
             name: 'chain #' || chain_id, id: fid}}),
    to_json({{ph: 'f', bp: 'e', cat: 'chain', name: 'chain #' || chain_id, id: fid, pid: pid, tid: pid + {WAITS_TID},
             ts: {_us("greatest(start_ns, end_ns - 1)")}}})
) FROM (
    SELECT l.*, coalesce(w.wake_ns, l.end_ns) AS at_ns, l.chain_id || '.' || l.pos AS fid,
        CASE WHEN l.relation <> 'held_by' THEN 'wakes ' || {_task("l.pid", "l.comm")}
             ELSE 'holds the lock ' || {_task("l.pid", "l.comm")} || ' waits on' END AS label
    FROM (
        SELECT *, lead(pid) OVER (PARTITION BY chain_id ORDER BY pos) AS next_pid
        FROM {_view("links")}
    ) l LEFT JOIN {_view("waits")} w ON w.source_id = l.source_id AND w.line = l.wait_line
    WHERE l.relation IS NOT NULL AND l.next_pid IS NOT NULL
)"""


def _chunks(con: Connection, sql: str, params: dict, seconds: float) -> Iterator[tuple[int, bytes]]:
    """Per record batch of the query's rows (one text of events each, or NULL: none): how many rows had events, and
    their texts, each after SEP, as one piece of bytes (the batch's character data: no Python object per row)."""
    for batch in query.stream(con, f"SELECT '{SEP}' || j FROM ({sql}) t(j)", params, batch=BATCH, seconds=seconds):
        column = batch.column(0)
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        n = len(column) - column.null_count
        if n:
            _, offsets, data = column.buffers()
            width = 8 if pa.types.is_large_string(column.type) else 4
            at = np.frombuffer(offsets, dtype=np.int64 if width == 8 else np.int32)
            yield n, data[int(at[column.offset]) : int(at[column.offset + len(column)])].to_pybytes()


def _device_events(devices: list[str]) -> Iterator[str]:
    for i, dev in enumerate(devices):
        pid = DEVICE_PID + i
        yield _dumps({"ph": "M", "name": "process_name", "pid": pid, "tid": pid, "args": {"name": f"block {dev}"}})
        yield _dumps({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": pid, "args": {"sort_index": -1}})


def _dumps(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def stream(con: Connection, analysis_id: str, name: str, seconds: float | None = None) -> Iterator[bytes]:
    """The JSON text, a record batch of events at a time, the whole of it under one time limit (`seconds`, else
    run.EXPORT_SECONDS; each statement gets what is left of it): past it, QueryTimeout ends the stream before the
    JSON does. `con` is a cursor of its own, closed at the end."""
    counts = dict(tasks=0, waits=0, calls=0, calls_without_entry=0, requests=0, devices=0, flows=0)
    end = time.monotonic() + (query.EXPORT_SECONDS if seconds is None else seconds)

    def left() -> float:
        return max(0.0, end - time.monotonic())

    try:
        aid = {"aid": analysis_id}
        devices = [d for (d,) in query.run(con, DEVICES, aid, seconds=left())]
        counts["devices"] = len(devices)
        head = b'{"displayTimeUnit":"ns","traceEvents":[\n'
        for kind, sql, params in (
            ("tasks", TASKS, aid),
            ("waits", WAITS, aid),
            ("calls", CALLS, aid),
            ("requests", REQUESTS, {**aid, "devs": devices}),
            ("flows", FLOWS, aid),
        ):
            if kind == "requests" and devices:
                text = "".join(SEP + e for e in _device_events(devices)).encode()
                yield head + text[len(SEP) :] if head else text
                head = b""
            for n, text in _chunks(con, sql, params, left()):
                counts[kind] += n
                yield head + text[len(SEP) :] if head else text  # the first event without its separator
                head = b""
        if head:
            yield head
        counts["calls_without_entry"] = query.run(con, CALLS_WITHOUT_ENTRY, aid, seconds=left())[0][0]
        meta = {"source": "stallscope", "analysis": name, "analysis_id": analysis_id, **counts}
        yield f'\n],"metadata":{_dumps(meta)}}}\n'.encode()
    finally:
        con.close()
