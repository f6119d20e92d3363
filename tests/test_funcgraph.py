"""The ftrace parser (parsers/funcgraph.py + parsers/_funcgraph.c): tracefs function_graph text, tracefs event
text and `trace-cmd report`, with call trees rebuilt per task.

Every value asserted below was checked by hand against the trace lines named next to it.
Golden summaries (tests/golden/funcgraph/*.json) are rewritten with UPDATE_GOLDEN=1; their counts were checked
as written in SAMPLE_CHECKS.
"""

from __future__ import annotations

import io
import json
import os
from collections import Counter
from pathlib import Path

import pytest

from parsers import detect, funcgraph
from parsers.common import ParseReport, head_lines
from tests.conftest import PUBLIC, SAMPLES, needs_public

SEED = SAMPLES / "xfs-unwritten-stall.trace-cmd-report.txt"
GOLDEN = Path(__file__).resolve().parent / "golden" / "funcgraph"
SAMPLE_FILES = sorted(  # none without ../shared
    [p for p in (PUBLIC / "ftrace-funcgraph").glob("*") if p.suffix in (".txt", ".log")]
    + [p for p in (PUBLIC / "trace-cmd-report").glob("*") if p.suffix in (".txt", ".log")]
)
US = 1000  # ns


def parse_bytes(data: bytes, chunk_bytes: int | None = None) -> tuple[dict[str, list[dict]], ParseReport]:
    report = ParseReport("t.txt")
    out: dict[str, list[dict]] = {t: [] for t in funcgraph.TABLES}
    kw = {"chunk_bytes": chunk_bytes} if chunk_bytes else {}
    for table, batch in funcgraph.parse(io.BytesIO(data), report, **kw):
        assert batch.schema.equals(funcgraph.TABLES[table])
        batch.validate(full=True)
        out[table] += batch.to_pylist()
    if not out["task_tgids"]:  # only a record-tgid capture has it
        del out["task_tgids"]
    names = {r["id"]: r["name"] for r in out.pop("fg_names")}
    assert sorted(names) == list(range(len(names)))  # ids 0..n-1: a call's func_id indexes the source's names
    # the calls as the fg_calls view shows them: with their names
    out["fg_calls"] = [
        {k: v for k, v in r.items() if not k.endswith("_id")}
        | {"comm": names.get(r["comm_id"]), "func": names.get(r["func_id"])}
        for r in out.pop("fg_call_rows")
    ]
    for rows in out.values():
        rows.sort(key=lambda r: (r["line"] if "line" in r else r["pid"], r.get("exit_line") or 0))  # task_tgids: by pid
    return out, report


def parse_text(text: str, **kw) -> tuple[dict[str, list[dict]], ParseReport]:
    return parse_bytes(text.encode(), **kw)


def parse_file(path: Path, **kw):
    return parse_bytes(path.read_bytes(), **kw)


def call(out: dict, line: int) -> dict:
    (row,) = [c for c in out["fg_calls"] if c["line"] == line]
    return row


# ------------------------------------------------------------------------------------------------ seed excerpt


def test_seed_excerpt_file_writer_stall():
    out, rep = parse_file(SEED)
    assert (rep.lines, rep.skipped) == (120, 0)
    assert {t: len(r) for t, r in out.items()} == {
        "fg_calls": 90,
        "sched_switch": 2,
        "sched_wakeup": 1,
        "trace_events": 1,
    }
    # lines 92-94: xfs_iomap() { xfs_ilock() { down_write() { at 358613.968921 by file_writer-30495 on CPU 13;
    # after the switch back (line 113) lines 114-116 are __math_state_restore(); finish_task_switch() { },
    # then the exits at lines 117 (316673.836 us), 118 (316675.180 us), 119 (316675.750 us) close, innermost
    # first, down_write, xfs_ilock, xfs_iomap.
    down_write, xfs_ilock, xfs_iomap = call(out, 94), call(out, 93), call(out, 92)
    assert down_write == {
        "line": 94,
        "pid": 30495,
        "comm": "file_writer",
        "cpu": 13,
        "depth": 10,
        "func": "down_write",
        "entry_ns": 358613968921000,
        "exit_ns": 358614285596000,
        "duration_ns": 316673836,
        "parent_line": 93,
        "partial": False,
        "exit_line": 117,
    }
    assert (xfs_ilock["func"], xfs_ilock["parent_line"], xfs_ilock["exit_line"], xfs_ilock["duration_ns"]) == (
        "xfs_ilock",
        92,
        118,
        316675180,
    )
    assert (xfs_iomap["func"], xfs_iomap["parent_line"], xfs_iomap["exit_line"], xfs_iomap["duration_ns"]) == (
        "xfs_iomap",
        91,
        119,
        316675750,
    )
    assert xfs_iomap["entry_ns"] == 358613968921000 and xfs_iomap["exit_ns"] == 358614285597000
    # the two calls made after the wake-up nest under down_write (its open frame at that time)
    assert (call(out, 114)["func"], call(out, 114)["parent_line"], call(out, 114)["duration_ns"]) == (
        "__math_state_restore",
        94,
        575,
    )
    assert (call(out, 115)["func"], call(out, 115)["exit_line"], call(out, 115)["duration_ns"]) == (
        "finish_task_switch",
        116,
        698,
    )
    # line 120: xfs_bmapi() { still open at the end, under __xfs_get_blocks (line 91)
    assert call(out, 120) | {} == {
        "line": 120,
        "pid": 30495,
        "comm": "file_writer",
        "cpu": 13,
        "depth": 8,
        "func": "xfs_bmapi",
        "entry_ns": 358614285597000,
        "exit_ns": None,
        "duration_ns": None,
        "parent_line": 91,
        "partial": True,
        "exit_line": None,
    }
    # the chain of file_writer's open calls from line 91 down to the root handle_mm_fault (line 77)
    chain, line = [], 91
    while line is not None:
        c = call(out, line)
        chain.append(c["func"])
        line = c["parent_line"]
    assert chain == [
        "__xfs_get_blocks",
        "xfs_get_blocks",
        "__block_prepare_write",
        "block_prepare_write",
        "block_page_mkwrite",
        "xfs_vm_page_mkwrite",
        "__do_fault",
        "handle_mm_fault",
    ]


def test_seed_excerpt_other_tasks_and_events():
    out, rep = parse_file(SEED)
    # xfsconvertd/7-251: lines 60-61 xfs_buf_lock() { down() { never return in the excerpt: open calls
    down = call(out, 61)
    assert (
        down["func"],
        down["pid"],
        down["comm"],
        down["cpu"],
        down["parent_line"],
        down["partial"],
        down["exit_ns"],
        down["entry_ns"],
    ) == ("down", 251, "xfsconvertd/7", 7, 60, True, None, 358613942886000)
    # flush-8:0-505 (comm with '-' and ':'): line 72 down_read() { open, under xfs_ilock (71)
    assert (call(out, 72)["func"], call(out, 72)["pid"], call(out, 72)["comm"], call(out, 72)["parent_line"]) == (
        "down_read",
        505,
        "flush-8:0",
        71,
    )
    # xfslogd/7-219, line 98: "! 385801.165 us | }" with no entry in the excerpt -> an exit-only partial call,
    # entry_ns = 358614.285353 s - 385801.165 us
    x = call(out, 98)
    assert (x["pid"], x["func"], x["partial"], x["exit_ns"], x["duration_ns"], x["entry_ns"], x["parent_line"]) == (
        219,
        None,
        True,
        358614285353000,
        385801165,
        358614285353000 - 385801165,
        None,
    )
    # line 111: up() { open when the excerpt ends, under xfs_buf_unlock (line 110)
    assert (call(out, 111)["func"], call(out, 111)["parent_line"], call(out, 111)["partial"]) == ("up", 110, True)
    # line 73: print: 00000000 delay start
    assert out["trace_events"] == [
        {
            "line": 73,
            "t_ns": 358613968909000,
            "cpu": 13,
            "pid": 30495,
            "comm": "file_writer",
            "event": "print",
            "text": "delay start",
        }
    ]
    # line 95: old form "task file_reader:31161 [89] (S) ==> xfslogd/7:219 [120]"; line 113 swapper (R)
    assert out["sched_switch"][0] == {
        "line": 95,
        "t_ns": 358614285351000,
        "cpu": 7,
        "prev_comm": "file_reader",
        "prev_pid": 31161,
        "prev_prio": 89,
        "prev_state": "S",
        "next_comm": "xfslogd/7",
        "next_pid": 219,
        "next_prio": 120,
    }
    assert (
        out["sched_switch"][1]["prev_comm"],
        out["sched_switch"][1]["prev_state"],
        out["sched_switch"][1]["next_pid"],
        out["sched_switch"][1]["next_prio"],
    ) == ("swapper", "R", 30495, 79)
    # line 112: "task xfsconvertd/7:251 [120] success=1 [007]" printed by xfslogd/7-219
    assert out["sched_wakeup"] == [
        {
            "line": 112,
            "t_ns": 358614285381000,
            "cpu": 7,
            "event": "sched_wakeup",
            "waker_pid": 219,
            "waker_comm": "xfslogd/7",
            "pid": 251,
            "comm": "xfsconvertd/7",
            "prio": 120,
            "target_cpu": 7,
            "success": True,
        }
    ]
    assert any("trace-cmd report" in n for n in rep.notes)


# ------------------------------------------------------------------------------------------------ public samples


def summary(path: Path) -> dict:
    out, rep = parse_file(path)
    calls = out["fg_calls"]
    return {
        "lines": rep.lines,
        "skipped": rep.skipped,
        "rows": {t: len(r) for t, r in out.items()},
        "fg_partial": sum(c["partial"] for c in calls),
        "fg_exit_only": sum(c["entry_ns"] is None and c["exit_line"] == c["line"] and c["partial"] for c in calls),
        "fg_open": sum(c["exit_line"] is None for c in calls),
        "fg_pids": len({c["pid"] for c in calls}),
        "events": dict(sorted(Counter(e["event"] for e in out["trace_events"]).items())),
        "notes": rep.notes,
    }


@needs_public
@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.name)
def test_sample_golden(path):
    got = summary(path)
    gold = GOLDEN / (path.name + ".json")
    if os.environ.get("UPDATE_GOLDEN"):
        gold.parent.mkdir(parents=True, exist_ok=True)
        gold.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    assert got == json.loads(gold.read_text())


# What was checked by hand in each golden file (grep/wc on the sample), and spot values per file.
SAMPLE_CHECKS = {
    # 3031 lines = 16 '#' header + 3015 graph lines; no skip; one call still open at the end
    "packt-lkd-ping-funcgraph-latency-format.txt": dict(lines=3031, skipped=0, rows={"fg_calls": 1987}),
    # 655 lines: 16 header, 2 ctx-switch blocks of 4 lines (grep -c " => "); 611 '/* */' comment lines (grep '/\*' | grep -vc '} /\*'),
    # 560 without an 'event_name: ' prefix (syscalls), 51 named events (consume_skb, napi_poll, ...)
    "packt-lkd-ping-funcgraph-latency-with-syscall-events.txt": dict(
        lines=655, skipped=0, rows={"fg_calls": 15, "trace_events": 611}
    ),
    # the hand-inserted '[ ... <truncated> ... ]' (line 20) is the only skipped line
    "packt-lkd-pingreport-condensed-latency-overrun.txt": dict(lines=3481, skipped=1),
    # 320 lines, 4 header + 4 lines of one ctx block: 312 graph lines, none skipped
    "pengdonglin137-funcgraph-args-retaddr-retval-6x.txt": dict(lines=320, skipped=0),
    # 13900 event lines: 1742 sched_switch (grep -c), 1832 sched_wakeup/waking/wakeup_new, the rest other events; the
    # tasks of the "comm-pid (tgid) [cpu]" prefixes: 38 (grep -oE -- '-[0-9]+ +\( *[0-9]+\) +\[' | sort -u; idle's
    # "(-------)" has none)
    "langraph-tracefs-events-record-tgid.log": dict(
        lines=13900,
        skipped=0,
        rows={"sched_switch": 1742, "sched_wakeup": 1832, "trace_events": 10326, "fg_calls": 0, "task_tgids": 38},
    ),
    # 150 lines - 11 header = 139 events: 82 sched_switch + 57 sched_wakeup (grep -c)
    "tracecompass-tracefs-nop-events-android-sched.txt": dict(
        lines=150, skipped=0, rows={"sched_switch": 82, "sched_wakeup": 57}
    ),
    # 155 - 9 header = 146: 28 switch, 24 waking+wakeup, 94 irq/softirq/hrtimer/... events
    "tracecompass-tracefs-nop-events-critical-path.txt": dict(
        lines=155, skipped=0, rows={"sched_switch": 28, "sched_wakeup": 24, "trace_events": 94}
    ),
    # 4428 lines = cpus=4 + 4427 sched_switch lines (grep -c 'sched_switch:' = 4427)
    "derived-elainecole-report-sched_switch.txt": dict(lines=4428, skipped=0, rows={"sched_switch": 4427}),
    # 20700 kernel_stack events (their '=> ...' lines folded), 5595 x3 softirq, 267 x2 irq; 2255 switch, 1126 waking
    "derived-langraph-report-sched-softirq-kstack.txt": dict(
        lines=335333, skipped=0, rows={"sched_switch": 2255, "sched_wakeup": 1126, "trace_events": 38019}
    ),
    # 199 raw funcgraph events: 113 calls
    "tracecompass-trace-func-graph-raw-fields.txt": dict(lines=200, skipped=0, rows={"fg_calls": 113}),
    # 26 lines, last one without newline; 2 calls, 2 switch + 2 wakeup + 4 other as /* */ comments
    "wikibook-rpi-funcgraph-irq-events-6.5.3.txt": dict(
        skipped=0, rows={"fg_calls": 2, "sched_switch": 2, "sched_wakeup": 2, "trace_events": 4}
    ),
    # prose lines of the doc file are skipped (96 of them)
    "perf-tools-funcgraph_example.txt": dict(lines=2178, skipped=96),
    "perf-tools-funcgraph-default-ctxswitch.txt": dict(lines=120, skipped=0, rows={"fg_calls": 86}),
    "perf-tools-funcgraph-Htp-abstime-header.txt": dict(lines=1366, skipped=0),
    "perf-tools-funcgraph-Ctp-oncpu-abstime.txt": dict(lines=520, skipped=0),
}


@needs_public
@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.name)
def test_sample_hand_checked_counts(path):
    checks = SAMPLE_CHECKS[path.name]
    gold = json.loads((GOLDEN / (path.name + ".json")).read_text())
    for key, want in checks.items():
        if key == "rows":
            for table, n in want.items():
                assert gold["rows"][table] == n, (table, gold["rows"])
        else:
            assert gold[key] == want, key


@needs_public
def test_record_tgid_thread_groups():
    """The record-tgid prefix "comm-pid (tgid)" gives each task's process: kernelshark's threads are in its group,
    a single-threaded task is its own; a file without the prefix has no task_tgids."""
    out, _ = parse_file(PUBLIC / "ftrace-funcgraph" / "langraph-tracefs-events-record-tgid.log")
    tgid = {r["pid"]: r["tgid"] for r in out["task_tgids"]}
    assert tgid[154961] == 154961 and tgid[154962] == tgid[154977] == 154961  # kernelshark and two of its threads
    assert tgid[148213] == 148213  # bash
    assert sum(1 for p, g in tgid.items() if g == 154961 and p != g) >= 10
    out, _ = parse_file(PUBLIC / "trace-cmd-report" / "derived-elainecole-report-sched_switch.txt")
    assert "task_tgids" not in out


@needs_public
def test_sample_spot_values():
    P = PUBLIC / "ftrace-funcgraph"
    # abstime + proc + latency flags: line 18 ext4_bread_batch() { closed by line 21 '} /* ext4_bread_batch */'
    out, rep = parse_file(P / "packt-lkd-ping-funcgraph-latency-format.txt")
    c = call(out, 18)
    assert (
        c["pid"],
        c["comm"],
        c["cpu"],
        c["func"],
        c["entry_ns"],
        c["exit_ns"],
        c["duration_ns"],
        c["exit_line"],
        c["depth"],
    ) == (1556, "ping", 1, "ext4_bread_batch", 384905617000, 384905625000, 9156, 21, 0)
    assert (call(out, 19)["func"], call(out, 19)["parent_line"], call(out, 19)["duration_ns"]) == (
        "_raw_read_lock",
        18,
        913,
    )
    assert "tracer: function_graph" in rep.notes
    # ksoftirqd switched in (ctx block lines 25-27); module suffix kept in the name
    out, _ = parse_file(P / "packt-lkd-ping-funcgraph-latency-with-syscall-events.txt")
    c = call(out, 29)
    assert (c["pid"], c["comm"], c["func"], c["exit_line"], c["duration_ns"]) == (
        21,
        "ksoftir",
        "e1000_clean [e1000]",
        33,
        35582,
    )
    ev = [e for e in out["trace_events"] if e["line"] == 18][0]
    assert (ev["event"], ev["pid"], ev["text"]) == (
        "comment",
        1922,
        "sys_execve(filename: 7ffdf95b78d0, argv: 7ffdf95b7b38, envp: 7ffdf95b7b58)",
    )
    # the idle task's leaf at line 27 of the overrun file: pid 0 from the proc column
    out, rep = parse_file(P / "packt-lkd-pingreport-condensed-latency-overrun.txt")
    c = call(out, 27)
    assert (c["pid"], c["comm"], c["func"], c["duration_ns"]) == (0, "<idle>", "finish_task_switch", 744)
    assert rep.examples[0].line == 20 and rep.examples[0].text == "[ ... <truncated> ... ]"
    # no proc column: lines 1.. belong to platfor-3210 (from the ctx marker at line 106); the open calls of the
    # first part are handed to 3210, vmstat-2854 owns the lines after the marker
    out, _ = parse_file(P / "perf-tools-funcgraph-default-ctxswitch.txt")
    assert (call(out, 1)["pid"], call(out, 1)["comm"], call(out, 1)["func"], call(out, 1)["partial"]) == (
        3210,
        "platfor",
        "do_nanosleep",
        True,
    )
    assert (call(out, 109)["pid"], call(out, 109)["comm"], call(out, 109)["func"]) == (2854, "vmstat", "do_nanosleep")
    c = call(out, 5)  # " 0)   0.198 us    |          _raw_spin_lock_irqsave();" closed before the marker
    assert (c["pid"], c["cpu"], c["duration_ns"], c["depth"], c["parent_line"], c["entry_ns"]) == (
        None,
        0,
        198,
        4,
        4,
        None,
    )
    # abstime without proc: line 157 '19354026 us |  } /* __schedule */' exits a call entered before the trace
    out, _ = parse_file(P / "perf-tools-funcgraph-Htp-abstime-header.txt")
    c = call(out, 157)
    assert (c["func"], c["partial"], c["duration_ns"], c["exit_ns"], c["entry_ns"], c["depth"]) == (
        "__schedule",
        True,
        19354026000,
        7238523638066000,
        7238523638066000 - 19354026000,
        5,
    )
    # line 208 '} /* ldsem_down_read */' under tty_ldisc_ref_wait() { (207): its entry was lost -> a child
    c = call(out, 208)
    assert (c["func"], c["partial"], c["parent_line"], c["duration_ns"]) == ("ldsem_down_read", True, 207, 80)
    assert call(out, 207)["exit_line"] == 209
    # funcgraph-args/retaddr/retval: names without args, tail with ret= matched
    out, _ = parse_file(P / "pengdonglin137-funcgraph-args-retaddr-retval-6x.txt")
    c = call(out, 15)
    assert (c["func"], c["exit_line"], c["duration_ns"], c["parent_line"]) == ("rcu_rdp_cpu_online.isra.0", 17, 225, 14)
    c = call(out, 13)  # rcu_read_lock_held_common(ret=0x...) { ... line 19 '} /* ... ret=false */'
    assert (c["func"], c["exit_line"], c["duration_ns"]) == ("rcu_read_lock_held_common", 19, 527)
    assert (call(out, 5)["func"], call(out, 5)["exit_line"], call(out, 5)["duration_ns"]) == (
        "pick_next_task",
        38,
        3977,
    )
    # events as /* */ comments inside the graph, wikibook file
    out, _ = parse_file(P / "wikibook-rpi-funcgraph-irq-events-6.5.3.txt")
    assert out["sched_switch"][0] | {} == {
        "line": 13,
        "t_ns": None,
        "cpu": 3,
        "prev_comm": "chromium-browse",
        "prev_pid": 919,
        "prev_prio": 120,
        "prev_state": "R",
        "next_comm": "kworker/3:1",
        "next_pid": 32,
        "next_prio": 120,
    }
    assert (out["sched_wakeup"][1]["waker_pid"], out["sched_wakeup"][1]["comm"], out["sched_wakeup"][1]["pid"]) == (
        32,
        "irq/17-3f00b880",
        33,
    )
    assert (call(out, 24)["pid"], call(out, 24)["func"], call(out, 24)["duration_ns"], call(out, 24)["exit_line"]) == (
        33,
        "bcm2835_mbox_threaded_irq",
        153437,
        27,
    )
    # tracefs event text: comm with a space, new-form fields
    out, _ = parse_file(P / "tracecompass-tracefs-nop-events-critical-path.txt")
    s = [r for r in out["sched_switch"] if r["line"] == 21][0]
    assert (s["prev_comm"], s["prev_pid"], s["prev_state"], s["next_comm"], s["next_pid"], s["cpu"]) == (
        "Web Content",
        2711,
        "S",
        "CompositorTileW",
        3490,
        3,
    )
    w = [r for r in out["sched_wakeup"] if r["line"] == 11][0]
    assert (w["event"], w["waker_comm"], w["waker_pid"], w["comm"], w["pid"], w["target_cpu"], w["success"]) == (
        "sched_waking",
        "Web Content",
        2711,
        "Timer",
        2745,
        1,
        None,
    )
    # record-tgid column and the unknown comm '<...>'
    out, _ = parse_file(P / "langraph-tracefs-events-record-tgid.log")
    e = [r for r in out["trace_events"] if r["line"] == 6][0]
    assert (e["comm"], e["pid"], e["cpu"], e["t_ns"], e["event"], e["text"]) == (
        "<...>",
        154961,
        0,
        27155732215000,
        "softirq_raise",
        "vec=1 [action=TIMER]",
    )
    assert Counter(r["prev_state"] for r in out["sched_switch"])["R+"] == 11
    # android: success=1 in the key=value form
    out, _ = parse_file(P / "tracecompass-tracefs-nop-events-android-sched.txt")
    assert (out["sched_wakeup"][0]["success"], out["sched_wakeup"][0]["comm"], out["sched_wakeup"][0]["pid"]) == (
        True,
        "rcu_preempt",
        8,
    )

    T = PUBLIC / "trace-cmd-report"
    # plugin form with a comm holding spaces and colons: "in:imklog:352 [120] S ==> rs:main Q:Reg:354 [120]"
    out, _ = parse_file(T / "derived-elainecole-report-sched_switch.txt")
    s = [r for r in out["sched_switch"] if r["line"] == 483][0]
    assert (s["prev_comm"], s["prev_pid"], s["prev_state"], s["next_comm"], s["next_pid"], s["next_prio"]) == (
        "in:imklog",
        352,
        "S",
        "rs:main Q:Reg",
        354,
        120,
    )
    # kernel_stack at line 3 with its 22 '=> frame' lines (4-25) folded into the text
    out, _ = parse_file(T / "derived-langraph-report-sched-softirq-kstack.txt")
    k = [e for e in out["trace_events"] if e["line"] == 3][0]
    frames = k["text"].split("\n")
    assert (k["event"], k["pid"], len(frames), frames[0], frames[1], frames[-1]) == (
        "kernel_stack",
        86689,
        23,
        "<stack trace >",
        "=> try_to_wake_up (ffffffffa8902e5f)",
        "=> entry_SYSCALL_64_after_hwframe (ffffffffa9600099)",
    )
    s = [r for r in out["sched_switch"] if r["line"] == 280808][0]
    assert (s["prev_comm"], s["prev_state"], s["next_comm"], s["next_pid"]) == ("gnome-shell", "R", "JS Helper", 3832)
    # the last event's stack runs to the end of the file
    assert out["trace_events"][-1]["text"].endswith("=> secondary_startup_64_no_verify (ffffffffa8800107)")
    # raw fields: line 5 entry depth=1 closed at line 6, duration rettime-calltime = 0xa9a8c8a5299-0xa9a8c8a5227
    out, _ = parse_file(T / "tracecompass-trace-func-graph-raw-fields.txt")
    c = call(out, 5)
    assert (c["func"], c["pid"], c["depth"], c["parent_line"], c["exit_line"], c["duration_ns"]) == (
        "0xffffffffbaac16a0",
        11810,
        1,
        3,
        6,
        0x72,
    )


@pytest.mark.parametrize(
    "path",
    [
        SEED,
        *(
            pytest.param(p, marks=needs_public)
            for p in (
                PUBLIC / "trace-cmd-report" / "derived-langraph-report-sched-softirq-kstack.txt",
                PUBLIC / "ftrace-funcgraph" / "perf-tools-funcgraph-default-ctxswitch.txt",
                PUBLIC / "ftrace-funcgraph" / "packt-lkd-pingreport-condensed-latency-overrun.txt",
            )
        ),
    ],
    ids=lambda p: p.name,
)
def test_chunking_does_not_change_results(path):
    """Stacks, the current task per CPU and pending stack events live across chunks."""
    whole, rep1 = parse_file(path)
    small, rep2 = parse_file(path, chunk_bytes=1 << 12)
    assert whole == small
    assert (rep1.lines, rep1.skipped, rep1.events) == (rep2.lines, rep2.skipped, rep2.events)


@needs_public
def test_chunk_tokenized_in_two_threads_same_as_in_one():
    """A chunk of 1 MiB or more is parsed by two threads (its tail's function_graph lines tokenized ahead, in a
    second one; every other line parsed in the fold): the tables and the report are the same as with chunks parsed by
    one. Here one stream holds every sample's forms one after another (tracefs text with and without tasks,
    context-switch markers, trace-cmd events, raw fields, headers), then a generated trace-cmd report (bench/) with
    a kernel stack event (a sample's) after every 37th line: stack frames then a function_graph line, in tails."""
    from bench.gen_funcgraph import generate

    once = b"".join(p.read_bytes() for p in [*SAMPLE_FILES, SEED] if "langraph" not in p.name)  # 1.6 MB
    kstack = "".join(
        (PUBLIC / "trace-cmd-report" / "derived-langraph-report-sched-softirq-kstack.txt")
        .read_text()
        .splitlines(keepends=True)[2:25]
    )  # "... kernel_stack: <stack trace >", 22 frames
    out = io.StringIO()
    generate(out, 40000, seed=3)
    lines = out.getvalue().splitlines(keepends=True)
    # a stack's frames end at the next line: a frame line after the function_graph line that follows them is an orphan
    generated = "".join(
        ln + (kstack if i % 37 == 36 else "") + ("=> orphan (0)\n" if i % 37 == 0 < i else "")
        for i, ln in enumerate(lines)
    ).encode()
    text = once * 2 + generated
    one, rep1 = parse_bytes(text, chunk_bytes=512 << 10)
    two, rep2 = parse_bytes(text, chunk_bytes=(1 << 20) + (100 << 10))
    assert one == two
    # (the header notes come from the first header lines of each chunk: with other chunks, in another order)
    assert {**rep1.as_dict(), "notes": sorted(rep1.notes)} == {**rep2.as_dict(), "notes": sorted(rep2.notes)}
    assert {t: len(rows) for t, rows in one.items()} == {
        "fg_calls": 33584,
        "sched_switch": 9249,
        "sched_wakeup": 335,
        "trace_events": 4038,
    }
    assert (rep1.lines, rep1.skipped) == (99530, 980)
    # without a header, the event lines without a latency flags column (all of them) tell a trace-cmd report
    assert (
        "ftrace form: trace-cmd report (31136 event lines)" in parse_bytes(generated, (1 << 20) + (100 << 10))[1].notes
    )


def test_detect_picks_ftrace():
    for p in SAMPLE_FILES + [SEED]:
        assert detect.detect(p.read_bytes()[:65536], p.name).FORMAT == "ftrace", p
    for p in (SAMPLES / "cfq-dispatch-starvation.blkparse.txt", SAMPLES / "xfs-open-stall.offcputime.txt"):
        assert funcgraph.sniff(head_lines(p.read_bytes())) < 0.3


def test_stack_texts_are_stored_as_zstd(store):
    """trace_events.text (the events' texts; a `-T` capture's stacks are most of them) is stored with zstd
    (funcgraph.COMPRESSION), not DuckDB's choice: its rows as the parser gave them."""
    from tests.conftest import ingest_paths

    path = SAMPLES / "incident.trace-cmd-report.txt"
    ingest_paths(store, path)
    con = store.cursor()
    try:
        con.execute("CHECKPOINT")
        methods = con.execute(
            "SELECT DISTINCT compression FROM pragma_storage_info('trace_events') WHERE column_name = 'text'"
            " AND segment_type = 'VARCHAR'"
        ).fetchall()
        stored = con.execute("SELECT line, text FROM trace_events ORDER BY line").fetchall()
    finally:
        con.close()
    assert methods == [("ZSTD",)]
    parsed = []
    with open(path, "rb") as f:
        for table, batch in funcgraph.parse(f, ParseReport(path.name)):
            if table == "trace_events":
                parsed += [(r["line"], r["text"]) for r in batch.select(["line", "text"]).to_pylist()]
    assert stored == sorted(parsed) and len(stored) > 1000
