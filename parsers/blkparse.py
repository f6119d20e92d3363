"""blkparse default text output -> block events.

Format (shared/FORMATS.md section 1; blktrace blkparse_fmt.c `process_default`, blkparse.c):
    %3d,%-3d %2d %8d %5d.%09lu %5u %2s %3s <tail>
    maj,min  cpu seq  seconds.ns  pid action rwbs
tails: `S + n [comm]`, `S + n (elapsed) [comm]` (-t), `S + n [errno]` (C/R), `[comm] N` (U/UT),
`S + n <- (maj,min) S0` (A remap), `S / S2 [comm]` (X split), free text (m messages, optionally after a
cgroup `ino,gen`), `bytes (cdb) [comm]` (passthrough). The summary block at the end is skipped.

The line scan is a C tokenizer (parsers/_blkparse.c) working on 16 MiB chunks; each chunk becomes one
Arrow record batch. Requests are rebuilt from these events in SQL (backend/analysis/blk.py).
"""
from __future__ import annotations

import re
from typing import BinaryIO, Iterator

import numpy as np
import pyarrow as pa

from . import _blkparse
from .common import ParseError, ParseReport, line_chunks

FORMAT = "blkparse"

EVENTS = pa.schema(
    [
        ("line", pa.int64()),
        ("dev", pa.string()),
        ("cpu", pa.int32()),
        ("seq", pa.int64()),
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
    ]
)
TABLES = {"blk_events": EVENTS}

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


def _int_col(buf: bytes, dtype) -> pa.Array:
    arr = np.frombuffer(buf, dtype=dtype)
    if dtype == np.int64:
        return pa.array(arr, mask=arr == np.iinfo(np.int64).min)
    return pa.array(arr)


def _str_col(cols: dict, name: str, n: int) -> pa.Array:
    valid = np.frombuffer(cols[name + "_valid"], dtype=np.uint8).astype(bool)
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little").tobytes()) if not valid.all() else None
    return pa.StringArray.from_buffers(n, pa.py_buffer(cols[name + "_off"]), pa.py_buffer(cols[name + "_data"]), bitmap)


def _dev(major: np.ndarray, minor: np.ndarray) -> pa.Array:
    """'maj,min' strings, built once per distinct device (a trace has a handful)."""
    key = major.astype(np.int64) << 20 | minor.astype(np.int64)
    uniq, inv = np.unique(key, return_inverse=True)
    names = pa.array([None if k < 0 else f"{k >> 20},{k & 0xFFFFF}" for k in uniq], pa.string())
    return pa.DictionaryArray.from_arrays(pa.array(inv.astype(np.int32)), names).cast(pa.string())


def _batch(cols: dict) -> pa.RecordBatch:
    n = cols["n"]
    i64 = {k: _int_col(cols[k], np.int64) for k in
           ("line", "t_ns", "seq", "pid", "sector", "nsect", "elapsed", "err", "from_sector", "split_sector", "depth")}
    major = np.frombuffer(cols["major"], np.int32)
    minor = np.frombuffer(cols["minor"], np.int32)
    fmaj = np.frombuffer(cols["from_major"], np.int32).astype(np.int64)
    fmin = np.frombuffer(cols["from_minor"], np.int32).astype(np.int64)
    fmaj_masked = np.where(fmaj < 0, -1, fmaj)
    from_dev = _dev(fmaj_masked, np.where(fmaj < 0, 0, fmin))
    arrays = [
        i64["line"], _dev(major, minor), pa.array(np.frombuffer(cols["cpu"], np.int32)), i64["seq"], i64["t_ns"],
        i64["pid"], _str_col(cols, "action", n), _str_col(cols, "rwbs", n), i64["sector"], i64["nsect"],
        i64["elapsed"], i64["err"], _str_col(cols, "comm", n), from_dev, i64["from_sector"], i64["split_sector"],
        i64["depth"], _str_col(cols, "msg", n),
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=EVENTS)


def parse(stream: BinaryIO, report: ParseReport) -> Iterator[tuple[str, pa.RecordBatch]]:
    in_summary = False
    for chunk, first_line in line_chunks(stream, report):
        cols = _blkparse.tokenize(chunk, first_line, in_summary)
        in_summary = cols["in_summary"]
        nsk = len(cols["sk_line"]) // 8
        if nsk:
            lines = np.frombuffer(cols["sk_line"], np.int64)
            starts = np.frombuffer(cols["sk_start"], np.int64)
            lens = np.frombuffer(cols["sk_len"], np.int64)
            reasons = np.frombuffer(cols["sk_reason"], np.int32)
            for i in range(min(nsk, 50)):
                report.skip(int(lines[i]), REASONS[int(reasons[i])], bytes(chunk[starts[i] : starts[i] + lens[i]]))
            report.skipped += nsk - min(nsk, 50)
        if report.events == 0 and report.skipped > 1000:
            raise ParseError(
                f"no blkparse event in the first {report.skipped} lines; first problem at line "
                f"{report.examples[0].line}: {report.examples[0].reason}", filename=report.filename)
        if cols["n"]:
            report.events += cols["n"]
            yield "blk_events", _batch(cols)
