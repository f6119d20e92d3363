"""Wake-up pairs (offwaketime's waker side) on real bcc dumps and on the ext4/jbd2 sample.

The totals were checked with awk on the files: the multi-line records' totals (lines 24-160 of the
offwaketime example) plus the folded lines that have a waker after their `-` separator
(`grep -vE ';-; [0-9]+$'`), e.g. for cksum `grep '^cksum;' | grep -vE ';-; [0-9]+$' | awk '{s+=$NF}'`.
"""

from __future__ import annotations

from samples import gen_ext4_jbd2
from tests.conftest import PUBLIC, SAMPLES, ingest_bytes, ingest_paths, needs_public

OFFWAKE = PUBLIC / "offwaketime" / "bcc-offwaketime_example.txt"
WAKEUP = PUBLIC / "offwaketime" / "bcc-wakeuptime_example.txt"
FOLDED = PUBLIC / "offcputime" / "bcc-offcputime-K-f-folded.txt"
EXT4 = [SAMPLES / gen_ext4_jbd2.TRACE, SAMPLES / gen_ext4_jbd2.BLK, SAMPLES / gen_ext4_jbd2.OFFWAKE]

CKSUM_READ = [
    "entry_SYSCALL_64_fastpath",
    "sys_read",
    "vfs_read",
    "__vfs_read",
    "generic_file_read_iter",
    "__lock_page_killable",
    "__wait_on_bit_lock",
    "bit_wait_io",
    "__sched_text_start",
    "schedule_timeout",
    "schedule",
]
BIO_END_WAKE = [
    "__blk_mq_complete_request",
    "blk_mq_end_request",
    "blk_update_request",
    "bio_endio",
    "mpage_end_io",
    "unlock_page",
    "__wake_up_bit",
    "__wake_up",
    "__wake_up_common",
    "wake_bit_function",
]


@needs_public
def test_offwaketime_example_pairs(client, store):
    aid = ingest_paths(store, OFFWAKE)["id"]
    # 5 multi-line records (30254518 µs) + 48 folded lines with a waker (76818452 µs); the 70 old-bcc folded
    # lines with nothing after `-` have no waker and are not pairs
    every = client.get(f"/api/analyses/{aid}/wakers", params={"limit": 1}).json()
    assert (every["matched_by"], every["total_us"], every["records"], every["pairs"]) == ("all", 107072970, 53, 49)
    (top,) = every["items"]
    # supervise in poll(), woken by the timer interrupt on CPU 0: multi-line (line 138) + folded (line 299)
    assert (top["comm"], top["waker_comm"], top["value_us"], top["records"]) == ("supervise", "swapper/0", 36747539, 2)
    assert top["rows"] == [{"source_id": 1, "line": 138}, {"source_id": 1, "line": 299}]
    assert top["frames"][-1] == "schedule" and top["waker_frames"][-1] == "hrtimer_wakeup" and top["lock"] is None

    # cksum: 2 multi-line records (56529 + 4334521 µs) + 20 folded lines (4008961 µs)
    ck = client.get(f"/api/analyses/{aid}/wakers", params={"comm": "cksum", "limit": 3}).json()
    assert (ck["matched_by"], ck["total_us"], ck["records"], ck["pairs"]) == ("comm", 8400011, 22, 20)
    first = ck["items"][0]
    # read() sleeping on a page lock until the bio completed: the multi-line record at line 85 (4334521 µs) and
    # the same pair folded at line 291 (3720413 µs), merged
    assert first["frames"] == CKSUM_READ and first["waker_frames"] == BIO_END_WAKE
    assert (first["waker_comm"], first["value_us"], first["records"]) == ("swapper/0", 8054934, 2)
    assert first["rows"] == [{"source_id": 1, "line": 85}, {"source_id": 1, "line": 291}]
    assert first["lock"] == "__lock_page_killable via I/O"
    assert [(i["waker_comm"], i["value_us"], i["lock"]) for i in ck["items"][1:]] == [
        ("run", 109480, "__lock_page_killable via I/O"),  # line 284
        ("swapper/0", 79772, "blk_mq_get_tag"),  # lines 26 (56529) + 274 (23243): waiting for a request tag
    ]

    # the dump has no pids: given a pid and a comm, the comm is used
    by_pid = client.get(f"/api/analyses/{aid}/wakers", params={"pid": 4242, "comm": "cksum", "limit": 1}).json()
    assert (by_pid["matched_by"], by_pid["total_us"]) == ("comm", 8400011)
    none = client.get(f"/api/analyses/{aid}/wakers", params={"pid": 4242}).json()
    assert (none["matched_by"], none["total_us"], none["records"], none["items"]) == ("pid", 0, 0, [])


@needs_public
def test_lock_filter(client, store):
    aid = ingest_paths(store, OFFWAKE)["id"]
    url = f"/api/analyses/{aid}/wakers"
    # lock_key, by a function of the lock: cksum's 10 read()s in __lock_page_killable (awk: 3889904 µs in 9 folded
    # lines + 4334521 µs at line 85), and its readlink() in wait_on_page_read until the read unlocked the page
    # (line 235, 230 µs)
    by_key = client.get(url, params={"comm": "cksum", "lock_key": "__lock_page_killable", "limit": 100}).json()
    assert (by_key["total_us"], by_key["records"], by_key["pairs"]) == (8224655, 11, 10)
    assert {i["lock"] for i in by_key["items"]} == {"__lock_page_killable via I/O", "wait_on_page_read via I/O"}
    # ... by its entry of /api/locks (the name flame graphs mark it with), or another of its functions: the same
    # lock, so also run's page fault in __lock_page_or_retry (line 223, 117 µs)
    for key in ("page lock", "lock_page"):
        by_name = client.get(url, params={"lock_key": key, "limit": 100}).json()
        assert (by_name["total_us"], by_name["records"]) == (8224772, 12), key
        assert [i["rows"][0]["line"] for i in by_name["items"] if i["comm"] == "run"] == [223]
    # supervise's rename() truncating an inode in wait_on_page_bit, woken by end_page_writeback (lines 229, 263, 267,
    # 271, 272, 281: 70432 µs): this kernel inlined wait_on_page_writeback, so only the page flag is on the stack,
    # not which one; it is not a page lock
    for key in ("page bit", "wait_on_page_bit"):
        bit = client.get(url, params={"lock_key": key, "limit": 100}).json()
        assert (bit["total_us"], bit["records"]) == (70432, 6), key
        assert {(i["comm"], i["lock"], "end_page_writeback" in i["waker_frames"]) for i in bit["items"]} == {
            ("supervise", "page bit via I/O", True)
        }
    # ... a label that names no lock of the table: exactly it
    by_label = client.get(url, params={"lock_key": "__wait_on_buffer via I/O", "limit": 100}).json()
    assert {i["lock"] for i in by_label["items"]} == {"__wait_on_buffer via I/O"}
    assert all("__wait_on_buffer" in i["frames"] for i in by_label["items"]) and by_label["records"] > 0
    assert client.get(url, params={"lock_key": "__wait_on_buffer via"}).json()["pairs"] == 0
    assert client.get(url, params={"lock_key": "xfs_buf_lock"}).json()["pairs"] == 0
    # lock: the label contains it, as /waits?lock= does
    contains = client.get(url, params={"lock": "__wait_on_buffer via", "limit": 100}).json()
    assert (contains["pairs"], contains["records"]) == (by_label["pairs"], by_label["records"])
    assert client.get(url, params={"lock": "page lock"}).json()["pairs"] == 0  # no label says "page lock"


# offwaketime -f lines (stack;--;waker stack, waker comm) with the incident's stacks (samples/incident.offcputime.txt):
# a reader and a writer of the inode lock, and the buffer lock's down()
_XFS_PAIRS = b"""# ./offwaketime -f
file_reader;page_fault;filemap_fault;xfs_iomap;xfs_ilock_map_shared;xfs_ilock;down_read;rwsem_down_read_failed;schedule;--;xfs_iunlock;up_write;rwsem_wake;try_to_wake_up;xfsconvertd/0 2351793
file_writer;sys_write;xfs_file_buffered_aio_write;xfs_ilock;down_write;rwsem_down_write_failed;schedule;--;xfs_iunlock;up_read;rwsem_wake;try_to_wake_up;file_reader 2304170
xfsconvertd/0;xfs_bmapi_write;xfs_buf_read_map;xfs_buf_lock;down;__down;schedule_timeout;schedule;--;xfs_buf_iodone_work;xfs_buf_unlock;up;try_to_wake_up;kworker/0:1H 3721866
"""


def test_lock_key_is_exact_as_in_waits(client, store):
    """/wakers?lock_key= keeps what /waits?lock_key= keeps: `down` is the semaphore, not down_read or down_write
    (lock=down, a substring of all three labels, keeps all three)."""
    aid = ingest_bytes(store, **{"xfs.offwaketime.txt": _XFS_PAIRS})["id"]
    url = f"/api/analyses/{aid}/wakers"
    comms = lambda **q: sorted(i["comm"] for i in client.get(url, params=q).json()["items"])  # noqa: E731
    assert comms(lock="down") == ["file_reader", "file_writer", "xfsconvertd/0"]
    assert comms(lock_key="down") == comms(lock_key="__down") == comms(lock_key="semaphore") == ["xfsconvertd/0"]
    assert comms(lock_key="down_read") == comms(lock_key="rwsem (read)") == ["file_reader"]
    # the flame graph marks xfs_ilock_map_shared with the lock it takes, xfs_ilock: both pairs on the inode lock
    assert comms(lock_key="xfs_ilock_map_shared") == comms(lock_key="xfs_ilock") == ["file_reader", "file_writer"]
    assert comms(lock_key="xfs_buf_lock") == ["xfsconvertd/0"]
    assert comms(lock_key="xfs_iunlock") == comms(lock_key="xfs") == []  # a release function; a part of a name


@needs_public
def test_wakeuptime_pairs_have_no_target_stack(client, store):
    aid = ingest_paths(store, WAKEUP)["id"]
    w = client.get(f"/api/analyses/{aid}/wakers", params={"comm": "vmstat"}).json()
    assert w["records"] > 0 and all(i["frames"] == [] and i["lock"] is None for i in w["items"])
    assert all(i["waker_frames"] for i in w["items"])


@needs_public
def test_pid_match_and_sources_count(client, store):
    """Current bcc prints pids; the ext4 sample's offwaketime (samples/gen_ext4_jbd2.py) pairs with its chain."""
    aid = ingest_paths(store, *EXT4)["id"]
    sources = client.get(f"/api/analyses/{aid}").json()["sources"]
    assert [(s["format"], s["waker_stacks"]) for s in sources] == [("ftrace", 0), ("blkparse", 0), ("offcputime", 3)]
    chain = client.get(f"/api/analyses/{aid}/chains").json()[0]
    pg, jbd2, _irq = chain["links"]
    url = f"/api/analyses/{aid}/wakers"
    # as the chain's waker side asks: the link's lock_key (the lock-table entry its label names)
    assert (pg["lock"], pg["lock_key"], jbd2["lock_key"]) == ("wait_transaction_locked", "jbd2 handle", "buffer lock")
    w = client.get(url, params={"pid": pg["pid"], "comm": pg["comm"], "lock_key": pg["lock_key"]}).json()
    assert (w["matched_by"], w["total_us"], w["records"]) == (
        "pid",
        13265,
        1,
    )  # switch-out +1620 µs → wake-up +14885 µs
    (item,) = w["items"]
    assert (item["pid"], item["waker_comm"], item["waker_pid"], item["lock"]) == (
        4242,
        "jbd2/sda1-8",
        312,
        "wait_transaction_locked",
    )
    assert item["waker_frames"][-4:] == [
        "__wake_up",
        "__wake_up_common_lock",
        "__wake_up_common",
        "autoremove_wake_function",
    ]
    assert item["rows"] == [{"source_id": 3, "line": 32}]
    w = client.get(url, params={"pid": jbd2["pid"], "comm": jbd2["comm"], "lock_key": jbd2["lock_key"]}).json()
    assert [(i["waker_comm"], i["waker_pid"], i["value_us"], i["lock"]) for i in w["items"]] == [
        ("swapper/3", 0, 13373, "__wait_on_buffer via I/O")
    ]  # switch-out +1500 µs → the interrupt's wake-up +14873 µs
    # the other backend: by comm, both records; by its pid, its own
    assert client.get(url, params={"comm": "postgres"}).json()["total_us"] == 13265 + 10858
    assert client.get(url, params={"pid": 4251, "comm": "postgres"}).json()["total_us"] == 10858
    # no record of that pid: the comm (bcc's pid and ftrace's are both thread ids, but captures may differ)
    assert client.get(url, params={"pid": 9999, "comm": "postgres"}).json()["matched_by"] == "comm"

    # an offcputime-only analysis has no waker stacks
    other = ingest_paths(store, FOLDED)["id"]
    assert client.get(f"/api/analyses/{other}").json()["sources"][0]["waker_stacks"] == 0
    assert client.get(f"/api/analyses/{other}/wakers").json() == {
        "matched_by": "all",
        "total_us": 0,
        "records": 0,
        "pairs": 0,
        "items": [],
    }


def test_sample_offwaketime_is_what_the_generator_writes():
    assert (SAMPLES / gen_ext4_jbd2.OFFWAKE).read_text() == gen_ext4_jbd2.offwaketime()


def test_row_refs_are_capped_and_in_file_order(client, store):
    line = b"app;read;schedule;--;wake_up;irq;swapper/0 7\n"
    aid = ingest_bytes(store, **{"a.offwaketime.txt": b"# ./offwaketime -f\n" + line * 12})["id"]
    (item,) = client.get(f"/api/analyses/{aid}/wakers").json()["items"]
    assert (item["value_us"], item["records"]) == (84, 12)
    assert [r["line"] for r in item["rows"]] == list(range(2, 12))  # the first 10 of lines 2..13


@needs_public
def test_errors(client, store):
    aid = ingest_paths(store, OFFWAKE)["id"]
    r = client.get("/api/analyses/no-such-id/wakers")
    assert r.status_code == 404 and "no analysis with id" in r.json()["detail"]
    for params in (
        {"pid": "abc"},
        {"pid": -1},
        {"pid": 1 << 40},
        {"limit": 0},
        {"limit": 1001},
        {"comm": ""},
        {"lock": "x" * 257},
        {"lock_key": "x" * 257},
        {"lock_key": ""},
    ):
        r = client.get(f"/api/analyses/{aid}/wakers", params=params)
        assert r.status_code == 422, params
        assert r.json()["detail"].startswith("invalid request: "), params
