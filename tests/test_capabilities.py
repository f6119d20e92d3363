"""What a capture can tell (GET /analyses/{id}/capabilities): the views with data, what is missing and the command
that adds it, lost events; and waits inferred from long sleeping calls in a function_graph capture without scheduler
events."""

from __future__ import annotations

from tests.conftest import PUBLIC, SAMPLES, ingest_bytes, ingest_paths

FG = PUBLIC / "ftrace-funcgraph"


def caps(client, aid):
    r = client.get(f"/api/analyses/{aid}/capabilities")
    assert r.status_code == 200
    return r.json()


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
