"""blktrace binaries read natively (blktrace.parse_set: records folded straight into the blkparse reader's columns)
against the same records rendered as blkparse's lines and read as text (blktrace.parse_set_as_text): the same tables,
row for row and column by column, the same line numbers, counts, skipped lines, notes and facts, the same refusals.

On the real captures of samples-public/blktrace-binary/, on the blkparse samples of the repository written back as
records (tests/fixtures/btt/blkparse_to_blktrace.py), and on records made to take every form a line can have,
including those the native reading hands to the text reader (passthrough, cgroups, odd names and messages, numbers
past what the text reader reads)."""

from __future__ import annotations

import importlib.util
import io
import random
import struct
from pathlib import Path

import pytest

from parsers import blktrace
from parsers.common import ParseError, ParseReport
from tests.conftest import PUBLIC, REPO, SAMPLES, needs_public
from tests.test_blktrace_binary import mutate, tables

BIN = PUBLIC / "blktrace-binary"


def read(parse, members: list[tuple[str, bytes]], **kw):
    """(tables, report) of one way of reading, or the ParseError it raised."""
    report = ParseReport(blktrace.source_name([n for n, _ in members]))
    try:
        return tables(parse([(n, io.BytesIO(d)) for n, d in members], report, **kw)), report
    except ParseError as e:
        return e


def assert_same(members: list[tuple[str, bytes]], **kw) -> None:
    native = read(blktrace.parse_set, members, **kw)
    text = read(blktrace.parse_set_as_text, members, **kw)
    if isinstance(text, ParseError) or isinstance(native, ParseError):
        assert isinstance(native, ParseError) and isinstance(text, ParseError), (native, text)
        assert (native.filename, native.offset, native.message) == (text.filename, text.offset, text.message)
        return
    (got, report), (want, text_report) = native, text
    assert set(got) == set(want)
    for table in want:
        assert got[table].column_names == want[table].column_names, table
        assert got[table].num_rows == want[table].num_rows, table
        for column in want[table].column_names:
            assert got[table][column].equals(want[table][column]), (table, column)
    for field in ("lines", "bytes_read", "events", "skipped", "examples", "notes", "facts", "files"):
        assert getattr(report, field) == getattr(text_report, field), field


def capture_sets() -> list[list[Path]]:
    sets = []
    for directory in sorted(p for p in BIN.iterdir() if p.is_dir()) if BIN.is_dir() else []:
        files = sorted(p for p in directory.iterdir() if p.is_file())
        for group in blktrace.group([p.name for p in files]):
            sets.append([files[i] for i in group])
    return sets


SETS = capture_sets()


@needs_public
@pytest.mark.parametrize("paths", SETS, ids=[blktrace.source_name([p.name for p in s]) for s in SETS])
def test_real_captures_read_natively_as_their_text(paths):
    assert_same([(p.name, p.read_bytes()) for p in paths])


@needs_public
def test_small_batches_and_a_missing_cpu_give_the_same():
    paths = sorted((BIN / "isotopp-keks").glob("keks.blktrace.*"))
    members = [(p.name, p.read_bytes()) for p in paths if not p.name.endswith(".4")]
    assert_same(members, chunk_bytes=170 << 10)  # the smallest chunks of text the renderer takes
    assert_same(members[:1])
    whole, report = read(blktrace.parse_set, members)
    small, small_report = read(blktrace.parse_set, members, chunk_bytes=1 << 12)  # batches of 58 lines
    for table in whole:
        assert small[table].equals(whole[table]), table
    assert (small_report.lines, small_report.events) == (report.lines, report.events)


def _converter():
    path = REPO / "tests" / "fixtures" / "btt" / "blkparse_to_blktrace.py"
    spec = importlib.util.spec_from_file_location("blkparse_to_blktrace", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TEXTS = sorted(SAMPLES.glob("*.blkparse.txt"))


@pytest.mark.parametrize("text", TEXTS, ids=[p.name for p in TEXTS])
def test_repository_samples_written_as_records_read_the_same(text):
    out = io.BytesIO()
    with open(text, errors="replace") as src:
        assert _converter().convert(src, out) > 0
    data = out.getvalue()
    assert_same([("sample.blktrace.0", data)])  # a per-CPU file
    assert_same([("sample.bin", data)])  # a stream, sorted as blkparse -i - sorts it


# ---- every form of line ------------------------------------------------------------------------------------------

HEADER = struct.Struct("<IIQQIIIIIHH")
HEADER8 = struct.Struct("<IIQQIIQIIHH12x")
NOTIFY, PC, CGROUP = 1 << 26, 1 << 25, 1 << 8
CATEGORIES = [1 << b for b in (16, 17, 18, 19, 20, 21, 22, 23, 24, 27, 28, 29, 31)]  # read write flush sync ... fua
NAMES = [b"fio", b"kworker/u16:2", b"Web Content", b"a]b", b"[x", b"", b"tab\there", b"new\nline", "naïve".encode(),
         b"sixteen-letters!", b"(null)", b"9 + 9", b"trail "]  # fmt: skip
MESSAGES = [b"cfq42 insert_request", b"  padded  ", b"two\nlines", b"Total (8,0):", b"\t", b"x" * 300,
            b"  8,0    0        1     0.000000000    42  Q   W 100 + 8 [fio]", b"ends\r", b"\t lead"]  # fmt: skip


def forms(rng: random.Random, n: int, version8: bool) -> bytes:
    """n records of every kind, with values at and past the edges of what the text reader reads."""
    out = bytearray()
    t = rng.randrange(1 << 40)
    pids = [rng.choice([0, 1, 42, 4096, 1 << 31]) for _ in range(6)]
    for seq in range(n):
        t += rng.choice([0, 1, 999, 10**6, 10**9])
        when = t
        if rng.random() < 0.01:  # seconds past what an int holds, and wrapping
            when = (t + rng.choice([1 << 31, 10**9 * (1 << 31), 1 << 63])) % (1 << 64)
        pid = rng.choice(pids)
        kind = rng.random()
        pdu = b""
        if kind < 0.08:  # a process name
            action, pdu = NOTIFY, rng.choice(NAMES) + b"\0" * rng.randrange(2)
        elif kind < 0.14:  # a message
            action, pdu = NOTIFY | 2, rng.choice(MESSAGES) + b"\0" * rng.randrange(2)
        else:
            action = rng.choice(range(0, 18)) | sum(c for c in CATEGORIES if rng.random() < 0.15)
            if rng.random() < 0.03:  # the most letters RWBS can have: F, a zone's two, F A S M
                action = action & ~(3 << 16 | 1 << 29) | 1 << 18 | 1 << 27 | 1 << 28 | 1 << 31 | 1 << 19
            if rng.random() < 0.05:
                action |= PC
            code = action & 0xFF
            if code == 15:  # a remap: from (dev, sector), to dev
                pdu = struct.pack(
                    ">IIQ", rng.randrange(1 << 32), rng.randrange(1 << 32), rng.choice([5, 10**18, 1 << 63])
                )
            elif code in (10, 11, 13) or rng.random() < 0.05:  # unplug depth, split sector, a passthrough cdb
                pdu = rng.randbytes(rng.choice([8, 8, 3, 20]))
        if rng.random() < 0.03:
            action |= CGROUP
            pdu = rng.randbytes(8) + pdu
        edge = rng.random() < 0.1  # a value at or past an edge, else an everyday one
        sector = rng.choice([10**18 - 1, 10**18, (1 << 64) - 1] if edge else [0, 8, 123456, rng.randrange(1 << 40)])
        size = rng.choice([0, 512, 4096, 1 << 20, (1 << 32) - 512] if edge else [4096, 8192, 512])
        cpu = rng.choice([1 << 31, (1 << 32) - 1] if edge and rng.random() < 0.3 else [0, 1, 3])
        device = 0xFFFFFFFF if edge and rng.random() < 0.2 else rng.choice([8 << 20, 8 << 20 | 16, 253 << 20 | 3])
        sq = (1 << 31) + seq if edge and rng.random() < 0.2 else seq
        err = rng.choice([0, 5, 0xFFFF] if edge else [0])
        if version8:
            zone = rng.choice([0, 0, 1 << 1, 1 << 3, 1 << 7])  # append, reset all, none of the known
            out += HEADER8.pack(
                0x65617408, sq, when, sector, size, pid, action | zone << 32, device, cpu, err, len(pdu)
            )
        else:
            out += HEADER.pack(0x65617407, sq, when, sector, size, action, pid, device, cpu, err, len(pdu))
        out += pdu
    return bytes(out)


@pytest.mark.parametrize("seed", range(12))
def test_every_form_of_record_reads_the_same(seed):
    rng = random.Random(seed)
    version8 = seed % 3 == 2
    files = [(f"edge.blktrace.{cpu}", forms(rng, 600, version8)) for cpu in range(2)]
    assert_same(files)
    assert_same([("edge.bin", files[0][1] + files[1][1])])


@needs_public
@pytest.mark.parametrize("seed", range(16))
def test_mutated_captures_read_or_are_refused_the_same(seed):
    rng = random.Random(1000 + seed)
    sets = [SETS[0], SETS[1], [BIN / "romeus-blkparse-dump" / "trace_x_0_y_1.bin"]]
    members = [(p.name, p.read_bytes()) for p in sets[seed % len(sets)]]
    k = rng.randrange(len(members))
    members[k] = (members[k][0], mutate(members[k][1], rng))
    assert_same(members)
