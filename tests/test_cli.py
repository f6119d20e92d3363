from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import REPO, SEED

STALLSCOPE = [sys.executable, "-m", "backend.cli"]


def run(*args, env=None):
    return subprocess.run(
        [*STALLSCOPE, *args], capture_output=True, text=True, cwd=REPO, env={**os.environ, **(env or {})}, timeout=120
    )


def test_ingest_json(tmp_path):
    db = tmp_path / "c.duckdb"
    p = run("ingest", "--db", str(db), "--name", "cli", "--json", str(SEED / "cfq-dispatch-starvation.blkparse.txt"))
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert set(out) == {"id", "url", "sources"} and out["url"] == f"/a/{out['id']}"
    assert (out["sources"][0]["format"], out["sources"][0]["events"]) == ("blkparse", 12)


def test_ingest_text_and_env_db(tmp_path):
    db = tmp_path / "env.duckdb"
    p = run("ingest", str(SEED / "cfq-dispatch-starvation.blkparse.txt"), env={"STALLSCOPE_DB": str(db)})
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("analysis ") and lines[1].startswith("link     /a/")
    assert "blkparse, 12 events from 12 lines, 0 skipped" in lines[2]
    assert db.exists()


def test_ingest_refuses_bad_file(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("not a trace\n")
    p = run("ingest", "--db", str(tmp_path / "b.duckdb"), str(bad))
    assert p.returncode == 1 and "bad.txt, line 1: unknown format" in p.stderr
    p = run("ingest", "--db", str(tmp_path / "b.duckdb"), str(tmp_path / "missing.txt"))
    assert p.returncode == 2 and "no such file" in p.stderr


def test_ingest_stores_each_file_sha256(tmp_path):
    import hashlib

    import duckdb

    db = tmp_path / "h.duckdb"
    files = [SEED / "cfq-dispatch-starvation.blkparse.txt", SEED / "xfs-unwritten-stall.trace-cmd-report.txt"]
    p = run("ingest", "--db", str(db), "--json", *map(str, files))
    assert p.returncode == 0, p.stderr
    with duckdb.connect(str(db), read_only=True) as con:  # hashed while the analysis was derived, stored before commit
        got = con.execute("SELECT filename, sha256 FROM sources ORDER BY id").fetchall()
    assert got == [(f.name, hashlib.sha256(f.read_bytes()).hexdigest()) for f in files]
