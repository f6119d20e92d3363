"""The three-way demo capture (samples/gen_incident.py): a blktrace, a trace-cmd report and an offcputime dump of
one incident, ingested as one analysis.

Values were checked by hand against the files' lines (line numbers below are the files' own). Times of the trace
are asserted on its own clock (timeline time minus the source's clock_offset_ns), so that everything but
`test_aligned_to_the_blktrace` holds whatever offset the alignment finds.
"""

from __future__ import annotations

from backend.cli import DEMOS, load_demo
from samples import gen_incident
from tests.conftest import SAMPLES, ingest_paths

BLK, TRACE, OFFCPU = (SAMPLES / n for n in (gen_incident.BLK, gen_incident.TRACE, gen_incident.OFFCPU))


def _ingest(client, store) -> tuple[str, dict]:
    aid = ingest_paths(store, BLK, TRACE, OFFCPU)["id"]
    sources = {s["format"]: s for s in client.get(f"/api/analyses/{aid}").json()["sources"]}
    return aid, sources


def test_sample_files_are_what_the_generator_writes():
    blk, trace, offcpu = gen_incident.build()
    assert BLK.read_text() == blk and TRACE.read_text() == trace and OFFCPU.read_text() == offcpu


def test_three_sources_parse_whole(client, store):
    _, src = _ingest(client, store)
    got = {f: (s["filename"], s["lines"], s["events"], s["skipped_lines"]) for f, s in src.items()}
    assert got == {
        "blkparse": ("incident.blkparse.txt", 12360, 12360, 0),
        "ftrace": ("incident.trace-cmd-report.txt", 24350, 15645, 0),
        "offcputime": ("incident.offcputime.txt", 372, 25, 0),
    }
    # the user's comment line names the trace clock; trace-cmd's own header follows it
    assert src["ftrace"]["notes"][:2] == ["trace clock: mono", "trace-cmd report header: cpus=4"]
    assert "window_s=24" in src["offcputime"]["notes"]
    # the blktrace counts from its first event; the trace is in seconds since boot (µs resolution)
    assert (src["blkparse"]["t_min_ns"], src["blkparse"]["t_max_ns"]) == (0, 23987041668)
    assert src["ftrace"]["t_max_ns"] == 5250657335000


def test_stall_chain(client, store):
    aid, src = _ingest(client, store)
    off = src["ftrace"]["clock_offset_ns"]
    chains = client.get(f"/api/analyses/{aid}/chains", params={"limit": 2}).json()
    c = chains[0]
    assert (c["id"], c["duration_ns"]) == (1, 2304170000)
    assert chains[1]["duration_ns"] < 20_000_000  # the next stall is a database read of a few ms
    writer, reader, conv, logd = c["links"]
    own = lambda link: (link["start_ns"] - off, link["end_ns"] - off, link["duration_ns"])  # noqa: E731

    # file_writer's write(): switched out D at line 8656 in xfs_ilock -> down_write (the iolock's down_write
    # returned, the ilock's sleeps), back on CPU at line 21110, woken at line 21099 by file_reader
    assert (writer["pid"], writer["comm"], writer["lock"], writer["relation"], writer["line"]) == (
        3271,
        "file_writer",
        "xfs_ilock via down_write",
        "woken_by",
        8656,
    )
    assert own(writer) == (5247900332000, 5250204502000, 2304170000)
    assert not writer["inferred"] and writer["end_known"] and writer["also_waiting"] == []
    assert writer["stack"] == [
        "sys_write",
        "vfs_write",
        "do_sync_write",
        "xfs_file_aio_write",
        "xfs_write",
        "xfs_ilock",
        "down_write",
        "rwsem_down_write_failed",
        "schedule",
    ]
    assert "woken at line 21099 by file_reader (3274) from xfs_iunlock → up_read" in writer["evidence"]

    # file_reader (the first waiter, a reader): page fault -> readahead -> xfs_ilock_map_shared -> down_read,
    # line 8345 to line 21088, woken at line 21079 by xfsconvertd/0's xfs_iunlock -> up_write
    assert (reader["pid"], reader["comm"], reader["lock"], reader["relation"], reader["line"]) == (
        3274,
        "file_reader",
        "xfs_ilock via down_read",
        "woken_by",
        8345,
    )
    assert own(reader) == (5247852697000, 5250204490000, 2351793000)
    assert reader["stack"][:2] == ["do_page_fault", "handle_mm_fault"]
    assert reader["stack"][-6:] == [
        "xfs_iomap",
        "xfs_ilock_map_shared",
        "xfs_ilock",
        "down_read",
        "rwsem_down_read_failed",
        "schedule",
    ]
    assert "woken at line 21079 by xfsconvertd/0 (421) from xfs_iunlock → up_write" in reader["evidence"]

    # xfsconvertd/0: the unwritten-extent conversion, holding the ilock, sleeps for the bmap btree buffer
    # (line 1273) until xfslogd/0 runs the buffer's I/O completion (wake-up at line 21046, back at line 21055)
    assert (conv["pid"], conv["comm"], conv["lock"], conv["relation"], conv["line"]) == (
        421,
        "xfsconvertd/0",
        "xfs_buf_lock via down",
        "io_completion",
        1273,
    )
    assert own(conv) == (5246482452000, 5250204319000, 3721867000)
    assert conv["stack"][:2] == ["xfs_end_bio_unwritten", "xfs_iomap_write_unwritten"]
    assert conv["stack"][-5:] == ["xfs_buf_lock", "down", "__down", "schedule_timeout", "schedule"]
    assert "woken at line 21046 by xfslogd/0 (419) in the I/O completion xfs_buf_iodone_work()" in conv["evidence"]

    assert (logd["pid"], logd["comm"], logd["lock"], logd["relation"], logd["line"]) == (
        419,
        "xfslogd/0",
        None,
        None,
        21046,
    )
    assert logd["start_ns"] - off == 5250204317000
    assert logd["stack"] == [
        "xfs_buf_iodone_work",
        "xfs_buf_iodone_callbacks",
        "xfs_buf_ioend",
        "xfs_buf_iodone_work",
        "xfs_buf_unlock",
        "up",
        "try_to_wake_up",
    ]


def test_holders_and_marks(client, store):
    aid, src = _ingest(client, store)
    off = src["ftrace"]["clock_offset_ns"]
    waits = client.get(f"/api/analyses/{aid}/waits", params={"lock": "xfs_"}).json()
    got = [
        (
            w["pid"],
            w["line"],
            w["state"],
            w["lock"],
            w["holder_pid"],
            w["holder_line"],
            w["holder_ns"] - off,
            w["waker_pid"],
            w["wake_line"],
        )
        for w in waits
    ]
    assert got == [
        # the buffer was locked by xfsaild's push (xfs_buf_lock returned at line 1213) for its write
        (421, 1273, "D", "xfs_buf_lock via down", 804, 1213, 5246480244532, 419, 21046),
        # both ilock waiters: held by xfsconvertd/0, whose xfs_ilock returned at line 1255 (xfs_iunlock only
        # at line 21074), although xfs_ilock/xfs_iunlock of other tasks and inodes are all around
        (3274, 8345, "D", "xfs_ilock via down_read", 421, 1255, 5246482448826, 421, 21079),
        (3271, 8656, "D", "xfs_ilock via down_write", 421, 1255, 5246482448826, 3274, 21099),
    ]
    marks = client.get(f"/api/analyses/{aid}/marks").json()
    assert [(m["line"], m["t_ns"] - off, m["pid"], m["text"]) for m in marks] == [
        (234, 5246400329000, 3271, "write start"),
        (261, 5246400349000, 3271, "write done"),
        (8645, 5247900328000, 3271, "write start"),
        (21147, 5250204518000, 3271, "write done"),
    ]


def test_chains_in_a_time_range(client, store):
    aid, _ = _ingest(client, store)
    url = f"/api/analyses/{aid}/chains"
    every = client.get(url, params={"limit": 1000}).json()
    assert len(every) == 328 and [c["id"] for c in every] == list(range(1, 329))
    writer = every[0]["links"][0]  # chain #1: the app's write, 2.30 s in xfs_ilock

    def in_window(t0, t1):  # the chains whose first link's wait overlaps [t0, t1]
        return [c["id"] for c in every if c["links"][0]["end_ns"] >= t0 and c["links"][0]["start_ns"] <= t1]

    # up to 1 ns before the write began: not chain #1; the others keep their rank (#3, a database read, first)
    before = client.get(url, params={"limit": 1000, "t1_ns": writer["start_ns"] - 1}).json()
    assert [c["id"] for c in before] == in_window(0, writer["start_ns"] - 1)
    assert len(before) == 111 and before[0] == every[2] and 1 not in {c["id"] for c in before}
    # inside the write's wait: chain #1 first, with all its links; #3 (9.61 s, before the write) is out
    t0, t1 = writer["start_ns"] + 1, writer["end_ns"] - 1
    inside = client.get(url, params={"limit": 1000, "t0_ns": t0, "t1_ns": t1}).json()
    assert [c["id"] for c in inside] == in_window(t0, t1) and len(inside) == 171
    assert inside[0] == every[0] and 3 not in {c["id"] for c in inside}
    # the window's ends count (a wait ending at t0 is in it), and the limit applies after the window
    at_end = client.get(url, params={"limit": 2, "t0_ns": writer["end_ns"]}).json()
    assert [c["id"] for c in at_end] == in_window(writer["end_ns"], 1 << 62)[:2] and at_end[0]["id"] == 1


def test_starved_request_in_the_blktrace(client, store):
    aid, src = _ingest(client, store)
    off = src["blkparse"]["clock_offset_ns"]
    slowest = client.get(f"/api/analyses/{aid}/requests", params={"order": "i2d", "limit": 2}).json()
    r = slowest[0]
    assert (r["line"], r["dev"], r["sector"], r["nsect"], r["rwbs"], r["pid"], r["comm"]) == (
        4069,
        "8,0",
        141698288,
        8,
        "WM",
        804,
        "xfsaild/sda1",
    )
    assert (r["from_dev"], r["from_sector"]) == ("8,1", 141696240)
    assert (r["i_ns"] - off, r["d_ns"] - off, r["c_ns"] - off) == (9062188818, 12780580813, 12786197813)
    assert (r["i2d_ns"], r["d2c_ns"]) == (3718391995, 5617000)
    assert slowest[1]["i2d_ns"] == 43426813  # the next-slowest: another metadata write, 43 ms
    d = client.get(f"/api/analyses/{aid}/requests/{r['source_id']}/{r['line']}", params={"max_messages": 2000}).json()
    assert [(e["action"], e["line"], e["pid"]) for e in d["events"]] == [
        ("A", 4069, 804),
        ("Q", 4070, 804),
        ("G", 4071, 804),
        ("I", 4072, 804),
        ("D", 7204, 187),
        ("C", 7205, None),
    ]
    # while it waited CFQ logged 215 preemptions of its async queue (7 lines each) by the database's sync queues
    first = [m["message"] for m in d["messages"][:7]]
    assert first == [
        "cfq2210SN / insert_request",
        "cfq2210SN / add_to_rr",
        "cfq2210SN / preempt",
        "cfq498A / slice expired t=1",
        "cfq498A / resid=39",
        "/ served: vt=1954383378 min_vt=1954383378",
        "cfq498A / sl_used=1 disp=0 charge=0 iops=1 sect=0",
    ]
    blk = BLK.read_text().splitlines()[4068:7203]
    assert sum(" m   N " in line for line in blk) == 1509 and sum("/ preempt" in line for line in blk) == 215


def test_starved_request_messages_over_its_whole_wait(client, store):
    aid, src = _ingest(client, store)
    off = src["blkparse"]["clock_offset_ns"]
    r = client.get(f"/api/analyses/{aid}/requests", params={"order": "i2d", "limit": 1}).json()[0]
    url = f"/api/analyses/{aid}/requests/{r['source_id']}/{r['line']}"
    # the file's scheduler messages between the request's I (line 4072) and D (line 7204): 1509, the last logged
    # 3.71 s after the first, just before D (the first 500 of them end 1.29 s into the wait)
    text = BLK.read_text().splitlines()
    lines = [n for n in range(4072, 7204) if " m   N " in text[n - 1]]
    t = {n: round(float(text[n - 1].split()[3]) * 1e9) for n in (lines[0], lines[-1])}
    assert len(lines) == 1509 and (t[lines[0]], t[lines[-1]]) == (9067796901, 12780580217)

    d = client.get(url).json()
    assert (d["messages_total"], d["messages_truncated"], len(d["messages"])) == (1509, True, 500)
    # 500 of them spread by rank over the whole wait: the first of each of 500 equal runs, the last included
    assert [m["line"] for m in d["messages"]] == [lines[-(-k * 1508 // 499)] for k in range(500)]
    assert (d["messages"][0]["t_ns"] - off, d["messages"][-1]["t_ns"] - off) == (t[lines[0]], t[lines[-1]])

    every = client.get(url, params={"max_messages": 2000}).json()
    assert (every["messages_total"], every["messages_truncated"]) == (1509, False)
    assert [m["line"] for m in every["messages"]] == lines
    two = client.get(url, params={"max_messages": 2}).json()
    assert [m["line"] for m in two["messages"]] == [lines[0], lines[-1]] and two["messages_truncated"]
    assert client.get(url, params={"max_messages": 0}).status_code == 422


def test_offcpu_totals_match_the_trace(client, store):
    aid, src = _ingest(client, store)
    con = store.cursor()
    try:
        rows = con.execute(
            "SELECT o.comm, o.pid, o.value_us, o.frames FROM offcpu_stacks o JOIN sources s ON s.id = o.source_id"
            " WHERE s.analysis_id = ? ORDER BY o.value_us, o.line",
            [aid],
        ).fetchall()
    finally:
        con.close()
    assert len(rows) == 25
    by = {(comm, pid, frames[-5]): us for comm, pid, us, frames in rows}
    # µs totals of the three waits of the chain: each the trace's wait (ns) truncated, within 1 µs
    assert by[("file_writer", 3271, "down_write")] == 2304170
    assert by[("file_reader", 3274, "down_read")] == 2351793
    assert by[("xfsconvertd/0", 421, "down")] == 3721866
    chain = client.get(f"/api/analyses/{aid}/chains", params={"limit": 1}).json()[0]["links"]
    for link, key in zip(
        chain, (("file_writer", 3271, "down_write"), ("file_reader", 3274, "down_read"), ("xfsconvertd/0", 421, "down"))
    ):
        assert abs(by[key] - link["duration_ns"] // 1000) <= 1
    writer = next(f for comm, pid, us, f in rows if us == 2304170)
    assert writer[:4] == ["__libc_start_main", "main", "log_append", "__write_nocancel"]  # root first
    assert writer[-6:] == [
        "xfs_ilock",
        "down_write",
        "call_rwsem_down_write_failed",
        "rwsem_down_write_failed",
        "schedule",
        "finish_task_switch",
    ]
    # the database: its I/O and its idle time add up to the 24 s window, per backend
    pg = {}
    for comm, pid, us, frames in rows:
        if comm == "postgres":
            pg.setdefault(pid, []).append(us)
    assert {pid: sorted(v) for pid, v in pg.items()} == {
        2210: [1078490, 3122855, 19603983],
        2214: [1045124, 3175817, 19507602],
    }


def test_aligned_to_the_blktrace(client, store):
    aid, src = _ingest(client, store)
    assert src["blkparse"]["clock_offset_ns"] == 0
    assert abs(src["ftrace"]["clock_offset_ns"] + gen_incident.OFFSET_NS) <= 10_000
    conv, logd = client.get(f"/api/analyses/{aid}/chains", params={"limit": 1}).json()[0]["links"][2:]
    req = conv["request"]
    assert (req["source_id"], req["line"], req["dev"], req["sector"], req["nsect"], req["rwbs"], req["pid"]) == (
        src["blkparse"]["id"],
        4069,
        "8,0",
        141698288,
        8,
        "WM",
        804,
    )
    assert req["d_ns"] - req["i_ns"] == 3718391995
    assert 0 < logd["start_ns"] - req["c_ns"] <= 100_000  # xfslogd woke xfsconvertd just after the completion


def test_it_is_the_synthetic_demo(client, store):
    """The demos: a real recording first (tests/test_lab_truth.py checks it), then this synthetic incident."""
    assert DEMOS[0][0].startswith("Real kernel: ")
    name, files = DEMOS[1]
    assert files == [gen_incident.BLK, gen_incident.TRACE, gen_incident.OFFCPU]
    assert name.startswith("Demo: an app's write stalls 2.3 s behind an inode lock") and "(synthetic" in name
    load_demo(store)
    listed = client.get("/api/analyses").json()
    assert [a["name"] for a in listed] == [n for n, _ in DEMOS]  # newest first: the demos in their order
    (c,) = client.get(f"/api/analyses/{listed[1]['id']}/chains", params={"limit": 1}).json()
    assert [(link["comm"], link["relation"]) for link in c["links"]] == [
        ("file_writer", "woken_by"),
        ("file_reader", "woken_by"),
        ("xfsconvertd/0", "io_completion"),
        ("xfslogd/0", None),
    ]


def _marks(node) -> dict[str, str | None]:
    """Each frame name of a flame tree -> the lock it is marked with (None: not marked); one mark per name."""
    out = {node["name"]: node.get("lock")}
    for child in node.get("children", ()):
        for name, lock in _marks(child).items():
            assert out.setdefault(name, lock) == lock, name
    return out


def test_flame_lock_frames_lead_to_their_waits(client, store):
    """A frame the Off-CPU flame graph marks leads (Waits on this lock: /waits?lock_key=<its mark>) to the waits on
    that lock, whichever of the lock's functions the frame is; a frame that is no lock has no mark, so no link."""
    aid, _ = _ingest(client, store)
    marks = _marks(client.get(f"/api/analyses/{aid}/flamegraph").json()["root"])
    assert {name: lock for name, lock in marks.items() if lock} == {
        "xfs_ilock_map_shared": "xfs_ilock",
        "xfs_ilock": "xfs_ilock",
        "down_read": "rwsem (read)",
        "rwsem_down_read_failed": "rwsem (read)",
        "down_write": "rwsem (write)",
        "rwsem_down_write_failed": "rwsem (write)",
        "xfs_buf_lock": "xfs_buf_lock",
        "down": "semaphore",
        "__down": "semaphore",
        "io_schedule": "I/O",
    }
    # the marks are entries of the lock table; the asm thunks, the callers, the scheduler are not locks
    assert set(filter(None, marks.values())) <= {p["name"] for p in client.get("/api/locks").json()}
    for name in ("call_rwsem_down_read_failed", "call_rwsem_down_write_failed", "xfs_iomap", "schedule"):
        assert marks[name] is None, name

    def waits(key):
        got = client.get(f"/api/analyses/{aid}/waits", params={"lock_key": key, "limit": 1000}).json()
        return sorted((w["pid"], w["line"], w["lock"]) for w in got)

    reader, writer = (3274, 8345, "xfs_ilock via down_read"), (3271, 8656, "xfs_ilock via down_write")
    # file_reader sleeps in xfs_ilock_map_shared -> xfs_ilock -> down_read: the map_shared frame's link finds the
    # inode lock's waits, as the xfs_ilock frame's does
    assert waits(marks["xfs_ilock_map_shared"]) == waits(marks["xfs_ilock"]) == [writer, reader]
    assert waits(marks["rwsem_down_read_failed"]) == [reader]  # the rwsem the inode lock sleeps on, read side
    assert waits(marks["down_write"]) == [writer]
    assert waits(marks["__down"]) == waits(marks["xfs_buf_lock"]) == [(421, 1273, "xfs_buf_lock via down")]
    # every marked frame leads somewhere in this capture; the old key of a function still works (links kept)
    for lock in set(filter(None, marks.values())):
        assert waits(lock), lock
    assert waits("xfs_ilock_map_shared") == waits("xfs_ilock") and waits("down") == waits("semaphore")
    # /waits/by-lock says, before a link is followed, what it lists: the count and total duration of those waits
    keys = sorted(set(filter(None, marks.values()))) + ["mutex"]
    got = client.get(f"/api/analyses/{aid}/waits/by-lock", params=[("lock_key", k) for k in keys]).json()
    listed = {k: client.get(f"/api/analyses/{aid}/waits", params={"lock_key": k, "limit": 1000}).json() for k in keys}
    assert got == [
        {"lock_key": k, "waits": len(listed[k]), "total_ns": sum(w["duration_ns"] for w in listed[k])} for k in keys
    ]
    assert {g["lock_key"]: g["waits"] for g in got}["mutex"] == 0 and {g["lock_key"]: g["waits"] for g in got}[
        "xfs_ilock"
    ] == 2
    # in a window, as the link keeps the time range: the inode lock's reader began before its writer
    ilock = sorted(listed["xfs_ilock"], key=lambda w: w["start_ns"])
    window = {"t0_ns": ilock[0]["start_ns"], "t1_ns": ilock[1]["start_ns"] - 1}
    inside = client.get(f"/api/analyses/{aid}/waits", params={"lock_key": "xfs_ilock", **window}).json()
    assert [w["comm"] for w in inside] == ["file_reader"]
    assert client.get(f"/api/analyses/{aid}/waits/by-lock", params={"lock_key": "xfs_ilock", **window}).json() == [
        {"lock_key": "xfs_ilock", "waits": 1, "total_ns": inside[0]["duration_ns"]}
    ]
