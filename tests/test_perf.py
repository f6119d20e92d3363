"""perf script text of sched/block tracepoints (parsers/perf.py): waits with their call chains and lock labels,
wakers, block requests rebuilt from block_rq_insert/issue/complete; bad input; a fuzz.

The captures (tests/fixtures/perf/README.md) were recorded in the sandbox with perf 6.1 while dd wrote with O_DSYNC
and fsync; the expected figures were read off the text by hand (line numbers, times)."""

from __future__ import annotations

import io
import random
from pathlib import Path

import pytest

from parsers import detect, perf
from parsers.common import ParseError, ParseReport
from tests.conftest import ingest_bytes, ingest_paths
from tests.test_robustness import mutate

FIX = Path(__file__).parent / "fixtures" / "perf"
G = FIX / "sandbox-g.perf-script.txt"
F_IP_SYM = FIX / "sandbox-F-ip-sym.perf-script.txt"
NO_G = FIX / "sandbox-no-g.perf-script.txt"
F_NS = FIX / "sandbox-F-ns.perf-script.txt"
SEP = "\x1f"


def _parse(data: bytes, chunk_bytes: int = 1 << 24) -> tuple[ParseReport, dict[str, int]]:
    report, rows = ParseReport("t.perf"), {}
    for name, batch in perf.parse(io.BytesIO(data), report, chunk_bytes):
        rows[name] = rows.get(name, 0) + batch.num_rows
    return report, rows


@pytest.mark.parametrize("path", [G, F_IP_SYM, NO_G, F_NS])
def test_detected_as_perf_script(path):
    assert detect.detect(path.read_bytes()[:65536], path.name) is perf


def test_ftrace_text_is_not_perf():
    text = (
        b"            bash-1234  [001] d..2.  2720.358172: sched_switch: prev_comm=bash prev_pid=1234 prev_prio=120 "
        b"prev_state=D ==> next_comm=swapper/0 next_pid=0 next_prio=120\n"
    )
    assert perf.sniff([text.decode()]) == 0.0
    assert detect.detect(text, "t.txt") is not perf


def test_waits_with_stacks_locks_and_wakers(store):
    src = ingest_paths(store, G)["sources"][0]
    assert src["format"] == "ftrace" and src["files"][0]["kind"] == "perf script text"
    assert src["lines"] == 2465 and src["skipped_lines"] == 0
    con = store.cursor()
    rows = con.execute(
        "SELECT line, pid, comm, state, duration_ns, lock, primitive, waker_pid, waker_comm, wake_line, end_line,"
        " string_split(stack_text, ?) AS stack, evidence FROM waits WHERE state = 'D' ORDER BY line LIMIT 3",
        [SEP],
    ).fetchall()
    # line 74: dd 23562 switched out (D) at 4353.868132, woken by dd 23561 at line 211, back on CPU at line 309
    line, pid, comm, state, dur, lock, prim, wpid, wcomm, wline, eline, stack, evidence = rows[0]
    assert (line, pid, comm, state, lock, prim, wpid, wcomm, wline, eline) == (
        74,
        23562,
        "dd",
        "D",
        "wait_for_completion_io_timeout",
        "I/O",
        23561,
        "dd",
        211,
        309,
    )
    assert dur == 94_000  # 4353.868226 - 4353.868132
    assert stack[-3:] == ["schedule_timeout", "schedule", "__schedule"]  # root first, innermost last
    assert "kernel_stack event at line 75" in evidence
    # line 418: a wait on page writeback, woken by a kworker
    assert rows[2][:8] == (
        418,
        23562,
        "dd",
        "D",
        85_000,
        "folio_wait_writeback via io_schedule",
        "page writeback",
        29008,
    )
    waker_stack = con.execute("SELECT string_split(waker_stack_text, ?) FROM waits WHERE line = 74", [SEP]).fetchall()
    assert waker_stack[0][0][-2:] == ["try_to_wake_up", "ttwu_do_activate"]


def test_block_requests_with_their_phases(store):
    ingest_paths(store, G)
    con = store.cursor()
    # lines 368 (insert), 390 (issue), 436 (complete) of 254,0 sector 319470344 + 8, written by dd 23562
    got = con.execute(
        "SELECT line, dev, sector, nsect, rwbs, pid, comm, i_line, d_line, c_line, i2d_ns, d2c_ns FROM blk_requests"
        " WHERE sector = 319470344"
    ).fetchall()
    assert got == [(368, "254,0", 319470344, 8, "WS", 23562, "dd", 368, 390, 436, 6_000, 31_000)]
    assert con.execute("SELECT count(*), count(i_ns), count(d_ns), count(c_ns) FROM blk_requests").fetchall() == [
        (12, 11, 11, 12)
    ]
    # the dispatch summary reads them (no blktrace in the analysis)
    aid = con.execute("SELECT id FROM analyses").fetchall()[0][0]
    from backend.cache import AnalysisCache
    from backend.queries import requests

    groups = requests.dispatch_sql(con, AnalysisCache(), aid, "device")
    assert groups and groups[0]["count"] == 12
    # and the page shows its Dispatch tab: the analysis says the perf source's requests are the analysis' own
    from backend.queries import analyses

    assert [(s["format"], s["has_requests"]) for s in analyses.sources(con, aid)] == [("ftrace", True)]
    # a wait that ended at an I/O completion leads to the request that completed
    assert con.execute("SELECT count(*) FROM chain_links WHERE relation = 'io_completion'").fetchall()[0][0] > 0


def test_field_selections_give_the_same_tables():
    """-F comm,tid,cpu,time,event,trace,ip,sym (no offsets, no dso) is the same capture as the default output."""
    _, a = _parse(G.read_bytes())
    _, b = _parse(F_IP_SYM.read_bytes())
    assert a == b and a["sched_switch"] > 0 and a["blk_requests"] == 12
    # without -g: the same events, no stacks; --ns and pid/tid
    report, c = _parse(NO_G.read_bytes())
    _, d = _parse(F_NS.read_bytes())
    assert c == d and "kernel_stack" not in str(c)
    assert any("no call chains" in n for n in report.notes)


def test_chunks_do_not_change_the_result():
    data = G.read_bytes()
    whole = _parse(data)[1]
    for size in (4096, 10_000, 65_536):
        assert _parse(data, size)[1] == whole


def test_bad_input_named_with_its_line():
    data = G.read_bytes().split(b"\n")
    data[9] = b"dd 23562 [001]  4353.868132:      sched:sched_switch: prev_comm=dd what"
    report, _ = _parse(b"\n".join(data))
    assert report.examples[0].line == 10 and "sched_switch" in report.examples[0].reason
    with pytest.raises(ParseError) as e:
        _parse(b"hello\nworld\n")
    assert "line 1" in str(e.value) and "perf script" in str(e.value)
    with pytest.raises(ParseError, match="line 1"):
        _parse(b"\tffffffff821facd8 __schedule+0x618 ([kernel.kallsyms])\n" * 3)


def test_upload_of_garbage_after_a_header_is_refused_cleanly(store):
    with pytest.raises(Exception) as e:
        ingest_bytes(store, **{"x.txt": b"dd 1 [000] 1.000000: sched:sched_switch: nonsense\n"})
    assert "line 1" in str(e.value)


@pytest.mark.parametrize("seed", range(4))
def test_mutated_captures_never_crash(seed):
    rng = random.Random(seed)
    lines = [ln for p in (G, NO_G, F_IP_SYM) for ln in p.read_bytes().splitlines()]
    picked = [lines[rng.randrange(len(lines))] for _ in range(20000)]
    data = b"\n".join(mutate(ln, rng) if rng.random() < 0.3 else ln for ln in picked)
    report, rows = _parse(data, chunk_bytes=1 << 16)
    assert report.lines == 20000
    assert report.events + report.skipped <= report.lines
    assert report.events > 1000 and report.skipped > 100  # both paths were exercised
    assert all(e.reason for e in report.examples)


def test_aligned_with_a_blktrace_of_the_same_capture(store):
    """The fixture's block events written as the blkparse text a blktrace of the capture would give (its clock starting
    at 0): the perf source is placed on it by its block events, and Dispatch shows the blktrace's requests only."""
    import re

    ev = re.compile(
        r"^\s*(\S+)\s+(\d+)\s+\[(\d+)\]\s+(\d+)\.(\d+):\s+block:block_rq_(\w+): (\d+),(\d+) (\S+) .*?(\d+) \+ (\d+)"
    )
    t0, out = None, []
    for k, ln in enumerate(G.read_text().splitlines()):
        m = ev.match(ln)
        if not m:
            continue
        comm, pid, cpu, s, us, what, maj, mn, rwbs, sector, n = m.groups()
        t = int(s) * 1_000_000_000 + int(us.ljust(9, "0"))
        t0 = t if t0 is None else t0
        act = {"insert": "I", "issue": "D", "complete": "C"}[what]
        rel = t - t0 + 1_000  # blktrace's clock: from its own start
        tail = "[0]" if act == "C" else f"[{comm}]"
        out.append(
            f"{maj},{mn} {cpu} {k + 1} {rel // 10**9}.{rel % 10**9:09d} {pid} {act} {rwbs} {sector} + {n} {tail}"
        )
    blk = ("\n".join(out) + "\n").encode()
    ingest_bytes(store, **{"vda.blkparse.txt": blk, "capture.perf-script.txt": G.read_bytes()})
    con = store.cursor()
    rows = con.execute("SELECT format, clock_offset_ns, alignment FROM sources ORDER BY id").fetchall()
    assert [r[0] for r in rows] == ["blkparse", "ftrace"]
    assert rows[1][1] == -(t0 - 1_000) and '"block_events"' in rows[1][2]
    aid = con.execute("SELECT id FROM analyses").fetchall()[0][0]
    from backend.cache import AnalysisCache
    from backend.queries import requests

    (dev,) = requests.dispatch_sql(con, AnalysisCache(), aid, "device")
    blk_count = con.execute(
        "SELECT count(*) FROM blk_requests r JOIN sources s ON s.id = r.source_id WHERE s.format = 'blkparse'"
    ).fetchall()[0][0]
    assert dev["count"] == blk_count  # not the perf source's requests a second time
    from backend.queries import analyses

    assert [s["has_requests"] for s in analyses.sources(con, aid)] == [True, False]


def test_libtraceevent_plugin_form():
    """Older perf prints sched_switch / sched_wakeup through libtraceevent's plugin (`comm:pid [prio] S ==> ...`,
    `comm:pid [prio] success=1 CPU:001`), as `perf sched script` of a 3.x-4.x kernel does."""
    text = (
        b"            worker  4100 [001] 5000.000100:       sched:sched_switch: worker:4100 [120] D ==> swapper/1:0 [120]\n"
        b"           swapper     0 [001] 5000.000900:       sched:sched_wakeup: worker:4100 [120] success=1 CPU:001\n"
        b"           swapper     0 [001] 5000.000950:       sched:sched_switch: swapper/1:0 [120] R ==> worker:4100 [120]\n"
    )
    assert perf.sniff(text.decode().splitlines()) == 1.0
    report, rows = _parse(text)
    assert rows == {"sched_switch": 2, "sched_wakeup": 1} and report.skipped == 0
    batches = dict(perf.parse(io.BytesIO(text), ParseReport("t")))
    sw = batches["sched_switch"].to_pylist()[0]
    assert (sw["prev_comm"], sw["prev_pid"], sw["prev_state"], sw["next_pid"], sw["t_ns"]) == (
        "worker",
        4100,
        "D",
        0,
        5_000_000_100_000,
    )
    wk = batches["sched_wakeup"].to_pylist()[0]
    assert (wk["pid"], wk["comm"], wk["target_cpu"], wk["success"], wk["waker_pid"]) == (4100, "worker", 1, True, 0)
