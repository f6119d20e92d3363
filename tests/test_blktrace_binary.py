"""blktrace binary captures read as they come from the tracer (parsers/blktrace.py, parsers/_blktrace.c).

Goldens: every capture in samples-public/blktrace-binary/ against the blkparse text of the same capture (the
DERIVED files, made by Debian's blkparse 1.2): the rendered lines equal blkparse's event lines byte for byte, and
the requests, bios and events tables equal those read from the text, column by column, as does what the API
returns. Then the byte orders and record versions, a message, the notes of a set, bad input with byte offsets,
and fuzzing.
"""

from __future__ import annotations

import io
import json
import random
import shutil
import struct
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest

from parsers import blkparse, blktrace
from parsers.common import ParseError, ParseReport
from parsers.detect import detect
from tests.conftest import PUBLIC, needs_public

BIN = PUBLIC / "blktrace-binary"
TEXT = PUBLIC / "blkparse-text"

GOLDENS = [  # (binary files, their DERIVED blkparse text)
    (sorted((BIN / "isotopp-keks").glob("keks.blktrace.*")), "derived-isotopp-keks-8cpu-sdd4-zfs.blkparse.txt"),
    (sorted((BIN / "liuzel01-sda").glob("sda.blktrace.*")), "derived-liuzel01-sda-lvm.blkparse.txt"),
    ([BIN / "takeoverjp-sample" / "sample.blktrace.0"], "derived-takeoverjp-nvme-cpu1.blkparse.txt"),
    (
        sorted((BIN / "zzunny97-hadoop-eternity8-partial").glob("sdb.blktrace.*")),
        "derived-zzunny97-hadoop-sdb-cpu0-1.blkparse.txt",
    ),
    ([BIN / "romeus-blkparse-dump" / "trace_x_0_y_1.bin"], "derived-romeus-loop0-dump-x0y1.blkparse.txt"),
]
IDS = ["isotopp-8cpu", "liuzel01-2cpu", "takeoverjp-cpu1", "zzunny97-partial", "romeus-dump"]
DUMPS = sorted((BIN / "romeus-blkparse-dump").glob("*.bin"))


def event_lines(text: bytes) -> bytes:
    """blkparse's output up to its summary (per-CPU and total blocks, 'Input file ... added')."""
    out = []
    for line in text.splitlines(keepends=True):
        if line.startswith((b"CPU", b"Total (")) and b" (" in line:
            break
        if line.strip():
            out.append(line)
    return b"".join(out)


def rendered(members: list[tuple[str, bytes]], read_bytes: int | None = None, monkeypatch=None) -> bytes:
    """The lines the records render to, as the text reader gets them."""
    per_cpu = all(blktrace.PER_CPU.match(n) for n, _ in members)
    from parsers import _blktrace

    r = _blktrace.Renderer(len(members), per_cpu)
    streams = [io.BytesIO(d) for _, d in members]
    out, parts, end = bytearray(1 << 20), [], 0
    while True:
        end, _, done = r.render(out, end)
        if r.need() >= 0:
            r.feed(r.need(), streams[r.need()].read(read_bytes or 1 << 16))
            continue
        parts.append(bytes(out[:end]))
        end = 0
        if done:
            return b"".join(parts)


def tables(batches) -> dict[str, pa.Table]:
    got: dict[str, list] = {}
    for table, batch in batches:
        got.setdefault(table, []).append(batch)
    out = {t: pa.Table.from_batches(b) for t, b in got.items()}  # blk_btt (btt's sums) has no line: one order
    return {t: v.sort_by([("line", "ascending")]) if "line" in v.column_names else v for t, v in out.items()}


def parse_binary(paths: list[Path], **kw) -> tuple[dict[str, pa.Table], ParseReport]:
    report = ParseReport(blktrace.source_name([p.name for p in paths]))
    members = [(p.name, open(p, "rb")) for p in paths]
    try:
        return tables(blktrace.parse_set(members, report, **kw)), report
    finally:
        for _, f in members:
            f.close()


def parse_text(path: Path) -> tuple[dict[str, pa.Table], ParseReport]:
    report = ParseReport(path.name)
    with open(path, "rb") as f:
        return tables(blkparse.parse(f, report)), report


@needs_public
@pytest.mark.parametrize(("paths", "text"), GOLDENS, ids=IDS)
def test_rendered_lines_are_blkparses(paths, text):
    want = event_lines((TEXT / text).read_bytes())
    got = rendered([(p.name, p.read_bytes()) for p in paths])
    assert got == want


@needs_public
@pytest.mark.parametrize(("paths", "text"), GOLDENS, ids=IDS)
def test_tables_equal_the_texts_column_by_column(paths, text):
    got, report = parse_binary(paths)
    want, text_report = parse_text(TEXT / text)
    assert set(got) == set(want)
    for table in want:
        assert got[table].column_names == want[table].column_names
        for column in want[table].column_names:
            assert got[table][column].equals(want[table][column]), (table, column)
    assert report.events == text_report.events and report.facts["i2d"] == text_report.facts["i2d"]
    assert report.lines == len(event_lines((TEXT / text).read_bytes()).splitlines())
    assert report.bytes_read == sum(p.stat().st_size for p in paths)
    assert len(report.files) == len(paths)


@needs_public
@pytest.mark.skipif(shutil.which("blkparse") is None, reason="blkparse (Debian's blktrace) is not installed")
@pytest.mark.parametrize("path", DUMPS, ids=[p.stem for p in DUMPS])
def test_every_dump_renders_as_blkparse_reads_it_from_stdin(path):
    want = subprocess.run(["blkparse", "-i", "-"], stdin=open(path, "rb"), capture_output=True, check=True).stdout
    assert rendered([(path.name, path.read_bytes())]) == event_lines(want)


@needs_public
def test_small_reads_give_the_same_lines():
    """Every record boundary may fall between two reads: the reading resumes where it stopped."""
    paths, text = GOLDENS[1]
    want = event_lines((TEXT / text).read_bytes())
    for size in (1, 7, 48, 1000):
        assert rendered([(p.name, p.read_bytes()) for p in paths], read_bytes=size) == want


@needs_public
def test_small_output_chunks_give_the_same_tables():
    paths, _ = GOLDENS[3]
    whole, _ = parse_binary(paths)
    chunked, _ = parse_binary(paths, chunk_bytes=200 << 10)  # a dozen chunks of text
    for table in whole:
        assert chunked[table].equals(whole[table])


# ---- byte orders, versions, messages -------------------------------------------------------------------------------

HEADER = struct.Struct("<IIQQIIIIIHH")


def records(data: bytes):
    at = 0
    while at < len(data):
        fields = HEADER.unpack_from(data, at)
        yield fields, data[at + 48 : at + 48 + fields[-1]]
        at += 48 + fields[-1]


def big_endian(data: bytes) -> bytes:
    out = bytearray()
    for fields, pdu in records(data):
        out += struct.pack(">IIQQIIIIIHH", *fields)
        if fields[5] == 0x04000001 and len(pdu) == 8:  # a timestamp: two u32 in the trace's order
            pdu = struct.pack(">II", *struct.unpack("<II", pdu))
        out += pdu  # remaps, unplugs and splits are big-endian in both
    return bytes(out)


def version8(data: bytes, order: str = "<") -> bytes:
    out = bytearray()
    for (magic, seq, t, sector, size, action, pid, dev, cpu, err, pdu_len), pdu in records(data):
        out += struct.pack(
            order + "IIQQIIQIIHH12x", magic & ~0xFF | 8, seq, t, sector, size, pid, action, dev, cpu, err, pdu_len
        )
        out += pdu
    return bytes(out)


@needs_public
@pytest.mark.parametrize("convert", [big_endian, version8, lambda d: version8(d, ">")], ids=["be", "v8", "v8-be"])
def test_other_byte_order_and_version_8_render_the_same(convert):
    paths, text = GOLDENS[1]
    want = event_lines((TEXT / text).read_bytes())
    assert rendered([(p.name, convert(p.read_bytes())) for p in paths]) == want


def record(seq, t, action, pid=0, dev=(8, 0), cpu=0, sector=0, size=0, pdu=b"", err=0):
    return HEADER.pack(0x65617407, seq, t, sector, size, action, pid, dev[0] << 20 | dev[1], cpu, err, len(pdu)) + pdu


Q, D, C, W = 1 | 1 << 20, 7 | 1 << 22, 8 | 1 << 23, 1 << 17
PROCESS, MESSAGE = 0x04000000, 0x04000002


def test_messages_and_names_from_notify_records():
    """A process record names its pid; a message (CFQ's `m` line) is printed at its time, with sequence 0 and pid 0
    as blkparse 1.2 prints it, and read by the text reader as a scheduler message."""
    data = b"".join(
        [
            record(0, 1000, PROCESS, pid=42, pdu=b"fio\0\0\0\0\0\0\0\0\0\0\0\0\0"),
            record(1, 1000, Q | W, pid=42, sector=100, size=4096),
            record(0, 1500, MESSAGE, pid=42, pdu=b"cfq42 insert_request\0"),
            record(2, 2000, D | W, pid=42, sector=100, size=4096),
            record(3, 9000, C | W, pid=0, sector=100, size=4096),
        ]
    )
    text = rendered([("fio.blktrace.0", data)])
    assert text == (
        b"  8,0    0        1     0.000000000    42  Q   W 100 + 8 [fio]\n"
        b"  8,0    0        0     0.000000500     0  m   N cfq42 insert_request\n"
        b"  8,0    0        2     0.000001000    42  D   W 100 + 8 [fio]\n"
        b"  8,0    0        3     0.000008000     0  C   W 100 + 8 [0]\n"
    )
    got, report = parse_binary_bytes([("fio.blktrace.0", data)])
    assert got["blk_requests"].to_pylist()[0]["comm"] == "fio"
    assert got["blk_events"].to_pylist()[0]["message"] == "cfq42 insert_request"
    if shutil.which("blkparse"):
        assert text == blkparse_of({"fio.blktrace.0": data}, "fio")


def parse_binary_bytes(members: list[tuple[str, bytes]]):
    report = ParseReport(blktrace.source_name([n for n, _ in members]))
    return tables(blktrace.parse_set([(n, io.BytesIO(d)) for n, d in members], report)), report


def blkparse_of(files: dict[str, bytes], name: str, tmp=Path("/tmp")) -> bytes:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        for n, data in files.items():
            (Path(d) / n).write_bytes(data)
        out = subprocess.run(["blkparse", "-i", name], cwd=d, capture_output=True, check=True).stdout
    return event_lines(out)


@needs_public
def test_a_set_notes_a_missing_cpu_and_records_of_another_cpu():
    paths = sorted((BIN / "isotopp-keks").glob("keks.blktrace.*"))
    members = [(p.name, p.read_bytes()) for p in paths if not p.name.endswith((".2", ".5"))]
    _, report = parse_binary_bytes(members)
    assert any("no file for CPU 2,5 (keks.blktrace.2, keks.blktrace.5)" in n for n in report.notes), report.notes
    _, report = parse_binary([BIN / "takeoverjp-sample" / "sample.blktrace.0"])
    assert any("records say CPU 1, not 0" in n for n in report.notes), report.notes


@needs_public
def test_an_empty_per_cpu_file_belongs_to_its_set():
    paths = sorted((BIN / "liuzel01-sda").glob("sda.blktrace.*"))
    members = [(p.name, p.read_bytes()) for p in paths] + [("sda.blktrace.2", b"")]
    assert detect(b"", "sda.blktrace.2") is blktrace
    assert blktrace.group([n for n, _ in members]) == [[0, 1, 2]]
    got, report = parse_binary_bytes(members)
    want, _ = parse_text(TEXT / GOLDENS[1][1])
    assert got["blk_requests"].equals(want["blk_requests"])
    assert any("sda.blktrace.2: empty" in n for n in report.notes)


def test_grouping_and_names():
    names = ["sdb.blktrace.1", "notes.txt", "sda.blktrace.10", "sdb.blktrace.0", "dump.bin", "sda.blktrace.2"]
    assert blktrace.group(names) == [[3, 0], [1], [5, 2], [4]]
    assert (
        blktrace.source_name(["sda.blktrace.0", "sda.blktrace.1", "sda.blktrace.2", "sda.blktrace.5"])
        == "sda.blktrace.0-2,5"
    )


# ---- bad input ------------------------------------------------------------------------------------------------------

SDA0 = BIN / "liuzel01-sda" / "sda.blktrace.0"


def refusal(members: list[tuple[str, bytes]]) -> ParseError:
    with pytest.raises(ParseError) as e:
        parse_binary_bytes(members)
    return e.value


def offsets(data: bytes) -> list[int]:
    at, out = 0, []
    for fields, pdu in records(data):
        out.append(at)
        at += 48 + len(pdu)
    return out


@needs_public
def test_a_file_cut_mid_record_is_refused_at_that_records_offset():
    data = SDA0.read_bytes()
    starts = offsets(data)
    e = refusal([("sda.blktrace.0", data[: starts[100] + 20])])
    assert (e.filename, e.offset) == ("sda.blktrace.0", starts[100])
    assert "the file was cut" in str(e) and "sda.blktrace.0, byte" in str(e)


@needs_public
def test_a_corrupt_magic_is_refused_with_its_offset():
    data = bytearray(SDA0.read_bytes())
    at = offsets(bytes(data))[57]
    data[at : at + 4] = b"\xde\xad\xbe\xef"
    e = refusal(
        [("sda.blktrace.1", (BIN / "liuzel01-sda" / "sda.blktrace.1").read_bytes()), ("sda.blktrace.0", bytes(data))]
    )
    assert (e.filename, e.offset) == ("sda.blktrace.0", at) and "bad magic 0xefbeadde" in e.message


@needs_public
def test_a_payload_past_the_end_is_refused_with_its_offset():
    data = bytearray(SDA0.read_bytes())
    last = offsets(bytes(data))[-1]
    struct.pack_into("<H", data, last + 46, 5000)
    e = refusal([("sda.blktrace.0", bytes(data))])
    assert e.offset == last and "payload (5000 bytes) runs past the end of the file" in e.message


@needs_public
def test_an_unknown_version_and_an_unknown_binary_are_refused():
    data = bytearray(SDA0.read_bytes())
    at = offsets(bytes(data))[3]
    data[at] = 0x09
    e = refusal([("sda.blktrace.0", bytes(data))])
    assert e.offset == at and "unsupported blktrace record version 9" in e.message
    with pytest.raises(ParseError) as e:
        detect(b"\x7fELF\x02\x01\x01\x00" + bytes(200), "vmlinux")
    assert (
        e.value.offset == 0 and "binary file of an unknown kind" in str(e.value) and "vmlinux, byte 0" in str(e.value)
    )


# ---- fuzz -----------------------------------------------------------------------------------------------------------


def mutate(data: bytes, rng: random.Random) -> bytes:
    data = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        kind = rng.random()
        at = rng.randrange(len(data))
        if kind < 0.5:
            data[at] = rng.randrange(256)
        elif kind < 0.7:  # a header field: length, action, device, cpu
            field = rng.choice([24, 28, 36, 40, 46])
            start = at - at % 48 + field
            if start + 2 <= len(data):
                data[start : start + 2] = rng.randbytes(2)
        elif kind < 0.85:
            del data[at : at + rng.randint(1, 60)]
        else:
            data[at:at] = rng.randbytes(rng.randint(1, 60))
    return bytes(data)


@needs_public
@pytest.mark.parametrize("seed", range(40))
def test_mutated_binaries_never_crash(seed):
    """Random bytes, header fields, cuts and insertions: the file is read, or refused with a byte offset inside it;
    never a crash, a hang or an offset outside the file."""
    rng = random.Random(seed)
    sets = [GOLDENS[0][0], GOLDENS[1][0], GOLDENS[4][0]]
    paths = sets[seed % len(sets)]
    members = [(p.name, p.read_bytes()) for p in paths]
    k = rng.randrange(len(members))
    members[k] = (members[k][0], mutate(members[k][1], rng))
    try:
        got, report = parse_binary_bytes(members)
    except ParseError as e:
        sizes = dict(members)
        assert e.filename in sizes and e.offset is not None and 0 <= e.offset < len(sizes[e.filename]), e
        return
    assert report.events >= 0
    for table in got.values():
        assert table.num_rows >= 0


# ---- ingest: a set is one source ----------------------------------------------------------------------------------


def ingest(store, members: list[tuple[str, bytes]]):
    from backend.ingest import InputFile

    return store.ingest([InputFile(n, io.BytesIO(d), len(d)) for n, d in members])


def columns(con, source_id: int, table: str) -> list[tuple]:
    names = [r[0] for r in con.execute(f"DESCRIBE {table}").fetchall() if r[0] != "source_id"]
    cols = ", ".join(f'"{n}"' for n in names)
    return con.execute(f"SELECT {cols} FROM {table} WHERE source_id = ? ORDER BY line", [source_id]).fetchall()


@needs_public
@pytest.mark.parametrize(("paths", "text"), GOLDENS, ids=IDS)
def test_a_capture_and_its_text_ingest_to_the_same_rows(store, paths, text):
    """Dropped together, a capture's files and its blkparse text: the set is one source, the text another, and
    every table holds the same rows for both (the derived requests' durations included)."""
    import hashlib

    members = [(p.name, p.read_bytes()) for p in paths] + [(text, (TEXT / text).read_bytes())]
    created = ingest(store, members)
    binary, textual = created["sources"]
    assert [f["filename"] for f in binary["files"]] == [p.name for p in paths]
    assert binary["filename"] == blktrace.source_name([p.name for p in paths])
    assert binary["bytes"] == sum(p.stat().st_size for p in paths)
    assert [f["sha256"] for f in binary["files"]] == [hashlib.sha256(p.read_bytes()).hexdigest() for p in paths]
    con = store.cursor()
    for table in ("blk_requests", "blk_bios", "blk_events", "blk_top"):
        assert columns(con, binary["id"], table) == columns(con, textual["id"], table), table
    sha, files = con.execute("SELECT sha256, files FROM sources WHERE id = ?", [binary["id"]]).fetchall()[0]
    manifest = "".join(
        f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.name}\n"  # sha256sum's lines, by name
        for p in sorted(paths, key=lambda p: p.name.encode())
    )
    assert sha == (
        hashlib.sha256(manifest.encode()).hexdigest()
        if len(paths) > 1
        else hashlib.sha256(paths[0].read_bytes()).hexdigest()
    )
    assert [f["filename"] for f in json.loads(files)] == [p.name for p in paths]


@needs_public
def test_a_refused_file_of_a_set_leaves_nothing(store):
    from backend.ingest import IngestError
    from backend.schema import PARSER_TABLES

    paths = GOLDENS[0][0]
    members = [(p.name, p.read_bytes()) for p in paths]
    members[5] = (members[5][0], members[5][1][:-10])
    with pytest.raises(IngestError) as e:
        ingest(store, members)
    assert e.value.files[0].filename == "keks.blktrace.5" and e.value.files[0].offset is not None
    con = store.cursor()
    assert con.execute("SELECT count(*) FROM sources").fetchall()[0][0] == 0
    for table in PARSER_TABLES:
        assert con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0] == 0, table
