"""The C reader of perf script text (parsers/perf.py + parsers/_perf.c) against the Python reader it replaced
(parsers/perf_python.py): every table, byte for byte, and the report (lines, events, skipped lines with their
reasons, notes, facts), on every perf capture of the repository and on mutated lines.

tests/golden/perf/tables.json holds each table's row count and a digest of its rows as the Python reader made them
before the C reader existed (the fixtures, the lab's six recordings and mutated captures); the same tables are also
compared live against parsers/perf_python.py. `STALLSCOPE_GOLDEN=write pytest tests/test_perf_c.py` rewrites the
golden file from parsers/perf_python.py after a capture is added."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import random
from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pytest

from parsers import common, perf, perf_python
from parsers.common import ParseError, ParseReport
from tests.conftest import REPO
from tests.test_robustness import mutate

FIX = REPO / "tests" / "fixtures" / "perf"
GOLDEN = REPO / "tests" / "golden" / "perf" / "tables.json"
CAPTURES = sorted(p.relative_to(REPO).as_posix() for p in FIX.glob("*.txt")) + sorted(
    p.relative_to(REPO).as_posix() for p in (REPO / "samples" / "real").glob("*/perf.script.txt*")
)
MUTATED_SEEDS = range(6)


def _read(name: str) -> bytes:
    data = (REPO / name).read_bytes()
    return gzip.decompress(data) if name.endswith(".gz") else data


def _mutated(seed: int) -> bytes:
    """20,000 lines of three fixtures, 30 % of them mutated (as tests/test_perf.py's fuzz makes them)."""
    rng = random.Random(seed)
    fixtures = ("sandbox-g", "sandbox-no-g", "sandbox-F-ip-sym")
    lines = [ln for f in fixtures for ln in (FIX / f"{f}.perf-script.txt").read_bytes().splitlines()]
    picked = [lines[rng.randrange(len(lines))] for _ in range(20000)]
    return b"\n".join(mutate(ln, rng) if rng.random() < 0.3 else ln for ln in picked)


def _tables(reader, data: bytes, chunk_bytes: int) -> tuple[dict[str, pa.Table], ParseReport]:
    report, batches = ParseReport("t.perf"), defaultdict(list)
    for name, batch in reader.parse(io.BytesIO(data), report, chunk_bytes):
        batches[name].append(batch)
    return {name: pa.Table.from_batches(b) for name, b in batches.items()}, report


def _digest(tables: dict[str, pa.Table], report: ParseReport) -> dict:
    """Each table's rows and a digest of its schema and values (not of its buffers: what a null slot holds, and where
    batches end, are not the table), and the report."""
    out = {}
    for name in sorted(tables):
        t = tables[name]
        h = hashlib.sha256(str(t.schema).encode())
        for col in t.columns:
            h.update(repr(col.to_pylist()).encode())
        out[name] = [t.num_rows, h.hexdigest()[:32]]
    rep = json.loads(json.dumps(report.as_dict()))
    rep["files"] = report.files
    rep["facts_sha256"] = hashlib.sha256(json.dumps(report.facts, sort_keys=True).encode()).hexdigest()[:32]
    return {"tables": out, "report": rep}


def _cases() -> dict[str, tuple[bytes, int]]:
    """name -> (input, chunk size)"""
    cases = {name: (name, 1 << 24) for name in CAPTURES}
    cases.update({f"mutated fixtures, seed {s}": (s, 1 << 16) for s in MUTATED_SEEDS})
    return cases


def _input(what) -> bytes:
    return _mutated(what) if isinstance(what, int) else _read(what)


def _golden() -> dict:
    return json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}


@pytest.mark.parametrize("name", list(_cases()))
def test_tables_equal_the_python_readers(name):
    what, chunk = _cases()[name]
    data = _input(what)
    if os.environ.get("STALLSCOPE_GOLDEN") == "write":
        golden = _golden()
        golden[name] = _digest(*_tables(perf_python, data, chunk))
        GOLDEN.write_text(json.dumps(dict(sorted(golden.items())), indent=1) + "\n")
    got = _digest(*_tables(perf, data, chunk))
    assert got == _golden()[name]


@pytest.mark.parametrize(
    "name", [n for n in CAPTURES if "fixtures" in n] + ["samples/real/iosched-starve/perf.script.txt.gz"]
)
@pytest.mark.parametrize("chunk", [4096, 65_536, 1 << 24])
def test_tables_equal_the_python_readers_live(name, chunk):
    """The same input through both readers, every table compared whole, at chunk sizes that cut call chains."""
    data = _read(name)
    want, want_report = _tables(perf_python, data, chunk)
    got, got_report = _tables(perf, data, chunk)
    assert got.keys() == want.keys()
    for table in want:
        assert got[table].equals(want[table]), table
    assert _digest(got, got_report) == _digest(want, want_report)


def _outcomes(reader, data: bytes, chunk: int):
    try:
        tables, report = _tables(reader, data, chunk)
    except ParseError as e:
        return "refused", str(e)
    rows = {name: t.to_pylist() for name, t in tables.items()}
    return rows, report.as_dict(), report.facts


# several mutations per line, and insertions from the characters the fields are made of (Unicode spaces too)
_NOISE = b" \t:/[]()+-=.,>0123456789abcdefx\r\x0b\x1c\xc2\xa0\xe3\x80\xff_"


def _noisy(line: bytes, rng: random.Random) -> bytes:
    b = bytearray(line)
    for _ in range(rng.randrange(1, 4)):
        i = rng.randrange(len(b) + 1)
        op = rng.randrange(3)
        if op == 0:
            b[i:i] = bytes(rng.choice(_NOISE) for _ in range(rng.randrange(1, 4)))
        elif op == 1 and b:
            del b[i : i + rng.randrange(1, 4)]
        else:
            b = bytearray(mutate(bytes(b), rng))
    return bytes(b).replace(b"\n", b" ")


_EDGES = [
    b"",
    b"# a comment",
    b"\t",
    b"  ffffffff81000000 spaced_frame+0x1 ([kernel.kallsyms])",
    b"    dd 1/2 [000] 1.5: a:b:c:d",
    b"x 1 2.3: a:b:c",
    b"\t ffff888000000000 sym (x.ko])",
    b"\tffffffffc0000000 (foo) ([kernel.kallsyms])",
    b"\t  abc +0x10 ([x.ko])",
    "\tdead caf\u00e9 (lib)".encode(),
    b"dd 1 [0] 1.1: block:block_rq_issue: 8,0 W 4096 () 10 + 8 be,0,4 [dd]",
    b"dd 1 [0] 1.1: block:block_rq_complete: 8,0 W () 10 + 8 [-5]",
    b"dd 1 [0] 1.1: block:block_rq_insert: 8,0 W 0 () 10 + 8 [dd x]",
    b"caf\xe9 1 [0] 1.1: sched:sched_waking: comm=a pid=3 prio=1 success=00 target_cpu=002",
    b"a 1 [0] 1.1: sched:sched_wakeup: a b:3 [1] success=0 CPU:003",
    b"a 1 [0] 1.1: sched:sched_switch: prev_comm=a prev_pid=1 prev_prio=2 prev_state=R+ ==> next_comm=b c next_pid=2 "
    b"next_prio=3",
    b"a 1 [0] 1.1: sched:sched_switch: a:b:1 [2] S ==> c:d:2 [3]",
    "a 1 [0] 1.1: sched:sched_switch: prev_comm=a prev_pid=1 prev_prio=2 prev_state=\u00a0R ==> next_comm=b "
    "next_pid=2 next_prio=3".encode(),
    "a 1 [0] 1.1: sched:sched_switch: prev_comm=a prev_pid=1 prev_prio=2 prev_state=R\u3000 ==> next_comm=b "
    "next_pid=2 next_prio=3".encode(),
    b"\xff\xfe 1 [0] 1.1: x:y: \xe2\x82 \xf0\x9f\x98 \xed\xa0\x80 \xc0\xaf \xf4\x90\x80\x80 ok",
]


@pytest.mark.parametrize("seed", range(12))
def test_mutated_lines_give_the_same_outcome(seed, monkeypatch):
    """Every table and skipped line the same through both readers (line by line: the rows hold their lines, every
    skipped line is listed with its reason), on lines of the captures mutated, with edge cases mixed in, at a random
    chunk size. An input the Python reader fails on (a number past its column's type) is read by the C reader
    without failing."""
    monkeypatch.setattr(common, "MAX_EXAMPLES", 1 << 20)
    monkeypatch.setattr(perf, "MAX_SKIPS", 1 << 20)
    rng = random.Random(seed)
    lines = [ln for p in sorted(FIX.glob("*.txt")) for ln in p.read_bytes().splitlines()] + _EDGES * 40
    picked = [lines[rng.randrange(len(lines))] for _ in range(4000)]
    change = _noisy if seed % 2 else mutate
    data = b"\n".join(change(ln, rng) if rng.random() < 0.4 else ln for ln in picked)
    chunk = rng.choice([1 << 12, 1 << 14, 1 << 16, 1 << 24])
    try:
        want = _outcomes(perf_python, data, chunk)
    except OverflowError:  # the Python reader's row held a number past int64 / int32
        rows, report, _ = _outcomes(perf, data, chunk)
        assert report["skipped_lines"] > 0
        return
    assert _outcomes(perf, data, chunk) == want


def test_text_decoded_as_python_decodes_it():
    """Bytes that are not UTF-8 become what bytes.decode('utf-8', 'replace') gives (each maximal invalid subpart one
    U+FFFD), in the comm, the event's text and the stack frames."""
    rng = random.Random(7)
    lines = []
    for i in range(3000):
        junk = bytes(
            rng.choice(b"ab \x80\xbf\xc2\xc3\xdf\xe0\xe1\xed\xee\xef\xf0\xf1\xf4\xf5\xff\x9f\xa0") for _ in range(12)
        )
        lines.append(b"c" + junk.replace(b" ", b"") + b" 7 [001] 1.%06d: sched:foo: " % i + junk)
        lines.append(b"\tffffffff81000000 " + junk + b"+0x1 ([kernel.kallsyms])")
    data = b"\n".join(lines) + b"\n"
    want, _ = _tables(perf_python, data, 1 << 24)
    got, _ = _tables(perf, data, 1 << 24)
    assert got["trace_events"].equals(want["trace_events"])
    texts = got["trace_events"].column("text").to_pylist()
    assert any("\ufffd" in t for t in texts) and len(texts) == 6000


def test_a_number_too_large_for_its_column_skips_its_line():
    """The Python reader failed the whole file there (OverflowError building the column); the C reader skips the
    line with reason 1 and reads the rest."""
    text = (
        b"dd 99999999999999999999 [000] 1.000001: sched:sched_wakeup: comm=a pid=3 prio=120 target_cpu=000\n"
        b"dd 12 [000] 1.000002: sched:sched_wakeup: comm=a pid=3 prio=120 target_cpu=000\n"
        b"dd 12 [4294967296] 1.000003: block:block_rq_issue: 8,0 W 4096 () 10 + 8 [dd]\n"
        b"dd 12 [000] 99999999999.000004: sched:sched_switch: prev_comm=a prev_pid=1 prev_prio=2 prev_state=S ==> "
        b"next_comm=b next_pid=2 next_prio=3\n"
    )
    with pytest.raises(OverflowError):
        _tables(perf_python, text, 1 << 24)
    tables, report = _tables(perf, text, 1 << 24)
    assert tables["sched_wakeup"].num_rows == 1 and "trace_events" not in tables and "sched_switch" not in tables
    assert [(e.line, e.reason) for e in report.examples] == [
        (1, perf.REASONS[1]),
        (3, perf.REASONS[1]),
        (4, perf.REASONS[1]),
    ]


def test_a_stack_text_stops_at_256_kib():
    frame = b"\tffffffff81000000 " + b"f" * 1000 + b"+0x1 ([kernel.kallsyms])\n"
    text = b"dd 12 [000] 1.000001: sched:sched_switch: a:1 [1] S ==> b:2 [2]\n" + frame * 400
    tables, report = _tables(perf, text, 1 << 24)
    (stack,) = tables["trace_events"].column("text").to_pylist()
    kept = stack.count("=> ")
    assert len(stack) <= 256 << 10 < len(stack) + 1004 and kept == 261
    assert f"{400 - kept} call-chain frames beyond 256 KiB of text per stack were dropped" in report.notes


def test_golden_lists_every_capture():
    assert set(_golden()) == set(_cases()), "STALLSCOPE_GOLDEN=write pytest tests/test_perf_c.py"
    assert Path(GOLDEN).stat().st_size < 64 << 10
