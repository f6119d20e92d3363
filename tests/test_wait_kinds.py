"""Why a task waited (backend/wait_kinds.py): every wait's kind and rule, found at derive time, on real captures; idle
waits out of the ranked lists, the waits' heatmap and the chains' first links, one toggle (idle=true) away."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from backend import wait_kinds
from backend.app import create_app
from backend.store import Store
from tests.conftest import PUBLIC, SEED, ingest_paths, needs_public
from tests.test_lab_truth import LAB_RULE_COUNTS

TRACE_DAT = PUBLIC / "trace-cmd-report" / "trace-dat" / "langraph-trace.dat"
RECORD_TGID = PUBLIC / "ftrace-funcgraph" / "langraph-tracefs-events-record-tgid.log"
XFS = SEED / "xfs-unwritten-stall.trace-cmd-report.txt"


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    """The analyses of three real captures in one store: {name: analysis id}."""
    for p in (TRACE_DAT, RECORD_TGID, XFS):
        if not p.exists():
            pytest.skip(f"{p} is missing")
    store = Store(tmp_path_factory.mktemp("kinds") / "t.duckdb")
    ids = {p.name: ingest_paths(store, p)["id"] for p in (TRACE_DAT, RECORD_TGID, XFS)}
    yield store, ids
    store.close()


@pytest.fixture
def client(captures):
    store, ids = captures
    with TestClient(create_app(store, warm=False)) as c:
        yield c, ids


@needs_public
def test_langraph_waits_list_opens_on_jbd2s_io_wait_not_on_idle_workers(client):
    c, ids = client
    aid = ids[TRACE_DAT.name]
    first = c.get(f"/api/analyses/{aid}/waits", params={"limit": 20}).json()
    assert len(first) == 20
    top = first[0]
    # jbd2 committing its journal, asleep in D on a buffer under I/O for 229.7 ms (before: 20 idle workers' sleeps
    # of up to 6.79 s came first)
    assert (top["comm"], top["lock"], top["duration_ns"]) == ("jbd2/sda3-8", "__wait_on_buffer via I/O", 229746000)
    assert (top["wait_kind"], top["wait_rule"]) == ("io", "buffer under I/O")
    assert "unlocked when its I/O completes" in top["wait_why"]
    assert not [w for w in first if w["wait_kind"] == "idle"]
    # one toggle away: the idle waits lead the list with idle=true
    every = c.get(f"/api/analyses/{aid}/waits", params={"limit": 20, "idle": True}).json()
    assert every[0]["duration_ns"] > 9_000_000_000 and every[0]["wait_kind"] == "idle"
    assert {w["wait_rule"] for w in every} >= {"kernel thread idle", "waiting for an event"}
    page = c.get(f"/api/analyses/{aid}/waits/page", params={"limit": 5}).json()
    assert page["items"][0]["line"] == top["line"]
    # the chain it starts says the same
    first_link = c.get(f"/api/analyses/{aid}/chains", params={"limit": 1}).json()[0]["links"][0]
    assert (first_link["wait_line"], first_link["wait_kind"], first_link["wait_rule"]) == (
        top["line"],
        "io",
        "buffer under I/O",
    )


# per real capture, how many waits each rule names (measured on them; every rule that one of them shows)
RULE_COUNTS = {
    TRACE_DAT.name: {
        # worker_thread, rcu_gp_fqs_loop, rcu_gp_kthread, smpboot_thread_fn, kcompactd, kjournald2, ring_buffer_wait
        ("idle", "kernel thread idle"): 586,
        ("idle", "waiting for an event"): 367,  # do_poll, ep_poll, futex_wait_queue_me, do_nanosleep, do_select
        ("idle", "waiting for a child"): 54,  # bash in do_wait
        ("idle", "interruptible sleep"): 74,  # VBoxService in vbg_hgcm_do_call (S)
        ("io", "buffer under I/O"): 4,  # jbd2 in __wait_on_buffer
        ("io", "hypervisor file call"): 24,  # df's statfs on a vboxsf share (D)
        ("io", "io_schedule"): 6,  # wait_for_completion_io_timeout, do_get_write_access's bit_wait_io
        ("task", "FUSE answer"): 11,  # df's statfs on a FUSE mount, in request_wait_answer
    },
    RECORD_TGID.name: {("idle", "interruptible sleep"): 1148, ("other", "unexplained sleep"): 28},
    XFS.name: {("idle", "interruptible sleep"): 1, ("lock", "lock held"): 3},
}


@needs_public
def test_each_rule_on_a_real_capture(captures):
    store, ids = captures
    con = store.cursor()
    try:
        for name, want in RULE_COUNTS.items():
            got = con.execute(
                "SELECT wait_kind, wait_rule, count(*) FROM waits w JOIN sources s ON s.id = w.source_id"
                " WHERE s.analysis_id = ? GROUP BY ALL",
                [ids[name]],
            ).fetchall()
            assert {(k, r): n for k, r, n in got} == want, name
        examples = dict(
            con.execute(
                "SELECT wait_rule, any_value(lock_key ORDER BY line) FROM waits GROUP BY 1 ORDER BY 1"
            ).fetchall()
        )
    finally:
        con.close()
    assert examples["kernel thread idle"] in ("worker_thread", "rcu_gp_fqs_loop", "rcu_gp_kthread", "smpboot_thread_fn")
    assert examples["lock held"] in ("xfs_ilock", "xfs_buf_lock")


# stacks as the kernel's sources make them, for the rules no public capture shows (root first)
SHAPED = {
    "direct reclaim": (
        ["__alloc_pages", "__alloc_pages_slowpath.constprop.0", "try_to_free_pages", "shrink_node", "io_schedule"],
        "D",
        None,
    ),
    "dirty-page throttling": (
        [
            "generic_perform_write",
            "balance_dirty_pages_ratelimited_flags",
            "balance_dirty_pages",
            "io_schedule_timeout",
        ],
        "D",
        None,
    ),
    "write-back throttling": (
        ["submit_bio", "blk_mq_submit_bio", "__rq_qos_throttle", "wbt_wait", "rq_qos_wait"],
        "D",
        None,
    ),
    "swap-in": (
        ["handle_mm_fault", "do_swap_page", "swap_readpage", "folio_wait_bit_common", "io_schedule"],
        "D",
        None,
    ),
    "page write-back": (["file_write_and_wait_range", "__filemap_fdatawait_range", "folio_wait_writeback"], "D", None),
    "page read": (["filemap_read", "filemap_read_folio", "folio_wait_locked", "folio_wait_bit_common"], "D", None),
    "journal commit": (["ext4_sync_file", "jbd2_complete_transaction", "jbd2_log_wait_commit"], "D", None),
    "request tag": (["blk_mq_submit_bio", "__blk_mq_alloc_requests", "blk_mq_get_tag", "io_schedule"], "D", None),
    "completion": (["flush_work", "__flush_work", "wait_for_completion"], "D", "completion"),
    "lock held": (["do_truncate", "down_write", "rwsem_down_write_slowpath"], "D", "rwsem (write)"),
}


@pytest.mark.parametrize("rule", sorted(SHAPED))
def test_rules_on_kernel_shaped_stacks(rule):
    frames, state, primitive = SHAPED[rule]
    assert wait_kinds.classify(frames, state, primitive, frames[-1]).name == rule


def test_every_rule_is_tested_and_idle_needs_no_lock():
    real = {r for counts in RULE_COUNTS.values() for _, r in counts}
    real |= {k.split("/", 1)[1] for counts in LAB_RULE_COUNTS.values() for k in counts}  # tests/test_lab_truth.py
    assert real | set(SHAPED) == {r.name for r in wait_kinds.RULES}
    # the rules no real capture shows yet (public or the lab's), tested on kernel-shaped stacks only
    assert set(SHAPED) - real == {"direct reclaim", "dirty-page throttling", "swap-in", "page read", "request tag"}
    # a kernel thread's loop is idle in any state (TASK_IDLE prints as I, W or D by kernel and tool); a poll only
    # when interruptible; a lock is never idle
    assert wait_kinds.classify(["kthread", "worker_thread", "schedule"], "D", None, "worker_thread").kind == "idle"
    assert wait_kinds.classify(["do_sys_poll", "do_poll.constprop.0"], "D", None, "do_poll.constprop.0").kind == "other"
    lock = wait_kinds.classify(["worker_thread", "mutex_lock", "__mutex_lock"], "S", "mutex", "mutex")
    assert lock.kind == "lock"
    # a call wait (no state): a nanosleep is idle, a call no rule knows is not (it may be a D sleep)
    assert wait_kinds.classify(["do_nanosleep", "schedule"], None, None, "do_nanosleep").kind == "idle"
    assert wait_kinds.classify(["schedule"], None, None, None).name == "unexplained sleep"


@needs_public
def test_idle_waits_stay_out_of_heatmap_chains_and_lock_counts(client, captures):
    c, ids = client
    aid = ids[TRACE_DAT.name]
    store, _ = captures
    con = store.cursor()
    try:
        stalls, idle = con.execute(
            "SELECT count(*) FILTER (WHERE wait_kind <> 'idle'), count(*) FILTER (WHERE wait_kind = 'idle')"
            " FROM waits w JOIN sources s ON s.id = w.source_id WHERE s.analysis_id = ?",
            [aid],
        ).fetchall()[0]
        kinds = {
            k
            for (k,) in con.execute(
                "SELECT DISTINCT w.wait_kind FROM chain_links l JOIN waits w ON w.source_id = l.source_id"
                " AND w.line = l.wait_line WHERE l.analysis_id = ? AND l.pos = 0",
                [aid],
            ).fetchall()
        }
    finally:
        con.close()
    assert (stalls, idle) == (45, 1081)
    assert kinds and "idle" not in kinds  # no chain starts at an idle wait
    heat = c.get(f"/api/analyses/{aid}/heatmap", params={"metric": "wait"}).json()
    assert (heat["percentiles"]["count"], heat["percentiles"]["max_ns"]) == (stalls, 229746000)
    assert heat["idle"] is False


@needs_public
def test_idle_sleeps_come_back_in_the_heatmap_with_idle(client):
    """The waits heatmap's toggle: idle=true counts every wait (1,126 on langraph, the longest a 6.79 s worker sleep
    the stalls' heatmap leaves out), its box lists idle sleeps, its lock choices name the idle loops; idle does not
    apply to other metrics."""
    c, ids = client
    aid = ids[TRACE_DAT.name]
    url = f"/api/analyses/{aid}/heatmap"
    every = c.get(url, params={"metric": "wait", "idle": True}).json()
    assert every["idle"] is True and every["metric"] == "wait"
    assert every["percentiles"]["count"] == 45 + 1081
    assert every["percentiles"]["max_ns"] > 6_000_000_000  # an idle worker's sleep, not jbd2's 229.7 ms
    stalls = c.get(url, params={"metric": "wait"}).json()
    assert stalls["percentiles"]["count"] == 45  # the stalls' answer is not the idle one (kept apart)
    box = c.get(
        f"{url}/events", params={"metric": "wait", "idle": True, "lat_min_ns": 1_000_000_000, "limit": 5}
    ).json()
    assert box["idle"] is True and box["count"] > 0
    assert box["events"][0]["latency_ns"] == every["percentiles"]["max_ns"]
    assert not c.get(f"{url}/events", params={"metric": "wait", "lat_min_ns": 1_000_000_000}).json()["count"]
    m = c.get(f"{url}/metrics", params={"idle": True}).json()
    counts = {x["metric"]: x["count"] for x in m["metrics"]}
    assert counts["wait"] == 45 + 1081
    assert {"worker_thread", "rcu_gp_fqs_loop"} <= {lk["lock_key"] for lk in m["locks"]}
    plain = c.get(f"{url}/metrics").json()
    assert {x["metric"]: x["count"] for x in plain["metrics"]}["wait"] == 45
    assert "worker_thread" not in {lk["lock_key"] for lk in plain["locks"]}
    bad = c.get(url, params={"metric": "i2d", "idle": True})
    assert bad.status_code == 422 and "idle does not apply" in bad.text


def test_a_version_4_file_gets_its_waits_kinds(tmp_path):
    """Migration 5: the waits of a file written before the kinds get them as an ingest finds them; the first views
    stored before (waits ranked without the kinds) are deleted."""
    db = tmp_path / "old.duckdb"
    store = Store(db)
    aid = ingest_paths(store, XFS)["id"]
    con = store.cursor()
    want = con.execute("SELECT line, wait_kind, wait_rule FROM waits ORDER BY line").fetchall()
    assert con.execute("SELECT count(*) FROM first_views").fetchall()[0][0] > 0  # stored by the ingest
    con.close()
    # the layout of version 4: no kinds, and a first view stored
    store.db.execute("DROP VIEW stall_waits")
    store.db.execute("DROP VIEW waits")
    store.db.execute("ALTER TABLE wait_rows DROP COLUMN wait_rule")
    store.db.execute("ALTER TABLE wait_rows DROP COLUMN wait_kind")
    store.db.execute("UPDATE schema_version SET version = 4")
    store.close()
    store = Store(db)
    try:
        con = store.cursor()
        assert con.execute("SELECT line, wait_kind, wait_rule FROM waits ORDER BY line").fetchall() == want
        assert con.execute("SELECT count(*) FROM first_views").fetchall()[0][0] == 0
        with TestClient(create_app(store, warm=False)) as c:
            listed = c.get(f"/api/analyses/{aid}/waits").json()
        assert sorted(w["line"] for w in listed) == [line for line, kind, _ in want if kind != "idle"]
        assert {w["wait_rule"] for w in listed} == {"lock held"}
    finally:
        store.close()
