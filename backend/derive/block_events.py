"""Block requests of an ftrace capture, rebuilt from its block tracepoints (a trace.dat, trace-cmd report or tracefs
text recorded with `-e block`), for a source whose parser rebuilt none (perf script text rebuilds its own).

Each event is rendered as the blkparse line it stands for, at its own line of the trace, and the blkparse rebuilder
(parsers/_blkparse.c, as for perf script: parsers/perf.py) makes the requests, merges and remaps of them: the tables
blk_requests, blk_events, blk_bios and blk_btt of the source, as a blktrace of the capture would give them. So a
capture of ftrace alone shows Dispatch and ends a chain of waits at its block request, and a bio on a dm/md device
and the request it was remapped to on the disk below (block_bio_remap) are one I/O (backend/block_layers.py).

| tracepoint (its text) | blkparse action |
|---|---|
| block_bio_queue, block_getrq, block_bio_backmerge, block_bio_frontmerge (`8,0 WS 2048 + 8 [comm]`) | Q, G, M, F |
| block_rq_insert, block_rq_issue (`8,0 WS 4096 () 2048 + 8 [comm]`) | I, D |
| block_rq_complete, block_rq_requeue, block_bio_complete (`8,0 WS () 2048 + 8 [error]`) | C, R, C |
| block_bio_remap (`8,0 WS 2048 + 8 <- (253,0) 2048`) | A |
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa

from parsers import _blkparse, blkparse
from parsers.common import ParseReport

from ..db import execute

ACTIONS = {
    "block_bio_queue": "Q",
    "block_getrq": "G",
    "block_bio_backmerge": "M",
    "block_bio_frontmerge": "F",
    "block_rq_insert": "I",
    "block_rq_issue": "D",
    "block_rq_complete": "C",
    "block_rq_requeue": "R",
    "block_bio_complete": "C",
    "block_bio_remap": "A",
}
# dev rwbs [bytes] [(cmd)] sector + n, then [comm] / [error] / <- (maj,min) sector, an ioprio field tolerated
_TEXT = re.compile(
    r"^(?P<dev>\d+,\d+) (?P<rwbs>\S+) (?:\d+ )?(?:\([^)]*\) )?(?P<sector>\d+) \+ (?P<n>\d+)"
    r"(?: <- \((?P<from_dev>\d+,\d+)\) (?P<from_sector>\d+))?(?: \S+)?(?: \[(?P<tail>[^\]]*)\])?$"
)
EVENTS_PER_CHUNK = 50_000


def _line(t_ns: int, cpu, pid, comm, action: str, m: re.Match, seq: int) -> str:
    head = f"{m['dev']} {cpu or 0} {seq} {t_ns // 1_000_000_000}.{t_ns % 1_000_000_000:09d} {pid or 0} {action}"
    body = f"{m['rwbs']} {m['sector']} + {m['n']}"
    if action == "A":
        return f"{head} {body} <- ({m['from_dev']}) {m['from_sector']}" if m["from_dev"] else ""
    tail = m["tail"]
    if action in ("C", "R"):
        tail = tail if tail is not None and re.fullmatch(r"-?\d+", tail) else "0"
    else:
        tail = tail if tail else (comm or "")
    return f"{head} {body} [{tail}]"


def derive(con, source_id: int, report: ParseReport) -> None:
    """Rebuilds the source's block requests from its block events when its parser made none; report.facts then
    holds the rebuilder's facts for blk.derive (the slowest requests, the span), which runs next."""
    if execute(con, "SELECT 1 FROM blk_requests WHERE source_id = ? LIMIT 1", [source_id]).fetchall():
        return None
    events = execute(
        con,
        "SELECT line, t_ns, cpu, pid, comm, event, text FROM trace_events WHERE source_id = ? AND list_contains(?, event)"
        " ORDER BY line",
        [source_id, list(ACTIONS)],
    ).fetchall()
    if not events:
        return None
    rebuilder = _blkparse.Rebuilder(top=blkparse.TOP)
    rendered = 0
    for at in range(0, len(events), EVENTS_PER_CHUNK):
        chunk = events[at : at + EVENTS_PER_CHUNK]
        lines, numbers = [], []
        for line, t_ns, cpu, pid, comm, event, text in chunk:
            m = _TEXT.match(text or "")
            if m is None or t_ns is None or t_ns < 0:
                continue
            lines.append(_line(t_ns, cpu, pid, comm, ACTIONS[event], m, rendered + 1))
            numbers.append(line)
            rendered += 1
        if lines:  # each rendered line at its own line of the trace (the lines between are not rendered)
            text = ("\n".join(lines) + "\n").encode()
            cols = rebuilder.feed(memoryview(text), numbers[0], np.array(numbers, np.int64))
            _insert(con, source_id, blkparse._batches(cols))
    _insert(con, source_id, blkparse._batches(rebuilder.finish()))
    if not rendered:
        return None
    report.facts = rebuilder.facts()
    btt = blkparse.btt_batch(rebuilder)
    if btt is not None:
        _insert(con, source_id, [("blk_btt", btt)])
    n = execute(con, "SELECT count(*) FROM blk_requests WHERE source_id = ?", [source_id]).fetchone()[0]
    report.note(
        f"{n} block requests rebuilt from {rendered} block tracepoint events (block_bio_queue ... block_rq_complete)"
    )
    return None


def _insert(con, source_id: int, batches) -> None:
    for table, batch in batches:
        cols = ", ".join(batch.schema.names)
        rows = pa.Table.from_batches([batch])
        con.register("_block_events_rows", rows)
        try:
            execute(
                con, f"INSERT INTO {table} (source_id, {cols}) SELECT ?, {cols} FROM _block_events_rows", [source_id]
            )
        finally:
            con.unregister("_block_events_rows")
