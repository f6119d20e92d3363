"""function_graph captures without the task column (funcgraph-proc off): calls per CPU, as the pseudo-task "CPU n
(task unknown)" (derive/cpu_tasks.py), unless a context-switch marker names the task; the waits inferred from their
long sleeping calls, the timeline's lanes and the calls view, on real captures (perf-tools funcgraph examples)."""

from __future__ import annotations

from tests.conftest import PUBLIC, ingest_bytes, ingest_paths, needs_public

FG = PUBLIC / "ftrace-funcgraph"


@needs_public
def test_calls_per_cpu_make_waits_lanes_and_calls(client, store):
    aid = ingest_paths(store, FG / "perf-tools-funcgraph-Htp-abstime-header.txt")["id"]
    waits = client.get(f"/api/analyses/{aid}/waits", params={"idle": "true"}).json()
    # schedule() calls of 19.35 s (its entry before the first line), 207.9, 159.5, 136.1 and 127.5 ms: one wait each,
    # the innermost sleeping call (not schedule_timeout() around it), all of CPU 0's pseudo-task; the terminal reads
    # (n_tty_read) wait for input: idle, listed with idle=true only (backend/wait_kinds.py)
    assert {(w["line"], w["wait_kind"]) for w in waits if w["lock"] == "n_tty_read"} == {
        (222, "idle"),
        (480, "idle"),
        (739, "idle"),
        (999, "idle"),
    }
    assert sorted((w["line"], w["duration_ns"]) for w in waits) == [
        (158, 19_354_026_000),
        (222, 159_502_800),
        (480, 207_918_700),
        (739, 136_100_600),
        (999, 127_464_200),
    ]
    assert {(w["pid"], w["comm"], w["inferred"], w["kind"]) for w in waits} == {
        (-1, "CPU 0 (task unknown)", True, "call")
    }
    top = next(w for w in waits if w["line"] == 480)
    assert top["lock"] == "n_tty_read"
    assert top["stack"] == ["vfs_read", "tty_read", "n_tty_read", "schedule_timeout", "schedule"]
    assert top["evidence"].startswith("the task is unknown (the lines name none: funcgraph-proc off), this is CPU 0's")

    tl = client.get(f"/api/analyses/{aid}/timeline").json()
    assert tl["total_lanes"] >= 1
    assert [(lane["pid"], lane["label"]) for lane in tl["lanes"] if lane["kind"] == "task"] == [
        (-1, "CPU 0 (task unknown)")
    ]

    calls = client.get(f"/api/analyses/{aid}/calls", params={"pid": -1}).json()
    assert len(calls["calls"]) > 900 and {c["comm"] for c in calls["calls"]} == {"CPU 0 (task unknown)"}


@needs_public
def test_context_switch_marker_names_the_task(store):
    """default options (no abstime, no task column): the calls after ` 0)  platfor-3210 => vmstat-2854` are
    vmstat's, those still open at the marker platfor's (the tokenizer); the ones that returned before it stay CPU 0's
    pseudo-task's: the marker comes after them."""
    sid = ingest_paths(store, FG / "perf-tools-funcgraph-default-ctxswitch.txt")["sources"][0]["id"]
    con = store.cursor()
    try:
        rows = con.execute(
            "SELECT pid, comm, count(*), min(line), max(line) FROM fg_calls WHERE source_id = ? GROUP BY ALL"
            " ORDER BY pid",
            [sid],
        ).fetchall()
    finally:
        con.close()
    by_pid = {r[0]: r for r in rows}
    assert set(by_pid) == {-1, 2854, 3210}
    assert by_pid[-1][1] == "CPU 0 (task unknown)" and by_pid[-1][4] < 106  # all before the marker (line 106)
    assert by_pid[2854][1] == "vmstat" and by_pid[2854][3] > 106
    assert by_pid[3210][1] == "platfor"


def test_each_cpu_its_own_pseudo_task_and_no_cpu_no_task(store):
    text = (
        b"# tracer: function_graph\n"
        b"#\n"
        b" 100.000000 |   0)               |  schedule() {\n"
        b" 100.000100 |   1)   2.000 us    |  kfree();\n"
        b" 100.005000 |   0) # 5000.000 us |  }\n"
        b" 100.006000 |   1)   1.000 us    |  kfree();\n"
    )
    sid = ingest_bytes(store, **{"fg.txt": text})["sources"][0]["id"]
    con = store.cursor()
    try:
        calls = con.execute(
            "SELECT cpu, pid, comm, func FROM fg_calls WHERE source_id = ? ORDER BY line", [sid]
        ).fetchall()
        waits = con.execute("SELECT pid, comm, duration_ns FROM waits WHERE source_id = ?", [sid]).fetchall()
    finally:
        con.close()
    assert calls == [
        (0, -1, "CPU 0 (task unknown)", "schedule"),
        (1, -2, "CPU 1 (task unknown)", "kfree"),
        (1, -2, "CPU 1 (task unknown)", "kfree"),
    ]
    assert waits == [(-1, "CPU 0 (task unknown)", 5_000_000)]
