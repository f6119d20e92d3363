"""Waits and chains of waits from ftrace: the seed report's XFS stall, and an ext4/jbd2 commit stall with its
blktrace (samples/gen_ext4_jbd2.py).

Golden files (tests/golden/stalls/*.json: the /waits and /chains answers) are rewritten with UPDATE_GOLDEN=1;
the explicit assertions below are what was checked by hand against the trace lines.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from backend.cache import AnalysisCache
from samples import gen_ext4_jbd2
from tests.conftest import SAMPLES, SEED, ingest_bytes, ingest_paths

GOLDEN = Path(__file__).resolve().parent / "golden" / "stalls"
XFS = SEED / "xfs-unwritten-stall.trace-cmd-report.txt"
EXT4 = SAMPLES / gen_ext4_jbd2.TRACE
EXT4_BLK = SAMPLES / gen_ext4_jbd2.BLK


def _golden(name: str, value) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    assert value == json.loads(path.read_text())


def test_sample_files_are_what_the_generator_writes():
    trace, blk = gen_ext4_jbd2.build()
    assert EXT4.read_text() == trace and EXT4_BLK.read_text() == blk


def test_xfs_seed_chain(client, store):
    aid = ingest_paths(store, XFS)["id"]
    chains = client.get(f"/api/analyses/{aid}/chains").json()
    assert len(chains) == 1
    c = chains[0]
    assert (c["id"], c["duration_ns"]) == (1, 316673836)
    writer, convertd, logd = c["links"]
    # file_writer: down_write entered at .968921 (line 94), returned with 316673.836 us (line 117); no switch-out,
    # no wake-up in the excerpt: a wait inferred from the call
    assert (writer["pid"], writer["comm"], writer["lock"], writer["relation"]) == (
        30495,
        "file_writer",
        "xfs_ilock via down_write",
        "held_by",
    )
    assert (writer["start_ns"], writer["end_ns"], writer["duration_ns"]) == (
        358613968921000,
        358614285596000,
        316673836,
    )
    assert writer["inferred"] and writer["line"] == 94
    assert "down_write() (line 94)" in writer["evidence"] and "no wake-up line" in writer["evidence"]
    # ... held by xfsconvertd: xfs_ilock returned at .942547 (lines 7-8), no xfs_iunlock anywhere
    assert "xfsconvertd/7 (251) returned from xfs_ilock() (line 7) at 358613.942547" in writer["evidence"]
    assert "did not call xfs_iunlock() in the rest of the trace" in writer["evidence"]
    assert writer["stack"][-3:] == ["xfs_iomap", "xfs_ilock", "down_write"] and writer["stack"][0] == "handle_mm_fault"
    # flush-8:0 waits on the same inode lock (down_read at line 72, never returns in the excerpt)
    (flush,) = writer["also_waiting"]
    assert (flush["pid"], flush["comm"], flush["lock"], flush["line"], flush["end_known"]) == (
        505,
        "flush-8:0",
        "xfs_ilock via down_read",
        72,
        False,
    )

    # xfsconvertd: down() entered at .942886 (line 61), woken by xfslogd's sched_wakeup at .285381 (line 112)
    assert (convertd["pid"], convertd["comm"], convertd["lock"], convertd["relation"]) == (
        251,
        "xfsconvertd/7",
        "xfs_buf_lock via down",
        "io_completion",
    )
    assert (convertd["start_ns"], convertd["end_ns"], convertd["duration_ns"]) == (
        358613942886000,
        358614285381000,
        342495000,
    )
    assert convertd["inferred"] and "ends at its wake-up (line 112)" in convertd["evidence"]
    assert "xfs_buf_iodone_work()" in convertd["evidence"]
    assert convertd["request"] is None  # no blktrace in this analysis

    # xfslogd ran the buffer's I/O completion: xfs_buf_iodone_work -> xfs_buf_unlock -> up
    assert (logd["pid"], logd["comm"], logd["lock"], logd["relation"], logd["line"]) == (
        219,
        "xfslogd/7",
        None,
        None,
        112,
    )
    assert logd["stack"][-3:] == ["xfs_buf_iodone_work", "xfs_buf_unlock", "up"]
    assert "xfs_buf_iodone_work → xfs_buf_unlock → up" in logd["evidence"]
    _golden("xfs-unwritten-stall.chains.json", chains)


def test_xfs_seed_waits(client, store):
    aid = ingest_paths(store, XFS)["id"]
    # the stalls by duration; file_reader's short sleep (S, no lock known: an idle sleep) only with idle=true
    stalls = client.get(f"/api/analyses/{aid}/waits").json()
    assert [(w["pid"], w["kind"], w["line"]) for w in stalls] == [
        (251, "call", 61),
        (505, "call", 72),
        (30495, "call", 94),
    ]
    waits = client.get(f"/api/analyses/{aid}/waits", params={"idle": True}).json()
    assert [(w["pid"], w["kind"], w["line"]) for w in waits] == [
        (251, "call", 61),
        (505, "call", 72),
        (30495, "call", 94),
        (31161, "sched", 95),
    ]
    assert waits[:3] == stalls
    convertd = waits[0]
    assert (convertd["state"], convertd["waker_pid"], convertd["waker_comm"], convertd["wake_line"]) == (
        None,
        219,
        "xfslogd/7",
        112,
    )
    assert {"xfs_buf_iodone_work", "xfs_buf_unlock", "up"} <= set(convertd["waker_stack"])
    writer = next(w for w in waits if w["pid"] == 30495)
    assert (writer["holder_pid"], writer["holder_line"], writer["holder_ns"]) == (251, 7, 358613942547000)
    assert writer["waker_pid"] is None
    reader = waits[-1]  # file_reader switched out (S) at line 95, never back: open to the end of the excerpt
    assert (reader["state"], reader["end_known"], reader["end_ns"], reader["inferred"]) == (
        "S",
        False,
        358614285597000,
        True,
    )

    # filters and order
    def q(**p):
        return [w["line"] for w in client.get(f"/api/analyses/{aid}/waits", params={"idle": True, **p}).json()]

    assert q(order="start") == [61, 72, 94, 95]
    assert q(order="start", idle=False) == [61, 72, 94]
    assert q(pid=30495) == [94]
    assert q(lock="xfs_ilock") == [72, 94]
    assert q(t0_ns=358614285590000) == [72, 94, 95]
    assert q(t1_ns=358613950000000) == [61]
    assert q(limit=1) == [61]
    _golden("xfs-unwritten-stall.waits.json", waits)


def test_a_frame_with_a_unit_separator_stays_one_frame(client, store):
    """Stacks are stored as their frames joined by \\x1f: a function name holding one (a corrupt or hostile trace)
    is named with '?' instead, everywhere, and the stacks keep their frames."""
    text = XFS.read_text()
    assert text.count("xfs_iomap_write_unwritten") == 1  # on the stack of xfsconvertd's wait (line 61)
    plain = ingest_paths(store, XFS)["id"]
    odd = ingest_bytes(store, **{"odd.txt": text.replace("xfs_iomap_write_unwritten", "xfs_iomap\x1fwrite").encode()})[
        "id"
    ]
    a, b = (client.get(f"/api/analyses/{i}/waits").json()[0] for i in (plain, odd))
    assert (a["line"], b["line"]) == (61, 61)
    assert b["stack"] == [("xfs_iomap?write" if f == "xfs_iomap_write_unwritten" else f) for f in a["stack"]]
    assert "xfs_iomap?write" in b["stack"]


def test_stacks_are_the_same_when_the_names_do_not_fit_16_bits(client, store, monkeypatch):
    """The stacks' look-ups hold each call's function as an int16 while the source's names fit, else as an int32: a
    source with more than 32767 names (here the XFS excerpt's, then 40000 more) has the same waits and stacks."""
    from backend.derive import stacks, waits

    built = []
    index = stacks.call_index
    monkeypatch.setattr(stacks, "call_index", lambda *a: built.append(index(*a)) or built[-1])
    plain = ingest_paths(store, XFS)["id"]
    functions = waits.function_names
    monkeypatch.setattr(waits, "function_names", lambda con, sid: functions(con, sid) + [f"f{i}" for i in range(40000)])
    many = ingest_paths(store, XFS)["id"]
    assert [i["code_type"].__name__ for i in built] == ["int16", "int32"]
    a, b = (client.get(f"/api/analyses/{i}/waits", params={"idle": True}).json() for i in (plain, many))
    assert len(a) == 4 and [w.pop("source_id") for w in a] != [w.pop("source_id") for w in b] and a == b
    assert a[0]["stack"][-3:] == ["_xfs_buf_find", "xfs_buf_lock", "down"] and a[0]["waker_stack"]


def test_ext4_jbd2_chain_to_block_request(client, store):
    aid = ingest_paths(store, EXT4, EXT4_BLK)["id"]
    blk_source = client.get(f"/api/analyses/{aid}").json()["sources"][1]["id"]
    chains = client.get(f"/api/analyses/{aid}/chains").json()
    assert len(chains) == 1
    c = chains[0]
    pg, jbd2, irq = c["links"]
    # postgres switched out D at 7341.201620 (line 45) in start_this_handle, back at .214888 (line 127)
    assert (pg["pid"], pg["comm"], pg["lock"], pg["relation"], pg["inferred"]) == (
        4242,
        "postgres",
        "wait_transaction_locked",
        "woken_by",
        False,
    )
    assert c["duration_ns"] == pg["duration_ns"] == 7341214888000 - 7341201620000
    assert {"ext4_file_write_iter", "start_this_handle", "wait_transaction_locked"} <= set(pg["stack"])
    assert [(a["pid"], a["line"]) for a in pg["also_waiting"]] == [(4251, 61)]
    # jbd2 waits for its commit record (D, line 30 -> line 105), woken by the disk interrupt on idle CPU 3
    assert (jbd2["pid"], jbd2["comm"], jbd2["relation"], jbd2["line"]) == (312, "jbd2/sda1-8", "io_completion", 30)
    assert jbd2["lock"] == "__wait_on_buffer via I/O"
    assert "jbd2_journal_commit_transaction" in jbd2["stack"] and jbd2["stack"][-2:] == ["io_schedule", "schedule"]
    req = jbd2["request"]
    assert (req["source_id"], req["dev"], req["sector"], req["nsect"], req["rwbs"], req["pid"]) == (
        blk_source,
        "8,0",
        1465352,
        8,
        "WFS",
        312,
    )
    assert (req["i_ns"], req["d_ns"], req["c_ns"]) == (7341201386440, 7341201502077, 7341214863402)
    assert req["c_ns"] <= irq["start_ns"] == 7341214873000  # completed 9.6 µs before the wake-up
    # (source_id, line) is the request's key for its detail: the Dispatch view opens it from the chain
    detail = client.get(f"/api/analyses/{aid}/requests/{req['source_id']}/{req['line']}").json()
    assert detail["request"]["sector"] == 1465352 and detail["events"][-1]["action"] == "C"
    assert detail["events"][-1]["pid"] is None  # the completion ran in interrupt context
    assert (irq["pid"], irq["comm"], irq["relation"]) == (0, "<idle>", None)
    assert {"blk_update_request", "bio_endio", "end_buffer_write_sync"} <= set(irq["stack"])
    _golden("ext4-jbd2-commit.chains.json", chains)


def test_ext4_jbd2_without_blktrace_has_no_request(client, store):
    aid = ingest_paths(store, EXT4)["id"]
    (c,) = client.get(f"/api/analyses/{aid}/chains").json()
    assert [link["relation"] for link in c["links"]] == ["woken_by", "io_completion", None]
    assert all(link["request"] is None for link in c["links"])


def test_calls_for_a_flame_chart(client, store):
    aid = ingest_paths(store, XFS)["id"]
    r = client.get(f"/api/analyses/{aid}/calls", params={"pid": 30495, "t0_ns": 358614285590000}).json()
    funcs = [x["func"] for x in r["calls"]]
    # calls open across the window's start are included (handle_mm_fault is partial: its exit is not in the excerpt)
    assert funcs[:3] == ["handle_mm_fault", "__do_fault", "xfs_vm_page_mkwrite"]
    assert "down_write" in funcs and "xfs_bmapi" in funcs and "find_vma" not in funcs
    assert not r["truncated"]
    r = client.get(f"/api/analyses/{aid}/calls", params={"pid": 30495, "max_depth": 1, "limit": 2}).json()
    assert [x["func"] for x in r["calls"]] == ["down_read_trylock", "_cond_resched"] and r["truncated"]
    assert client.get(f"/api/analyses/{aid}/calls", params={"pid": 1}).json()["calls"] == []
    assert client.get(f"/api/analyses/{aid}/calls").status_code == 422  # pid is required


def test_no_ftrace_data_gives_empty_lists(client, store):
    aid = ingest_paths(store, SAMPLES / "cfq-dispatch-starvation.blkparse.txt")["id"]
    for what in ("waits", "chains"):
        r = client.get(f"/api/analyses/{aid}/{what}")
        assert r.status_code == 200 and r.json() == []
    assert client.get(f"/api/analyses/{aid}/calls", params={"pid": 804}).json()["calls"] == []
    # and once the stall tables exist (an ftrace analysis was loaded), still empty for this one
    ingest_paths(store, XFS)
    assert client.get(f"/api/analyses/{aid}/waits").json() == []
    assert client.get(f"/api/analyses/{aid}/chains").json() == []


def test_ftrace_without_waits(client, store):
    body = b"   app-7 [001] 100.000001: funcgraph_entry:      0.500 us |  find_vma();\n"
    aid = ingest_bytes(store, **{"tiny.txt": body})["id"]
    assert client.get(f"/api/analyses/{aid}/waits").json() == []
    assert client.get(f"/api/analyses/{aid}/chains").json() == []


@pytest.mark.parametrize("path", ["waits", "chains", "calls?pid=1"])
def test_unknown_analysis_is_404(client, path):
    r = client.get(f"/api/analyses/nope/{path}")
    assert r.status_code == 404 and "no analysis" in r.json()["detail"]


def test_bad_parameters_are_422(client, store):
    aid = ingest_paths(store, XFS)["id"]
    for params in ({"order": "size"}, {"limit": 0}, {"pid": "x"}):
        r = client.get(f"/api/analyses/{aid}/waits", params=params)
        assert r.status_code == 422 and r.json()["detail"].startswith("invalid request")


def test_openapi_types_the_new_routes(client):
    spec = client.get("/openapi.json").json()
    for route in ("waits", "chains", "calls"):
        op = spec["paths"][f"/api/analyses/{{analysis_id}}/{route}"]["get"]
        assert "$ref" in json.dumps(op["responses"]["200"])
    link = spec["components"]["schemas"]["ChainLink"]["properties"]
    assert {"relation", "also_waiting", "request", "evidence", "inferred"} <= set(link)


def test_print_marks(client, store):
    from tests.conftest import ingest_paths as _ingest

    aid = _ingest(store, SEED / "xfs-unwritten-stall.trace-cmd-report.txt")["id"]
    marks = client.get(f"/api/analyses/{aid}/marks").json()
    assert [(m["line"], m["t_ns"], m["pid"], m["comm"], m["text"]) for m in marks] == [
        (73, 358613968909000, 30495, "file_writer", "delay start")
    ]  # line 73 of the excerpt
    assert client.get(f"/api/analyses/{aid}/marks", params={"t1_ns": 358613968908999}).json() == []


def test_scheduler_events_without_calls(client, store):
    # sched_switch/sched_wakeup only, no function_graph call (every stack is empty): this used to fail the ingest
    body = (
        b"cpus=2\n"
        b"     file_writer-30495 [001] 100.000100: sched_switch:   file_writer:30495 [120] D ==> swapper/1:0 [120]\n"
        b"          <idle>-0     [001] 100.002100: sched_wakeup:   file_writer:30495 [120] success=1 CPU:001\n"
        b"          <idle>-0     [001] 100.002200: sched_switch:   swapper/1:0 [120] R ==> file_writer:30495 [120]\n"
        b"     flush-8:0-505   [000] 100.000500: sched_switch:   flush-8:0:505 [120] S ==> swapper/0:0 [120]\n"
    )
    aid = ingest_bytes(store, **{"sched.txt": body})["id"]
    waits = client.get(f"/api/analyses/{aid}/waits", params={"order": "start", "idle": True}).json()
    # file_writer: switched out in D at line 2, woken from the idle CPU at line 3, back on CPU at line 4;
    # flush-8:0: asleep (S) from line 5 until the trace ends (its last timestamp, line 4's)
    assert [
        (
            w["line"],
            w["pid"],
            w["state"],
            w["start_ns"],
            w["end_ns"],
            w["end_line"],
            w["end_known"],
            w["waker_pid"],
            w["wake_line"],
            w["stack"],
            w["waker_stack"],
            w["lock"],
        )
        for w in waits
    ] == [
        (2, 30495, "D", 100000100000, 100002200000, 4, True, 0, 3, [], [], None),
        (5, 505, "S", 100000500000, 100002200000, None, False, None, None, [], None, None),
    ]
    (chain,) = client.get(f"/api/analyses/{aid}/chains").json()  # only the D wait starts one
    writer, idle = chain["links"]
    assert (writer["wait_line"], writer["relation"], idle["pid"], idle["comm"], idle["line"], idle["stack"]) == (
        2,
        "woken_by",
        0,
        "<idle>",
        3,
        [],
    )
    assert idle["evidence"] == "an interrupt on the idle CPU woke file_writer (30495) at line 3 from ?"


def _old_table(con, view: str, select: str, *tables: str) -> None:
    """An older layout, made from a file of the current one: the view `view` becomes a table of that name with the
    rows of `select` (over the view), and the tables behind it are dropped. Such a file predates schema versions
    (backend/schema/migrations.py): it has no schema_version."""
    con.execute("DROP TABLE IF EXISTS schema_version")
    con.execute(f"CREATE TABLE old AS {select}")
    con.execute(f"DROP VIEW {view}")
    for table in tables:
        con.execute(f"DROP TABLE {table}")
    con.execute(f"ALTER TABLE old RENAME TO {view}")


def _table_kinds(con, *names: str) -> dict[str, str]:
    """{name: 'VIEW' | 'BASE TABLE'} of those of the names the database has."""
    return dict(
        con.execute(
            "SELECT table_name, table_type FROM information_schema.tables WHERE list_contains(?, table_name)",
            [list(names)],
        ).fetchall()
    )


def test_file_with_stacks_stored_as_lists_is_rebuilt(tmp_path):
    """A database written when tables `waits` and `chain_links` stored their stacks as lists (and the waits their
    frames' lines, stack_lines): opening it moves their rows to wait_rows and chain_link_rows, the stacks as text,
    read through the views `waits` and `chain_links` as the same lists; a new ingest into it works."""
    import duckdb

    from backend.store import Store

    path = tmp_path / "old.duckdb"
    s = Store(path)
    ingest_paths(s, XFS)
    con = s.cursor()
    cols = "source_id, line, stack, waker_stack, holder_stack, lock"
    before = con.execute(f"SELECT {cols} FROM waits ORDER BY line").fetchall()
    link_cols = "chain_id, pos, pid, lock, stack, relation"
    links = con.execute(f"SELECT {link_cols} FROM chain_links ORDER BY chain_id, pos").fetchall()
    con.close()
    s.close()
    assert any(r[3] for r in before) and any(r[4] for r in before)  # waker and holder stacks too
    assert any(r[4] for r in links)
    con = duckdb.connect(str(path))  # the old layout: tables of those names, the stacks as lists, no text columns
    con.execute("DROP VIEW stall_waits")
    _old_table(
        con,
        "waits",
        "SELECT * EXCLUDE (stack_text, waker_stack_text, holder_stack_text),"
        " list_transform(stack, lambda f: 7) AS stack_lines FROM waits",
        "wait_rows",
    )
    con.execute("CREATE VIEW stall_waits AS SELECT * FROM waits")
    _old_table(con, "chain_links", "SELECT * EXCLUDE (stack_text) FROM chain_links", "chain_link_rows")
    con.close()

    s = Store(path)
    try:
        con = s.cursor()
        assert _table_kinds(con, "waits", "wait_rows", "chain_links", "chain_link_rows") == {
            "waits": "VIEW",
            "wait_rows": "BASE TABLE",
            "chain_links": "VIEW",
            "chain_link_rows": "BASE TABLE",
        }
        assert {
            c
            for (c,) in con.execute(
                "SELECT column_name FROM duckdb_columns() WHERE table_name = 'wait_rows' AND column_name LIKE '%stack%'"
            ).fetchall()
        } == {"stack_text", "waker_stack_text", "holder_stack_text"}  # no stack_lines, no lists
        assert con.execute(f"SELECT {cols} FROM waits ORDER BY line").fetchall() == before
        assert con.execute(f"SELECT {link_cols} FROM chain_links ORDER BY chain_id, pos").fetchall() == links
        con.begin()  # an empty stack reads as an empty list, a missing one as null
        con.execute(
            "INSERT INTO wait_rows (source_id, line, kind, pid, start_ns, end_ns, duration_ns, end_known,"
            " stack_text, inferred, evidence) VALUES (0, 1, 'sched', 1, 0, 1, 1, true, '', false, '')"
        )
        assert con.execute("SELECT stack, waker_stack, holder_stack FROM waits WHERE source_id = 0").fetchall() == [
            ([], None, None)
        ]
        con.rollback()
        second = ingest_paths(s, XFS)["id"]
        assert (
            con.execute(
                "SELECT count(*) FROM stall_waits w JOIN sources s ON s.id = w.source_id WHERE s.analysis_id = ?",
                [second],
            ).fetchall()[0][0]
            > 0
        )
        con.close()
    finally:
        s.close()


def test_file_with_call_names_stored_as_text_is_rebuilt(tmp_path):
    """A database written when the table `fg_calls` held each call's comm and func as text: opening it moves the
    names to fg_names and the rows to fg_call_rows, read through the view `fg_calls` as the same calls; the calls
    route, the waits and a new ingest into it work."""
    import duckdb

    from backend.queries import stalls
    from backend.store import Store

    path = tmp_path / "old.duckdb"
    s = Store(path)
    aid = ingest_paths(s, XFS)["id"]
    con = s.cursor()
    before = con.execute("SELECT * FROM fg_calls ORDER BY source_id, line, exit_line").fetchall()
    calls = stalls.calls(con, aid, 30495)
    con.close()
    s.close()
    assert len(before) == 90 and calls["calls"]
    con = duckdb.connect(str(path))  # the old layout: a table of that name with the names as text
    _old_table(con, "fg_calls", "SELECT * FROM fg_calls", "fg_call_rows", "fg_names")
    con.close()

    s = Store(path)
    try:
        con = s.cursor()
        assert _table_kinds(con, "fg_calls", "fg_call_rows", "fg_names") == {
            "fg_calls": "VIEW",
            "fg_call_rows": "BASE TABLE",
            "fg_names": "BASE TABLE",
        }
        assert con.execute("SELECT * FROM fg_calls ORDER BY source_id, line, exit_line").fetchall() == before
        names = [n for (n,) in con.execute("SELECT name FROM fg_names ORDER BY id").fetchall()]
        assert names == sorted(names) and "down_write" in names and "file_writer" in names  # ids in name order
        assert stalls.calls(con, aid, 30495) == calls
        second = ingest_paths(s, XFS)["id"]
        (chain, *_) = stalls.chains(con, AnalysisCache(), second)
        assert [(link["pid"], link["lock"]) for link in chain["links"][:2]] == [
            (30495, "xfs_ilock via down_write"),
            (251, "xfs_buf_lock via down"),
        ]
        con.close()
    finally:
        s.close()


def test_page_waits_are_named_by_their_caller(client, store):
    """folio_wait_bit_common sleeps for a page's lock and for its write-back alike: the function that called it
    names the wait (an fsync behind write-back is not on a page lock); alone, it is only a page flag ('page bit')."""
    body = b"""cpus=2
           fsync-100   [000] 100.000001: funcgraph_entry:                   | do_fsync() {
           fsync-100   [000] 100.000002: funcgraph_entry:                   |   file_write_and_wait_range() {
           fsync-100   [000] 100.000003: funcgraph_entry:                   |     __filemap_fdatawait_range() {
           fsync-100   [000] 100.000004: funcgraph_entry:                   |       folio_wait_writeback() {
           fsync-100   [000] 100.000005: funcgraph_entry:                   |         folio_wait_bit_common() {
           fsync-100   [000] 100.000006: funcgraph_entry:                   |           io_schedule() {
           fsync-100   [000] 100.000007: sched_switch:   fsync:100 [120] D ==> swapper/0:0 [120]
          reader-200   [001] 100.000008: funcgraph_entry:                   | filemap_fault() {
          reader-200   [001] 100.000009: funcgraph_entry:                   |   __folio_lock_or_retry() {
          reader-200   [001] 100.000010: funcgraph_entry:                   |     folio_wait_bit_common() {
          reader-200   [001] 100.000011: funcgraph_entry:                   |       io_schedule() {
          reader-200   [001] 100.000012: sched_switch:   reader:200 [120] D ==> swapper/1:0 [120]
          <idle>-0     [001] 100.002000: sched_wakeup:   reader:200 [120] success=1 CPU:001
          <idle>-0     [001] 100.002001: sched_switch:   swapper/1:0 [120] R ==> reader:200 [120]
          reader-200   [001] 100.002002: funcgraph_exit:        0.100 us |       }
          reader-200   [001] 100.002003: funcgraph_exit:        0.100 us |     }
          reader-200   [001] 100.002004: funcgraph_exit:        0.100 us |   }
          reader-200   [001] 100.002005: funcgraph_exit:        0.100 us | }
          reader-200   [001] 100.002006: funcgraph_entry:                   | folio_wait_bit_common() {
          reader-200   [001] 100.002007: funcgraph_entry:                   |   io_schedule() {
          reader-200   [001] 100.002008: sched_switch:   reader:200 [120] D ==> swapper/1:0 [120]
          <idle>-0     [000] 100.009000: sched_wakeup:   fsync:100 [120] success=1 CPU:000
          <idle>-0     [001] 100.009001: sched_wakeup:   reader:200 [120] success=1 CPU:001
"""
    aid = ingest_bytes(store, **{"pages.txt": body})["id"]
    waits = client.get(f"/api/analyses/{aid}/waits", params={"order": "start"}).json()
    assert [(w["line"], w["comm"], w["lock"], w["primitive"]) for w in waits] == [
        (8, "fsync", "folio_wait_writeback via io_schedule", "page writeback"),
        (13, "reader", "__folio_lock_or_retry via io_schedule", "page lock"),
        (22, "reader", "page bit via io_schedule", "page bit"),
    ]
    by_lock = {
        k: [w["line"] for w in client.get(f"/api/analyses/{aid}/waits", params={"lock_key": k}).json()]
        for k in ("page writeback", "page lock", "page bit", "folio_wait_bit_common")
    }
    assert by_lock == {"page writeback": [8], "page lock": [13], "page bit": [22], "folio_wait_bit_common": [22]}


def test_first_chains_built_alone_are_the_first_of_all(store):
    """The whole analysis' chains (the first view, computed at ingest) are built for the first `limit` chains only, not
    every chain's links: their texts are those of the same chains built whole, and a window reads the whole build."""
    from backend.queries import stall_windows, stalls

    aid = ingest_paths(store, SAMPLES / "incident.trace-cmd-report.txt", SAMPLES / "incident.blkparse.txt")["id"]
    con = store.cursor()
    try:
        whole = stall_windows._build_chains(con, aid)
        assert len(whole.ids) > 100  # (the incident demo: 328)
        for limit in (1, 7, 100, len(whole.ids) + 5):
            alone = stall_windows._build_chains(con, aid, limit)
            assert alone.ids == whole.ids[:limit]
            assert alone.select(limit) == whole.select(limit)
        cache = AnalysisCache()
        assert stalls.chains(con, cache, aid, 100) == [json.loads(t) for t in whole.select(100)]
        assert not cache.kept((aid, "chains-built", stall_windows.offsets(con, cache, aid)))  # built alone, not kept
        t0, t1 = whole.starts[150], whole.ends[150]
        assert stalls.chains(con, cache, aid, 5, t0, t1) == [json.loads(t) for t in whole.select(5, t0, t1)]
        assert stalls.chains(con, cache, aid, 100) == [json.loads(t) for t in whole.select(100)]  # now from it
    finally:
        con.close()
