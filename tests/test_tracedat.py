"""trace-cmd's trace.dat uploaded as it is: golden tests against the DERIVED `trace-cmd report` text of the same
captures (every table the ftrace format fills and derives, and the API's answers), damaged files refused with the
byte offset and nothing kept, and a fuzz of the reader."""

from __future__ import annotations

import glob
import io
import os
import random
import re
import struct
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest
from fastapi.testclient import TestClient

from backend.app import create_app
from backend.store import IngestError, Store
from bench import gen_tracedat
from parsers import funcgraph, tracecmd, tracedat, tracedat_layout, tracedat_records
from parsers.common import ParseError, ParseReport
from parsers.detect import detect
from parsers.tracedat_layout import BUFFER, HEADER_INFO, KALLSYMS, read_layout
from tests.conftest import PUBLIC, ingest_bytes, ingest_paths, needs_public, table_counts

REPORTS = PUBLIC / "trace-cmd-report"
V7 = REPORTS / "trace-dat" / "langraph-trace.dat"
V6 = REPORTS / "trace-dat" / "elainecole-kernel-monitor-trace.dat"
OWN = Path(__file__).parent / "golden" / "tracedat" / "sandbox-sched-block-stack.dat"  # recorded here: README.md
SHARED_CAPTURES = {  # each .dat in shared and its DERIVED `trace-cmd report -i` (Debian 12, trace-cmd 3.1.6)
    V7.name: (V7, REPORTS / "derived-langraph-report-sched-softirq-kstack.txt"),
    V6.name: (V6, REPORTS / "derived-elainecole-report-sched_switch.txt"),
}
CAPTURES = {**SHARED_CAPTURES, OWN.name: (OWN, OWN.with_suffix(".report.txt"))}
GENERATED, ROUNDS = "generated-function-graph.dat", 50  # bench/gen_tracedat.py: what no kernel here can record
NAMES = sorted([*CAPTURES, GENERATED])  # all but OWN need ../shared (GENERATED: its template, V7)
EXPECTED = {  # hand-checked: events, report lines, the note naming the file's form, the clock the file names
    V7.name: (
        41400,
        335333,
        "trace.dat v7, zstd-compressed (6 sections, 82 chunks of trace data), little-endian, "
        "64-bit, 4 CPUs, decoded by trace-cmd report",
        "perf",
    ),
    V6.name: (4427, 4428, "trace.dat v6, little-endian, 32-bit, 4 CPUs, decoded by trace-cmd report", None),
    OWN.name: (
        69,
        489,
        "trace.dat v7, zstd-compressed (6 sections, 2 chunks of trace data), little-endian, 64-bit, "
        "2 CPUs, decoded by trace-cmd report",
        "local",
    ),
    GENERATED: (
        ROUNDS * (gen_tracedat.CALLS_PER_ROUND + 3),  # rows: the calls, 2 switches and a waking a round
        # lines: the header and an event a line, but the writer's up_write entry and exit (the next record)
        # make one `up_write();` line
        1 + ROUNDS * (gen_tracedat.EVENTS_PER_ROUND - 1),
        "trace.dat v6, little-endian, 64-bit, 4 CPUs, decoded by trace-cmd report",
        "perf",
    ),
}
API_PATHS = (
    "",
    "/waits",
    "/waits?idle=true",
    "/chains",
    "/marks",
    "/timeline",
    "/flamegraph",
    "/heatmap/metrics",
    "/wakers",
)
NOT_COMPARED = {
    "id",
    "analysis_id",
    "name",
    "created_at",
    "filename",
    "sha256",
    "bytes",
    "notes",
    "clock",
    "alignment",
    "url",
    "files",
}
KINDS = {
    V7.name: "trace.dat v7 (zstd)",
    V6.name: "trace.dat v6",
    OWN.name: "trace.dat v7 (zstd)",
    GENERATED: "trace.dat v6",
}  # Sources tab


@needs_public
def test_every_shared_dat_has_a_golden():
    assert sorted(os.path.basename(p) for p in glob.glob(str(REPORTS / "trace-dat" / "*.dat"))) == sorted(
        SHARED_CAPTURES
    )


@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    """One store holding each capture twice: its trace.dat and its DERIVED report, as separate analyses; and a
    function_graph trace.dat made by bench/gen_tracedat.py with its `trace-cmd report` (rendered here)."""
    tmp = tmp_path_factory.mktemp("tracedat")
    store = Store(tmp / "t.duckdb")
    made = tmp / GENERATED
    if gen_tracedat.SAMPLE.exists():  # its template: the v7 sample
        gen_tracedat.write(made, ROUNDS)
        with open(made.with_suffix(".txt"), "wb") as out:
            subprocess.run(["trace-cmd", "report", "-i", str(made)], stdout=out, check=True)
    captures = {**CAPTURES, GENERATED: (made, made.with_suffix(".txt"))}
    captures = {name: c for name, c in captures.items() if c[0].exists()}  # without ../shared: ours only
    got = {name: (ingest_paths(store, dat), ingest_paths(store, txt)) for name, (dat, txt) in captures.items()}
    yield store, got, captures
    store.close()


def _rows(con, table: str, columns: list[str], key: str, got: dict) -> list[tuple]:
    """A table's rows of one source (key source_id) or analysis (analysis_id), sorted; columns holding a source's
    or an analysis' id are compared as 'is this one' (the two ingests have different ids)."""
    ids = {c: "s" if c.endswith("source_id") else "a" for c in columns if c.endswith("source_id") or c == "analysis_id"}
    shown = [f'"{c}"' for c in columns if c not in ids] + [f'("{c}" IS NOT DISTINCT FROM ${v})' for c, v in ids.items()]
    values = {"s": got["sources"][0]["id"], "a": got["id"]}
    return con.execute(
        f"SELECT {', '.join(shown)} FROM {table} WHERE {key} = ${ids[key]} ORDER BY ALL",
        {v: values[v] for v in set(ids.values())},
    ).fetchall()


@pytest.mark.parametrize("name", [pytest.param(n, marks=needs_public) if n != OWN.name else n for n in NAMES])
def test_golden_tables_equal_the_reports(ingested, name):
    """Every table and view with rows of a source or an analysis (the parser's, the derived waits, chains, task
    slices, timeline summaries...) holds the same rows for the trace.dat as for its DERIVED report."""
    store, got, captures = ingested
    dat, txt = got[name]
    con = store.cursor()
    try:
        columns: dict[str, list[str]] = {}
        for table, column in con.execute(
            "SELECT table_name, column_name FROM information_schema.columns ORDER BY table_name, ordinal_position"
        ).fetchall():
            columns.setdefault(table, []).append(column)
        compared = 0
        for table, cols in sorted(columns.items()):
            if table in ("sources", "analyses", "first_views"):
                continue  # first_views: answers naming the sources (their ids, files); test_first_views checks them
            key = "source_id" if "source_id" in cols else "analysis_id" if "analysis_id" in cols else None
            if key is None:
                continue
            a, b = _rows(con, table, cols, key, dat), _rows(con, table, cols, key, txt)
            assert a == b, f"{table}: the trace.dat's rows differ from the report's"
            compared += len(a)
        keep = "lines, events, skipped_lines, skipped_examples, t_min_ns, t_max_ns, format, clock_offset_ns"
        src = [
            con.execute(f"SELECT {keep} FROM sources WHERE id = ?", [s["sources"][0]["id"]]).fetchall()
            for s in (dat, txt)
        ]
        assert src[0] == src[1]
        events, lines, note, clock = EXPECTED[name]
        assert (dat["sources"][0]["events"], dat["sources"][0]["lines"]) == (events, lines)
        assert compared > events  # the events, and what is derived from them
        fmt, nbytes, clk = con.execute(
            "SELECT format, bytes, clock FROM sources WHERE id = ?", [dat["sources"][0]["id"]]
        ).fetchall()[0]
        assert (fmt, nbytes, clk) == ("ftrace", captures[name][0].stat().st_size, clock)
        assert any(n.startswith(note) for n in dat["sources"][0]["notes"]), dat["sources"][0]["notes"]
    finally:
        con.close()


def _same(value, sid: int):
    """An API answer without what names the upload rather than the capture (ids, file names, notes, clock); lane
    keys name their source ('task:<source id>:<pid>')."""
    if isinstance(value, dict):
        return {
            _same(k, sid): _same(v, sid)
            for k, v in value.items()
            if k not in NOT_COMPARED and not k.endswith("source_id")
        }
    if isinstance(value, list):
        return [_same(v, sid) for v in value]
    if isinstance(value, str):
        return re.sub(rf"^(\w+):{sid}(?=:|$)", r"\1:S", value)
    return value


@needs_public
def test_generated_function_graph_gives_the_waits_it_holds(ingested):
    """The made capture's story comes out of its trace.dat: each round the writer sleeps in down_write (rwsem, write)
    until the holder's up_write wakes it, 39 us later; every call of the report is a call."""
    store, got, _ = ingested
    dat, _ = got[GENERATED]
    con = store.cursor()
    try:
        sid = dat["sources"][0]["id"]
        calls = con.execute(
            "SELECT count(*), count(*) FILTER (WHERE partial) FROM fg_call_rows WHERE source_id = ?", [sid]
        ).fetchall()[0]
        assert calls == (ROUNDS * gen_tracedat.CALLS_PER_ROUND, 0)
        waits = con.execute(
            "SELECT pid, state, lock, primitive, waker_pid, duration_ns, count(*) FROM waits "
            "WHERE source_id = ? GROUP BY ALL",
            [sid],
        ).fetchall()
        assert waits == [(3334, "D", "down_write", "rwsem (write)", 754, 39000, ROUNDS)]
        assert con.execute("SELECT count(*) FROM chains WHERE analysis_id = ?", [dat["id"]]).fetchall()[0][0] == ROUNDS
    finally:
        con.close()


@pytest.mark.parametrize("name", [pytest.param(n, marks=needs_public) if n != OWN.name else n for n in NAMES])
def test_golden_api_answers_equal_the_reports(ingested, name):
    store, got, captures = ingested
    dat, txt = got[name]
    sa, sb = dat["sources"][0]["id"], txt["sources"][0]["id"]
    with TestClient(create_app(store, max_upload_bytes=1 << 20)) as client:
        for path in API_PATHS:
            a = client.get(f"/api/analyses/{dat['id']}{path}")
            b = client.get(f"/api/analyses/{txt['id']}{path}")
            assert a.status_code == b.status_code == 200, (path, a.text[:300])
            assert _same(a.json(), sa) == _same(b.json(), sb), path
            if path == "":
                assert [f["kind"] for f in a.json()["sources"][0]["files"]] == [KINDS[name]]
        pids = {w["pid"] for w in client.get(f"/api/analyses/{txt['id']}/waits?idle=true").json()[:5]}
        for pid in sorted(pids):  # a task's calls and events
            a = client.get(f"/api/analyses/{dat['id']}/calls?pid={pid}")
            b = client.get(f"/api/analyses/{txt['id']}/calls?pid={pid}")
            assert a.status_code == b.status_code == 200 and _same(a.json(), sa) == _same(b.json(), sb), pid


@needs_public
def test_upload_through_the_api_in_memory_and_spooled(tmp_path):
    """The upload route hands the parser a seekable stream (in memory when small, spooled to disk when large):
    both give the same analysis."""
    store = Store(tmp_path / "u.duckdb")
    try:
        with TestClient(create_app(store, max_upload_bytes=64 << 20)) as client:
            r = client.post("/api/analyses", files=[("files", (V6.name, V6.read_bytes()))])
            assert r.status_code == 201, r.text
            s = r.json()["sources"][0]
            assert (s["format"], s["events"], s["lines"], s["bytes"]) == ("ftrace", 4427, 4428, V6.stat().st_size)
        mem = ingest_bytes(store, **{V6.name: V6.read_bytes()})["sources"][0]
        assert (mem["events"], mem["lines"]) == (4427, 4428)
    finally:
        store.close()


# ---- damaged files: a message naming the file and the byte, nothing kept --------------------------------------


def _options(data: bytes, at: int) -> dict[int, int]:
    """Where each option of the (uncompressed) v7 options sections, the first at `at`, starts: id -> offset."""
    found = {}
    while at:
        at += 16
        while True:
            option, size = struct.unpack_from("<HI", data, at)
            found.setdefault(option, at)
            if option == 0:
                at = struct.unpack_from("<Q", data, at + 6)[0]
                break
            at += 6 + size
    return found


def _v7_cases() -> list[tuple[str, bytes, str]]:
    if not V7.exists():
        return []  # without ../shared (the test is skipped)
    data = V7.read_bytes()
    with open(V7, "rb") as f:
        layout = read_layout(f, len(data))
    options_at = struct.unpack_from("<Q", data, 29)[0]
    kallsyms = layout.sections[KALLSYMS]
    cpu = {c: (off, size) for c, off, size in layout.buffers[0].cpus}
    cases = [
        ("cut in the magic", data[:8], r"byte 8: the file ends inside the trace.dat magic"),
        ("cut in the version", data[:11], r"byte 10: the file version: no terminating NUL"),
        ("cut in the options offset", data[:33], r"byte 29: the offset of the first options section: needs 8 bytes"),
        (
            "cut before the options",
            data[:1_000_000],
            rf"byte {options_at}: the options section is said to start here, "
            r"past the end of the file \(1000000 bytes\): truncated",
        ),
        # the last options section (with the BUFFER option) follows the trace data: a cut there loses it first
        (
            "cut in CPU 2's data",
            data[: cpu[2][0] + 100],
            rf"byte {len(data) - 255}: the options section is said to "
            rf"start here, past the end of the file \({cpu[2][0] + 100} ",
        ),
        ("corrupt magic", b"\x17\x09" + data[2:], r"byte 0: not a trace-cmd trace.dat: the magic is"),
        ("unknown version", data[:10] + b"8" + data[11:], r"byte 10: unknown trace.dat file version '8'"),
        ("unknown compression", data[:18] + b"lz4\0" + data[22:], r"byte 18: unknown compression algorithm 'lz4'"),
        (
            "section id overwritten",
            data[:kallsyms] + b"\x63\x00" + data[kallsyms + 2 :],
            rf"byte {kallsyms}: expected the kallsyms section \(id 19\), found a section with id 99",
        ),
        (
            "zstd section corrupt",
            data[: kallsyms + 24] + b"XXXX" + data[kallsyms + 28 :],
            rf"byte {kallsyms + 24}: the kallsyms section does not decompress with zstd: ",
        ),
        (
            "zstd chunk corrupt",
            data[: cpu[1][0] + 12] + b"XXXX" + data[cpu[1][0] + 16 :],
            rf"byte {cpu[1][0] + 12}: chunk 1 of CPU 1's trace data does not decompress with zstd",
        ),
        (
            "chunk not whole pages",
            data[: cpu[1][0] + 8] + struct.pack("<I", 4097) + data[cpu[1][0] + 12 :],
            rf"byte {cpu[1][0] + 8}: chunk 1 of CPU 1's trace data is said to hold 4097 bytes, not a whole number of "
            r"4096-byte pages up to 16 MiB",
        ),
        (
            "chunk of 32 MiB",
            data[: cpu[1][0] + 8] + struct.pack("<I", 32 << 20) + data[cpu[1][0] + 12 :],
            rf"byte {cpu[1][0] + 8}: chunk 1 of CPU 1's trace data is said to hold 33554432 bytes, not a whole number "
            r"of 4096-byte pages up to 16 MiB",
        ),
        (
            "chunk count too large",
            data[: cpu[1][0]] + struct.pack("<I", 1 << 30) + data[cpu[1][0] + 4 :],
            rf"byte {cpu[1][0]}: CPU 1's trace data is said to hold 1073741824 chunks",
        ),
    ]
    header_option = _options(data, options_at)[HEADER_INFO]  # the HEADER_INFO option made an unknown one
    cases.append(
        (
            "header info section missing",
            data[:header_option] + b"\xc8\x00" + data[header_option + 2 :],
            r"byte 29: the file has no header info section",
        )
    )
    buffer_option = _options(data, options_at)[BUFFER]  # the buffer's data said to start past the end
    cases.append(
        (
            "buffer past the end",
            data[: buffer_option + 6] + struct.pack("<Q", len(data) + 5) + data[buffer_option + 14 :],
            rf"byte {len(data) + 5}: the trace data section is said to start here",
        )
    )
    size_at = buffer_option + 6 + 8 + 1 + 5 + 8 + 3 * 20 + 12  # CPU 3's size: past the end of the file
    cases.append(
        (
            "CPU data past the end",
            data[:size_at] + struct.pack("<Q", 1 << 20) + data[size_at + 8 :],
            rf"byte {size_at - 12}: CPU 3's trace data of buffer 'top' is said to lie at bytes {cpu[3][0]}-",
        )
    )
    last = cpu[3][0] + 4 + cpu[3][1] - 100  # CPU 3's last chunk cut short (the section after it kept)
    cases.append(
        (
            "cut in the last chunk",
            data[:last] + bytes(100) + data[last + 100 :],
            r"byte \d+: chunk 48 of CPU 3's trace data does not decompress with zstd",
        )
    )
    return cases


def _v6_cases() -> list[tuple[str, bytes, str]]:
    if not V6.exists():
        return []  # without ../shared (the test is skipped)
    data = V6.read_bytes()
    event_tag = data.index(b"header_event\0")
    return [
        (
            "v6 cut in the kallsyms",
            data[:100_000],
            r"byte \d+: the kallsyms \(\d+ bytes from byte \d+\): needs 1 bytes",
        ),
        ("v6 cut in the event formats", data[:5000], r"byte \d+: (the size of )?ftrace event formats #\d+"),
        (
            "v6 cut in CPU 2's data",
            data[:2_900_000],
            r"byte \d+: CPU 2's trace data is said to lie at bytes "
            r"2859008-2953216, past the end of the file \(2900000 bytes\)",
        ),
        (
            "v6 header_event missing",
            data[:event_tag] + b"header_evenX" + data[event_tag + 12 :],
            rf"byte {event_tag}: expected 'header_event' \(the header info\)",
        ),
        ("v6 unknown version", data[:10] + b"5" + data[11:], r"byte 10: unknown trace.dat file version '5'"),
    ]


@needs_public
@pytest.mark.parametrize("case", _v7_cases() + _v6_cases(), ids=lambda c: c[0])
def test_damaged_file_refused_with_its_byte_offset(ingested, case):
    store, _, _ = ingested
    what, data, message = case
    before = table_counts(store)
    with pytest.raises(IngestError) as e:
        ingest_bytes(store, **{"capture.dat": data})
    assert re.match(r"capture\.dat, " + message, e.value.detail), e.value.detail
    assert table_counts(store) == before


@needs_public
def test_detect_recognises_the_magic_and_refuses_a_damaged_one():
    head = V7.read_bytes()[:65536]
    assert detect(head, "anything.bin") is tracedat
    with pytest.raises(ParseError, match=r"x\.dat, byte 0: not a trace-cmd trace.dat"):
        detect(b"\x00\x01" + head[2:], "x.dat")
    with pytest.raises(
        ParseError, match="this is a binary file of an unknown kind"
    ):  # an unrelated binary file is not a trace.dat
        detect(b"\x7fELF\x02\x01\x01\x00" + bytes(100), "a.out")


# ---- trace-cmd missing, crashing, hanging --------------------------------------------------------------------


def _parse(path_or_bytes, filename: str = "c.dat") -> ParseReport:
    data = path_or_bytes if isinstance(path_or_bytes, bytes) else path_or_bytes.read_bytes()
    report = ParseReport(filename)
    for _ in tracedat.parse(io.BytesIO(data), report):
        pass
    return report


def _fake_trace_cmd(tmp_path, body: str, monkeypatch) -> str:
    """A trace-cmd that runs `body`, the file then read from its report (the record decoder taken away)."""
    monkeypatch.setattr(tracedat_records, "PROGRAM", tmp_path / "no-tracedat-records")
    script = tmp_path / "trace-cmd"
    script.write_text('#!/bin/sh\n[ "$1" = -h ] && { echo "trace-cmd version 0.0-test"; exit 0; }\n' + body + "\n")
    script.chmod(0o755)
    return str(script)


@needs_public
def test_trace_cmd_missing_says_how_to_install_it(monkeypatch):
    """Neither the record decoder (not built: no libtracecmd) nor trace-cmd: the refusal says what to install."""
    monkeypatch.setattr(tracedat_records, "PROGRAM", Path("/nonexistent/tracedat-records"))
    monkeypatch.setattr(tracecmd, "TRACE_CMD", "/nonexistent/trace-cmd")
    with pytest.raises(
        ParseError, match=r"c\.dat: trace-cmd is not installed on the server.*apt-get install trace-cmd"
    ):
        _parse(V6)


@needs_public
def test_trace_cmd_crash_and_failure_are_refusals(tmp_path, monkeypatch):
    monkeypatch.setattr(
        tracecmd, "TRACE_CMD", _fake_trace_cmd(tmp_path, 'echo "  failed to init data" >&2; kill -SEGV $$', monkeypatch)
    )
    with pytest.raises(ParseError, match=r"`trace-cmd report` crashed \(SIGSEGV\).*failed to init data"):
        _parse(V6)
    monkeypatch.setattr(
        tracecmd, "TRACE_CMD", _fake_trace_cmd(tmp_path, 'echo "cpus=4"; echo "oops" >&2; exit 22', monkeypatch)
    )
    with pytest.raises(ParseError, match=r"could not read it \(exit status 22\): oops"):
        _parse(V6)


@needs_public
def test_a_silent_trace_cmd_is_stopped(tmp_path, monkeypatch):
    monkeypatch.setattr(tracecmd, "STALL_SECONDS", 1)
    monkeypatch.setattr(tracecmd, "TRACE_CMD", _fake_trace_cmd(tmp_path, 'echo "cpus=4"; exec sleep 30', monkeypatch))
    with pytest.raises(ParseError, match=r"wrote nothing for 1 s and was stopped"):
        _parse(V6)


# ---- fuzz ----------------------------------------------------------------------------------------------------


def _mutations(data: bytes, layout, rng: random.Random, n: int):
    """Damaged copies: bytes flipped in the metadata or in the trace data, runs overwritten, cuts anywhere."""
    trace_from = min(off for b in layout.buffers for _, off, size in b.cpus if size)
    for i in range(n):
        buf = bytearray(data)
        kind = i % 4
        if kind == 0:  # a few bytes of the metadata
            for _ in range(rng.randint(1, 4)):
                buf[rng.randrange(0, trace_from)] ^= 1 << rng.randrange(8)
        elif kind == 1:  # trace data: ring-buffer pages decoded by libtraceevent
            for _ in range(rng.randint(1, 32)):
                buf[rng.randrange(trace_from, len(buf))] = rng.randrange(256)
        elif kind == 2:  # a run of garbage anywhere
            at = rng.randrange(0, len(buf))
            buf[at : at + 64] = rng.randbytes(min(64, len(buf) - at))
        else:
            del buf[rng.randrange(10, len(buf)) :]
        yield bytes(buf)


@needs_public
@pytest.mark.parametrize("path,n", [(V6, 48), (V7, 12)], ids=["v6", "v7"])
def test_fuzzed_files_are_read_or_refused_never_worse(path, n):
    """Every damaged copy is either read (trace-cmd decoded what it could: events kept as the text path keeps
    them) or refused with a ParseError naming the file; never another exception, a hang or a leftover child or
    temporary file."""
    data = path.read_bytes()
    with open(path, "rb") as f:
        layout = read_layout(f, len(data))
    before = set(glob.glob("/tmp/trace_cpu_data*"))
    rng = random.Random(20240521)
    outcomes = {"read": 0, "refused": 0}
    for damaged in _mutations(data, layout, rng, n):
        try:
            _parse(damaged)
            outcomes["read"] += 1
        except ParseError as e:
            assert str(e).startswith(("c.dat: ", "c.dat, byte ")), str(e)
            outcomes["refused"] += 1
    assert outcomes["refused"] >= n // 4, outcomes
    assert set(glob.glob("/tmp/trace_cpu_data*")) <= before
    children = subprocess.run(
        ["pgrep", "-P", str(os.getpid()), "-f", "trace-cmd report|tracedat-records"], capture_output=True
    )
    assert children.stdout == b""


# ---- the same capture in the other layouts trace-cmd writes ---------------------------------------------------


def _tables(batches) -> dict:
    by: dict[str, list] = {}
    for name, batch in batches:
        by.setdefault(name, []).append(batch)
    return {name: pa.Table.from_batches(b).combine_chunks() for name, b in by.items()}


@pytest.fixture(scope="module")
def report_rows():
    _, txt = CAPTURES[V7.name]
    return _tables(funcgraph.parse(io.BytesIO(txt.read_bytes()), ParseReport(txt.name)))


@needs_public
@pytest.mark.parametrize("version,compression", [("6", "none"), ("7", "none"), ("7", "zstd")])
def test_converted_layouts_give_the_reports_rows(tmp_path, report_rows, version, compression):
    """`trace-cmd convert` of the v7 sample to v6, v7 uncompressed and v7 zstd of this trace-cmd's own chunking:
    every one gives the DERIVED report's rows."""
    out = tmp_path / "c.dat"
    subprocess.run(
        [
            "trace-cmd",
            "convert",
            "-i",
            str(V7),
            "-o",
            str(out),
            "--file-version",
            version,
            "--compression",
            compression,
        ],
        check=True,
        capture_output=True,
    )
    report = ParseReport(out.name)
    rows = _tables(tracedat.parse(io.BytesIO(out.read_bytes()), report))
    assert rows.keys() == report_rows.keys()
    for name, table in rows.items():
        assert table.equals(report_rows[name]), name
    assert any(n.startswith(f"trace.dat v{version}") for n in report.notes)


@needs_public
def test_a_compression_trace_cmd_lacks_is_named(monkeypatch):
    monkeypatch.setattr(tracecmd, "compressions", lambda command: ("zlib",))
    with pytest.raises(
        ParseError,
        match=r"c\.dat, byte 18: the file is compressed with zstd, which this server's "
        r"trace-cmd cannot decompress \(it has: zlib\)",
    ):
        _parse(V7)


@needs_public
def test_a_runaway_trace_cmd_is_stopped(tmp_path, monkeypatch):
    monkeypatch.setattr(tracecmd, "OUTPUT_PER_DATA_BYTE", 0)  # 16 MiB of text at most
    monkeypatch.setattr(
        tracecmd, "TRACE_CMD", _fake_trace_cmd(tmp_path, "echo cpus=4; exec yes 'x-1 [000] 1.0: e: t'", monkeypatch)
    )
    with pytest.raises(ParseError, match=r"wrote more than 16,777,216 bytes of text for 307,200 bytes of trace data"):
        _parse(V6)


@needs_public
def test_trace_cmd_failing_after_its_rows_leaves_nothing(ingested, tmp_path, monkeypatch):
    """trace-cmd writes the whole report (its rows are streamed into the tables), then fails: the file is refused and
    the rows staged meanwhile are gone."""
    store, _, _ = ingested
    _, txt = CAPTURES[V6.name]
    monkeypatch.setattr(
        tracecmd, "TRACE_CMD", _fake_trace_cmd(tmp_path, f"cat '{txt}'; echo 'bad page' >&2; exit 3", monkeypatch)
    )
    before = table_counts(store)
    with pytest.raises(
        IngestError, match=r"capture\.dat: `trace-cmd report` could not read it \(exit status 3\): bad page"
    ):
        ingest_bytes(store, **{"capture.dat": V6.read_bytes()})
    assert table_counts(store) == before


@needs_public
def test_a_decompression_bomb_is_refused(monkeypatch):
    """Compressed data that would decompress to far more than the file holds is refused before it is decompressed
    (or trace-cmd writes it to its temporary files): at most 64x the file's size. Brought down to 1x, the v7 sample's
    kallsyms section (7.1 MB from a 1.8 MB file) is refused. (Its trace data, 3.3 MB, is bounded the same way.)"""
    monkeypatch.setattr(tracedat_layout, "MAX_EXPANSION", 1)
    monkeypatch.setattr(tracedat_layout, "MAX_TRACE_CHUNK", 64 << 10)  # the margin added to it
    with pytest.raises(ParseError, match=r"c\.dat, byte 3038: the kallsyms section is said to decompress to 7134411 "):
        _parse(V7)
