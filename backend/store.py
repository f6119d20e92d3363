"""The database file and its connection.

One DuckDB connection owns the file; every request and every ingest works on its own `cursor()` (a DuckDB
connection is not shared across threads). The Store owns the time limits of every statement on them (backend/db.py:
the Deadlines thread starts when the file opens and stops when it closes), so the connection and its cursors are
backend.db.Connection objects, a DuckDB connection with those Deadlines. Opening the file creates or migrates its schema (backend/schema/), runs
the derive steps a migration left pending (derive/pipeline.run_pending), and deletes what an ingest that never
finished left; `ingest` hands the connection to backend/ingest/. (What is computed from an analysis once it is
committed, its first views, is queries/first_views.precompute's.)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

import duckdb

from . import db as statements
from . import disk
from .derive.pipeline import run_pending
from .ingest.files import IngestError, InputFile, Progress
from .ingest.pipeline import ingest
from .memory import return_freed_blocks
from .queries import stored
from .schema import create_or_migrate
from .schema.rows import delete_analysis, discard_unfinished

__all__ = ["IngestError", "InputFile", "Progress", "Store"]  # the types of Store.ingest's arguments and refusal


class Store:
    def __init__(self, path: str | Path, memory_limit: str = os.environ.get("STALLSCOPE_MEMORY_LIMIT", "512MB")):
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        # rows need no insertion order (every read sorts), which lets DuckDB insert in parallel
        # no Python replacement scans: a missing table must be an error, never a Python variable of that name
        # memory freed by DuckDB goes back to the OS from 32 MB on (the default keeps up to 128 MB per flush)
        config = {
            "preserve_insertion_order": False,
            "memory_limit": memory_limit,
            "python_enable_replacements": False,
            "checkpoint_threshold": "1GB",
            "allocator_flush_threshold": "32MB",
        }
        config["temp_directory"] = str(
            disk.spill_dir(path)
        )  # spill files: removed at close (and here, left by a crash)
        disk.remove_spill_files(path)
        return_freed_blocks()
        self.config = config
        self.deadlines = statements.Deadlines().start()  # stopped by close()
        self.memory = statements.MemoryShare(memory_limit)
        try:
            self.db = self._connect()
            create_or_migrate(self.db)
            run_pending(self.db)  # the derive steps a migration left to run over the file's kept rows
            discard_unfinished(self.db)
            stored.discard_orphans(self.db)
            disk.checkpoint(self.db)
            if disk.worth_compacting(self.db):  # rows deleted since (failed or killed ingests, DELETEs): space back
                self.db.close()
                disk.compact(path, config, self.deadlines)
                self.db = self._connect()
        except BaseException:
            self.deadlines.stop()
            raise

    def _connect(self) -> statements.Connection:
        return statements.Connection(duckdb.connect(str(self.path), config=self.config), self.deadlines, self.memory)

    def cursor(self) -> statements.Connection:
        return self.db.cursor()

    def close(self) -> None:
        self.db.close()
        self.deadlines.stop()
        disk.remove_spill_files(self.path)

    def delete_analysis(self, analysis_id: str) -> bool:
        """Deletes an analysis and every row of it (one transaction: schema/rows.py), then checkpoints so that its
        blocks are free for the next ingest. False if there was no such analysis."""
        con = self.cursor()
        try:
            if not delete_analysis(con, analysis_id):
                return False
            disk.checkpoint(con, if_free=True)  # another transaction is open: the next automatic checkpoint frees them
            return True
        finally:
            con.close()

    def ingest(
        self, files: Iterable[InputFile], name: str | None = None, progress: Progress | None = None, **how
    ) -> dict:
        """Creates one analysis from the files, a list or files that arrive (backend/ingest/pipeline.py: `how` is
        bytes_total, spool). Raises IngestError (nothing written) if any is refused."""
        return ingest(self.db, files, name, progress, **how)
