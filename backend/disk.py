"""The disk the database takes: checkpoints, giving freed space back to the OS, DuckDB's spill files, and the
optional retention (docs/SECURITY.md, issue 24). (Deleting an analysis' rows is backend/schema/rows.py's;
Store.delete_analysis deletes them, then checkpoints here.) Every statement runs through backend/db.py `execute`.

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

from .db import Connection, Deadlines, execute

COMPACT_FREE_BYTES = 64 << 20
COMPACT_FREE_SHARE = 0.25
RETENTION_EVERY_S = 3600


def spill_dir(path: Path) -> Path:
    return Path(f"{path}.tmp")


def remove_spill_files(path: Path) -> None:
    shutil.rmtree(spill_dir(path), ignore_errors=True)


def space(con: Connection) -> dict:
    """The file's size and the part of it in free blocks (bytes)."""
    row = execute(
        con,
        "SELECT block_size, total_blocks, free_blocks FROM pragma_database_size()"
        " WHERE database_name = current_database()",
    ).fetchall()
    block, total, free = row[0] if row else (0, 0, 0)
    return {"block_bytes": block, "total_bytes": block * total, "free_bytes": block * free}


def worth_compacting(con: Connection) -> bool:
    s = space(con)
    return s["free_bytes"] >= COMPACT_FREE_BYTES and s["free_bytes"] >= COMPACT_FREE_SHARE * max(s["total_bytes"], 1)


def checkpoint(con: Connection, *, if_free: bool = False) -> None:
    """Writes the WAL into the file and frees the blocks of deleted rows (under WRITE_SECONDS). With `if_free`, a
    checkpoint that cannot run now (another transaction is open) is left to the next automatic one."""
    try:
        execute(con, "CHECKPOINT")
    except duckdb.Error:
        if not if_free:
            raise


def compact(path: Path, config: dict, deadlines: Deadlines) -> bool:
    """Rewrites the database file without its free blocks (the caller holds no connection to it), each statement
    under WRITE_SECONDS. True if done."""
    new = path.with_name(path.name + ".compact")
    con = Connection(duckdb.connect(str(path), config=config), deadlines)
    try:
        checkpoint(con)
        if not worth_compacting(con):
            return False
        for p in (new, Path(f"{new}.wal")):
            p.unlink(missing_ok=True)
        execute(con, f"ATTACH '{_quoted(new)}' AS compacted")
        try:
            execute(con, f'COPY FROM DATABASE "{_name(con)}" TO compacted')
        finally:
            execute(con, "DETACH compacted")
    except BaseException:
        new.unlink(missing_ok=True)  # a copy cut short (its deadline, an error): the old file stays
        raise
    finally:
        con.close()
    Path(f"{path}.wal").unlink(missing_ok=True)  # checkpointed above, nothing in it
    os.replace(new, path)
    return True


def _quoted(p: Path) -> str:
    return str(p).replace("'", "''")


def _name(con: Connection) -> str:
    return execute(con, "SELECT current_database()").fetchall()[0][0]


def expired(con: Connection, days: float) -> list[str]:
    """Analyses created more than `days` days ago."""
    before = datetime.now(timezone.utc).replace(tzinfo=None) - timedelta(days=days)
    return [
        r[0]
        for r in execute(con, "SELECT id FROM analyses WHERE created_at < ? ORDER BY created_at", [before]).fetchall()
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
            old = expired(con, self.days)
        finally:
            con.close()
        gone = [aid for aid in old if self.store.delete_analysis(aid)]
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
