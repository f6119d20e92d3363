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
Times are the analysis timeline's, in µs with ns precision (ts, dur); the trace's `metadata` counts what is in it.
Memory: the rows are read in record batches and written out as they come.
"""

from __future__ import annotations

import json
from typing import Iterator

import duckdb

from . import views

WAITS_TID = 1 << 22  # pid_max is at most 2^22: a task's waits track never takes another task's id
DEVICE_PID = 1 << 23  # block devices' "processes" from here on
BATCH = 32 * 1024
CHUNK = 256 * 1024  # bytes written out at a time


def _us(ns: int) -> float:
    return round(ns / 1000, 3)


def _dumps(event: dict) -> str:
    return json.dumps(event, separators=(",", ":"), ensure_ascii=False)


def _rows(con: duckdb.DuckDBPyConnection, sql: str, analysis_id: str) -> Iterator[dict]:
    reader = con.sql(sql, params={"aid": analysis_id}).to_arrow_reader(BATCH)
    for batch in reader:
        yield from batch.to_pylist()


def _view(name: str) -> str:
    return f"({views.select(views.BY_NAME[name])})"


def events(con: duckdb.DuckDBPyConnection, analysis_id: str, counts: dict) -> Iterator[dict]:
    """Every trace event of the analysis; `counts` is filled as they are made."""
    counts.update(tasks=0, waits=0, calls=0, calls_without_entry=0, requests=0, devices=0, flows=0)
    tasks = f"""
        SELECT pid, any_value(comm ORDER BY n DESC) AS comm FROM (
            SELECT pid, comm, count(*) AS n FROM {_view("waits")} GROUP BY ALL
            UNION ALL SELECT pid, comm, count(*) FROM {_view("calls")} GROUP BY ALL
            UNION ALL SELECT pid, comm, count(*) FROM {_view("tasks")} GROUP BY ALL
        ) WHERE pid IS NOT NULL GROUP BY pid ORDER BY pid"""
    for t in _rows(con, tasks, analysis_id):
        counts["tasks"] += 1
        name = f"{t['comm'] or '?'} ({t['pid']})"
        yield {"ph": "M", "name": "process_name", "pid": t["pid"], "tid": t["pid"], "args": {"name": name}}
        yield {"ph": "M", "name": "thread_name", "pid": t["pid"], "tid": t["pid"], "args": {"name": t["comm"] or "?"}}
        yield {
            "ph": "M",
            "name": "thread_name",
            "pid": t["pid"],
            "tid": t["pid"] + WAITS_TID,
            "args": {"name": "waits"},
        }
        yield {"ph": "M", "name": "thread_sort_index", "pid": t["pid"], "tid": t["pid"] + WAITS_TID, "args": {"sort_index": 1}}  # fmt: skip

    waits = (
        "SELECT source_id, line, pid, comm, start_ns, duration_ns, end_known, state, lock, stack, inferred, evidence,"
        f" waker_pid, waker_comm, holder_pid, holder_comm, idle FROM {_view('waits')}"
    )
    for w in _rows(con, waits, analysis_id):
        counts["waits"] += 1
        yield {
            "ph": "X", "cat": "wait", "name": w["lock"] or f"off CPU ({w['state'] or '?'})",
            "pid": w["pid"], "tid": w["pid"] + WAITS_TID, "ts": _us(w["start_ns"]), "dur": _us(w["duration_ns"]),
            "args": {"source_id": w["source_id"], "line": w["line"], "state": w["state"], "lock": w["lock"],
                     "stack": w["stack"], "end_known": w["end_known"], "inferred": w["inferred"], "idle": w["idle"],
                     "waker": f"{w['waker_comm']} ({w['waker_pid']})" if w["waker_pid"] is not None else None,
                     "holder": f"{w['holder_comm']} ({w['holder_pid']})" if w["holder_pid"] is not None else None,
                     "evidence": w["evidence"]},
        }  # fmt: skip

    calls = f"SELECT source_id, line, pid, func, depth, entry_ns, exit_ns, partial FROM {_view('calls')}"
    for c in _rows(con, calls, analysis_id):
        if c["entry_ns"] is None or c["pid"] is None:
            counts["calls_without_entry"] += 1
            continue
        counts["calls"] += 1
        event = {"cat": "call", "name": c["func"] or "?", "pid": c["pid"], "tid": c["pid"], "ts": _us(c["entry_ns"]),
                 "args": {"source_id": c["source_id"], "line": c["line"], "depth": c["depth"]}}  # fmt: skip
        if c["exit_ns"] is None:  # no return in the trace: open until its end
            yield {**event, "ph": "B"}
        else:
            yield {**event, "ph": "X", "dur": _us(max(0, c["exit_ns"] - c["entry_ns"]))}

    devices: dict[str, int] = {}
    requests = (
        "SELECT source_id, line, dev, sector, nsect, rwbs, pid, comm, a_ns, q_ns, g_ns, i_ns, d_ns, c_ns, i2d_ns,"
        f" d2c_ns, q2c_ns, q_line, i_line, d_line, c_line, error FROM {_view('requests')}"
    )
    for r in _rows(con, requests, analysis_id):
        dev_pid = devices.get(r["dev"])
        if dev_pid is None:
            dev_pid = devices[r["dev"]] = DEVICE_PID + len(devices)
            counts["devices"] += 1
            yield {"ph": "M", "name": "process_name", "pid": dev_pid, "tid": dev_pid, "args": {"name": f"block {r['dev']}"}}  # fmt: skip
            yield {"ph": "M", "name": "process_sort_index", "pid": dev_pid, "tid": dev_pid, "args": {"sort_index": -1}}  # fmt: skip
        times = [t for t in (r["a_ns"], r["q_ns"], r["g_ns"], r["i_ns"], r["d_ns"], r["c_ns"]) if t is not None]
        if not times:
            continue
        counts["requests"] += 1
        rid = f"{r['source_id']}:{r['line']}"
        base = {"cat": "block", "pid": dev_pid, "tid": dev_pid, "id2": {"local": rid}}
        size = f"+{r['nsect']}" if r["nsect"] is not None else ""
        name = f"{r['rwbs'] or ''} {r['sector']}{size} {r['comm'] or ''}".strip()
        start, end = min(times), max(max(times), min(times))
        args = {k: r[k] for k in ("source_id", "line", "dev", "sector", "nsect", "rwbs", "pid", "comm", "q_ns", "i_ns",
                                  "d_ns", "c_ns", "i2d_ns", "d2c_ns", "q2c_ns", "q_line", "i_line", "d_line", "c_line",
                                  "error")}  # fmt: skip
        yield {**base, "ph": "b", "name": name, "ts": _us(start), "args": args}
        if r["i_ns"] is not None and r["d_ns"] is not None and r["d_ns"] >= r["i_ns"]:
            yield {**base, "ph": "b", "name": "I2D (scheduler)", "ts": _us(r["i_ns"])}
            yield {**base, "ph": "e", "name": "I2D (scheduler)", "ts": _us(r["d_ns"])}
        if r["d_ns"] is not None and r["c_ns"] is not None and r["c_ns"] >= r["d_ns"]:
            yield {**base, "ph": "b", "name": "D2C (device)", "ts": _us(r["d_ns"])}
            yield {**base, "ph": "e", "name": "D2C (device)", "ts": _us(r["c_ns"])}
        yield {**base, "ph": "e", "name": name, "ts": _us(end)}

    links = (
        "SELECT l.chain_id, l.pos, l.pid, l.comm, l.wait_line, l.start_ns, l.end_ns, l.relation,"
        " w.wake_ns FROM (SELECT * FROM " + _view("links") + ") l LEFT JOIN " + _view("waits") +
        " w ON w.source_id = l.source_id AND w.line = l.wait_line ORDER BY l.chain_id, l.pos"
    )  # fmt: skip
    prev = None
    for link in _rows(con, links, analysis_id):
        if prev is not None and prev["chain_id"] == link["chain_id"] and prev["relation"] and link["pid"] is not None:
            counts["flows"] += 1
            at = prev["wake_ns"] if prev["wake_ns"] is not None else prev["end_ns"]
            fid = f"{prev['chain_id']}.{prev['pos']}"
            label = f"wakes {prev['comm']} ({prev['pid']})" if prev["relation"] != "held_by" else (
                f"holds the lock {prev['comm']} ({prev['pid']}) waits on")  # fmt: skip
            src = {"pid": link["pid"], "tid": link["pid"] + WAITS_TID, "ts": _us(at)}
            yield {**src, "ph": "X", "cat": "chain", "name": label, "dur": 0.001,
                   "args": {"chain": prev["chain_id"], "link": prev["pos"] + 1, "relation": prev["relation"]}}  # fmt: skip
            yield {**src, "ph": "s", "cat": "chain", "name": f"chain #{prev['chain_id']}", "id": fid}
            yield {"ph": "f", "bp": "e", "cat": "chain", "name": f"chain #{prev['chain_id']}", "id": fid,
                   "pid": prev["pid"], "tid": prev["pid"] + WAITS_TID, "ts": _us(max(prev["start_ns"], prev["end_ns"] - 1))}  # fmt: skip
        prev = link


def stream(con: duckdb.DuckDBPyConnection, analysis_id: str, name: str) -> Iterator[bytes]:
    """The JSON text, in chunks of about CHUNK bytes. `con` is a cursor of its own, closed at the end."""
    counts: dict = {}
    try:
        parts, size, first = ['{"displayTimeUnit":"ns","traceEvents":[\n'], 0, True
        for event in events(con, analysis_id, counts):
            text = _dumps(event)
            parts.append(text if first else ",\n" + text)
            first = False
            size += len(text)
            if size >= CHUNK:
                yield "".join(parts).encode()
                parts, size = [], 0
        meta = {"source": "stallscope", "analysis": name, "analysis_id": analysis_id, **counts}
        parts.append(f'\n],"metadata":{_dumps(meta)}}}\n')
        yield "".join(parts).encode()
    finally:
        con.close()
