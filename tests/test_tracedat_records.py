"""A trace.dat read as records (parsers/tracedat_records.c in a child process, folded by _funcgraph.records): the same
tables and line numbers as its `trace-cmd report` text on every trace.dat at hand; the decoder's failures refused
as trace-cmd's are; a record stream that is damaged refused, never read past its end (a fuzz of the fold)."""

from __future__ import annotations

import collections
import io
import random
import re
import struct
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from backend.store import IngestError
from bench import gen_tracedat
from parsers import _funcgraph, funcgraph, tracecmd, tracedat, tracedat_layout, tracedat_records
from parsers.common import ParseError, ParseReport
from tests.conftest import PUBLIC, ingest_bytes, needs_public, table_counts

ROOT = Path(__file__).resolve().parents[1]
OWN = ROOT / "tests" / "golden" / "tracedat" / "sandbox-sched-block-stack.dat"
LAB = sorted((ROOT / "samples" / "real").glob("*/trace.dat"))
SHARED = sorted((PUBLIC / "trace-cmd-report" / "trace-dat").glob("*.dat"))
V6 = PUBLIC / "trace-cmd-report" / "trace-dat" / "elainecole-kernel-monitor-trace.dat"
GENERATED = "generated-function-graph.dat"

needs_decoder = pytest.mark.skipif(not tracedat_records.available(), reason="tracedat-records not built")
pytestmark = needs_decoder


def _tables(batches) -> dict:
    by: dict[str, list] = {}
    for name, batch in batches:
        by.setdefault(name, []).append(batch)
    return {name: pa.Table.from_batches(b).combine_chunks() for name, b in by.items()}


def _parse(data: bytes, name: str = "c.dat") -> tuple[dict, ParseReport]:
    report = ParseReport(name)
    return _tables(tracedat.parse(io.BytesIO(data), report)), report


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    if not gen_tracedat.SAMPLE.exists():
        pytest.skip("needs ../shared (the generator's template)")
    made = tmp_path_factory.mktemp("records") / GENERATED
    gen_tracedat.write(made, 200)
    return made


@pytest.mark.parametrize(
    "which",
    [
        "own",
        *(f"lab:{p.parent.name}" for p in LAB),
        *(pytest.param(f"shared:{p.name}", marks=needs_public) for p in SHARED),
        "generated",
    ],
)
def test_records_equal_the_report(which, request):
    """Every table, row for row (line numbers included), and the line count: the records' and the report text's."""
    if which == "own":
        path = OWN
    elif which == "generated":
        path = request.getfixturevalue("generated")
    else:
        kind, name = which.split(":", 1)
        path = next(
            p for p in (LAB if kind == "lab" else SHARED) if (p.parent.name if kind == "lab" else p.name) == name
        )
    _equal_to_the_report(path)


def _equal_to_the_report(path: Path) -> None:
    native, report = _parse(path.read_bytes())
    assert any("into records" in n for n in report.notes), "\n".join(report.notes)
    text = subprocess.run(["trace-cmd", "report", "-i", str(path)], capture_output=True, check=True).stdout
    from_text = ParseReport("c.txt")
    expected = _tables(funcgraph.parse(io.BytesIO(text), from_text))
    assert native.keys() == expected.keys()
    for name, table in native.items():
        assert table.equals(expected[name]), name
    assert (report.lines, report.events, report.skipped) == (from_text.lines, from_text.events, from_text.skipped)


@pytest.mark.parametrize("library_line", [False, True], ids=["own-table", "library-reads-the-rest"])
def test_kallsyms_aliases_name_functions_as_the_report_does(tmp_path, library_line):
    """The decoder reads the file's kallsyms itself and resolves addresses from its own table (tracedat_records.c):
    functions sharing an address (the name shown is the stable sort's and the bsearch's pick) and, from a line of
    another shape on, the library reading the rest, give the report's names."""
    if not gen_tracedat.SAMPLE.exists():
        pytest.skip("needs ../shared (the generator's template)")
    template = tmp_path / "template-v6.dat"
    subprocess.run(
        ["trace-cmd", "convert", "-i", str(gen_tracedat.SAMPLE), "-o", str(template), "--file-version", "6"]
        + ["--compression", "none"],
        check=True,
        capture_output=True,
    )
    data = bytearray(template.read_bytes())

    def line(name: bytes, step: int) -> re.Match:
        at = re.search(rb"\n([0-9a-f]{16}) [Tt] " + name + rb"\n", data)
        assert at, name
        for _ in range(step):  # the next line's
            at = re.compile(rb"\n([0-9a-f]{16}) ").search(data, at.end() - 1)
        return at

    for name, step in ((b"up_write", 1), (b"filemap_read", 0), (b"mutex_lock", 1)):  # each next to a function called
        used, other = line(name, 0), line(name, step)
        if other.start() == used.start():  # the line before takes its address instead
            other = re.compile(rb"\n([0-9a-f]{16}) ").search(data, data.rindex(b"\n", 0, used.start() - 1))
        data[other.start(1) : other.end(1)] = used[1]  # same length: the file's layout is unchanged
    # a module's function (the modules follow the kernel's, in no order of address) at the address of one called:
    # read after the kernel's, it is first in the library's list (the head's and the rest's tie, in sorted_symbols)
    module = re.compile(rb"\n([0-9a-f]{16}) [tT] \w+\t\[\w+\]\n").search(data)
    assert module, "a module's function"
    data[module.start(1) : module.end(1)] = line(b"filemap_read", 0)[1]
    if library_line:
        at = line(b"mutex_lock", 2)
        data[at.start(1)] = ord(" ")  # " fffff...": the library's sscanf reads it, so the text from there on is its
    template.write_bytes(bytes(data))
    made = tmp_path / "aliases.dat"
    gen_tracedat.write(made, 30, template=template)
    _equal_to_the_report(made)


def test_a_leaf_exit_on_another_cpu_keeps_the_order(tmp_path, monkeypatch):
    """A task that migrates inside a leaf function: its exit is the next record, on another CPU. trace-cmd's
    function_graph handler reads that exit ahead, and tracecmd_iterate_events_multi then orders by the freed record's
    timestamp (trace-cmd report 3.1.6 prints 17 lines of this capture before earlier ones). The decoder walks the CPUs
    itself (tracedat_records.c): every line in time order."""
    if not gen_tracedat.SAMPLE.exists():
        pytest.skip("needs ../shared (the generator's template)")
    made = gen_tracedat.events

    def migrated(fmt, rounds):
        per_cpu, exit_id = made(fmt, rounds), fmt.ids["funcgraph_exit"]
        for cpu, to in ((2, 0), (3, 1)):  # every third exit of the readers' CPUs (leaves among them) moved
            moved = [
                (t, r) for i, (t, r) in enumerate(per_cpu[cpu]) if i % 3 == 0 and r[:2] == exit_id.to_bytes(2, "little")
            ]
            per_cpu[cpu] = [x for x in per_cpu[cpu] if x not in moved]
            per_cpu[to] = sorted(per_cpu[to] + moved, key=lambda x: x[0])
        return per_cpu

    monkeypatch.setattr(gen_tracedat, "events", migrated)
    gen_tracedat.write(tmp_path / "m.dat", 50)
    tables, report = _parse((tmp_path / "m.dat").read_bytes())
    assert any("into records" in n for n in report.notes), report.notes
    fg = tables["fg_call_rows"].to_pydict()
    times = list(zip(fg["line"], fg["entry_ns"]))
    times += [(x, t) for line, x, t in zip(fg["line"], fg["exit_line"], fg["exit_ns"]) if x is not None and x != line]
    for name in ("sched_switch", "sched_wakeup"):
        times += zip(tables[name]["line"].to_pylist(), tables[name]["t_ns"].to_pylist())
    times.sort()
    assert len(times) > 3000
    assert [(a, b) for a, b in zip(times, times[1:]) if b[1] < a[1]] == []


# ---- the decoder's failures ------------------------------------------------------------------------------------


def _fake_decoder(tmp_path, monkeypatch, body: str) -> None:
    """tracedat-records replaced by a Python script running `body` (out: its stdout's binary buffer)."""
    script = tmp_path / "tracedat-records"
    script.write_text(f"#!{sys.executable}\nimport os, sys, time\nout = sys.stdout.buffer\n{body}\n")
    script.chmod(0o755)
    monkeypatch.setattr(tracedat_records, "PROGRAM", script)


def _text(data: bytes) -> str:
    """A 'T' record: report lines."""
    return f"out.write(b'T' + len({data!r}).to_bytes(4, 'little') + {data!r})"


@needs_public
def test_decoder_crash_and_failure_are_refusals(tmp_path, monkeypatch):
    _fake_decoder(tmp_path, monkeypatch, "print('failed to init data', file=sys.stderr); os.kill(os.getpid(), 11)")
    with pytest.raises(ParseError, match=r"c\.dat: the trace\.dat decoder \(libtracecmd\) crashed \(SIGSEGV\)"):
        _parse(V6.read_bytes())
    _fake_decoder(tmp_path, monkeypatch, _text(b"cpus=4\n") + "; print('oops', file=sys.stderr); sys.exit(22)")
    with pytest.raises(ParseError, match=r"could not read it \(exit status 22\): oops"):
        _parse(V6.read_bytes())


@needs_public
def test_a_silent_decoder_is_stopped(tmp_path, monkeypatch):
    monkeypatch.setattr(tracecmd, "STALL_SECONDS", 1)
    _fake_decoder(tmp_path, monkeypatch, _text(b"cpus=4\n") + "; out.flush(); time.sleep(30)")
    with pytest.raises(ParseError, match=r"wrote nothing for 1 s and was stopped"):
        _parse(V6.read_bytes())


@needs_public
def test_a_runaway_decoder_is_stopped(tmp_path, monkeypatch):
    monkeypatch.setattr(tracedat_records, "OUTPUT_PER_DATA_BYTE", 0)  # 16 MiB at most
    _fake_decoder(tmp_path, monkeypatch, "while True: " + _text(b"x-1 [000] 1.0: e: t\n" * 1000))
    with pytest.raises(ParseError, match=r"wrote more than 16,777,216 bytes of text for 307,200 bytes of trace data"):
        _parse(V6.read_bytes())


@needs_public
@pytest.mark.parametrize(
    "body,message",
    [
        (
            "out.write(b'Z' * 64)",
            r"a malformed record at byte 0 of the records \(a damaged file\?\) \(in the output of the trace\.dat decoder",
        ),
        (
            "out.write(b'T' + (100).to_bytes(4, 'little') + b'cpus=4')",
            r"the records end inside a record \(in the output of the trace\.dat decoder",
        ),
        ("out.write(b'K' + bytes(16) + b'\\0' + (1).to_bytes(4, 'little') + (7).to_bytes(4, 'little'))", "malformed"),
    ],
    ids=["unknown", "cut", "unknown-frame"],
)
def test_a_damaged_record_stream_is_refused(tmp_path, monkeypatch, body, message):
    _fake_decoder(tmp_path, monkeypatch, body)
    with pytest.raises(ParseError, match=message):
        _parse(V6.read_bytes())


@needs_public
def test_times_not_in_nanoseconds_are_read_from_the_report(tmp_path, monkeypatch):
    """The decoder's exit status 3 without a record (a raw counter clock): the report's text is read instead."""
    _fake_decoder(tmp_path, monkeypatch, f"sys.exit({tracedat_records.NOT_NANOSECONDS})")
    tables, report = _parse(V6.read_bytes())
    assert tables["sched_switch"].num_rows == 4427
    assert any("bytes of text" in n for n in report.notes), report.notes


@needs_public
@pytest.mark.parametrize("clock", [b"[ ", b"[] ", b"[[]] "])
def test_a_trace_clock_naming_no_clock_is_read(clock):
    """libtracecmd 3.1.6 ends with SIGSEGV (sscanf of NULL) on a trace_clock option whose first "[" word has nothing
    between its brackets, as it did now and then on the zero-length option of V6, whose text it read from the heap
    (tracedat_records.c: the decoder hands it a terminated copy, without such a word). The uname option of V6 made a
    trace_clock option that starts so: read as records, the same tables as V6 (the file's trace_clock section names
    the clock)."""
    data = bytearray(V6.read_bytes())
    at = data.find(b"Linux emcole-raspberrypi")
    assert struct.unpack_from("<HI", data, at - 6) == (5, 49)  # UNAME, 49 bytes
    struct.pack_into("<H", data, at - 6, 4)  # TRACECLOCK
    data[at : at + len(clock)] = clock
    native, report = _parse(bytes(data))
    assert any("into records" in n for n in report.notes), report.notes
    expected, _ = _parse(V6.read_bytes())
    assert native.keys() == expected.keys()
    for name, table in expected.items():
        assert native[name].equals(table), name


@needs_public
def test_a_decoder_failing_after_its_rows_leaves_nothing(ingested_store, tmp_path, monkeypatch):
    real = subprocess.run([str(tracedat_records.PROGRAM), str(V6)], capture_output=True, check=True).stdout
    saved = tmp_path / "records.bin"
    saved.write_bytes(real)
    _fake_decoder(
        tmp_path,
        monkeypatch,
        f"out.write(open({str(saved)!r}, 'rb').read()); print('bad page', file=sys.stderr); sys.exit(1)",
    )
    before = table_counts(ingested_store)
    with pytest.raises(IngestError, match=r"capture\.dat: the trace\.dat decoder \(libtracecmd\) could not read it"):
        ingest_bytes(ingested_store, **{"capture.dat": V6.read_bytes()})
    assert table_counts(ingested_store) == before


@pytest.fixture()
def ingested_store(tmp_path):
    from backend.store import Store

    store = Store(tmp_path / "t.duckdb")
    ingest_bytes(store, **{"own.dat": OWN.read_bytes()})
    yield store
    store.close()


# ---- names by id ('M') ---------------------------------------------------------------------------------------


def _name(i: int, text: bytes) -> bytes:
    return b"M" + struct.pack("<IH", i, len(text)) + text


def _call(t: int, kind: int, name: int) -> bytes:
    """An 'F' record of task 7 (named by id 0) on CPU 0: entry (1) or exit (3) of the function named `name`."""
    return b"F" + struct.pack("<qiiI", t, 0, 7, 0) + struct.pack("<BqiI", kind, -(2**63), 0, name)


def test_a_call_skipped_in_a_record_stream_shows_its_functions_name():
    """Names come once ('M'), then by id: a call the fold skips (a stack deeper than it keeps) is shown by its name,
    which is not in the chunk."""
    deep = b"".join(_call(1000 * (i + 1), 1, 1) for i in range(4097))
    stream = b"T" + struct.pack("<I", 7) + b"cpus=1\n" + _name(0, b"task") + _name(1, b"deep_function") + deep
    report = ParseReport("x.dat")
    cols = _funcgraph.records(_funcgraph.new_state(), stream, 1, 0)
    assert cols["consumed"] == len(stream)
    list(funcgraph.take(report, cols, stream))
    assert [(e.line, e.text) for e in report.examples] == [(4098, "deep_function")]
    assert "deep" in report.examples[0].reason


@pytest.mark.parametrize(
    "records",
    [_call(1000, 1, 1), _name(0, b"task") + _call(1000, 1, 1), _name(0, b"task") + _call(1000, 3, 0), _name(1, b"x")],
    ids=["unnamed-task", "unnamed-function", "exit-with-a-name", "ids-out-of-order"],
)
def test_a_name_id_not_given_first_is_refused(records):
    with pytest.raises(ValueError, match="malformed"):
        _funcgraph.records(_funcgraph.new_state(), b"T" + struct.pack("<I", 7) + b"cpus=1\n" + records, 1, 0)


# ---- a fuzz of the fold ----------------------------------------------------------------------------------------


def test_fuzzed_record_streams_are_folded_or_refused():
    """Damaged copies of a real record stream (bytes flipped, runs overwritten, cut anywhere) are folded or refused
    with ValueError; the fold never reads past a record (ASan-free check: no crash, whole records only)."""
    stream = subprocess.run([str(tracedat_records.PROGRAM), str(OWN)], capture_output=True, check=True).stdout
    rng = random.Random(20261207)
    outcomes = {"folded": 0, "refused": 0}
    for i in range(3000):
        buf = bytearray(stream)
        if i % 3 == 0:
            for _ in range(rng.randint(1, 8)):
                buf[rng.randrange(len(buf))] = rng.randrange(256)
        elif i % 3 == 1:
            at = rng.randrange(len(buf))
            buf[at : at + 32] = rng.randbytes(32)
        else:
            del buf[rng.randrange(len(buf)) :]
        state = _funcgraph.new_state()
        try:
            cols = _funcgraph.records(state, bytes(buf), 1, 0)
            assert 0 <= cols["consumed"] <= len(buf)
            _funcgraph.finish(state)
            outcomes["folded"] += 1
        except ValueError:
            outcomes["refused"] += 1
    assert outcomes["refused"] > 100 and outcomes["folded"] > 100, outcomes


# ---- the pages read by the decoder itself (tracedat_pages.h) ------------------------------------------------------


def _uncompressed(src: Path, tmp_path: Path, version: int, compression: str = "none") -> Path:
    """`src` rewritten by `trace-cmd convert` as a file of `version` (the same events and pages), uncompressed (or
    with `compression`)."""
    out = tmp_path / f"{src.stem}-v{version}-{compression}.dat"
    subprocess.run(
        [
            "trace-cmd",
            "convert",
            "-i",
            str(src),
            "-o",
            str(out),
            "--file-version",
            str(version),
            "--compression",
            compression,
        ],
        capture_output=True,
        check=True,
    )
    return out


def _decoded(path: Path, sections: str | None) -> tuple[bytes, bytes]:
    """tracedat-records' stdout and stderr: the pages read by libtracecmd (None), or by the program from `sections`."""
    args = [str(tracedat_records.PROGRAM), str(path)] + (["--sections"] if sections is not None else [])
    done = subprocess.run(args, input=(sections or "").encode(), capture_output=True, check=True)
    return done.stdout, done.stderr


def _sections(path: Path) -> str:
    with open(path, "rb") as f:
        return tracedat_records.sections_line(tracedat.read_layout(f, path.stat().st_size))


@pytest.mark.parametrize(
    "which",
    [
        "own",
        *(f"lab:{p.parent.name}" for p in LAB),
        *(pytest.param(f"shared:{p.name}", marks=needs_public) for p in SHARED),
    ],
)
def test_pages_read_by_the_decoder_give_the_librarys_records(which, tmp_path):
    """Every trace.dat at hand as it is (the lab's and OWN: zstd-compressed v7), and rewritten uncompressed as v6 and
    v7 and zstd-compressed as v7: the record stream from pages the program reads (or decompresses) itself
    (--sections) is byte for byte the one from libtracecmd's pages, and its tables are the report's."""
    kind, _, name = which.partition(":")
    src = OWN if kind == "own" else next(p for p in LAB + SHARED if name in (p.name, p.parent.name))
    for path in (
        src,
        _uncompressed(src, tmp_path, 6),
        _uncompressed(src, tmp_path, 7, "zstd"),
        _uncompressed(src, tmp_path, 7),
    ):
        sections = _sections(path)
        assert sections != "-\n" and int(sections.removeprefix("Z ").split()[0]) >= 1
        with open(path, "rb") as f:
            assert sections.startswith("Z ") == (
                tracedat_layout.read_layout(f, path.stat().st_size).compression == "zstd"
            )
        assert _decoded(path, sections) == _decoded(path, None), path.name
    _equal_to_the_report(path)


def test_the_decoder_reads_the_sections_it_is_given(tmp_path):
    """With --sections the program reads each CPU's pages up to the end it is told (a CPU's section cut to its first
    page gives fewer records); a line that does not match the file (a CPU id, a count) leaves the pages to libtracecmd;
    a TSC multiplier or a time shift are not read here at all ("-"); a zstd file's chunks are decompressed here ("Z")."""
    path = _uncompressed(LAB[0], tmp_path, 6)
    sections = _sections(path).split()
    whole = _decoded(path, None)[0]
    cut = [*sections[:3], str(min(int(sections[3]), 4096)), *sections[4:]]  # CPU 0: its first page only
    assert int(sections[3]) > 4096
    assert len(_decoded(path, " ".join(cut) + "\n")[0]) < len(whole)
    for wrong in (
        [sections[0], "9", *sections[2:]],
        [str(int(sections[0]) + 1), *sections[1:], "9", "0", "0"],
        ["-"],
        [],
    ):
        assert _decoded(path, " ".join(wrong) + "\n")[0] == whole, wrong
    with open(OWN, "rb") as f:
        layout = tracedat.read_layout(f, OWN.stat().st_size)
        # a zstd file's walked as tracedat.parse walks it for the decoder (its chunks' headers checked, not each
        # decompressed): the same line, the same size decompressed
        headers = tracedat_layout.read_layout(f, OWN.stat().st_size, decompress_chunks=False)
    assert tracedat_records.sections_line(headers) == _sections(OWN) and not headers.chunks_decompressed
    assert (headers.uncompressed_bytes, headers.compressed_chunks) == (
        layout.uncompressed_bytes,
        layout.compressed_chunks,
    )
    zstd = _sections(OWN).split()
    assert layout.compression == "zstd" and zstd[0] == "Z"
    own = _decoded(OWN, None)[0]
    lab = _sections(LAB[0]).split()
    cut = [*lab[:4], str(int(lab[4]) // 2), *lab[5:]]  # CPU 0's first chunks only
    assert lab[0] == "Z" and len(_decoded(LAB[0], " ".join(cut) + "\n")[0]) < len(_decoded(LAB[0], None)[0])
    for wrong in (zstd[1:], [zstd[0], "9", *zstd[2:]], ["Z"]):  # as uncompressed, a CPU count, nothing
        assert _decoded(OWN, " ".join(wrong) + "\n")[0] == own, wrong


def test_damaged_zstd_chunks_are_refused_as_the_walk_refuses_them(tmp_path):
    """Copies of a zstd capture with bytes changed in a CPU's chunks (headers and frames). tracedat.parse walks the
    file checking only the chunks' headers past each CPU's first chunk and leaves the rest to the program, which
    decompresses them into bounded windows: a chunk the whole walk finds does not decompress is refused by the program
    (exit status DAMAGED) with the walk's words and byte offset; otherwise it ends with the records it could read, or
    an error status, never a crash."""
    sections = _sections(LAB[0])
    _, _, _, cpu_at, size = sections.split()[:5]
    data, rng = LAB[0].read_bytes(), random.Random(20261208)
    statuses = collections.Counter()
    for _ in range(40):
        buf = bytearray(data)
        for _ in range(rng.choice((1, 4, 16))):
            buf[int(cpu_at) + rng.randrange(int(size))] = rng.randrange(256)
        damaged = tmp_path / "damaged.dat"
        damaged.write_bytes(buf)
        refusals = []
        for whole in (True, False):
            try:
                tracedat_layout.read_layout(io.BytesIO(buf), len(buf), decompress_chunks=whole)
                refusals.append(None)
            except tracedat_layout.LayoutError as e:
                refusals.append(e)
        if refusals[1]:  # refused before the program runs
            statuses["walk"] += 1
            continue
        done = subprocess.run(
            [str(tracedat_records.PROGRAM), str(damaged), "--sections"],
            input=sections.encode(),
            capture_output=True,
            timeout=60,
        )
        statuses[done.returncode] += 1
        if refusals[0]:
            assert done.returncode == tracedat_records.DAMAGED
            assert done.stderr.decode().endswith(f"damaged at byte {refusals[0].offset}: {refusals[0].what}\n")
        else:
            assert done.returncode in (0, 1, 2), done.returncode
    assert statuses["walk"] and statuses[tracedat_records.DAMAGED] and statuses[0], statuses


def test_damaged_pages_are_read_as_libtracecmd_reads_them(tmp_path):
    """Copies of an uncompressed capture with bytes changed in its pages (mostly their headers and first events: the
    time, the commit size, event lengths): the pages the program reads itself give libtracecmd's records, or both fail;
    where a page's commit size says more than a page, libtracecmd reads its lost-event count that far past the page
    (and dies of it when that is unmapped) before it refuses the page: here the page is refused without that read, with
    libtracecmd's warning, and the records before it are the same."""
    path = _uncompressed(LAB[0], tmp_path, 6)
    sections = _sections(path)
    _, cpu_at, size = (int(x) for x in sections.split()[1:4])
    data, rng = path.read_bytes(), random.Random(20261207)
    outcomes = {"same": 0, "both failed": 0, "refused here": 0}
    for _ in range(60):
        buf = bytearray(data)
        for _ in range(rng.choice((1, 2, 5))):
            page = cpu_at + rng.randrange(size // 4096) * 4096
            buf[page + (rng.randrange(24) if rng.random() < 0.7 else rng.randrange(4096))] = rng.randrange(256)
        damaged = tmp_path / "damaged.dat"
        damaged.write_bytes(buf)
        library, here = (
            subprocess.run(
                [str(tracedat_records.PROGRAM), str(damaged), *args], input=line, capture_output=True, timeout=60
            )
            for args, line in (((), b""), (("--sections",), sections.encode()))
        )
        if library.returncode < 0 and here.returncode == 0:
            assert b"bad page read, with size of " in here.stderr
            assert here.stdout.startswith(library.stdout)
            outcomes["refused here"] += 1
        elif library.returncode == 0 or here.returncode == 0:
            assert (library.returncode, library.stdout, library.stderr) == (here.returncode, here.stdout, here.stderr)
            outcomes["same"] += 1
        else:
            outcomes["both failed"] += 1
    assert outcomes["same"] > 30, outcomes


def test_the_function_graph_handlers_read_ahead_is_served_by_the_pages_read_here(tmp_path):
    """A task whose name starts with a digit has its function_graph lines printed by libtraceevent, whose handler (in
    libtracecmd) looks for a leaf's exit through tracecmd_peek_next_data and takes it with tracecmd_read_data: with the
    pages read by the program, its definitions of those answer, and the records and tables are the same."""
    if not gen_tracedat.SAMPLE.exists():
        pytest.skip("needs ../shared (the generator's template)")
    made = tmp_path / "g.dat"
    gen_tracedat.write(made, 200)
    data = made.read_bytes()
    assert data.count(b"754 NetworkManager") == 1  # its saved cmdline: the task of the generated calls on CPU 1
    made.write_bytes(data.replace(b"754 NetworkManager", b"754 1etworkManager"))
    assert _decoded(made, _sections(made)) == _decoded(made, None)
    _equal_to_the_report(made)
