"""The timeline (backend/derive/timeline.py, backend/queries/timeline/): task states derived at ingest, lanes, per-pixel aggregation,
arrows of the chains, and the bounds that keep a big analysis drawable."""

from __future__ import annotations

import bisect

import pytest

from backend.api import timeline as models
from backend.derive import cpus, timeline
from backend.queries.timeline.lanes import lane_id, lane_key
from backend.schema.tables import MAX_CALL_DEPTH, TRACKS
from tests.conftest import PUBLIC, SAMPLES, ingest_paths, needs_public

EXT4 = SAMPLES / "ext4-jbd2-commit.trace-cmd-report.txt"
EXT4_BLK = SAMPLES / "ext4-jbd2-commit.blkparse.txt"
DEMO = SAMPLES / "demo-cfq-starvation.blkparse.txt"
# the waits' columns summarize reads (the waits' summary the derivation hands it)
WAIT_COLUMNS = "source_id, pid, comm, start_ns, end_ns, lock_key, lock, line"
OFFCPU = SAMPLES / "xfs-open-stall.offcputime.txt"


def _lane(t, lane_id):
    """The lane, with its items decoded from columns (as the frontend does) into `segments`."""
    lane = next(lane for lane in t["lanes"] if lane["id"] == lane_id)
    return {**lane, "segments": _items(t, lane)}


def _items(t, lane):
    c = lane["segs"]
    return [
        {
            "track": t["tracks"][c["track"][i]],
            "state": c["states"][c["state"][i]],
            "t0_ns": t["t0_ns"] + c["t0"][i],
            "t1_ns": t["t0_ns"] + c["t1"][i],
            "n": c["n"][i],
            "max_ns": c["max"][i],
            "source_id": lane["source_id"],
            "line": c["line"][i],
            "depth": c["depth"][i],
        }
        for i in range(len(c["t0"]))
    ]


def test_task_slices_from_the_scheduler(store):
    aid = ingest_paths(store, EXT4)["id"]
    con = store.cursor()
    try:
        rows = con.execute(
            "SELECT state, start_ns, end_ns, line, end_known FROM task_slices t JOIN sources s ON s.id = t.source_id"
            " WHERE s.analysis_id = ? AND pid = 4242 ORDER BY start_ns, line",
            [aid],
        ).fetchall()
    finally:
        con.close()
    # postgres: switched out D at line 45, woken at line 120, back on CPU at line 127 until the trace ends
    assert rows == [
        ("blocked", 7341201620000, 7341214885000, 45, True),
        ("runnable", 7341214885000, 7341214888000, 120, True),
        ("running", 7341214888000, 7341214904000, 127, False),
    ]


def test_cpu_tracks_from_the_scheduler_switches(store, client):
    """A CPU runs each switch's next task until the following switch on that CPU (else the trace's end); idle (pid 0)
    is kept in cpu_slices and not drawn. Zoomed in (raw rows) each slice is drawn as it is, named by its comm."""
    aid = ingest_paths(store, EXT4)["id"]
    (ft,) = client.get(f"/api/analyses/{aid}").json()["sources"]
    con = store.cursor()
    try:
        slices = con.execute(
            "SELECT cpu, pid, comm, start_ns, end_ns, line, end_known FROM cpu_slices ORDER BY cpu, start_ns"
        ).fetchall()
    finally:
        con.close()
    assert slices == [
        (1, 0, "swapper/1", 7341201620000, 7341214888000, 45, True),
        (1, 4242, "postgres", 7341214888000, 7341214908000, 127, False),
        (2, 0, "swapper/2", 7341204028000, 7341214890000, 61, True),
        (2, 4251, "postgres", 7341214890000, 7341214908000, 130, False),
        (3, 0, "swapper/3", 7341201500000, 7341214878000, 30, True),
        (3, 312, "jbd2/sda1-8", 7341214878000, 7341214904000, 105, True),
        (3, 0, "swapper/3", 7341214904000, 7341214908000, 160, False),
    ]
    t = client.get(f"/api/analyses/{aid}/timeline", params={"width_px": 4000, "max_lanes": 200}).json()
    assert t["bucket_ns"] < 20000
    cpu3 = _lane(t, f"cpu:{ft['id']}:3")
    assert (cpu3["kind"], cpu3["label"], cpu3["dev"], cpu3["pid"]) == ("cpu", "CPU 3", "3", None)
    assert [(s["track"], s["state"], s["t0_ns"], s["t1_ns"], s["line"]) for s in cpu3["segments"]] == [
        ("state", "jbd2/sda1-8", 7341214878000, 7341214904000, 105)
    ]
    assert [i for i in (x["id"] for x in t["lanes"]) if i.startswith("cpu:")] == [
        f"cpu:{ft['id']}:{n}" for n in (1, 2, 3)
    ]


@needs_public
def test_task_lanes_carry_their_process_when_the_capture_recorded_it(store, client):
    """record-tgid: each task lane says its thread group (the frontend nests threads under their process); a capture
    without it has none."""
    aid = ingest_paths(store, PUBLIC / "ftrace-funcgraph" / "langraph-tracefs-events-record-tgid.log")["id"]
    t = client.get(f"/api/analyses/{aid}/timeline", params={"max_lanes": 200}).json()
    tgid = {lane["pid"]: lane["tgid"] for lane in t["lanes"] if lane["kind"] == "task"}
    assert tgid[154961] == tgid[154962] == 154961  # kernelshark and one of its threads
    assert any(p == g != 154961 for p, g in tgid.items())  # a single-threaded process: its own group
    assert all(lane["tgid"] is None for lane in t["lanes"] if lane["kind"] != "task")
    aid = ingest_paths(store, EXT4)["id"]
    t = client.get(f"/api/analyses/{aid}/timeline").json()
    assert {lane["tgid"] for lane in t["lanes"]} == {None}


def test_ext4_timeline_lanes_segments_and_arrows(store, client):
    aid = ingest_paths(store, EXT4, EXT4_BLK, OFFCPU)["id"]
    ft, bp, oc = client.get(f"/api/analyses/{aid}").json()["sources"]
    t = client.get(f"/api/analyses/{aid}/timeline", params={"width_px": 800}).json()
    assert (t["t0_ns"], t["t1_ns"]) == (7341200000000, 7341215920058)
    assert t["bucket_ns"] == -(-(7341215920058 - 7341200000000) // 800) == 19901
    ids = [lane["id"] for lane in t["lanes"]]
    # the chain's tasks first (postgres, jbd2, the interrupt), then the device, the dump's window, the rest
    assert ids[:3] == [f"task:{ft['id']}:4242", f"task:{ft['id']}:312", f"task:{ft['id']}:0"]
    assert f"dev:{bp['id']}:8,0" in ids and f"window:{oc['id']}" in ids and f"proc:{bp['id']}:312" in ids
    # then one track per CPU that ran a task (derive/cpus.py), in CPU order
    assert [i for i in ids if i.startswith("cpu:")] == [f"cpu:{ft['id']}:{n}" for n in (1, 2, 3)]
    assert ids.index(f"cpu:{ft['id']}:1") == ids.index(f"window:{oc['id']}") + 1
    assert t["total_lanes"] == len(ids) == 12
    pg = _lane(t, f"task:{ft['id']}:4242")
    wait = next(s for s in pg["segments"] if s["track"] == "wait")
    assert (wait["state"], wait["t0_ns"], wait["t1_ns"], wait["line"], wait["n"]) == (
        "wait_transaction_locked",
        7341201620000,
        7341214888000,
        45,
        1,
    )
    calls = [s for s in pg["segments"] if s["track"] == "call"]
    assert [c["state"] for c in calls[:2]] == ["ext4_file_write_iter", "ext4_buffered_write_iter"]
    assert all(c["max_ns"] >= t["bucket_ns"] for c in calls)
    dev = _lane(t, f"dev:{bp['id']}:8,0")
    service = [s for s in dev["segments"] if s["track"] == "service" and s["line"] == 6]
    assert service == [
        {
            "track": "service",
            "state": "service",
            "t0_ns": 7341201502077,
            "t1_ns": 7341214863402,
            "n": 1,
            "max_ns": 13361325,
            "source_id": bp["id"],
            "line": 6,
            "depth": None,
        }
    ]
    assert dev["counter"]["max"] == 2 and dev["counter"]["points"][0] == [t["t0_ns"], 0]
    window = _lane(t, f"window:{oc['id']}")
    assert window["band"] == {"t0_ns": 7341200014221, "t1_ns": None}
    rel = {(a["relation"], a["from_lane"], a["to_lane"]) for a in t["arrows"]}
    assert ("woken_by", f"task:{ft['id']}:312", f"task:{ft['id']}:4242") in rel
    io = next(a for a in t["arrows"] if a["from_lane"].startswith("dev:"))
    assert io["request"] == {"source_id": bp["id"], "line": 6} and io["from_ns"] == 7341214863402
    assert [m["text"] for m in t["marks"]] == ["checkpoint-flush start"]


def test_zoomed_window_and_lane_choice(store, client):
    aid = ingest_paths(store, EXT4, EXT4_BLK)["id"]
    ft = client.get(f"/api/analyses/{aid}").json()["sources"][0]
    lane = f"task:{ft['id']}:4251"
    t = client.get(
        f"/api/analyses/{aid}/timeline",
        params={"t0_ns": 7341204000000, "t1_ns": 7341205000000, "width_px": 100, "lanes": lane},
    ).json()
    assert [x["id"] for x in t["lanes"]] == [lane] and t["bucket_ns"] == 10000
    segs = _items(t, t["lanes"][0])
    assert all(7341204000000 <= s["t0_ns"] <= s["t1_ns"] <= 7341205000000 for s in segs)
    wait = next(s for s in segs if s["track"] == "wait")
    assert (wait["t0_ns"], wait["t1_ns"], wait["max_ns"]) == (7341204028000, 7341205000000, 10862000)  # clipped
    assert t["arrows"] == []  # the other end of the chain's arrows is not a lane asked for
    r = client.get(f"/api/analyses/{aid}/timeline", params={"max_lanes": 2}).json()
    # max_lanes counts the tasks and processes: its 3 CPUs and its device come beside them
    kinds = [x["kind"] for x in r["lanes"]]
    assert (kinds.count("cpu"), kinds.count("device"), len(kinds)) == (3, 1, 6) and r["total_lanes"] == 8 + 3


def test_merging_bounds_the_items_per_lane(store, client):
    aid = ingest_paths(store, DEMO)["id"]
    sid = client.get(f"/api/analyses/{aid}").json()["sources"][0]["id"]
    t = client.get(f"/api/analyses/{aid}/timeline", params={"width_px": 200}).json()
    dev = _lane(t, f"dev:{sid}:8,0")
    by_track = {k: [s for s in dev["segments"] if s["track"] == k] for k in ("queued", "service")}
    con = store.cursor()
    try:
        with_dc = con.execute(
            "SELECT count(*) FROM blk_requests WHERE source_id = ? AND d_ns IS NOT NULL AND c_ns >= d_ns", [sid]
        ).fetchall()[0][0]
    finally:
        con.close()
    assert sum(s["n"] for s in by_track["service"]) == with_dc == 5000  # every request with D and C, merged or not
    # no more than one item per pixel per track, plus the segments longer than a pixel
    for segs in by_track.values():
        assert len(segs) <= 200 + sum(1 for s in segs if s["n"] == 1 and s["max_ns"] >= t["bucket_ns"])
    starved = max(by_track["queued"], key=lambda s: s["max_ns"])
    assert (starved["max_ns"], starved["n"]) == (15626265317, 1)
    detail = client.get(f"/api/analyses/{aid}/requests/{starved['source_id']}/{starved['line']}").json()
    assert detail["request"]["i2d_ns"] == 15626265317


def test_timeline_follows_a_clock_offset(store, client):
    aid = ingest_paths(store, EXT4_BLK)["id"]
    sid = client.get(f"/api/analyses/{aid}").json()["sources"][0]["id"]
    before = client.get(f"/api/analyses/{aid}/timeline").json()
    client.patch(f"/api/analyses/{aid}/sources/{sid}", json={"clock_offset_ns": -7341200000000})
    after = client.get(f"/api/analyses/{aid}/timeline").json()
    assert after["t0_ns"] == before["t0_ns"] - 7341200000000
    a = _items(after, after["lanes"][0])[0]
    b = _items(before, before["lanes"][0])[0]
    assert (a["t0_ns"], a["line"]) == (b["t0_ns"] - 7341200000000, b["line"])


def test_bad_timeline_requests(client, store):
    aid = ingest_paths(store, EXT4_BLK)["id"]
    assert client.get("/api/analyses/nope/timeline").status_code == 404
    for params in (
        {"width_px": 0},
        {"width_px": 5000},
        {"t0_ns": 10, "t1_ns": 5},
        {"max_lanes": 0},
        {"t0_ns": "x"},
        {"lanes": "x" * 5000},
    ):
        r = client.get(f"/api/analyses/{aid}/timeline", params=params)
        assert r.status_code == 422, (params, r.text)
    empty = client.get(f"/api/analyses/{aid}/timeline", params={"t0_ns": 1, "t1_ns": 2}).json()
    assert empty["lanes"] == [] and empty["total_lanes"] == 0


def test_the_body_is_the_response_model(store, client):
    """The route sends the body as built, unvalidated: it must be exactly what the model would send."""
    aid = ingest_paths(store, EXT4, EXT4_BLK, OFFCPU)["id"]
    for params in (
        {"width_px": 800},
        {"t0_ns": 7341204000000, "t1_ns": 7341205000000, "width_px": 100},
        {"t0_ns": 1, "t1_ns": 2},
    ):
        body = client.get(f"/api/analyses/{aid}/timeline", params=params).json()
        assert models.Timeline.model_validate(body).model_dump(mode="json") == body


@pytest.mark.parametrize("path,fine", [(DEMO, False), (EXT4, False), (DEMO, True)], ids=["demo", "ext4", "demo-fine"])
def test_summary_and_raw_reads_draw_every_segment_once(store, client, monkeypatch, path, fine):
    """With coarse summaries (256 level-0 buckets over the span), the whole span read at 64 px comes from them and
    at 4000 px (a pixel narrower than a level-0 bucket) from the raw tables: both count each segment once per lane
    and track (merged or not) with its longest, draw the calls at least a bucket long, and the requests in flight
    are the brute-force count (exact at each pixel's end from the raw rows; at the end of the last level-0 bucket
    ending by then from the summaries). `fine`: the blkparse capture counts as one of FINE_REQUESTS requests (its
    level-0 buckets 2^FINE_SHIFT finer)."""
    monkeypatch.setattr(timeline, "LEVEL0_BUCKETS", 256)
    if fine:
        monkeypatch.setattr(timeline, "FINE_REQUESTS", 1)
    aid = ingest_paths(store, path)["id"]
    con = store.cursor()
    try:
        sid, fmt, off, w0, t_min, t_max = con.execute(
            "SELECT s.id, s.format, s.clock_offset_ns, m.w0_ns, s.t_min_ns, s.t_max_ns FROM sources s"
            " JOIN tl_meta m ON m.source_id = s.id WHERE s.analysis_id = ?",
            [aid],
        ).fetchone()
        assert w0 << (timeline.FINE_SHIFT if fine else 0) == timeline._geometry(t_min, t_max)[0]
        lanes = {
            lane: lane_id(kind, sid, lane_key(kind, pid, dev))
            for lane, kind, pid, dev in con.execute(
                "SELECT lane, kind, pid, dev FROM tl_lanes WHERE source_id = ?", [sid]
            ).fetchall()
        }
        if fmt == "ftrace":  # the depth-0 calls and the waits _segs reads, as summarize registers them
            con.register("_tl_roots", timeline.prepare(con, [(sid, None, None)])[sid]["roots"])
            con.register("_tl_waits", con.sql(f"SELECT {WAIT_COLUMNS} FROM waits").to_arrow_table())
        segs = {
            (lanes[lane], TRACKS[track]): (n, longest)
            for lane, track, n, longest in con.execute(
                f"SELECT lane, track, count(*), max(e - s) FROM ({timeline._segs(fmt)}"
                f"{' UNION ALL ' + cpus.segments_sql() if fmt == 'ftrace' else ''}) WHERE track <> 2 GROUP BY ALL",
                {"sid": sid},
            ).fetchall()
        }
        calls = con.execute(
            "SELECT pid, duration_ns, line FROM fg_calls WHERE source_id = ? AND entry_ns IS NOT NULL"
            f" AND duration_ns IS NOT NULL AND depth BETWEEN 0 AND {MAX_CALL_DEPTH}",
            [sid],
        ).fetchall()
        events = con.execute(
            "SELECT i_ns, CASE WHEN c_ns >= i_ns THEN c_ns END FROM blk_requests"
            " WHERE source_id = ? AND i_ns IS NOT NULL",
            [sid],
        ).fetchall()
    finally:
        con.close()
    inserted, completed = sorted(i for i, _ in events), sorted(c for _, c in events if c is not None)

    def in_flight(at: int) -> int:  # inserted before `at` (own clock), less those completed before
        return bisect.bisect_left(inserted, at) - bisect.bisect_left(completed, at)

    for width_px, raw in ((64, False), (4000, True)):
        t = client.get(f"/api/analyses/{aid}/timeline", params={"width_px": width_px, "max_lanes": 200}).json()
        assert (t["bucket_ns"] < w0) == raw
        drawn = {}
        for lane in t["lanes"]:
            for item in _items(t, lane):
                if item["track"] != "call":
                    n, longest = drawn.get((lane["id"], item["track"]), (0, 0))
                    drawn[(lane["id"], item["track"])] = (n + item["n"], max(longest, item["max_ns"]))
        assert drawn == segs
        for lane in t["lanes"]:
            if lane["kind"] == "task":
                assert sorted(i["line"] for i in _items(t, lane) if i["track"] == "call") == sorted(
                    line for pid, dur, line in calls if pid == lane["pid"] and dur >= lane["bucket_ns"]
                )
            if lane["kind"] == "device":
                points, b = lane["counter"]["points"], t["bucket_ns"]
                ends = [min(t["t1_ns"], t["t0_ns"] + (j + 1) * b) for j in range(-(-(t["t1_ns"] - t["t0_ns"]) // b))]
                at = (lambda x: x - off) if raw else (lambda x: (x - off) // w0 * w0)
                assert points[0] == [t["t0_ns"], in_flight(at(t["t0_ns"]) if raw else (t["t0_ns"] - off) // w0 * w0)]
                assert [next(v for x, v in reversed(points) if x <= e) for e in ends] == [
                    in_flight(at(e)) for e in ends
                ]
                assert len(points) > 10


@needs_public
def test_cpu_tracks_devices_and_windows_are_in_the_first_view_beside_the_lane_budget(store, client):
    """A real 4-CPU desktop capture (sched_switch only) has more tasks than a first view's lanes: every CPU track is in
    it all the same, and max_lanes counts the other lanes, in their rank order."""
    aid = ingest_paths(store, PUBLIC / "trace-cmd-report" / "derived-elainecole-report-sched_switch.txt")["id"]
    (src,) = client.get(f"/api/analyses/{aid}").json()["sources"]
    t = client.get(f"/api/analyses/{aid}/timeline", params={"max_lanes": 5}).json()
    kinds = [lane["kind"] for lane in t["lanes"]]
    assert kinds.count("cpu") == 4 and kinds.count("task") == 5
    assert [lane["id"] for lane in t["lanes"] if lane["kind"] == "cpu"] == [f"cpu:{src['id']}:{n}" for n in range(4)]
    assert t["total_lanes"] > 9  # the tasks not returned: the UI says so and asks for more
    wide = client.get(f"/api/analyses/{aid}/timeline", params={"max_lanes": 200}).json()
    tasks = [lane["id"] for lane in wide["lanes"] if lane["kind"] == "task"]
    assert [lane["id"] for lane in t["lanes"] if lane["kind"] == "task"] == tasks[:5]


def test_ranked_lanes_in_their_order_however_many_are_asked_for(store, client):
    """The lanes after the CPUs, devices and chains are ranked from their scores and made only as far as a response
    reads them: the widest view holds every lane of the window in the documented order (tasks by time blocked, then
    by time running, then by calls, each descending, ties by pid; then processes), `total_lanes` counts them, a
    narrower view is its prefix, and lanes asked by id come whole and in that order, the last-ranked ones too."""
    aid = ingest_paths(store, PUBLIC / "trace-cmd-report" / "derived-elainecole-report-sched_switch.txt")["id"]
    wide = client.get(f"/api/analyses/{aid}/timeline", params={"max_lanes": 200}).json()
    assert 9 < wide["total_lanes"] == len(wide["lanes"]) < 200 + 4
    tasks = [lane for lane in wide["lanes"] if lane["kind"] == "task"]
    chained = [lane for lane in tasks if lane["why"].startswith("chain #")]  # the chains' tasks, first
    ranked = tasks[len(chained) :]
    order = {"blocked": 0, "running": 1, "": 2}  # (≈N top-level calls)
    keys = [(order[x["why"].split("≈")[0].strip()], -int(x["why"].split("≈")[1].split()[0]), x["pid"]) for x in ranked]
    assert len(ranked) > 40 and keys == sorted(keys)
    for n in (1, 7):
        narrow = client.get(f"/api/analyses/{aid}/timeline", params={"max_lanes": n}).json()
        assert [x["id"] for x in narrow["lanes"] if x["kind"] == "task"] == [x["id"] for x in tasks[:n]]
        assert narrow["total_lanes"] == wide["total_lanes"]
    asked = [ranked[-1]["id"], ranked[0]["id"], ranked[len(ranked) // 2]["id"]]
    got = client.get(f"/api/analyses/{aid}/timeline", params={"lanes": ",".join(asked)}).json()
    assert [x["id"] for x in got["lanes"]] == [x["id"] for x in ranked if x["id"] in asked]


def test_thread_groups_inferred_from_the_process_events():
    """Without record-tgid: an exec'd task leads its group; task_newtask (in its creator's context) puts a CLONE_THREAD
    child in its creator's group, any other child in its own; tasks nothing is said of have none."""
    from backend.queries.timeline.lanes import infer_tgids

    events = [
        (1, 100, "task_newtask", "pid=101 comm=java clone_flags=3d0f00 oom_score_adj=0"),  # a thread of java (100)
        (1, 101, "task_newtask", "pid=102 comm=java clone_flags=3d0f00 oom_score_adj=0"),  # its thread's thread: 100's
        (1, 1, "task_newtask", "pid=200 comm=bash clone_flags=1200011 oom_score_adj=0"),  # fork: a process
        (1, 200, "sched_process_exec", "filename=/usr/bin/ls pid=200 old_pid=200"),
        (2, 100, "task_newtask", "pid=300 comm=x clone_flags=nothex oom_score_adj=0"),  # unreadable: nothing said
    ]
    assert infer_tgids(events) == {(1, 100): 100, (1, 101): 100, (1, 102): 100, (1, 200): 200}


HTP = PUBLIC / "ftrace-funcgraph" / "perf-tools-funcgraph-Htp-abstime-header.txt"


@pytest.mark.skipif(not HTP.is_file(), reason="the public samples are not here")
def test_the_span_starts_at_the_first_printed_time_not_at_an_exit_only_calls_entry(store, client):
    # the trace opens inside schedule_timeout(), whose exit prints 19354027 us: its entry is computed, 19.35 s before
    # the first line (7238523.638008), and the span began there
    aid = ingest_paths(store, HTP)["id"]
    a = client.get(f"/api/analyses/{aid}").json()
    assert (a["t_min_ns"], a["t_max_ns"]) == (7238523638008000, 7238524269606000)
    con = store.cursor()
    try:
        entry, exit_ns = con.execute(
            "SELECT entry_ns, exit_ns FROM fg_calls WHERE source_id = ? AND line = 159", [a["sources"][0]["id"]]
        ).fetchall()[0]
    finally:
        con.close()
    assert entry < a["t_min_ns"] < exit_ns  # kept as the trace says: entered before the capture began


@pytest.mark.parametrize("kept", [20_000, 0])
def test_markers_of_a_window_are_the_tables(store, client, monkeypatch, kept):
    """A window's print markers, read from the source's kept markers (or, past KEPT_MARKS, from the table by the
    kept times), are the trace_events rows in that window, on the analysis timeline."""
    from backend.queries.timeline import lanes

    monkeypatch.setattr(lanes, "KEPT_MARKS", kept)
    aid = ingest_paths(store, *sorted((SAMPLES / "real" / "ext4-jbd2").glob("trace.dat")))["id"]
    url = f"/api/analyses/{aid}"
    con = store.cursor()
    rows = con.execute(
        "SELECT e.source_id, e.line, e.t_ns + s.clock_offset_ns, e.pid, e.comm, e.text FROM trace_events e"
        " JOIN sources s ON s.id = e.source_id WHERE s.analysis_id = ? AND e.event = 'print' ORDER BY 3, 2",
        [aid],
    ).fetchall()
    assert len(rows) > 3
    keys = ("source_id", "line", "t_ns", "pid", "comm", "text")
    for a, z in ((0, len(rows) - 1), (1, 2), (len(rows) // 2, len(rows) - 1)):
        t0, t1 = rows[a][2], rows[z][2]
        got = client.get(f"{url}/timeline", params={"t0_ns": t0, "t1_ns": t1, "width_px": 800}).json()["marks"]
        assert got == [dict(zip(keys, r)) for r in rows if t0 <= r[2] <= t1][: lanes.MAX_MARKS]
