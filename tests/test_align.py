"""Clock alignment (backend/derive/align.py): block events of ftrace matched to a blktrace's requests,
clock names, the fallbacks, and placing a source by hand (PATCH), with the chains linked again."""

from __future__ import annotations

import io

import pytest

from backend.derive import align
from backend.ingest import InputFile
from tests.conftest import SAMPLES, ingest_paths

DEMO = SAMPLES / "demo-cfq-starvation.blkparse.txt"
EXT4 = SAMPLES / "ext4-jbd2-commit.trace-cmd-report.txt"
EXT4_BLK = SAMPLES / "ext4-jbd2-commit.blkparse.txt"
OFFCPU = SAMPLES / "xfs-open-stall.offcputime.txt"
OFFSET = 5_237_418_062_913  # ftrace's clock = blktrace's + this (ns): not a round number


def _trace_cmd_with_block_events(store, n: int, offset: int = OFFSET, clock_line: str = "") -> bytes:
    """A trace-cmd report holding block_rq_insert/issue/complete for the first n requests of the demo blktrace, its
    timestamps on another clock (+offset) printed in µs like trace-cmd does."""
    aid = ingest_paths(store, DEMO)["id"]
    con = store.cursor()
    try:
        reqs = con.execute(
            "SELECT r.dev, r.rwbs, r.sector, r.nsect, r.i_ns, r.d_ns, r.c_ns, r.comm, r.pid FROM blk_requests r"
            " JOIN sources s ON s.id = r.source_id WHERE s.analysis_id = ? AND r.i_ns IS NOT NULL AND r.d_ns IS NOT NULL"
            " AND r.c_ns IS NOT NULL ORDER BY r.i_ns LIMIT ?",
            [aid, n],
        ).fetchall()
    finally:
        con.close()
    events = []
    for dev, rwbs, sector, nsect, i, d, c, comm, pid in reqs:
        size = nsect * 512
        events += [
            (i, f"{comm}-{pid}", "block_rq_insert", f"{dev} {rwbs} {size} () {sector} + {nsect} be,0,4 [{comm}]"),
            (
                d,
                "kworker/0:1H-212",
                "block_rq_issue",
                f"{dev} {rwbs} {size} () {sector} + {nsect} be,0,4 [kworker/0:1H]",
            ),
            (c, "<idle>-0", "block_rq_complete", f"{dev} {rwbs} () {sector} + {nsect} be,0,4 [0]"),
        ]
    events.sort()
    lines = ["cpus=2"] + ([clock_line] if clock_line else [])
    for t, task, ev, text in events:
        t = (t + offset) // 1000  # µs, truncated like the kernel's %lu.%06lu
        lines.append(f"{task:>20} [000] {t // 1_000_000}.{t % 1_000_000:06d}: {ev + ':':<20} {text}")
    return ("\n".join(lines) + "\n").encode()


def _ingest(store, *files: tuple[str, bytes]) -> str:
    return store.ingest([InputFile(n, io.BytesIO(b), len(b)) for n, b in files])["id"]


def test_block_events_align_ftrace_to_blktrace_within_10us(store, client):
    trace = _trace_cmd_with_block_events(store, 300, clock_line="# trace clock: mono")
    aid = _ingest(store, ("capture.trace-cmd-report.txt", trace), ("capture.blkparse.txt", DEMO.read_bytes()))
    ft, bp = client.get(f"/api/analyses/{aid}").json()["sources"]
    assert (bp["format"], bp["clock_offset_ns"], bp["alignment"]["method"]) == ("blkparse", 0, "reference")
    assert bp["clock"] == align.BLKPARSE_CLOCK
    assert ft["format"] == "ftrace" and ft["clock"] == "mono"
    al = ft["alignment"]
    assert al["method"] == "block_events" and al["blk_source_id"] == bp["id"] == al["reference_source_id"]
    # aligned = own + offset, so the ftrace source's offset is -OFFSET; µs truncation costs < 1 µs per event
    assert abs(ft["clock_offset_ns"] + OFFSET) <= 10_000
    assert abs(ft["clock_offset_ns"] + OFFSET) < 1000
    assert al["matched"] == 900 and al["residual_max_ns"] < 1000 and al["warnings"] == []
    # the analysis span is on the blktrace's clock now
    a = client.get(f"/api/analyses/{aid}").json()
    assert a["t_min_ns"] == bp["t_min_ns"] and ft["t_min_ns"] + ft["clock_offset_ns"] >= bp["t_min_ns"] - 1000


def test_repeated_sectors_do_not_pull_the_offset(store, client):
    """Wrong pairs (the same dev/sector/size requested again later) scatter; the offset comes from the pile."""
    trace = _trace_cmd_with_block_events(store, 2000)
    aid = _ingest(store, ("t.trace-cmd-report.txt", trace), ("b.blkparse.txt", DEMO.read_bytes()))
    ft = client.get(f"/api/analyses/{aid}").json()["sources"][0]
    assert abs(ft["clock_offset_ns"] + OFFSET) <= 10_000
    assert ft["alignment"]["candidates"] >= ft["alignment"]["matched"] == 6000


def test_clock_names_and_warnings():
    assert align.clock_of(["trace clock: mono"]) == "mono"
    assert align.clock_of(["trace_clock: local global [boot] mono"]) == "boot"
    assert align.clock_of(["tracer: function_graph", "using the x86-tsc clock"]) == "x86-tsc"
    assert align.clock_of(["tracer: nop"]) is None
    assert "per CPU" in align._clock_warnings("local")[0]
    assert "ticks" in align._clock_warnings("x86-tsc")[0]
    assert align._clock_warnings("mono") == []


def test_local_clock_is_warned_about(store, client):
    trace = _trace_cmd_with_block_events(store, 50, clock_line="# trace_clock: [local] global counter")
    aid = _ingest(store, ("t.trace-cmd-report.txt", trace), ("b.blkparse.txt", DEMO.read_bytes()))
    ft = client.get(f"/api/analyses/{aid}").json()["sources"][0]
    assert ft["clock"] == "local" and "per CPU" in ft["alignment"]["warnings"][0]
    assert abs(ft["clock_offset_ns"] + OFFSET) <= 10_000


def test_fallbacks_same_clock_and_start(store, client):
    # the ext4 capture: both files on one clock, no block events in the ftrace file
    aid = ingest_paths(store, EXT4, EXT4_BLK, OFFCPU)["id"]
    ft, bp, oc = client.get(f"/api/analyses/{aid}").json()["sources"]
    assert (ft["alignment"]["method"], ft["clock_offset_ns"]) == ("same_clock", 0)
    # the dump: own clock from 0, no window in its header: placed at the analysis' start
    assert (oc["alignment"]["method"], oc["t_min_ns"], oc["t_max_ns"]) == ("start", 0, None)
    assert oc["clock_offset_ns"] == bp["t_min_ns"] == 7341200014221
    # a blktrace on another clock than the ftrace file (starts at 0): start times placed together, with a warning
    trace = _trace_cmd_with_block_events(store, 5)
    shifted = trace.replace(b"block_rq_", b"block_xx_")  # no block events to match
    aid = _ingest(store, ("t.trace-cmd-report.txt", shifted), ("b.blkparse.txt", DEMO.read_bytes()))
    ft, bp = client.get(f"/api/analyses/{aid}").json()["sources"]
    assert ft["alignment"]["method"] == "start"
    assert ft["t_min_ns"] + ft["clock_offset_ns"] == bp["t_min_ns"]
    assert "approximate" in ft["alignment"]["warnings"][0]


def test_window_from_the_header(store, client):
    dump = (
        b"Tracing off-CPU time (us) of all threads by kernel stack for 5 secs.\n\n"
        b"    schedule\n    io_schedule\n    -                dd (1234)\n        300\n\n"
    )
    aid = _ingest(store, ("o.offcputime.txt", dump), ("b.blkparse.txt", EXT4_BLK.read_bytes()))
    oc = client.get(f"/api/analyses/{aid}").json()["sources"][0]
    assert (oc["t_min_ns"], oc["t_max_ns"], oc["alignment"]["method"]) == (0, 5_000_000_000, "start")


def test_patch_offset_relinks_the_chain_to_its_request(store, client):
    aid = ingest_paths(store, EXT4, EXT4_BLK)["id"]
    ft = client.get(f"/api/analyses/{aid}").json()["sources"][0]
    before = client.get(f"/api/analyses/{aid}/chains").json()
    assert before[0]["links"][1]["request"]["sector"] == 1465352
    # one second off: no request completed at the wake-up any more, every time moves with the source
    r = client.patch(f"/api/analyses/{aid}/sources/{ft['id']}", json={"clock_offset_ns": 1_000_000_000})
    assert r.status_code == 200, r.text
    assert (r.json()["clock_offset_ns"], r.json()["alignment"]["method"]) == (1_000_000_000, "manual")
    moved = client.get(f"/api/analyses/{aid}/chains").json()
    assert moved[0]["links"][1]["request"] is None
    assert moved[0]["links"][0]["start_ns"] == before[0]["links"][0]["start_ns"] + 1_000_000_000
    assert "block request" not in moved[0]["links"][1]["evidence"]
    waits = client.get(f"/api/analyses/{aid}/waits", params={"pid": 4242}).json()
    assert waits[0]["start_ns"] == 7341201620000 + 1_000_000_000
    # back: the same chains as the ingest derived
    r = client.patch(f"/api/analyses/{aid}/sources/{ft['id']}", json={"clock_offset_ns": 0})
    assert client.get(f"/api/analyses/{aid}/chains").json() == before


def test_patch_same_span_and_errors(store, client):
    aid = ingest_paths(store, EXT4, EXT4_BLK, OFFCPU)["id"]
    ft, bp, oc = client.get(f"/api/analyses/{aid}").json()["sources"]
    r = client.patch(f"/api/analyses/{aid}/sources/{oc['id']}", json={"same_span_as": ft["id"]})
    assert r.status_code == 200, r.text
    placed = r.json()
    assert placed["clock_offset_ns"] == ft["t_min_ns"] and placed["t_max_ns"] == ft["t_max_ns"] - ft["t_min_ns"]
    assert placed["alignment"]["detail"].startswith("placed by hand: the span of source")
    bad = [
        ({"clock_offset_ns": 1, "same_span_as": 1}, 422),
        ({}, 422),
        ({"clock_offset_ns": "x"}, 422),
        ({"same_span_as": 999}, 404),
        ({"same_span_as": oc["id"]}, 422),
        ({"clock_offset_ns": 1 << 63}, 422),
    ]
    for body, status in bad:
        r = client.patch(f"/api/analyses/{aid}/sources/{oc['id']}", json=body)
        assert r.status_code == status, (body, r.text)
        assert "detail" in r.json()
    assert client.patch(f"/api/analyses/{aid}/sources/999", json={"clock_offset_ns": 0}).status_code == 404
    assert client.patch(f"/api/analyses/nope/sources/{oc['id']}", json={"clock_offset_ns": 0}).status_code == 404
    assert (
        client.patch(
            f"/api/analyses/{aid}/sources/{oc['id']}", content=b"{", headers={"content-type": "application/json"}
        ).status_code
        == 422
    )


@pytest.mark.parametrize("offset", [0, -OFFSET, 123_456_789])
def test_reads_are_on_the_aligned_timeline(store, client, offset):
    aid = ingest_paths(store, EXT4_BLK)["id"]
    sid = client.get(f"/api/analyses/{aid}").json()["sources"][0]["id"]
    base = client.get(f"/api/analyses/{aid}/requests", params={"order": "time", "limit": 3}).json()
    client.patch(f"/api/analyses/{aid}/sources/{sid}", json={"clock_offset_ns": offset})
    moved = client.get(f"/api/analyses/{aid}/requests", params={"order": "time", "limit": 3}).json()
    assert [r["i_ns"] for r in moved] == [r["i_ns"] + offset for r in base]
    t0 = base[1]["q_ns"] + offset  # t_ns, the first event of a request, is its Q here
    assert (
        client.get(f"/api/analyses/{aid}/requests", params={"order": "time", "t0_ns": t0}).json()[0]["line"]
        == base[1]["line"]
    )
    d = client.get(f"/api/analyses/{aid}/requests/{sid}/{base[0]['line']}").json()
    assert d["request"]["q_ns"] == base[0]["q_ns"] + offset
    assert [e["t_ns"] for e in d["events"] if e["action"] == "Q"] == [base[0]["q_ns"] + offset]
