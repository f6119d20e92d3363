"""The SQL console: a user's own SELECT over one analysis' documented views (views.py), in a sandbox.

How the sandbox holds, in layers (none relies on reading the SQL with patterns):
1. What is reachable: the query runs on a DuckDB database of its own, a copy of that one analysis' rows (a file per
   analysis and clock offsets, `Console.snapshot`, made on the first query by the server's connection: ATTACH, one
   CREATE TABLE AS per view, DETACH). Other analyses' rows are not in it; the server's database is not attached.
2. What may run: DuckDB's own parser (`duckdb.extract_statements`) must find exactly one statement, of type SELECT
   (COPY, ATTACH, INSTALL, LOAD, SET, PRAGMA, CREATE, EXPORT, CALL, several statements: refused with a 400 before
   anything runs); the functions that show the server's settings, files or run SQL text are refused from its parse
   tree (sql_worker.SERVER_FACTS: 403).
3. What the engine allows: the copy is opened read-only with `enable_external_access = false` (no file, network or
   extension access: read_csv('/etc/passwd'), glob, COPY, ATTACH fail inside DuckDB), extension autoload and
   autoinstall off, no Python replacement scans (a table name never reaches a Python variable), then
   `lock_configuration = true` (no SET can undo any of it).
4. Its share: the query runs in a worker process (sql_worker.py, at most WORKERS at once: sql_pool.py; others wait up
   to WAIT_SECONDS, then 503) with an address space (STALLSCOPE_SQL_ADDRESS_SPACE, 2 GiB), CPU time and nice 10 of its
   own, `threads = 1` and `memory_limit` (STALLSCOPE_SQL_MEMORY, 256MB), a time limit (STALLSCOPE_SQL_SECONDS, 10 s:
   interrupted by DuckDB, else the worker is killed half a second later), a row cap (`max_rows`) and a byte cap
   (STALLSCOPE_SQL_RESULT_BYTES, 16 MiB) on its answer (the result says it was cut). The server's memory holds the
   answer's bytes only, never the query's work.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import threading
from pathlib import Path

import duckdb

from ..db import Connection, execute
from . import views
from .catalogue import offsets_now
from .run import run
from .sql_pool import GRACE_S, Busy, WorkerFailed, WorkerPool
from .sql_values import type_name

SQL_SECONDS = float(os.environ.get("STALLSCOPE_SQL_SECONDS", "10"))
SQL_MEMORY = os.environ.get("STALLSCOPE_SQL_MEMORY", "256MB")
SQL_ADDRESS_SPACE = int(os.environ.get("STALLSCOPE_SQL_ADDRESS_SPACE", str(2 << 30)))  # bytes, per worker
RESULT_BYTES = int(os.environ.get("STALLSCOPE_SQL_RESULT_BYTES", str(16 << 20)))  # of an answer's rows
MAX_ROWS = 10_000  # rows a result holds by default
MAX_ROWS_LIMIT = 100_000
WORKERS = 2  # queries at once; the machine's other work keeps the rest
WAIT_SECONDS = 15.0  # a query waits this long for a free worker
KEEP = 6  # analysis copies kept on disk (least recently used deleted first)
SNAPSHOT_VERSION = 1  # bump when views.py changes: older copies are rebuilt


class SqlError(Exception):
    """A query refused or stopped, with the HTTP status that says why."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def check(sql: str) -> str:
    """The one SELECT statement of `sql`, or SqlError(400) naming what was found instead (DuckDB's parser decides)."""
    if not sql.strip():
        raise SqlError(400, "no SQL: write one SELECT over the views (requests, waits, calls, ...)")
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as e:
        raise SqlError(400, _first_lines(e)) from e
    if len(statements) != 1:
        raise SqlError(400, f"one statement at a time: this holds {len(statements)}")
    kind = statements[0].type
    if kind != duckdb.StatementType.SELECT:
        name = getattr(kind, "name", str(kind))
        raise SqlError(
            400,
            f"only a SELECT runs here (this is a {name} statement): the console reads the analysis' views and"
            " changes nothing",
        )
    return sql


def _first_lines(e: BaseException, n: int = 6) -> str:
    return "\n".join(str(e).strip().splitlines()[:n])[:2000]


def copies_dir(db_path: str | Path) -> Path:
    """Where the SQL console keeps its copies of analyses: `<db stem>.sql/` beside the database file."""
    db_path = Path(db_path)
    return db_path.with_name(db_path.stem + ".sql")


def delete_copies(db_path: str | Path, analysis_id: str) -> None:
    """Deletes the copies of an analysis (when it is deleted)."""
    for old in copies_dir(db_path).glob(f"{analysis_id}.*.duckdb"):
        old.unlink(missing_ok=True)
        Path(f"{old}.wal").unlink(missing_ok=True)


class Console:
    """The SQL console of one database file: its analysis copies (copies_dir) and the worker processes that run the
    queries on them (sql_pool.WorkerPool, started on the first query). `close()` stops the workers."""

    def __init__(
        self,
        db_path: str | Path,
        memory_limit: str = SQL_MEMORY,
        seconds: float = SQL_SECONDS,
        address_space: int = SQL_ADDRESS_SPACE,
        result_bytes: int = RESULT_BYTES,
    ):
        self.db_path = Path(db_path).resolve()
        self.dir = copies_dir(self.db_path)
        self.dir.mkdir(parents=True, exist_ok=True)
        for stale in self.dir.glob(".building-*"):  # a copy whose making was cut short
            stale.unlink(missing_ok=True)
        self.memory_limit = memory_limit
        self.seconds = seconds
        self.result_bytes = result_bytes
        self._making = threading.Lock()  # one copy made at a time (each reads a whole analysis)
        settings = {"memory_limit": memory_limit, "address_space": address_space, "copies_dir": str(self.dir)}
        self.workers = WorkerPool(WORKERS, settings, WAIT_SECONDS)

    def close(self) -> None:
        self.workers.close()

    # ---- the copies -------------------------------------------------------------------------------------------

    def snapshot(self, con: duckdb.DuckDBPyConnection, analysis_id: str) -> Path:
        """The file holding the analysis' views (made now if there is none for its current clock offsets)."""
        key = hashlib.sha256(json.dumps([SNAPSHOT_VERSION, offsets_now(con, analysis_id)]).encode()).hexdigest()[:16]
        path = self.dir / f"{analysis_id}.{key}.duckdb"
        if not path.exists():
            with self._making:
                if not path.exists():
                    self._make(con, analysis_id, path)
                    self._evict(keep=path)
        try:
            os.utime(path)  # recently used
        except FileNotFoundError:  # evicted between: make it again
            return self.snapshot(con, analysis_id)
        return path

    def _make(self, con: duckdb.DuckDBPyConnection, analysis_id: str, path: Path) -> None:
        building = self.dir / f".building-{secrets.token_hex(8)}.duckdb"
        alias = f"sql_copy_{secrets.token_hex(6)}"
        try:
            execute(con, f"ATTACH '{building}' AS {alias}")
            try:
                for view in views.VIEWS:
                    if not view.over_waits:
                        run(con, f"CREATE TABLE {alias}.main.{view.name} AS {view.sql}", {"aid": analysis_id},
                            seconds=600)  # fmt: skip
            finally:
                execute(con, f"DETACH {alias}")
            made = Connection(duckdb.connect(str(building)), con.deadlines)
            try:
                for view in views.VIEWS:
                    if view.over_waits:
                        execute(made, f"CREATE VIEW {view.name} AS {view.sql.format(waits='waits')}")
            finally:
                made.close()
            building.rename(path)
        finally:
            building.unlink(missing_ok=True)
            Path(f"{building}.wal").unlink(missing_ok=True)

    def _evict(self, keep: Path) -> None:
        """Deletes the least recently used copies past KEEP. A worker reading one goes on reading its open file;
        every worker closes the copies that are gone after its query, idle ones at once (WorkerPool.sweep)."""
        copies = sorted(self.dir.glob("*.duckdb"), key=lambda p: p.stat().st_mtime, reverse=True)
        evicted = [p for p in copies if p != keep][KEEP - 1 :]
        for old in evicted:
            old.unlink(missing_ok=True)
            Path(f"{old}.wal").unlink(missing_ok=True)
        if evicted:
            self.workers.sweep()

    def forget(self, analysis_id: str) -> None:
        """Deletes the copies of an analysis (when it is deleted); the workers close them."""
        delete_copies(self.db_path, analysis_id)
        self.workers.sweep()

    # ---- queries ----------------------------------------------------------------------------------------------

    def answer(self, con: duckdb.DuckDBPyConnection, analysis_id: str, sql: str, max_rows: int = MAX_ROWS) -> bytes:
        """The JSON text of {columns: [{name, type}], rows: [[...]], truncated, elapsed_ms}: one SELECT over the
        analysis' views, run by a worker. Raises SqlError."""
        check(sql)
        for _ in range(2):  # a copy deleted before the worker opened it is made again, once
            path = self.snapshot(con, analysis_id)
            request = {"op": "query", "path": str(path), "sql": sql, "max_rows": max_rows,
                       "max_bytes": self.result_bytes, "seconds": self.seconds}  # fmt: skip
            try:
                header, body = self.workers.ask(request, self.seconds + GRACE_S, self.result_bytes)
            except Busy as e:
                raise SqlError(503, str(e)) from e
            except WorkerFailed as e:
                raise SqlError(
                    503,
                    f"the query was stopped ({e}): the console gives a query {self.seconds:g} s and"
                    f" {self.memory_limit} of memory; filter earlier (WHERE), aggregate, add a LIMIT or select"
                    " shorter values",
                ) from e
            if header["status"] == 200:
                return body
            if header["status"] != "gone":
                raise SqlError(header["status"], header["detail"])
        raise SqlError(503, "the analysis' copy was replaced while the query waited: try again")

    def query(self, con: duckdb.DuckDBPyConnection, analysis_id: str, sql: str, max_rows: int = MAX_ROWS) -> dict:
        """`answer` as a dict (the command line's)."""
        return json.loads(self.answer(con, analysis_id, sql, max_rows))


def catalog(con: duckdb.DuckDBPyConnection) -> list[dict]:
    """The views the console reads, with what each holds and its columns' names and types."""
    out = []
    for view in views.VIEWS:
        schema = run(con, f"SELECT * FROM ({views.select(view)}) LIMIT 0", {"aid": ""}, shape="arrow").schema
        out.append(
            {
                "name": view.name,
                "about": view.about,
                "columns": [{"name": f.name, "type": type_name(f.type)} for f in schema],
            }
        )
    return out
