"""The function_graph reader on forms no shared sample holds (tracefs options, trace-cmd variants, refusals), on the
benchmark's generated trace, and on fuzzed lines; the real captures' goldens are test_funcgraph.py's."""

from __future__ import annotations

import io
import random
import sys
from pathlib import Path

import pytest

from parsers.common import ParseError
from tests.test_funcgraph import SAMPLE_FILES, SEED, call, parse_bytes, parse_text

# ------------------------------------------------------------------------------------------------ synthetic forms


def test_tracefs_options_and_special_lines():
    text = """\
# tracer: function_graph
#
# entries-in-buffer/entries-written: 10/12   #P:4
#     TIME        CPU  TASK/PID         DURATION                  FUNCTION CALLS
 100.000010 |   2)  app-77   |               |  outer() {
 100.000011 |   2)  app-77   |               |    inner() {
 100.000012 |   2)  app-77   |   ==========> |
 100.000012 |   2)  app-77   |   0.500 us    |      do_IRQ();
 100.000013 |   2)  app-77   |   <========== |
 ------------------------------------------
 2)  app-77  =>  kworke-9
 ------------------------------------------

 100.000020 |   2)  kworke-9 |   1.000 us    |  work();
 100.000030 |   2)  kworke-9 |               |  /* sched_switch: prev_comm=kworker/2:1 prev_pid=9 prev_prio=120 prev_state=D|K ==> next_comm=app next_pid=77 next_prio=120 */
CPU:3 [LOST 42 EVENTS]
 100.000100 |   3)  app-77   | @ 190.000 us  |    } /* inner */
 100.000101 |   3)  app-77   | $ 1000001 us  |  } /* outer */
 100.000102 |   3)  app-77   | * 12.000 us   |  }
 100.000103 |   3)  app-77   |               |  /* delay start */
 100.000104 |   3)  app-77   |   0.1 us      |  leaf(arg=1); /* ret=0x0 */
"""
    out, rep = parse_text(text)
    assert rep.skipped == 0
    assert "tracer: function_graph" in rep.notes and any("#P:4" in n for n in rep.notes)
    inner, outer = call(out, 6), call(out, 5)
    # migrated from CPU 2 to CPU 3 between entry and exit: same task stack
    assert (inner["cpu"], inner["exit_line"], inner["duration_ns"], inner["parent_line"], inner["depth"]) == (
        2,
        17,
        190000,
        5,
        1,
    )
    assert (outer["exit_line"], outer["duration_ns"], outer["exit_ns"], outer["entry_ns"]) == (
        18,
        1000001000,
        100000101000,
        100000010000,
    )
    assert (call(out, 8)["func"], call(out, 8)["parent_line"], call(out, 8)["depth"]) == ("do_IRQ", 6, 2)
    assert (call(out, 14)["pid"], call(out, 14)["func"]) == (9, "work")
    # '} ' with no open call left: exit-only partial at the root's level - 1
    x = call(out, 19)
    assert (x["partial"], x["func"], x["duration_ns"], x["entry_ns"], x["depth"]) == (
        True,
        None,
        12000,
        100000102000 - 12000,
        -1,
    )
    assert (call(out, 21)["func"], call(out, 21)["duration_ns"]) == ("leaf", 100)
    assert out["sched_switch"][0]["prev_state"] == "D|K" and out["sched_switch"][0]["prev_comm"] == "kworker/2:1"
    lost = [e for e in out["trace_events"] if e["event"] == "lost_events"][0]
    assert (lost["line"], lost["cpu"], lost["text"], lost["t_ns"]) == (16, 3, "LOST 42 EVENTS", None)
    com = [e for e in out["trace_events"] if e["event"] == "comment"][0]
    assert (com["text"], com["pid"], com["line"]) == ("delay start", 77, 20)


def test_trace_cmd_forms():
    text = """\
cpus=2
  V8 WorkerThread-1234  [000] d..2. 5.000001: funcgraph_entry:                   |  a() {
  V8 WorkerThread-1234  [000] d..2. 5.000002: funcgraph_entry:        0.250 us   |    b();
  V8 WorkerThread-1234  [000] d..2. 5.000003: sched_switch:         V8 WorkerThread:1234 [120] D ==> swapper/0:0 [120]
          <idle>-0     [001] 5.000004: sched_wakeup:         V8 WorkerThread:1234 [120] success=1 CPU:001
          <idle>-0     [001] 5.000004: sched_waking:         comm=V8 WorkerThread pid=1234 prio=120 target_cpu=001
  V8 WorkerThread-1234  [001] 5.000010: funcgraph_exit:       + 12.000 us   |  }
  V8 WorkerThread-1234  [001] 5.000011: print:                tracing_mark_write: hello: world
  V8 WorkerThread-1234  [001] 5.000012: block_rq_issue:       8,0 WS 4096 () 123456 + 8 be,0,4 [V8 WorkerThread]
  V8 WorkerThread-1234  [001] 5.000013: funcgraph_exit:       ! 200.000 us  |  }
  V8 WorkerThread-1234  [001] 5.000014: kernel_stack:         <stack trace >
=> a (ffffffff81000000)
=> b (ffffffff81000010)
  V8 WorkerThread-1234  [001] 5.000015: sched_switch:         prev_comm=V8 WorkerThread prev_pid=1234 prev_prio=120 prev_state=R+ ==> next_comm=x next_pid=5 next_prio=100
CPU:0 [12 EVENTS DROPPED]
  V8 WorkerThread-1234  [001] 5.000016: funcgraph_entry:                   |  c() {
"""
    out, rep = parse_text(text)
    assert rep.skipped == 0 and "trace-cmd report header: cpus=2" in rep.notes
    a = call(out, 2)
    assert (
        a["pid"],
        a["comm"],
        a["func"],
        a["cpu"],
        a["exit_line"],
        a["duration_ns"],
        a["entry_ns"],
        a["exit_ns"],
    ) == (1234, "V8 WorkerThread", "a", 0, 7, 12000, 5000001000, 5000010000)
    b = call(out, 3)
    assert (b["parent_line"], b["depth"], b["exit_ns"]) == (2, 1, 5000002250)
    x = call(out, 10)  # exit-only: entry unseen
    assert (x["partial"], x["entry_ns"], x["depth"], x["parent_line"]) == (True, 5000013000 - 200000, -1, None)
    c = call(out, 16)
    assert (c["partial"], c["exit_ns"], c["depth"]) == (True, None, -1)
    sw = out["sched_switch"]
    assert (sw[0]["prev_comm"], sw[0]["prev_state"], sw[0]["next_comm"], sw[0]["next_pid"]) == (
        "V8 WorkerThread",
        "D",
        "swapper/0",
        0,
    )
    assert (sw[1]["prev_state"], sw[1]["next_prio"]) == ("R+", 100)
    wk = out["sched_wakeup"]
    assert [(w["event"], w["comm"], w["pid"], w["target_cpu"], w["success"], w["waker_pid"]) for w in wk] == [
        ("sched_wakeup", "V8 WorkerThread", 1234, 1, True, 0),
        ("sched_waking", "V8 WorkerThread", 1234, 1, None, 0),
    ]
    ev = {e["event"]: e for e in out["trace_events"]}
    assert ev["print"]["text"] == "hello: world"
    assert ev["block_rq_issue"]["text"] == "8,0 WS 4096 () 123456 + 8 be,0,4 [V8 WorkerThread]"
    assert ev["kernel_stack"]["text"] == "<stack trace >\n=> a (ffffffff81000000)\n=> b (ffffffff81000010)"
    assert (ev["lost_events"]["cpu"], ev["lost_events"]["text"]) == (0, "12 EVENTS DROPPED")


def test_refusals_and_skips():
    with pytest.raises(ParseError):
        parse_text("")
    with pytest.raises(ParseError):
        parse_text("# tracer: nop\n#\n")
    with pytest.raises(ParseError):
        parse_text("hello world\nthis is not a trace\n")
    out, rep = parse_text("  a-1 [000] 1.000001: print: 00000000 x\nnonsense line\n=> orphan frame\n")
    assert rep.skipped == 2 and [e.line for e in rep.examples] == [2, 3]
    assert out["trace_events"][0]["text"] == "x"
    # invalid UTF-8 never reaches Arrow strings
    out, _ = parse_bytes(b"  a\xff-1 [000] 1.000001: foo: \xc3(bar\n")
    assert (out["trace_events"][0]["comm"], out["trace_events"][0]["text"]) == ("a?", "?(bar")


# ------------------------------------------------------------------------------------------------ generated trace


def _gen():
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bench.gen_funcgraph import generate

    return generate


def test_generated_trace_rebuilds_consistent_trees():
    buf = io.StringIO()
    n, open_calls = _gen()(buf, 30000, seed=7)
    out, rep = parse_text("cpus=8\n" + buf.getvalue(), chunk_bytes=1 << 16)
    assert rep.skipped == 0 and rep.lines == n + 1
    calls = out["fg_calls"]
    assert sum(c["partial"] for c in calls) == open_calls
    assert all(c["exit_line"] is None for c in calls if c["partial"])
    by_line = {c["line"]: c for c in calls}
    for c in calls:
        if c["parent_line"] is not None:
            p = by_line[c["parent_line"]]
            assert p["pid"] == c["pid"] and p["depth"] == c["depth"] - 1 and p["line"] < c["line"]
            if p["exit_line"] is not None and c["exit_line"] is not None:
                assert c["exit_line"] <= p["exit_line"]
        if not c["partial"] and c["exit_line"] != c["line"]:
            # printed duration (ns, from ns-exact times) vs the µs timestamps of entry and exit lines
            assert abs(c["duration_ns"] - (c["exit_ns"] - c["entry_ns"])) < 1000


def test_fuzzed_lines_never_break_the_scan():
    lines = []
    for p in SAMPLE_FILES[:6] + [SEED]:
        lines += p.read_bytes()[:40000].split(b"\n")
    rnd = random.Random(3)
    alphabet = b" \t|{}();:/*-=>[]0123456789.abcx+!#@$\xff"
    for _ in range(40):
        start = rnd.randrange(len(lines))
        chunk = []
        for ln in lines[start : start + 400]:
            r = rnd.random()
            if r < 0.25 and ln:
                ln = ln[: rnd.randrange(len(ln) + 1)]
            elif r < 0.5 and ln:
                i = rnd.randrange(len(ln))
                ln = ln[:i] + bytes([rnd.choice(alphabet)]) + ln[i + 1 :]
            elif r < 0.55:
                ln = bytes(rnd.choice(alphabet) for _ in range(rnd.randrange(80)))
            chunk.append(ln)
        try:
            parse_bytes(b"\n".join(chunk), chunk_bytes=1 << 14)
        except ParseError:
            pass
