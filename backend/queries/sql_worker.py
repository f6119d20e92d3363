"""The SQL console's worker: a process of its own that runs users' SELECTs on the analyses' copies under hard limits,
so that no query can take the server's memory or its CPU (started, stopped and replaced by sql_pool.WorkerPool):

* its address space (RLIMIT_AS, STALLSCOPE_SQL_ADDRESS_SPACE): an allocation past it fails inside DuckDB (an
  out-of-memory error) or ends the worker, never the server;
* its CPU time per query (RLIMIT_CPU: the time limit + 2 s, then the kernel ends it), at nice 10;
* DuckDB's own sandbox on each copy (SANDBOX: read-only, no file, network or extension access, one thread, a memory
  limit, a locked configuration) and its interrupt at the time limit (queries/run.py's watchdog); the pool kills a
  worker that has not answered half a second after it;
* what it answers: at most `max_rows` rows and `max_bytes` bytes of JSON (sql_values.RowsJson), and nothing of the
  server's files: the functions that show settings, databases, files or run SQL text (SERVER_FACTS) are refused
  from DuckDB's parse tree of the query, and a DuckDB message naming a copy's path names it `<copy>`.

It keeps each copy it read open (KEEP at most); before and after each query, and when asked (a copy deleted), it
closes those whose file is gone.

Protocol, over two pipes (the fds in argv): each request is a JSON message, {"op": "query", path, sql, max_rows,
max_bytes, seconds} or {"op": "sweep"}; each answer one message: a JSON header line ({"status": 200} or {"status":
4xx/503, "detail"}, or {"status": "gone"} for a copy deleted before it was opened), then for a 200 the whole answer.
The first message is {"status": "ready"}.

    python -m backend.queries.sql_worker REQUESTS_FD ANSWERS_FD SETTINGS_JSON
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from multiprocessing.connection import Connection

import duckdb

from .. import db
from . import views
from .run import QueryTimeout, deadline
from .sql_values import RowsJson, projection

BATCH_ROWS = 2048  # rows per record batch read: the byte cap is checked after each
KEEP = 6  # copies kept open

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

# functions and system views that show the server's settings, databases, files, secrets or logs, or run SQL text
# built at run time (which the parse tree cannot see)
SERVER_FACTS = frozenset(
    {
        "current_setting",
        "duckdb_settings",
        "duckdb_databases",
        "database_list",
        "pragma_database_list",
        "pragma_database_size",
        "duckdb_temporary_files",
        "duckdb_secrets",
        "which_secret",
        "duckdb_extensions",
        "duckdb_extension_repositories",
        "duckdb_external_file_cache",
        "duckdb_external_resources",
        "duckdb_logs",
        "duckdb_logs_parsed",
        "duckdb_log_contexts",
        "duckdb_variables",
        "getvariable",
        "query",
        "query_table",
    }
)


class Refused(Exception):
    def __init__(self, status: int, detail: str):
        super().__init__(detail)
        self.status = status


def first_lines(e: BaseException, n: int = 6) -> str:
    return "\n".join(str(e).strip().splitlines()[:n])[:2000]


def open_copy(path: str, memory_limit: str) -> duckdb.DuckDBPyConnection:
    """A copy opened read-only in the sandbox's configuration."""
    return duckdb.connect(path, read_only=True, config={**SANDBOX, "memory_limit": memory_limit})


def names_in(parser: duckdb.DuckDBPyConnection, sql: str) -> set[str]:
    """The functions and tables a SELECT names, from DuckDB's own parse tree (lower case, without schema)."""
    tree = json.loads(parser.execute("SELECT json_serialize_sql($sql)", {"sql": sql}).fetchone()[0])
    if tree.get("error"):
        raise Refused(400, f"the query could not be read: {tree.get('error_message', '')}"[:2000])
    found: set[str] = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("function_name", "table_name") and isinstance(value, str):
                    found.add(value.lower())
                else:
                    stack.append(value)
        elif isinstance(node, list):
            stack.extend(node)
    return found


class Worker:
    def __init__(self, settings: dict):
        self.memory_limit = settings["memory_limit"]
        self.hide = sorted({settings["copies_dir"], os.path.realpath(settings["copies_dir"])}, key=len, reverse=True)
        self.open: dict[str, duckdb.DuckDBPyConnection] = {}  # path -> connection, least recently used first
        self.parser = duckdb.connect()  # reads queries' parse trees; runs no user SQL
        self.deadlines = db.Deadlines().start()  # this process' own (backend/db.py): stopped by close()

    def close(self) -> None:
        self.deadlines.stop()

    def sweep(self) -> None:
        """Closes the copies whose file is gone (deleted or replaced)."""
        for path in [p for p in self.open if not os.path.exists(p)]:
            self.open.pop(path).close()

    def _connection(self, path: str) -> duckdb.DuckDBPyConnection:
        con = self.open.pop(path, None)
        if con is None:
            if not os.path.exists(path):
                raise FileNotFoundError(path)
            while len(self.open) >= KEEP:
                self.open.pop(next(iter(self.open))).close()
            con = open_copy(path, self.memory_limit)
        self.open[path] = con  # the most recently used last
        return con

    def _scrub(self, text: str) -> str:
        for d in self.hide:
            text = text.replace(d, "<copies>")
        return text

    def query(self, path: str, sql: str, max_rows: int, max_bytes: int, seconds: float) -> bytes:
        started = time.perf_counter()
        named = names_in(self.parser, sql) & SERVER_FACTS
        if named:
            raise Refused(
                403,
                f"refused ({', '.join(sorted(named))}): the SQL console has no file, network or extension access and"
                " shows none of the server's settings or files; query the views ("
                + ", ".join(v.name for v in views.VIEWS)
                + ")",
            )
        cursor = self._connection(path).cursor()
        _cpu_limit(seconds + 2)
        try:
            with deadline(db.Connection(cursor, self.deadlines), seconds):
                query = cursor.sql(sql)  # bound, not run: its columns' names and DuckDB types
                columns = [{"name": n, "type": str(t)} for n, t in zip(query.columns, query.types)]
                select, as_json = projection(query.types)
                rows = RowsJson(max_rows, max_bytes, as_json)
                reader = cursor.sql(f"SELECT {select} FROM ({_statement(sql)}\n)").to_arrow_reader(BATCH_ROWS)
                for batch in reader:
                    rows.add(batch)
                    if rows.truncated:
                        reader.close()
                        break
        except QueryTimeout as e:
            raise Refused(
                503,
                f"the query ran longer than {seconds:g} s and was interrupted: filter earlier (WHERE), aggregate, or"
                " add a LIMIT",
            ) from e
        except (duckdb.OutOfMemoryException, MemoryError) as e:
            raise Refused(
                400,
                f"the query needs more than the console's {self.memory_limit} of memory: filter or aggregate more"
                " before joining or sorting, or select fewer or shorter values",
            ) from e
        except duckdb.PermissionException as e:
            raise Refused(
                403,
                "refused: the SQL console has no file, network or extension access; query the views "
                f"({', '.join(v.name for v in views.VIEWS)}). DuckDB said: {self._scrub(first_lines(e, 1))}",
            ) from e
        except duckdb.Error as e:
            raise Refused(400, self._scrub(first_lines(e))) from e
        finally:
            _cpu_limit(None)
            cursor.close()
        return rows.answer(columns, round((time.perf_counter() - started) * 1000, 1))


def _statement(sql: str) -> str:
    """The one statement of `sql` (sql.check made sure), without its semicolon: to select from."""
    text = duckdb.extract_statements(sql)[0].query.rstrip()
    while text.endswith(";"):
        text = text[:-1].rstrip()
    return text


def _cpu_limit(seconds: float | None) -> None:
    """RLIMIT_CPU at `seconds` more than used so far (None: no limit); past it, the kernel ends the process."""
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if seconds is None:
        resource.setrlimit(resource.RLIMIT_CPU, (hard, hard))
        return
    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft = int(usage.ru_utime + usage.ru_stime + seconds) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))


def _limit_self(address_space: int) -> None:
    os.setpriority(os.PRIO_PROCESS, 0, 10)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))


def _answer(out: Connection, header: dict, body: bytes = b"") -> None:
    out.send_bytes(json.dumps(header).encode() + b"\n" + body)


def main(argv: list[str]) -> int:
    requests = Connection(int(argv[0]), writable=False)
    answers = Connection(int(argv[1]), readable=False)
    settings = json.loads(argv[2])
    _limit_self(settings["address_space"])
    worker = Worker(settings)
    try:
        return serve(worker, requests, answers)
    finally:
        worker.close()


def serve(worker: Worker, requests: Connection, answers: Connection) -> int:
    _answer(answers, {"status": "ready", "pid": os.getpid()})
    while True:
        try:
            ask = json.loads(requests.recv_bytes())
        except EOFError:  # the pool closed its end: the server stops
            return 0
        if ask["op"] == "sweep":
            worker.sweep()
            _answer(answers, {"status": "swept"})
            continue
        worker.sweep()
        body = b""
        try:
            body = worker.query(ask["path"], ask["sql"], ask["max_rows"], ask["max_bytes"], ask["seconds"])
            header = {"status": 200}
        except Refused as e:
            header = {"status": e.status, "detail": str(e)}
        except FileNotFoundError:
            header = {"status": "gone"}
        except (duckdb.OutOfMemoryException, MemoryError):
            header = {"status": 400, "detail": "the result needs more than the console's memory"}
        worker.sweep()  # before the answer: once it is in, no copy deleted meanwhile is held open
        _answer(answers, header, body)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
