"""Disk (backend/disk.py): DELETE removes every row of an analysis and frees its blocks; rows of failed or killed
ingests give their space back to the system when the file next opens; spill files do not outlive the store; the
optional retention deletes old analyses (issue 24)."""

from __future__ import annotations

from datetime import datetime, timedelta

from fastapi.testclient import TestClient

from backend import disk
from backend.access import Access
from backend.app import create_app
from backend.schema import rows
from backend.store import Store
from tests.conftest import SAMPLES, ingest_paths

INCIDENT = [SAMPLES / n for n in ("incident.blkparse.txt", "incident.trace-cmd-report.txt", "incident.offcputime.txt")]
TOKEN = "t0ken-of-the-team-server-0123456789"


def _rows_of_sources(store: Store, source_ids: list[int]) -> dict[str, int]:
    con = store.cursor()
    try:
        found = {}
        for table in rows.tables_with(con, "source_id"):
            n = con.execute(
                f'SELECT count(*) FROM "{table}" WHERE list_contains(?, source_id)', [source_ids]
            ).fetchall()[0][0]
            if n:
                found[table] = n
        return found
    finally:
        con.close()


def test_delete_removes_every_row_and_frees_its_blocks(store):
    kept = ingest_paths(store, SAMPLES / "demo-cfq-starvation.blkparse.txt")
    gone = ingest_paths(store, *INCIDENT)
    gone_ids = [s["id"] for s in gone["sources"]]
    assert len(_rows_of_sources(store, gone_ids)) > 5
    con = store.cursor()
    con.execute("CHECKPOINT")  # its rows in the file's blocks (a large ingest passes the checkpoint threshold)
    free_before = disk.space(con)["free_bytes"]
    con.close()
    with TestClient(create_app(store, warm=False)) as c:
        assert c.get(f"/api/analyses/{gone['id']}/chains").status_code == 200
        r = c.delete(f"/api/analyses/{gone['id']}")
        assert r.status_code == 204, r.text
        assert c.get(f"/api/analyses/{gone['id']}").status_code == 404
        assert c.delete(f"/api/analyses/{gone['id']}").status_code == 404
        assert [a["id"] for a in c.get("/api/analyses").json()] == [kept["id"]]
        assert len(c.get(f"/api/analyses/{kept['id']}/requests").json()) > 0
    assert _rows_of_sources(store, gone_ids) == {}
    con = store.cursor()
    try:
        assert con.execute("SELECT count(*) FROM chains WHERE analysis_id = ?", [gone["id"]]).fetchall()[0][0] == 0
        assert disk.space(con)["free_bytes"] > free_before  # its blocks are free for the next ingest
    finally:
        con.close()


def test_delete_on_a_shared_server_needs_the_edit_key_or_the_token(store):
    with TestClient(create_app(store, warm=False, access=Access(token=TOKEN, allowed_hosts=("*",)))) as c:
        auth = {"Authorization": f"Bearer {TOKEN}"}
        path = SAMPLES / "cfq-dispatch-starvation.blkparse.txt"
        created = [
            c.post("/api/analyses", files=[("files", (path.name, path.read_bytes()))], headers=auth).json()
            for _ in range(2)
        ]
        a, b = created
        assert c.delete(f"/api/analyses/{a['id']}").status_code == 401
        assert c.delete(f"/api/analyses/{a['id']}", headers={"X-Edit-Key": b["edit_key"]}).status_code == 403
        assert c.delete(f"/api/analyses/{a['id']}", headers={"X-Edit-Key": a["edit_key"]}).status_code == 204
        assert c.delete(f"/api/analyses/{b['id']}", headers=auth).status_code == 204
        assert c.get("/api/analyses", headers=auth).json() == []


def test_a_killed_ingest_gives_its_space_back_at_the_next_start(tmp_path, monkeypatch):
    monkeypatch.setattr(disk, "COMPACT_FREE_BYTES", 1 << 20)
    path = tmp_path / "s.duckdb"
    store = Store(path)
    kept = ingest_paths(store, SAMPLES / "cfq-dispatch-starvation.blkparse.txt")
    died = ingest_paths(store, *INCIDENT)
    con = store.cursor()  # as a process killed before publishing leaves it: staged rows, nothing of the final commit
    ids = [s["id"] for s in died["sources"]]
    for table in rows.tables_with(con, "analysis_id"):
        con.execute(f"DELETE FROM {table} WHERE analysis_id = ?", [died["id"]])
    for table in ("wait_rows", "chain_link_rows", "blk_top"):
        con.execute(f"DELETE FROM {table} WHERE list_contains(?, source_id)", [ids])
    con.execute("DELETE FROM analyses WHERE id = ?", [died["id"]])
    con.close()
    store.close()
    size_before = path.stat().st_size
    store = Store(path)
    try:
        size_after = path.stat().st_size
        assert size_after < size_before * 0.6, (size_before, size_after)
        assert _rows_of_sources(store, [s["id"] for s in died["sources"]]) == {}
        with TestClient(create_app(store, warm=False)) as c:  # what was kept reads as before
            assert [a["id"] for a in c.get("/api/analyses").json()] == [kept["id"]]
            assert len(c.get(f"/api/analyses/{kept['id']}/requests").json()) == 1
            again = ingest_paths(store, *INCIDENT)  # source ids go on from where they were
            assert min(s["id"] for s in again["sources"]) > max(s["id"] for s in died["sources"])
            assert c.get(f"/api/analyses/{again['id']}/chains").status_code == 200
    finally:
        store.close()


def test_spill_files_are_removed_at_stop_and_at_start(tmp_path):
    path = tmp_path / "s.duckdb"
    spill = disk.spill_dir(path)
    spill.mkdir()
    (spill / "duckdb_temp_storage-0.tmp").write_bytes(b"\0" * 4096)  # left by a crash
    store = Store(path)
    assert not spill.exists()
    con = store.cursor()
    assert con.execute("SELECT current_setting('temp_directory')").fetchall()[0][0] == str(spill)
    con.close()
    spill.mkdir(exist_ok=True)
    (spill / "duckdb_temp_block-1.block").write_bytes(b"\0" * 4096)
    store.close()
    assert not spill.exists()


def test_retention_deletes_old_analyses(store):
    old = ingest_paths(store, SAMPLES / "cfq-dispatch-starvation.blkparse.txt")
    new = ingest_paths(store, SAMPLES / "xfs-open-stall.offcputime.txt")
    con = store.cursor()
    con.execute("UPDATE analyses SET created_at = ? WHERE id = ?", [datetime.now() - timedelta(days=10), old["id"]])
    con.close()
    assert disk.retention_days({"STALLSCOPE_RETENTION_DAYS": "7"}) == 7
    assert disk.retention_days({}) is None
    forgotten = []
    assert disk.Retention(store, 7, on_delete=forgotten.append).run_once() == [old["id"]]
    assert forgotten == [old["id"]]
    con = store.cursor()
    try:
        assert [r[0] for r in con.execute("SELECT id FROM analyses").fetchall()] == [new["id"]]
    finally:
        con.close()
