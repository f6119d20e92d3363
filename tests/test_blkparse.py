"""The blkparse parser and request reconstruction, on the seed excerpt and every public sample.

Values asserted here were checked by hand against the trace lines named in each test.
Golden summaries (tests/golden/blkparse/*.json) are rewritten with UPDATE_GOLDEN=1.
"""

from __future__ import annotations

import io
import json
import os

import numpy as np
import pytest

from backend.queries.requests import request_detail
from parsers import _blkparse, blkparse
from parsers.common import ParseReport
from tests.conftest import PUBLIC, SAMPLES, SEED, ingest_paths, needs_public

GOLDEN = os.path.join(os.path.dirname(__file__), "golden", "blkparse")
SAMPLE_FILES = sorted((PUBLIC / "blkparse-text").glob("*.txt"))


def parse_text(text: str) -> tuple[list[dict], ParseReport]:
    """Every parsed line as an event row (a trace of one-event requests is cut into events here)."""
    report = ParseReport("t.txt")
    rows = []
    for table, batch in blkparse.parse(io.BytesIO(text.encode()), report):
        assert table == "blk_events", "these tests use lines that are not request phases"
        rows += batch.to_pylist()
    return sorted(rows, key=lambda r: r["line"]), report


def test_seed_excerpt_events():
    report = ParseReport("seed")
    out = {}
    for table, batch in blkparse.parse(open(SEED / "cfq-dispatch-starvation.blkparse.txt", "rb"), report):
        out.setdefault(table, []).extend(batch.to_pylist())
    assert (report.lines, report.events, report.skipped) == (12, 12, 0)
    assert [e["line"] for e in out["blk_events"]] == [5, 6, 7, 8, 9, 10, 11]  # the m lines
    m = out["blk_events"][3]
    assert (m["action"], m["rwbs"], m["cpu"], m["t_ns"], m["message"]) == (
        "m",
        "N",
        1,
        81117914398,
        "cfq767A / slice expired t=1",
    )
    (r,) = out["blk_requests"]
    assert (r["a_line"], r["from_dev"], r["from_sector"], r["i_line"], r["i_ns"], r["i_cpu"], r["comm"]) == (
        1,
        "8,1",
        141696240,
        4,
        81092496118,
        11,
        "xfsaild/sda1",
    )
    assert (r["d_line"], r["d_ns"], r["d_cpu"], r["d_pid"]) == (12, 96718761435, 0, 0)
    assert r["d_ns"] - r["i_ns"] == 15626265317  # I->D, which blk_requests computes when read (i2d_ns)


def test_seed_excerpt_request(store):
    created = ingest_paths(store, SEED / "cfq-dispatch-starvation.blkparse.txt")
    con = store.cursor()
    rows = con.execute(
        "SELECT line, dev, sector, nsect, rwbs, pid, comm, q_ns, g_ns, i_ns, d_ns, c_ns, q2g_ns,"
        " g2i_ns, i2d_ns, d2c_ns, from_dev, from_sector, a_line, q_line, g_line, i_line, d_line,"
        " c_line, d_cpu, d_pid FROM blk_requests"
    ).fetchall()
    assert rows == [
        (
            1,
            "8,0",
            141698288,
            8,
            "WM",
            804,
            "xfsaild/sda1",
            81092472889,
            81092473207,
            81092496118,
            96718761435,
            None,
            318,
            22911,
            15626265317,
            None,
            "8,1",
            141696240,
            1,
            2,
            3,
            4,
            12,
            None,
            0,
            0,
        )
    ]
    assert con.execute("SELECT count(*) FROM blk_events WHERE action = 'm'").fetchall()[0][0] == 7
    assert created["sources"][0]["format"] == "blkparse"


@pytest.mark.parametrize(
    "line, expect",
    [
        ("  8,0    1        5     5.000000001  4321 1,0  m   N cfq1/ text", {"action": "m", "message": "cfq1/ text"}),
        (
            "259,0    3        5     0.000001000     0  U   N [kworker/3:1H] 1",
            {"action": "U", "depth": 1, "comm": "kworker/3:1H"},
        ),
        (
            "  8,16   0       10     0.1  14252  X  RA 605 / 613 [(null)]",
            {"action": "X", "sector": 605, "split_sector": 613, "t_ns": 100000000},
        ),
        (
            "  8,0    0        1     1.000000000   697  P   N [V8 WorkerThread]",
            {"comm": "V8 WorkerThread", "sector": None},
        ),
        (
            "  8,0    0        2     1.000000000     0  C  FN 0 [0]",
            {"action": "C", "rwbs": "FN", "sector": 0, "nsect": None, "error": 0},
        ),
        ("  8,0    0        3     1.000000000     0  R   W 100 + 8 ( 1234) [5]", {"error": 5, "elapsed_ns": 1234}),
        (
            "  8,0    0        4     1.000000000    12  Q FWS [jbd2/sda1-8]",
            {"sector": None, "comm": "jbd2/sda1-8", "rwbs": "FWS"},
        ),
        (
            "  8,0    0        5     1.000000000    12  D   R 36 (12 34 00) [scsi_id]",
            {"sector": None, "comm": "scsi_id"},
        ),
        ("8,0 0 6 2.5 1 UT N [dd] 3", {"t_ns": 2500000000, "depth": 3, "action": "UT"}),
    ],
)
def test_line_forms(line, expect):
    rows, report = parse_text(line + "\n")
    assert report.skipped == 0, report.examples
    for k, v in expect.items():
        assert rows[0][k] == v, k


def test_summary_block_and_headers_are_skipped_not_counted():
    text = (
        "#Maj,Mn CPU   SeqNo     Seconds     PID  Evt Typ Sector   +Len Description\n"
        "  8,0    0        1     0.000000000   697  P   N [kjournald]\n"
        "CPU0 (sda):\n Reads Queued:           0,        0KiB\t Writes Queued:           1,        4KiB\n"
        " IO unplugs:             0        \t Timer unplugs:           0\n\n"
        "kjournald (697)\n Reads Queued:           0,        0KiB\n"
        "Throughput (R/W): 0KiB/s / 4KiB/s\nEvents (sda): 1 entries\nSkips: 0 forward (0 -   0.0%)\n"
        "Trace started at Tue Aug  3 14:20:17 2023\n\nInput file sda.blktrace.0 added\n"
    )
    rows, report = parse_text(text)
    assert len(rows) == 1 and report.skipped == 0


def test_corrupt_lines_are_listed_with_numbers():
    text = (
        "  8,0    0        1     0.000000000   697  P   N [kjournald]\n"
        "  8,0    0        X     0.000000100   697  G   W 223490 + 8 [kjournald]\n"
        "hello world\n"
        "  8,0    0        3     0.000000200   697  I   W 223490 + abc [kjournald]\n"
        "  8,0    0        4     0.000000300   697  D   W 223490 + 8 [kjourn"
    )
    rows, report = parse_text(text)
    assert [r["line"] for r in rows] == [1]
    assert [(e.line, e.reason.split(" (")[0]) for e in report.examples] == [
        (2, "bad sequence field"),
        (3, "not a blkparse event line"),
        (4, "bad length after '+'"),
        (5, "unterminated '(...)' or '[...]'"),
    ]
    assert report.lines == 5 and report.skipped == 4


def test_each_field_at_its_limits():
    """Lines at the limits of each field: the tokenizer's one-pass reading of the usual line leaves every other form
    to the full reading; either way a line gives the same event or the same reason."""
    # line n: "maj,min cpu n time pid" and the rest; lines 7-9 break the device and CPU fields
    cases = """\
0.000000001 B   W 100 + 8 [a b]]
5 P   N [k]
0.5 P   N [k]
0.000000004 U   N [k] 3
0.000000005 m   N cfq697 insert
0.000000006 1,2 B W 100 + 8 [a]
4096,0 0
8,1048576 0
8,0 2147483648
9000000001.000000001 B   W 100 + 8 [a]
0.0000000011 B   W 100 + 8 [a]
0.1.2 B   W 100 + 8 [a]
0.000000013 BBB W 100 + 8 [a]
0.000000014 B1  W 100 + 8 [a]
0.000000015 B   RWBSFAM 100 + 8 [a]
0.000000016 B   Wa 100 + 8 [a]
0.000000017 B   W 100x + 8 [a]
0.000000018 B   W 1234567890123456789 + 8 [a]
0.000000019 B   W 100 + 8x [a]
0.000000020 B   W 100 + 8 [a] x
0.000000021 B   W 100 + 8
0.000000022 B   W
"""
    lines = []
    for n, case in enumerate(cases.splitlines(), 1):
        a, b = case.split(" ", 1)
        dev, cpu, t, rest = ("8,0", "0", a, b) if 7 > n or n > 9 else (a, b, f"0.00000000{n}", "B   W 100 + 8 [a]")
        lines.append(f"  {dev:>5} {cpu:>4} {n:8d}  {t}  697  {rest}")
    rows, report = parse_text("\n".join(lines) + "\n")
    got = [
        (r["line"], r["t_ns"], r["action"], r["rwbs"], r["sector"], r["nsect"], r["comm"], r["depth"], r["message"])
        for r in rows
    ]
    assert got == [
        (1, 1, "B", "W", 100, 8, "a b]", None, None),
        (2, 5_000_000_000, "P", "N", None, None, "k", None, None),
        (3, 500_000_000, "P", "N", None, None, "k", None, None),
        (4, 4, "U", "N", None, None, "k", 3, None),
        (5, 5, "m", "N", None, None, None, None, "cfq697 insert"),
        (6, 6, "B", "W", 100, 8, "a", None, None),
        (21, 21, "B", "W", 100, 8, None, None, None),
        (22, 22, "B", "W", None, None, None, None, None),
    ]
    assert [(e.line, e.reason.split(" (")[0]) for e in report.examples] == [
        (7, "bad device field"),
        (8, "bad device field"),
        (9, "bad CPU field"),
        (10, "bad timestamp"),
        (11, "bad timestamp"),
        (12, "bad timestamp"),
        (13, "bad action field"),
        (14, "bad action field"),
        (15, "bad RWBS field"),
        (16, "bad RWBS field"),
        (17, "bad sector field"),
        (18, "bad sector field"),
        (19, "bad length after '+'"),
        (20, "unexpected text after the event's fields"),
    ]


def summarize(store, path) -> dict:
    created = ingest_paths(store, path)
    src = created["sources"][0]
    con = store.cursor()
    sid = src["id"]
    actions = dict(
        con.execute(  # every parsed line is in exactly one place: phases, bios or leftover events
            "SELECT action, sum(n)::BIGINT FROM ("
            " SELECT action, count(*) n FROM blk_events WHERE source_id = $sid GROUP BY 1"
            " UNION ALL SELECT unnest(['A', 'Q', 'G', 'I', 'D', 'C']),"
            "  unnest([count(DISTINCT a_line), count(DISTINCT q_line), count(g_line), count(i_line),"
            "  count(DISTINCT d_line), count(DISTINCT c_line)])"  # a D or C whose range covers several requests is a
            # phase of each; the halves of a split share their Q (and A)
            "  FROM blk_requests WHERE source_id = $sid"
            " UNION ALL SELECT unnest(['A', 'Q', 'M', 'F']), unnest([count(a_line), count(q_line),"
            "  count(*) FILTER (WHERE NOT front), count(*) FILTER (WHERE front)]) FROM blk_bios WHERE source_id = $sid"
            ") WHERE n > 0 GROUP BY 1 ORDER BY 1",
            {"sid": sid},
        ).fetchall()
    )
    assert sum(actions.values()) == src["events"]
    req = con.execute(
        "SELECT count(*), count(q_ns), count(i2d_ns), count(d2c_ns), count(q2c_ns), sum(merged_bios)::BIGINT,"
        " sum(requeues)::BIGINT, count(*) FILTER (WHERE error <> 0), max(i2d_ns), max(d2c_ns), max(q2c_ns),"
        " quantile_disc(d2c_ns, 0.5), count(DISTINCT dev) FROM blk_requests WHERE source_id = ?",
        [sid],
    ).fetchall()[0]
    keys = [
        "requests",
        "with_q",
        "with_i2d",
        "with_d2c",
        "with_q2c",
        "merged_bios",
        "requeues",
        "errors",
        "max_i2d_ns",
        "max_d2c_ns",
        "max_q2c_ns",
        "p50_d2c_ns",
        "devices",
    ]
    return {
        "lines": src["lines"],
        "events": src["events"],
        "skipped": src["skipped_lines"],
        "notes": src["notes"],
        "actions": actions,
        **dict(zip(keys, req)),
    }


@needs_public
@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.name)
def test_public_samples_golden(store, path):
    got = summarize(store, path)
    golden = os.path.join(GOLDEN, path.name + ".json")
    if os.environ.get("UPDATE_GOLDEN"):
        with open(golden, "w") as f:
            json.dump(got, f, indent=1, sort_keys=True)
    with open(golden) as f:
        assert got == json.load(f)


@needs_public
def test_hand_checked_requests(store):
    """Requests checked line by line against the sample files."""
    aid = ingest_paths(
        store,
        *(
            PUBLIC / "blkparse-text" / n
            for n in (
                "derived-liuzel01-sda-lvm.blkparse.txt",
                "oxdeadmeat-nvme0n1-dmcrypt.blkparse.txt",
                "derived-isotopp-keks-8cpu-sdd4-zfs.blkparse.txt",
                "derived-romeus-loop0-dump-x0y1.blkparse.txt",
            )
        ),
    )["id"]
    con = store.cursor()

    def req(name, line):
        rows = con.execute(
            "SELECT r.dev, r.sector, r.nsect, r.q_ns, r.g_ns, r.i_ns, r.d_ns, r.c_ns, r.i2d_ns, r.d2c_ns,"
            " r.merged_bios, r.from_dev, r.source_id FROM blk_requests r JOIN sources s ON s.id = r.source_id"
            " WHERE s.filename = ? AND r.line = ?",
            [name, line],
        ).fetchall()
        if not rows:
            return rows
        detail = request_detail(con, aid, rows[0][-1], line)
        return [rows[0][:-1] + ([e["line"] for e in detail["events"]],)]

    # liuzel01 lines 2-6 (A<-8,2 Q G I D) and 13 (C): LVM remap onto the disk
    assert req("derived-liuzel01-sda-lvm.blkparse.txt", 2) == [
        ("8,0", 24803160, 160, 252703, 324803, 383404, 418904, 4057032, 35500, 3638128, 0, "8,2", [2, 3, 4, 5, 6, 13])
    ]
    # liuzel01 lines 489-491 (A Q G), 493-495 (A Q M: a back-merged bio), 565 I, 582 D, 598 C (+ 16 sectors)
    assert req("derived-liuzel01-sda-lvm.blkparse.txt", 489)[0][2] == 16
    assert req("derived-liuzel01-sda-lvm.blkparse.txt", 489)[0][10:] == (
        1,
        "8,2",
        [489, 490, 491, 493, 494, 495, 565, 582, 598],
    )
    # oxdeadmeat lines 4-6 (A Q G), 9-11 (A Q M of 763360920), 12 D and 13 C of 763360912 + 16
    assert req("oxdeadmeat-nvme0n1-dmcrypt.blkparse.txt", 4) == [
        (
            "259,0",
            763360912,
            16,
            299,
            5301,
            None,
            9435,
            23558761,
            None,
            23549326,
            1,
            "259,3",
            [4, 5, 6, 9, 10, 11, 12, 13],
        )
    ]
    # isotopp: D (line 1) then C (line 3) on another CPU; line 2's D never completes, line 4 re-dispatches it
    assert req("derived-isotopp-keks-8cpu-sdd4-zfs.blkparse.txt", 1)[0][6:10] == (0, 843237, None, 843237)
    assert req("derived-isotopp-keks-8cpu-sdd4-zfs.blkparse.txt", 2)[0][6:8] == (12680, None)
    # romeus: the clock jumps back at line 513 (G at 0.000000000 after Q at 0.001354158): no invented durations
    r = req("derived-romeus-loop0-dump-x0y1.blkparse.txt", 512)[0]
    assert (r[3], r[4], r[8]) == (1354158, 0, 307)


def test_chunk_tokenized_in_two_threads_same_as_in_one():
    """A chunk of 1 MiB or more is tokenized by two threads (its tail ahead, in a second one): the tables and the
    report are the same as with chunks tokenized by one. Here the tail begins inside a summary block: whether its
    first lines are skipped (not events) or ignored (summary) depends on a line its thread never sees."""
    lines = (SAMPLES / "demo-cfq-starvation.blkparse.txt").read_text().splitlines(keepends=True)
    head, rest = lines[: len(lines) * 3 // 10], lines[len(lines) * 3 // 10 :]
    size = sum(map(len, lines))
    bad = ["hello world\n"] * (size // 20 // 12)  # ~5 % of the bytes: skipped, listed
    summary = ["CPU0 (sda):\n"] + [
        " Reads Queued:           0,        0KiB\t Writes Queued:       1,        4KiB\n",
        "kjournald (697)\n",
    ] * (size // 5 // 95)  # ~20 %: ignored
    text = "".join(head + bad + summary + rest).encode()
    split_at = text.index(b"\n", len(text) * 2 // 5) + 1  # where _blkparse.c cuts a chunk
    first, last = len(head + bad) + 1, len(head + bad + summary)
    assert first < text[:split_at].count(b"\n") + 1 < last  # the tail's first line is in the summary

    def parsed(chunk_bytes: int) -> tuple[dict, dict]:
        report, tables = ParseReport("t.txt"), {}
        for table, batch in blkparse.parse(io.BytesIO(text), report, chunk_bytes=chunk_bytes):
            tables.setdefault(table, []).extend(batch.to_pylist())
        return {t: sorted(rows, key=lambda r: r.get("line", 0)) for t, rows in tables.items()}, report.as_dict()

    one, two = parsed(512 << 10), parsed(len(text) + 1)  # chunks under 1 MiB; the whole file in one chunk
    assert one == two
    assert two[1]["skipped_lines"] == len(bad) and two[1]["skipped_examples"][0]["line"] == len(head) + 1
    assert len(two[0]["blk_requests"]) == 5000 and two[1]["lines"] == len(lines) + len(bad) + len(summary)


def test_lines_given_by_number_same_as_padded_to_their_place():
    """feed(chunk, first, lines): each of the chunk's lines at the line number given (block_events.py feeds a trace's
    block events so, the lines between them not written): the same rows, skipped lines and facts as the text with
    blank lines in between; over 1 MiB, so that the chunk's tail is tokenized by the second thread too. Fewer
    numbers than lines are refused."""
    lines = (SAMPLES / "demo-cfq-starvation.blkparse.txt").read_bytes().splitlines()
    numbers = np.cumsum([7] + [1 + i % 5 for i in range(1, len(lines))])  # the gaps between them: 0 to 4 lines
    kept = [(int(n), ln) for n, ln in zip(numbers, lines)]
    kept[100] = (kept[100][0], b"hello world")  # a skipped line keeps its number too
    padded, at = [], 0
    for number, ln in kept:
        padded += [b""] * (number - at - 1) + [ln]
        at = number
    compact = b"\n".join(ln for _, ln in kept) + b"\n"
    assert len(compact) >= 1 << 20

    def rows(cols: dict) -> dict:
        out = {t: b.to_pylist() for t, b in blkparse._batches(cols)}
        return {**out, "skipped": list(np.frombuffer(cols["sk_line"], np.int64)), "parsed": cols["parsed"]}

    by_padding, by_number = _blkparse.Rebuilder(top=10), _blkparse.Rebuilder(top=10)
    want = [rows(by_padding.feed(b"\n".join(padded) + b"\n", 1)), rows(by_padding.finish())]
    got = [rows(by_number.feed(compact, kept[0][0], numbers.astype(np.int64))), rows(by_number.finish())]
    assert got == want and want[0]["skipped"] == [kept[100][0]] and want[0]["blk_requests"]
    assert by_number.facts() == by_padding.facts()
    with pytest.raises(ValueError, match="more lines than"):
        _blkparse.Rebuilder(top=10).feed(compact, 1, numbers[:-1].astype(np.int64))


def test_chunks_of_pooled_columns_same_rows_as_unpooled():
    """A text chunk's event and request columns are taken from blocks that the previous chunks' columns gave back
    once freed (_blkparse_out.h out_pool): the rows are the same as from chunks too small to use the pool (their
    columns' first blocks are under its 64 KiB), here with more events in a chunk than the room a chunk first gives
    (plugs and unplugs: the columns grow from their pooled blocks), and a freed chunk's blocks are reused."""
    demo = (SAMPLES / "demo-cfq-starvation.blkparse.txt").read_bytes()
    plugs = b"".join(
        b"  8,0    1 %8d %5d.%09d   311  %s   N [kworker/u16:2]\n"
        % (i, 9 + i // 10**6, i % 10**6 * 1000, b"PU"[i % 2 : i % 2 + 1])
        for i in range(60_000)
    )
    text = demo + plugs + demo.replace(b"  8,0  ", b"  8,16 ")

    def parsed(chunk_bytes: int) -> tuple[dict, dict]:
        report, tables = ParseReport("t.txt"), {}
        for table, batch in blkparse.parse(io.BytesIO(text), report, chunk_bytes=chunk_bytes):
            tables.setdefault(table, []).extend(batch.to_pylist())
        return {t: sorted(rows, key=lambda r: r.get("line", 0)) for t, rows in tables.items()}, report.as_dict()

    unpooled, pooled = parsed(256 << 10), parsed(3 << 20)
    assert pooled == unpooled and len(pooled[0]["blk_events"]) > 60_000 and pooled[0]["blk_requests"]

    rb = _blkparse.Rebuilder(top=10)
    chunk = demo + plugs[: len(plugs) // 2]
    first = rb.feed(chunk, 1)
    assert type(first["rq_line"]).__name__ == "PooledColumn" and type(first["bio_line"]).__name__ == "Column"

    def pooled_blocks(cols: dict) -> set[int]:
        return {np.frombuffer(c, np.uint8).ctypes.data for c in cols.values() if type(c).__name__ == "PooledColumn"}

    blocks = pooled_blocks(first)
    del first  # its columns' blocks back to the pool, for the next chunk's
    assert blocks & pooled_blocks(rb.feed(chunk, 1))


@pytest.mark.parametrize(
    "path", [*SAMPLE_FILES, SEED / "cfq-dispatch-starvation.blkparse.txt"], ids=lambda p: p.name.split(".")[0]
)
def test_the_three_line_readers_agree(path):
    """_blkparse_line.h reads a line's head at blkparse's fixed widths (head_fixed), else from a bitmask of its
    whitespace (head_fast, lines of 16-127 bytes), else byte by byte: the same lines given so that each reads them
    (as printed; after a tab, which shifts every field off its place; after a tab and padded past 127 bytes) give
    the same tables and counts."""
    lines = path.read_bytes().splitlines()

    def parsed(text: bytes) -> tuple[dict, tuple]:
        report, tables = ParseReport("t.txt"), {}
        for table, batch in blkparse.parse(io.BytesIO(text), report):
            tables.setdefault(table, []).extend(batch.to_pylist())
        rows = {t: sorted(r, key=lambda row: tuple(str(v) for v in row.values())) for t, r in tables.items()}
        return rows, (report.lines, report.events, report.skipped, report.facts)

    fixed = parsed(b"\n".join(lines) + b"\n")
    shifted = parsed(b"\n".join(b"\t" + ln for ln in lines) + b"\n")
    long = parsed(b"\n".join(b"\t" + ln.ljust(140) for ln in lines) + b"\n")
    assert fixed[0].get("blk_requests") or fixed[0].get("blk_events")
    assert shifted == fixed
    assert long == fixed


def test_file_with_stored_phase_durations_is_rebuilt_with_them_computed(tmp_path):
    """A database written when blk_requests stored q2g_ns ... q2c_ns: opening it makes them computed columns again,
    its rows kept; a new ingest into it gets its durations."""
    import duckdb

    from backend.store import Store

    path = tmp_path / "old.duckdb"
    s = Store(path)
    ingest_paths(s, SEED / "cfq-dispatch-starvation.blkparse.txt")
    s.close()
    con = duckdb.connect(str(path))  # the old layout: every column stored
    con.execute("CREATE TABLE stored AS SELECT * FROM blk_requests")
    con.execute("DROP TABLE blk_requests")
    con.execute("ALTER TABLE stored RENAME TO blk_requests")
    assert con.execute(
        "SELECT count(*) FROM duckdb_columns() WHERE table_name = 'blk_requests' AND column_default IS NOT NULL"
    ).fetchall() == [(0,)]
    con.close()

    s = Store(path)
    try:
        ingest_paths(s, SEED / "cfq-dispatch-starvation.blkparse.txt")
        con = s.cursor()
        assert sorted(
            n
            for (n,) in con.execute(
                "SELECT column_name FROM duckdb_columns() WHERE table_name = 'blk_requests' AND column_default IS NOT NULL"
            ).fetchall()
        ) == ["d2c_ns", "g2i_ns", "i2d_ns", "q2c_ns", "q2g_ns"]
        assert con.execute(
            "SELECT source_id, q2g_ns, g2i_ns, i2d_ns, d2c_ns FROM blk_requests ORDER BY source_id"
        ).fetchall() == [(1, 318, 22911, 15626265317, None), (2, 318, 22911, 15626265317, None)]
    finally:
        s.close()


@needs_public
@pytest.mark.parametrize("top", [1, 5, 1000])
def test_facts_equal_a_scan_of_the_requests(top, monkeypatch):
    """What the parser keeps as it emits the requests (report.facts, for blk.derive: no scan of blk_requests) equals
    a scan of the requests it emitted: the first and last phase time, the requests with a phase earlier than the one
    before, and the lines of the `top` slowest per metric (slowest first, ties by line)."""
    monkeypatch.setattr(blkparse, "TOP", top)
    kept_some = False  # some metric of some file had more requests than `top` (some were let go)
    for path in [SEED / "cfq-dispatch-starvation.blkparse.txt", *SAMPLE_FILES]:
        report = ParseReport(path.name)
        with open(path, "rb") as f:
            rows = [
                r for table, batch in blkparse.parse(f, report) if table == "blk_requests" for r in batch.to_pylist()
            ]
        times = [r[f"{p}_ns"] for r in rows for p in "aqgidc" if r[f"{p}_ns"] is not None]

        def back(r):
            return any(
                r[f"{a}_ns"] is not None and r[f"{b}_ns"] is not None and r[f"{b}_ns"] < r[f"{a}_ns"]
                for a, b in ("qg", "gi", "id", "dc")
            )

        def slowest(a, b):
            nonlocal kept_some
            lat = [
                (r[f"{b}_ns"] - r[f"{a}_ns"], r["line"])
                for r in rows
                if r[f"{a}_ns"] is not None and r[f"{b}_ns"] is not None and r[f"{b}_ns"] >= r[f"{a}_ns"]
            ]
            kept_some = kept_some or len(lat) > top
            return [line for _, line in sorted(lat, key=lambda x: (-x[0], x[1]))[:top]]

        assert report.facts == {
            "lo": min(times, default=None),
            "hi": max(times, default=None),
            "backwards": sum(map(back, rows)),
            "i2d": slowest("i", "d"),
            "d2c": slowest("d", "c"),
            "q2c": slowest("q", "c"),
        }, path.name
    assert kept_some or top == 1000


@needs_public
def test_split_halves_share_their_queue(store):
    """hadoop lines 107 (Q 572828880 + 1792), 108 (X at 572830312), 109/113/114 (G I D of the first 1432 sectors),
    111/117/118 (G I D of the other 360): the second half is a request of its own, queued by the one Q (its line is
    the X's), and the X names the bio it split."""
    ingest_paths(store, PUBLIC / "blkparse-text" / "derived-zzunny97-hadoop-sdb-cpu0-1.blkparse.txt")
    con = store.cursor()
    rows = con.execute(
        "SELECT line, sector, nsect, q_line, g_line, i_line, d_line, q_ns, i2d_ns FROM blk_requests"
        " WHERE sector IN (572828880, 572830312) ORDER BY sector"
    ).fetchall()
    assert rows == [
        (107, 572828880, 1432, 107, 109, 113, 114, 2500650346, 2098),
        (108, 572830312, 360, 107, 111, 117, 118, 2500650346, 938),
    ]
    assert con.execute("SELECT action, req_line FROM blk_events WHERE line = 108").fetchall() == [("X", 107)]


def test_stacked_remaps_are_not_held_until_the_end():
    """A bio remapped twice (dm -> partition -> disk) prints two A lines: the first on the disk's or the partition's
    key, which no Q follows. Each such A is emitted as a pass-through event when the next remap names it as its
    source, not held open until the trace ends (it grew the parser's memory by ~0.25 byte per byte of an LVM
    capture); both forms (oxdeadmeat's on the disk, liuzel01's on the partition), and the rows are those of the
    whole trace parsed at once."""
    lines, n = [], 0
    for i in range(4000):
        t = 1 + i * 1e-4
        part, disk = 2_000_000 + i * 64, 2_002_048 + i * 64
        first_dev = "8,0" if i % 2 else "8,2"
        for dev, act, rest in (
            (first_dev, "A", f"W {part} + 8 <- (253,0) {part - 4096}"),
            ("8,0", "A", f"W {disk} + 8 <- (8,2) {part}"),
            ("8,0", "Q", f"W {disk} + 8 [dd]"),
            ("8,0", "G", f"W {disk} + 8 [dd]"),
            ("8,0", "I", f"W {disk} + 8 [dd]"),
            ("8,0", "D", f"W {disk} + 8 [dd]"),
            ("8,0", "C", f"W {disk} + 8 [0]"),
        ):
            n += 1
            lines.append(f"{dev:>5} 0 {n:8d} {t + n * 1e-7:14.9f} 100 {act} {rest}\n")
    text = "".join(lines).encode()
    report = ParseReport("lvm.txt")
    batches = list(blkparse.parse(io.BytesIO(text), report, chunk_bytes=64 << 10))
    assert report.skipped == 0
    passed = [b for t, b in batches if t == "blk_events"]
    assert len(passed) > 10  # emitted chunk by chunk, not all at the end
    events = [r for b in passed for r in b.to_pylist()]
    assert len(events) == 4000 and {e["action"] for e in events} == {"A"}
    requests = [r for t, b in batches if t == "blk_requests" for r in b.to_pylist()]
    assert len(requests) == 4000 and all(r["a_line"] == r["line"] and r["c_ns"] is not None for r in requests)
