"""blkparse default text output -> block events.

Format (shared/FORMATS.md section 1; blktrace blkparse_fmt.c `process_default`, blkparse.c):
    %3d,%-3d %2d %8d %5d.%09lu %5u %2s %3s <tail>
    maj,min  cpu seq  seconds.ns  pid action rwbs
tails: `S + n [comm]`, `S + n (elapsed) [comm]` (-t), `S + n [errno]` (C/R), `[comm] N` (U/UT),
`S + n <- (maj,min) S0` (A remap), `S / S2 [comm]` (X split), free text (m messages, optionally after a
cgroup `ino,gen`), `bytes (cdb) [comm]` (passthrough). The summary block at the end is skipped.

The line scan is a C tokenizer (parsers/_blkparse.c) working on 16 MiB chunks; each chunk becomes one
Arrow record batch. Requests are rebuilt from these events as they are read (parsers/_blkparse.c); btt's averages
over the same events, as btt computes them, come last (blk_btt, parsers/_btt.h).
"""

from __future__ import annotations

import re
from typing import BinaryIO, Iterator

import numpy as np
import pyarrow as pa

from . import _blkparse
from .common import CHUNK_BYTES, ParseError, ParseReport, chunks_of_lines

FORMAT = "blkparse"

_DEV = ("dev", pa.string())
EVENTS = pa.schema(  # events that are not a request phase (see _blkparse.c)
    [
        ("line", pa.int64()),
        _DEV,
        ("cpu", pa.int32()),
        ("t_ns", pa.int64()),
        ("pid", pa.int64()),
        ("action", pa.string()),
        ("rwbs", pa.string()),
        ("sector", pa.int64()),
        ("nsect", pa.int64()),
        ("elapsed_ns", pa.int64()),
        ("error", pa.int64()),
        ("comm", pa.string()),
        ("from_dev", pa.string()),
        ("from_sector", pa.int64()),
        ("split_sector", pa.int64()),
        ("depth", pa.int64()),
        ("message", pa.string()),
        ("req_line", pa.int64()),
    ]
)
_PHASES = [f"{p}_{k}" for k in ("ns", "line", "cpu") for p in "aqgidc"]
REQUESTS = pa.schema(  # one row per block request (line = its first event's line)
    [
        ("line", pa.int64()),
        _DEV,
        ("sector", pa.int64()),
        ("nsect0", pa.int64()),
        ("nsect", pa.int64()),
        ("rwbs", pa.string()),
        ("pid", pa.int64()),
        ("comm", pa.string()),
        *[(n, pa.int32() if n.endswith("cpu") else pa.int64()) for n in _PHASES],
        ("d_pid", pa.int64()),
        ("error", pa.int64()),
        ("requeues", pa.int32()),
        ("from_dev", pa.string()),
        ("from_sector", pa.int64()),
        ("t_ns", pa.int64()),
        ("merged_bios", pa.int32()),
    ]
)
BIOS = pa.schema(  # bios merged (M back, F front) into another request
    [
        ("line", pa.int64()),
        _DEV,
        ("sector", pa.int64()),
        ("nsect", pa.int64()),
        ("rwbs", pa.string()),
        ("pid", pa.int64()),
        ("comm", pa.string()),
        ("a_ns", pa.int64()),
        ("a_line", pa.int64()),
        ("q_ns", pa.int64()),
        ("q_line", pa.int64()),
        ("q_cpu", pa.int32()),
        ("merge_ns", pa.int64()),
        ("merge_line", pa.int64()),
        ("front", pa.bool_()),
        ("from_dev", pa.string()),
        ("from_sector", pa.int64()),
        ("req_line", pa.int64()),  # the request it joined (its line); null if that request is not in the trace
    ]
)
BTT = pa.schema(  # btt's averages (parsers/_btt.h): per device and pid of the queued bio, one row per metric
    [
        _DEV,
        ("pid", pa.int64()),  # null: the device's own (Q2Q: from one Q of the device to the next)
        ("metric", pa.string()),  # btt's row: Q2Q Q2A Q2G S2G G2I Q2M I2D M2D D2C Q2C, and Q2Qdm Q2Adm Q2Cdm (dm, md)
        ("n", pa.int64()),
        ("min_ns", pa.int64()),
        ("max_ns", pa.int64()),
        ("total_ns", pa.int64()),
    ]
)
TABLES = {"blk_events": EVENTS, "blk_requests": REQUESTS, "blk_bios": BIOS, "blk_btt": BTT}
# the phase durations, computed when read (DuckDB virtual columns: not stored, nothing to insert): only where both
# ends were traced and time moved forward
GENERATED = {
    "blk_requests": {
        f"{a}2{b}_ns": f"CASE WHEN {b}_ns >= {a}_ns THEN {b}_ns - {a}_ns END"
        for a, b in (("q", "g"), ("g", "i"), ("i", "d"), ("d", "c"), ("q", "c"))
    }
}

REASONS = {
    1: "not a blkparse event line (expected 'major,minor cpu sequence seconds.nanoseconds pid action rwbs ...')",
    2: "bad CPU field (expected a number)",
    3: "bad sequence field (expected a number)",
    4: "bad timestamp (expected seconds.nanoseconds)",
    5: "bad PID field (expected a number)",
    6: "bad action field (expected 1-2 letters such as Q G I D C M F P U A X R m)",
    7: "bad RWBS field (expected letters such as R W WS FWFS N)",
    8: "bad sector field (expected a number)",
    9: "bad length after '+' (expected a number of sectors)",
    10: "unterminated '(...)' or '[...]' (a truncated line?)",
    11: "bad remap (expected '<- (major,minor) sector')",
    12: "unexpected text after the event's fields",
    13: "bad split sector after '/'",
    14: "bad device field (expected 'major,minor')",
}

_EVENT_LINE = re.compile(r"^\s*\d+,\d+\s+\d+\s+\d+\s+\d+\.\d+\s+\d+\s+\S")


def sniff(head: list[str]) -> float:
    lines = [ln for ln in head if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines:
        return 0.0
    hits = sum(1 for ln in lines if _EVENT_LINE.match(ln))
    return hits / len(lines) if hits else 0.0


def _validity(cols: dict, key: str) -> tuple[pa.Buffer | None, int]:
    """The validity bitmap the C side made for column `key` (None: no nulls) and its null count."""
    nulls = cols[key + "_nulls"]
    return (pa.py_buffer(cols[key + "_bitmap"]) if nulls else None), nulls


def _num(cols: dict, key: str, type_: pa.DataType, n: int) -> pa.Array:
    bitmap, nulls = _validity(cols, key)
    return pa.Array.from_buffers(type_, n, [bitmap, pa.py_buffer(cols[key])], null_count=nulls)


def _str(cols: dict, key: str, n: int) -> pa.Array:
    """A string column (dev and from_dev: 'maj,min', written by the C side)."""
    bitmap, nulls = _validity(cols, key)
    return pa.StringArray.from_buffers(
        n, pa.py_buffer(cols[key + "_off"]), pa.py_buffer(cols[key + "_data"]), bitmap, nulls
    )


def _columns(cols: dict, prefix: str, schema: pa.Schema, n: int) -> dict[str, pa.Array]:
    out = {}
    for f in schema:
        key = (
            prefix + {"elapsed_ns": "elapsed", "error": "err"}.get(f.name, f.name)
            if prefix == "ev_"
            else prefix + f.name
        )
        if pa.types.is_string(f.type):
            out[f.name] = _str(cols, key, n)
        elif f.type in (pa.int32(), pa.int64()):
            out[f.name] = _num(cols, key, f.type, n)
    return out


def _batches(cols: dict) -> Iterator[tuple[str, pa.RecordBatch]]:
    if cols["ev_n"]:
        ev = _columns(cols, "ev_", EVENTS, cols["ev_n"])
        yield "blk_events", pa.RecordBatch.from_arrays([ev[f.name] for f in EVENTS], schema=EVENTS)
    for prefix, table, schema in (("rq_", "blk_requests", REQUESTS), ("bio_", "blk_bios", BIOS)):
        n = cols[prefix + "n"]
        if n:
            arrays = _columns(cols, prefix, schema, n)
            if schema is BIOS:
                arrays["front"] = pa.array(np.frombuffer(cols[prefix + "front"], np.int32) == 1)
            yield table, pa.RecordBatch.from_arrays([arrays[f.name] for f in schema], schema=schema)


TOP = 1000  # the slowest requests the parser keeps per metric (report.facts; blk.derive stores them in blk_top)


def parse(
    stream: BinaryIO, report: ParseReport, chunk_bytes: int = CHUNK_BYTES
) -> Iterator[tuple[str, pa.RecordBatch]]:
    """Streams the file's batches; then report.facts holds the requests' first and last phase times (lo, hi), how
    many have a phase earlier than the one before (backwards), and the lines of the TOP slowest per metric (i2d, d2c,
    q2c: slowest first, ties by line), found as the requests were emitted: no scan of them is needed."""
    yield from rebuild(chunks_of_lines(stream, report, chunk_bytes), report)


def rebuild(chunks: Iterator[memoryview], report: ParseReport) -> Iterator[tuple[str, pa.RecordBatch]]:
    """The batches of blkparse text given as chunks of whole lines (a file's, or the lines parsers/_blktrace.c renders
    from binary records); report.lines advances by the lines read, report.facts as parse() says."""
    rebuilder = _blkparse.Rebuilder(top=TOP)
    for chunk in chunks:
        cols = rebuilder.feed(chunk, report.lines + 1)
        account(cols, chunk, report)
        yield from _batches(cols)
    yield from finish(rebuilder, report)


def account(cols: dict, text, report: ParseReport) -> None:
    """What one call of a rebuilder read, into the report: its lines, its events, the first skipped lines (their text
    from `text`, which sk_start and sk_len point into); refuses a source that has no event in its first lines."""
    report.lines += cols["lines"]
    nsk = cols["sk_n"]
    if nsk:
        lines = np.frombuffer(cols["sk_line"], np.int64)
        starts = np.frombuffer(cols["sk_start"], np.int64)
        lens = np.frombuffer(cols["sk_len"], np.int64)
        reasons = np.frombuffer(cols["sk_reason"], np.int32)
        for i in range(min(nsk, 50)):
            report.skip(int(lines[i]), REASONS[int(reasons[i])], bytes(text[starts[i] : starts[i] + lens[i]]))
        report.skipped += nsk - min(nsk, 50)
    report.events += cols["parsed"]
    if report.events == 0 and report.skipped > 1000:
        raise ParseError(
            f"no blkparse event in the first {report.skipped} lines{report.first_problem()}",
            filename=report.filename,
        )


def finish(rebuilder, report: ParseReport) -> Iterator[tuple[str, pa.RecordBatch]]:
    """The requests a rebuilder still holds at the end, then btt's figures; report.facts as parse() says."""
    yield from _batches(rebuilder.finish())
    report.facts = rebuilder.facts()
    btt = btt_batch(rebuilder)
    if btt is not None:
        yield "blk_btt", btt


def btt_batch(rebuilder) -> pa.RecordBatch | None:
    """btt's figures of what a rebuilder read (table blk_btt), or None when it read no request."""
    rows = rebuilder.btt()
    if not rows:
        return None
    cols = list(zip(*rows))
    return pa.RecordBatch.from_arrays(
        [
            pa.array([f"{a},{b}" for a, b in zip(cols[0], cols[1])], pa.string()),
            pa.array(cols[2], pa.int64()),
            pa.array(cols[3], pa.string()),
            *(pa.array(c, pa.int64()) for c in cols[4:]),
        ],
        schema=BTT,
    )
