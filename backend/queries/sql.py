"""The SQL console: a user's own SELECT over one analysis' documented views (views.py), in a sandbox.

How the sandbox holds, in layers (none relies on reading the SQL with patterns):
1. What is reachable: the query runs on a DuckDB database of its own, a copy of that one analysis' rows (a file per
   analysis and clock offsets, `Console.snapshot`, made on the first query by the server's connection: ATTACH, one
   CREATE TABLE AS per view, DETACH). Other analyses' rows are not in it; the server's database is not attached.
2. What may run: DuckDB's own parser (`duckdb.extract_statements`) must find exactly one statement, of type SELECT
   (COPY, ATTACH, INSTALL, LOAD, SET, PRAGMA, CREATE, EXPORT, CALL, several statements: refused with a 400 before
   anything runs).
3. What the engine allows: the copy is opened read-only with `enable_external_access = false` (no file, network or
   extension access: read_csv('/etc/passwd'), glob, COPY, ATTACH fail inside DuckDB), extension autoload and
   autoinstall off, no Python replacement scans (a table name never reaches a Python variable), then
   `lock_configuration = true` (no SET can undo any of it).
4. Its share: `threads = 1` and `memory_limit` (STALLSCOPE_SQL_MEMORY, 256MB) per copy, at most WORKERS queries at
   once (others wait up to WAIT_SECONDS, then 503), run in threads of their own at nice 10, a time limit
   (STALLSCOPE_SQL_SECONDS, 10 s; interrupted by queries/run.py's watchdog) and a row cap (`max_rows`, the result
   says it was cut).
"""

from __future__ import annotations

import concurrent.futures
import datetime
import decimal
import hashlib
import json
import math
import os
import secrets
import threading
import time
from pathlib import Path

import duckdb
import pyarrow as pa

from . import views
from .memo import offsets
from .run import QueryTimeout, run

SQL_SECONDS = float(os.environ.get("STALLSCOPE_SQL_SECONDS", "10"))
SQL_MEMORY = os.environ.get("STALLSCOPE_SQL_MEMORY", "256MB")
MAX_ROWS = 10_000  # rows a result holds by default
MAX_ROWS_LIMIT = 100_000
WORKERS = 2  # queries at once; the machine's other work keeps the rest
WAIT_SECONDS = 15.0  # a query waits this long for a free worker
KEEP = 6  # analysis copies kept on disk (least recently used deleted first)
SNAPSHOT_VERSION = 1  # bump when views.py changes: older copies are rebuilt

SANDBOX = {
    "enable_external_access": False,
    "autoload_known_extensions": False,
    "autoinstall_known_extensions": False,
    "allow_community_extensions": False,
    "python_enable_replacements": False,
    "threads": 1,
    "max_temp_directory_size": "1GB",
    "lock_configuration": True,  # last: nothing above can be SET back
}


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


def _lower_priority() -> None:
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
    except (AttributeError, OSError):
        pass


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
    """The SQL console of one database file: its analysis copies (copies_dir), the workers."""

    def __init__(self, db_path: str | Path, memory_limit: str = SQL_MEMORY, seconds: float = SQL_SECONDS):
        self.db_path = Path(db_path)
        self.dir = copies_dir(db_path)
        self.dir.mkdir(parents=True, exist_ok=True)
        for stale in self.dir.glob(".building-*"):  # a copy whose making was cut short
            stale.unlink(missing_ok=True)
        self.config = {**SANDBOX, "memory_limit": memory_limit}
        self.seconds = seconds
        self._making = threading.Lock()  # one copy made at a time (each reads a whole analysis)
        self._open: dict[Path, duckdb.DuckDBPyConnection] = {}  # each copy opened once, a cursor per query
        self._opening = threading.Lock()
        self._slots = threading.BoundedSemaphore(WORKERS)
        self._pool = concurrent.futures.ThreadPoolExecutor(WORKERS, "sql console", initializer=_lower_priority)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        with self._opening:
            for con in self._open.values():
                con.close()
            self._open.clear()

    def _cursor(self, path: Path) -> duckdb.DuckDBPyConnection:
        """A cursor on the copy, opened read-only in the sandbox's configuration (once per copy)."""
        with self._opening:
            con = self._open.get(path)
            if con is None:
                con = self._open[path] = duckdb.connect(str(path), read_only=True, config=self.config)
            return con.cursor()

    def _closed(self, path: Path) -> None:
        with self._opening:
            con = self._open.pop(path, None)
        if con is not None:
            con.close()

    # ---- the copies -------------------------------------------------------------------------------------------

    def snapshot(self, con: duckdb.DuckDBPyConnection, analysis_id: str) -> Path:
        """The file holding the analysis' views (made now if there is none for its current clock offsets)."""
        key = hashlib.sha256(json.dumps([SNAPSHOT_VERSION, offsets(con, analysis_id)]).encode()).hexdigest()[:16]
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
            con.execute(f"ATTACH '{building}' AS {alias}")
            try:
                for view in views.VIEWS:
                    if not view.over_waits:
                        run(con, f"CREATE TABLE {alias}.main.{view.name} AS {view.sql}", {"aid": analysis_id},
                            seconds=600)  # fmt: skip
            finally:
                con.execute(f"DETACH {alias}")
            made = duckdb.connect(str(building))
            try:
                for view in views.VIEWS:
                    if view.over_waits:
                        made.execute(f"CREATE VIEW {view.name} AS {view.sql.format(waits='waits')}")
            finally:
                made.close()
            building.rename(path)
        finally:
            building.unlink(missing_ok=True)
            Path(f"{building}.wal").unlink(missing_ok=True)

    def _evict(self, keep: Path) -> None:
        copies = sorted(self.dir.glob("*.duckdb"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in [p for p in copies if p != keep][KEEP - 1 :]:
            self._closed(old)
            old.unlink(missing_ok=True)
            Path(f"{old}.wal").unlink(missing_ok=True)

    def forget(self, analysis_id: str) -> None:
        """Closes and deletes the copies of an analysis (when it is deleted)."""
        for old in self.dir.glob(f"{analysis_id}.*.duckdb"):
            self._closed(old)
        delete_copies(self.db_path, analysis_id)

    # ---- queries ----------------------------------------------------------------------------------------------

    def query(self, con: duckdb.DuckDBPyConnection, analysis_id: str, sql: str, max_rows: int = MAX_ROWS) -> dict:
        """{columns: [{name, type}], rows: [[...]], truncated, elapsed_ms} of one SELECT over the analysis' views.
        Raises SqlError."""
        check(sql)
        path = self.snapshot(con, analysis_id)
        if not self._slots.acquire(timeout=WAIT_SECONDS):
            raise SqlError(503, f"the SQL console is busy ({WORKERS} queries running): try again in a moment")
        try:
            return self._pool.submit(self._run, path, sql, max_rows).result()
        finally:
            self._slots.release()

    def _run(self, path: Path, sql: str, max_rows: int) -> dict:
        started = time.perf_counter()
        try:
            sandbox = self._cursor(path)
        except duckdb.Error as e:
            raise SqlError(503, f"the analysis' copy could not be opened: {_first_lines(e, 2)}") from e
        try:
            table = run(sandbox, sql, shape="arrow", max_rows=max_rows, seconds=self.seconds, cut=True)
        except QueryTimeout as e:
            raise SqlError(
                503,
                f"the query ran longer than {self.seconds:g} s and was interrupted: filter earlier (WHERE),"
                " aggregate, or add a LIMIT",
            ) from e
        except duckdb.OutOfMemoryException as e:
            raise SqlError(
                400,
                f"the query needs more than the console's {self.config['memory_limit']} of memory: filter or"
                " aggregate more before joining or sorting",
            ) from e
        except duckdb.PermissionException as e:
            raise SqlError(
                403,
                "refused: the SQL console has no file, network or extension access; query the views "
                f"({', '.join(v.name for v in views.VIEWS)}). DuckDB said: {_first_lines(e, 1)}",
            ) from e
        except duckdb.Error as e:
            raise SqlError(400, _first_lines(e)) from e
        finally:
            sandbox.close()
        truncated = table.num_rows > max_rows
        if truncated:
            table = table.slice(0, max_rows)
        return {
            "columns": [{"name": f.name, "type": type_name(f.type)} for f in table.schema],
            "rows": rows_of(table),
            "truncated": truncated,
            "elapsed_ms": round((time.perf_counter() - started) * 1000, 1),
        }


# ---- results as JSON ------------------------------------------------------------------------------------------------

_NAMES = [
    (pa.types.is_boolean, "BOOLEAN"),
    (pa.types.is_int8, "TINYINT"),
    (pa.types.is_int16, "SMALLINT"),
    (pa.types.is_int32, "INTEGER"),
    (pa.types.is_int64, "BIGINT"),
    (pa.types.is_uint8, "UTINYINT"),
    (pa.types.is_uint16, "USMALLINT"),
    (pa.types.is_uint32, "UINTEGER"),
    (pa.types.is_uint64, "UBIGINT"),
    (pa.types.is_float32, "FLOAT"),
    (pa.types.is_float64, "DOUBLE"),
    (pa.types.is_decimal, "DECIMAL"),
    (lambda t: pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t), "VARCHAR"),
    (lambda t: pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t), "BLOB"),
    (pa.types.is_timestamp, "TIMESTAMP"),
    (pa.types.is_date, "DATE"),
    (pa.types.is_time, "TIME"),
    (lambda t: pa.types.is_duration(t) or pa.types.is_interval(t), "INTERVAL"),
    (pa.types.is_struct, "STRUCT"),
    (pa.types.is_map, "MAP"),
]


def type_name(t: pa.DataType) -> str:
    """A column's type as DuckDB names it (BIGINT, VARCHAR, VARCHAR[], ...)."""
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return type_name(t.value_type) + "[]"
    if pa.types.is_dictionary(t):
        return type_name(t.value_type)
    return next((name for test, name in _NAMES if test(t)), str(t).upper())


def _plain(value):
    """A value JSON can carry: times as ISO text, intervals in ns, decimals as floats, bytes as hex, NaN and
    infinities as null."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return str(value)
    if isinstance(value, pa.MonthDayNano):  # an INTERVAL: in ns when it has no months
        months, days, ns = value
        return days * 86_400_000_000_000 + ns if months == 0 else f"{months} months {days} days {ns} ns"
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return str(value)


def _needs_plain(t: pa.DataType) -> bool:
    return not (pa.types.is_integer(t) or pa.types.is_boolean(t) or pa.types.is_string(t))


def rows_of(table: pa.Table) -> list[list]:
    columns = []
    for col in table.columns:
        values = col.to_pylist()
        columns.append([_plain(v) for v in values] if _needs_plain(col.type) else values)
    return [list(r) for r in zip(*columns)] if columns else [[] for _ in range(table.num_rows)]


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
