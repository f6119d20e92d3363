"""What a capture can tell (GET /analyses/{id}/capabilities): the views with data, what is missing and the command
that adds it, lost events; and waits inferred from long sleeping calls in a function_graph capture without scheduler
events."""

from __future__ import annotations

from tests.conftest import PUBLIC, SAMPLES, ingest_bytes, ingest_paths, needs_public

FG = PUBLIC / "ftrace-funcgraph"


def caps(client, aid):
    r = client.get(f"/api/analyses/{aid}/capabilities")
    assert r.status_code == 200
    return r.json()


@needs_public
def test_function_graph_without_task_column(client, store):
    aid = ingest_paths(store, FG / "perf-tools-funcgraph-Htp-abstime-header.txt")["id"]
    c = caps(client, aid)
    views = {v["tab"]: v for v in c["views"]}
    # calls per CPU (derive/cpu_tasks.py): waits inferred from its long schedule() calls, a lane per CPU
    assert views["stalls"] == {
        "tab": "stalls",
        "state": "data",
        "summary": "5 waits (5 inferred from long sleeping calls), 5 with a stack",
    }
    assert views["timeline"]["summary"] == "calls per CPU (task unknown)"
    missing = {m["what"]: m for m in c["missing"]}
    assert "995 calls are kept per CPU, as 'CPU n (task unknown)'" in missing["calls per task"]["why"]
    assert missing["waits, who woke whom, runnable delay"]["capture"] == (
        "trace-cmd record -p function_graph -e sched_switch -e sched_wakeup -T"
    )
    assert "funcgraph-proc" in missing["calls per task"]["capture"]
    assert c["events"]["calls"] > 0 and c["events"]["calls_with_task"] == 0 and c["lost"] == []


@needs_public
def test_scheduler_events_only(client, store):
    aid = ingest_paths(store, PUBLIC / "trace-cmd-report" / "derived-elainecole-report-sched_switch.txt")["id"]
    c = caps(client, aid)
    views = {v["tab"]: v for v in c["views"]}
    assert views["stalls"] == {
        "tab": "stalls",
        "state": "data",
        "summary": "2585 waits (2585 from scheduler events), no stacks",
    }
    assert {m["what"] for m in c["missing"]} >= {"who woke whom", "the stacks of waits, and so their locks"}
    assert {m["capture"] for m in c["missing"]} >= {"trace-cmd record -e sched_switch -e sched_wakeup -T"}


@needs_public
def test_overrun_and_lost_markers(client, store):
    aid = ingest_paths(store, FG / "packt-lkd-pingreport-condensed-latency-overrun.txt")["id"]
    (lost,) = caps(client, aid)["lost"]
    assert lost["what"].startswith("the buffer overran: 116725 of 572368 events written were overwritten")
    assert lost["t0_ns"] is None and lost["t1_ns"] is not None
    text = (
        b"cpus=2\n"
        b"  a-1  [000] 1.000000: sched_switch: a:1 [120] S ==> b:2 [120]\n"
        b"CPU:0 [12 EVENTS DROPPED]\n"
        b"  b-2  [000] 1.500000: sched_switch: b:2 [120] S ==> a:1 [120]\n"
    )
    aid = ingest_bytes(store, **{"t.txt": text})["id"]
    (lost,) = caps(client, aid)["lost"]
    assert (lost["cpu"], lost["line"], lost["t1_ns"] - lost["t0_ns"]) == (0, 3, 500_000_000)
    assert "12 EVENTS DROPPED (line 3)" == lost["what"]


def test_every_view_of_the_demo(client, store):
    aid = ingest_paths(
        store,
        SAMPLES / "incident.trace-cmd-report.txt",
        SAMPLES / "incident.blkparse.txt",
        SAMPLES / "incident.offcputime.txt",
    )["id"]
    c = caps(client, aid)
    assert {v["tab"] for v in c["views"] if v["state"] == "data"} == {
        "stalls",
        "timeline",
        "dispatch",
        "offcpu",
        "sources",
    }
    assert not [m for m in c["missing"] if "block requests" in m["what"] or "off-CPU" in m["what"]]


FG_ONLY = b"""\
# tracer: function_graph
#
#     TIME        CPU  TASK/PID         DURATION                  FUNCTION CALLS
 100.000000 |   0)   cat-42    |               |  vfs_read() {
 100.000001 |   0)   cat-42    |               |    n_tty_read() {
 100.000002 |   0)   cat-42    |               |      schedule_timeout() {
 100.000003 |   0)   cat-42    |               |        schedule() {
 100.250003 |   0)   cat-42    | ! 250000.0 us |        }
 100.250004 |   0)   cat-42    | ! 250002.0 us |      }
 100.250005 |   0)   cat-42    | ! 250004.0 us |    }
 100.250006 |   0)   cat-42    | ! 250006.0 us |  }
"""


def test_function_graph_only_waits_are_inferred_from_sleeping_calls(client, store):
    aid = ingest_bytes(store, **{"fg.txt": FG_ONLY})["id"]
    (w,) = client.get(f"/api/analyses/{aid}/waits", params={"idle": True}).json()
    assert (w["pid"], w["comm"], w["kind"], w["inferred"], w["line"]) == (42, "cat", "call", True, 7)
    assert w["stack"] == ["vfs_read", "n_tty_read", "schedule_timeout", "schedule"]
    assert w["lock"] == "n_tty_read" and w["duration_ns"] == 250_000_000
    assert "inferred from the call schedule() (line 7)" in w["evidence"]
    views = {v["tab"]: v for v in caps(client, aid)["views"]}
    assert views["stalls"]["summary"] == "1 wait (1 inferred from long sleeping calls), 1 with a stack"


# the definition of a marker's range, as one correlated query (what capabilities._lost_ranges answers, in runs)
_LOST_REFERENCE = """
WITH s AS (SELECT id, filename, clock_offset_ns AS off FROM sources WHERE analysis_id = $aid AND format = 'ftrace'),
lost AS (
    SELECT e.source_id, e.line, e.cpu, e.text FROM trace_events e JOIN s ON s.id = e.source_id
    WHERE e.event = 'lost_events' ORDER BY e.source_id, e.line LIMIT 200
),
t AS (
    SELECT source_id, line, cpu, t_ns FROM sched_switch WHERE source_id IN (SELECT source_id FROM lost)
    UNION ALL SELECT source_id, line, cpu, t_ns FROM sched_wakeup WHERE source_id IN (SELECT source_id FROM lost)
    UNION ALL SELECT source_id, line, cpu, t_ns FROM trace_events
    WHERE source_id IN (SELECT source_id FROM lost) AND t_ns IS NOT NULL
    UNION ALL SELECT source_id, line, cpu, entry_ns FROM fg_call_rows
    WHERE source_id IN (SELECT source_id FROM lost) AND entry_ns IS NOT NULL
    UNION ALL SELECT source_id, exit_line, cpu, exit_ns FROM fg_call_rows
    WHERE source_id IN (SELECT source_id FROM lost) AND exit_ns IS NOT NULL
)
SELECT l.source_id, s.filename, l.line, l.cpu, l.text,
       (SELECT max(t_ns) FROM t WHERE t.source_id = l.source_id AND t.line < l.line
            AND (l.cpu IS NULL OR t.cpu = l.cpu)) + s.off AS t0,
       (SELECT min(t_ns) FROM t WHERE t.source_id = l.source_id AND t.line > l.line
            AND (l.cpu IS NULL OR t.cpu = l.cpu)) + s.off AS t1
FROM lost l JOIN s ON s.id = l.source_id ORDER BY l.source_id, l.line
"""


def test_lost_ranges_are_the_reference_querys(client, store):
    """Markers on several CPUs between calls, switches and wake-ups of others, one before any event of its CPU and
    one after the last: each range is what the correlated reference query gives."""
    text = [b"cpus=3"]
    t = 1_000_000
    for i in range(60):
        cpu = i % 3
        t += 7_000 + (i * 3_001) % 50_000
        s, us = divmod(t, 1_000_000)
        stamp = f"{s}.{us:06d}".encode()
        if i in (0, 17, 31, 44):  # markers: CPU 2 before its first event, then between others' lines
            text.append(f"CPU:{(i + 2) % 3} [{i + 5} EVENTS DROPPED]".encode())
        if i % 4 == 0:
            text.append(b"  a-1  [%03d] %s: sched_wakeup: comm=b pid=2 prio=120 target_cpu=%03d" % (cpu, stamp, cpu))
        elif i % 4 == 1:
            text.append(b"  a-1  [%03d] %s: funcgraph_entry:        |  do_sys_open() {" % (cpu, stamp))
        elif i % 4 == 2:
            text.append(b"  a-1  [%03d] %s: funcgraph_exit:       + 12.345 us   |  }" % (cpu, stamp))
        else:
            text.append(b"  a-1  [%03d] %s: sched_switch: a:1 [120] S ==> b:2 [120]" % (cpu, stamp))
    text.append(b"CPU:1 [3 EVENTS DROPPED]")  # after the last line
    aid = ingest_bytes(store, **{"t.txt": b"\n".join(text) + b"\n"})["id"]
    con = store.cursor()
    try:
        want = [
            {
                "source_id": r[0],
                "filename": r[1],
                "line": r[2],
                "cpu": r[3],
                "t0_ns": r[5],
                "t1_ns": r[6],
                "what": f"{r[4]} (line {r[2]})",
            }
            for r in con.execute(_LOST_REFERENCE, {"aid": aid}).fetchall()
        ]
    finally:
        con.close()
    got = caps(client, aid)["lost"]
    assert len(want) == 5 and got == want
    assert want[0]["t0_ns"] is None and want[-1]["t1_ns"] is None and all(w["t1_ns"] for w in want[:-1])
