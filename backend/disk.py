"""The disk the database takes: deleting an analysis, giving freed space back to the OS, DuckDB's spill files, and
the optional retention (docs/SECURITY.md, issue 24).

DuckDB reuses the blocks that deleted rows free, but never shrinks its file: rows deleted after a failed ingest, a
killed one (deleted when the file next opens) or a DELETE stay as free blocks inside the file. `compact` writes the
live database into a new file (COPY FROM DATABASE: tables, views, sequences at their values) and puts it in place of
the old one; Store runs it when the file opens, before anything else uses it, once free blocks pass
COMPACT_FREE_BYTES and COMPACT_FREE_SHARE of the file. DuckDB's spill files (queries larger than the memory limit)
go to `<file>.tmp`, removed when the store closes and, left by a crash, when it opens.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb

COMPACT_FREE_BYTES = 64 << 20
COMPACT_FREE_SHARE = 0.25
RETENTION_EVERY_S = 3600


def spill_dir(path: Path) -> Path:
    return Path(f"{path}.tmp")


def remove_spill_files(path: Path) -> None:
    shutil.rmtree(spill_dir(path), ignore_errors=True)


def space(con) -> dict:
    """The file's size and the part of it in free blocks (bytes)."""
    row = con.execute(
        "SELECT block_size, total_blocks, free_blocks FROM pragma_database_size()"
        " WHERE database_name = current_database()"
    ).fetchall()
    block, total, free = row[0] if row else (0, 0, 0)
    return {"block_bytes": block, "total_bytes": block * total, "free_bytes": block * free}


def worth_compacting(con) -> bool:
    s = space(con)
    return s["free_bytes"] >= COMPACT_FREE_BYTES and s["free_bytes"] >= COMPACT_FREE_SHARE * max(s["total_bytes"], 1)


def compact(path: Path, config: dict) -> bool:
    """Rewrites the database file without its free blocks (the caller holds no connection to it). True if done."""
    con = duckdb.connect(str(path), config=config)
    try:
        con.execute("CHECKPOINT")
        if not worth_compacting(con):
            return False
        new = path.with_name(path.name + ".compact")
        for p in (new, Path(f"{new}.wal")):
            p.unlink(missing_ok=True)
        con.execute(f"ATTACH '{_quoted(new)}' AS compacted")
        con.execute(f'COPY FROM DATABASE "{_name(con)}" TO compacted')
        con.execute("DETACH compacted")
    finally:
        con.close()
    Path(f"{path}.wal").unlink(missing_ok=True)  # checkpointed above, nothing in it
    os.replace(new, path)
    return True


def _quoted(p: Path) -> str:
    return str(p).replace("'", "''")


def _name(con) -> str:
    return con.execute("SELECT current_database()").fetchall()[0][0]


def _tables_with(con, column: str) -> list[str]:
    return [
        r[0]
        for r in con.execute(
            "SELECT c.table_name FROM duckdb_columns() c JOIN duckdb_tables() t USING (database_name, schema_name,"
            " table_name) WHERE c.database_name = current_database() AND c.schema_name = 'main' AND c.column_name = ?"
            " ORDER BY 1",
            [column],
        ).fetchall()
    ]


def delete_analysis(con, analysis_id: str) -> bool:
    """Deletes an analysis and every row of it (its sources' rows in every table keyed by source_id, every row keyed
    by analysis_id, its edit key), in one transaction, then checkpoints so that the blocks are free for the next
    ingest. False if there was no such analysis."""
    con.begin()
    try:
        if not con.execute("SELECT 1 FROM analyses WHERE id = ?", [analysis_id]).fetchall():
            con.rollback()
            return False
        ids = [r[0] for r in con.execute("SELECT id FROM sources WHERE analysis_id = ?", [analysis_id]).fetchall()]
        by_analysis = set(_tables_with(con, "analysis_id"))
        for table in _tables_with(con, "source_id"):
            if table not in by_analysis and table != "sources":
                con.execute(f'DELETE FROM "{table}" WHERE list_contains(?, source_id)', [ids])
        for table in by_analysis - {"sources"}:
            con.execute(f'DELETE FROM "{table}" WHERE analysis_id = ?', [analysis_id])
        con.execute("DELETE FROM sources WHERE analysis_id = ?", [analysis_id])
        con.execute("DELETE FROM analyses WHERE id = ?", [analysis_id])
        con.commit()
    except BaseException:
        con.rollback()
        raise
    try:
        con.execute("CHECKPOINT")
    except duckdb.Error:  # another transaction is open: the next automatic checkpoint frees them
        pass
    return True


def expired(con, days: float) -> list[str]:
    """Analyses created more than `days` days ago."""
    before = datetime.now(timezone.utc).replace(tzinfo=None) - timedelta(days=days)
    return [
        r[0]
        for r in con.execute("SELECT id FROM analyses WHERE created_at < ? ORDER BY created_at", [before]).fetchall()
    ]


def retention_days(env: dict | None = None) -> float | None:
    env = os.environ if env is None else env
    value = env.get("STALLSCOPE_RETENTION_DAYS")
    if not value:
        return None
    days = float(value)
    if days <= 0:
        raise ValueError(f"STALLSCOPE_RETENTION_DAYS={value!r} must be more than 0")
    return days


class Retention:
    """Deletes the analyses older than `days`, at start and then every RETENTION_EVERY_S, in a thread of its own."""

    def __init__(self, store, days: float, on_delete=None):
        self.store, self.days, self.on_delete = store, days, on_delete
        self.stop_event = threading.Event()
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        """Starts its thread (the app's lifespan: backend/app.py)."""
        self.thread = threading.Thread(target=self._run, name="retention", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.stop_event.set()
        if self.thread is not None:
            self.thread.join(30)

    def run_once(self) -> list[str]:
        con = self.store.cursor()
        try:
            gone = [aid for aid in expired(con, self.days) if delete_analysis(con, aid)]
        finally:
            con.close()
        for aid in gone:
            if self.on_delete:
                self.on_delete(aid)
        return gone

    def _run(self) -> None:
        while not self.stop_event.is_set():
            started = time.monotonic()
            try:
                self.run_once()
            except duckdb.Error:
                pass  # tried again at the next round
            self.stop_event.wait(max(1.0, RETENTION_EVERY_S - (time.monotonic() - started)))
