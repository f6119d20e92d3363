"""How every statement runs: under a time limit, through one of a few named functions.

* `Deadlines` is one thread that interrupts the connections whose statement is past its deadline (DuckDB's
  per-connection interrupt). It is an object of whoever opens the database: the Store starts it when it opens the
  file and stops it when it closes (the server, the CLI and the tests alike), a SQL console worker process its own.
* `Connection` is a DuckDB connection with the Deadlines of the database it belongs to: the Store's connection and
  every cursor of it (`cursor()` keeps them), and its MemoryShare. Anything else is DuckDB's own (its attributes are
  the connection's).
* `MemoryShare` lowers DuckDB's memory limit (a setting of the database's instance) while a derivation holds large
  arrays of its own in Python (`lowered`): the process' memory is theirs and DuckDB's together.
* `deadline(con, seconds)` interrupts what a block runs on `con` after `seconds`: QueryTimeout (HTTP 503).
* The writes run through `execute` (one statement, under WRITE_SECONDS) and `transaction` (a block of them, under
  one deadline: committed whole, or rolled back at its deadline or any error, never half-written); the derive
  steps read into Python through `execute`, `arrow` (a table) and `batches` (record batches, streamed). The reads of
  the API run through backend/queries/run.py (`run`, `stream`), which uses `deadline` the same way.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import os
import threading
import time
from collections.abc import Iterator

import duckdb
import pyarrow as pa

QUERY_SECONDS = float(os.environ.get("STALLSCOPE_QUERY_SECONDS", "30"))  # a read's time limit
WRITE_SECONDS = float(os.environ.get("STALLSCOPE_WRITE_SECONDS", "3600"))  # a write's (derive, migrate, delete)


class QueryTimeout(Exception):
    """A statement ran past its time limit and was interrupted."""

    status = 503

    def __init__(self, seconds: float, advice: str | None = None):
        self.seconds = seconds
        super().__init__(
            f"the query took longer than {seconds:g} s and was stopped: "
            + (
                advice
                or "narrow the time window or the filters and try again (STALLSCOPE_QUERY_SECONDS sets the limit)"
            )
        )


class Deadlines:
    """One thread that interrupts the connections whose statement is past its deadline (a heap of deadlines).
    `start` it before the first `arm`, `stop` it when the database closes."""

    def __init__(self):
        self._heap: list[tuple[float, int, duckdb.DuckDBPyConnection]] = []
        self._armed: dict[int, bool] = {}  # ticket -> fired
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopping = False

    def start(self) -> Deadlines:
        with self._cond:
            if self._thread is None:
                self._stopping = False
                self._thread = threading.Thread(target=self._watch, name="query deadlines", daemon=True)
                self._thread.start()
        return self

    def stop(self) -> None:
        with self._cond:
            thread, self._thread, self._stopping = self._thread, None, True
            self._cond.notify()
        if thread is not None:
            thread.join(5)

    @property
    def running(self) -> bool:
        return self._thread is not None

    def arm(self, con: duckdb.DuckDBPyConnection, seconds: float) -> int:
        ticket = next(self._seq)
        with self._cond:
            if self._thread is None:
                raise RuntimeError("the deadlines' thread is not running: the database is closed")
            self._armed[ticket] = False
            heapq.heappush(self._heap, (time.monotonic() + seconds, ticket, con))
            if self._heap[0][1] == ticket:
                self._cond.notify()
        return ticket

    def disarm(self, ticket: int) -> bool:
        """Whether the ticket's statement was interrupted for its deadline. One that finished in time leaves the
        heap now, not at its deadline: the heap holds only running statements' connections (one it kept past its
        statement would outlive the statement's cursor, and a process' exit)."""
        with self._cond:
            fired = self._armed.pop(ticket)
            if not fired:
                i = next(i for i, entry in enumerate(self._heap) if entry[1] == ticket)
                self._heap[i] = self._heap[-1]
                self._heap.pop()
                heapq.heapify(self._heap)  # a heap of the statements running now: a few entries
            return fired

    def holds(self, con) -> bool:
        """Whether a running statement's deadline holds `con` (tests)."""
        with self._cond:
            return any(entry[2] is con for entry in self._heap)

    def _watch(self) -> None:
        with self._cond:
            while not self._stopping:
                if not self._heap:
                    self._cond.wait()
                    continue
                wait = self._heap[0][0] - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                _, ticket, con = heapq.heappop(self._heap)
                self._armed[ticket] = True
                con.interrupt()  # under the lock: the ticket's statement has not been disarmed
                del con  # nor does this thread keep it while it waits


class MemoryShare:
    """DuckDB's memory limit of one database (`limit`, as configured; None: as DuckDB says it at the first lowering),
    lowered to a share of it while any holder of `lowered` runs, restored when the last one ends (two ingests may
    derive at once; reads meanwhile have the lower limit too). One per database: its connection's and cursors'."""

    _UNITS = {"bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}

    def __init__(self, limit: str | None = None):
        self.limit = limit
        self._lock = threading.Lock()
        self._holders = 0

    @contextlib.contextmanager
    def lowered(self, con: Connection, share: float) -> Iterator[None]:
        """The limit at `share` of it while the block runs (set through a cursor of its own: `con` may be in a
        transaction, and one a failed statement aborted would refuse the restoring SET)."""
        with self._lock:
            if self._holders == 0:
                with con.raw.cursor() as own:
                    said = own.execute("SELECT current_setting('memory_limit')").fetchone()[0]  # '488.2 MiB'
                    number, unit = said.split()
                    self.limit = self.limit or said
                    own.execute(f"SET memory_limit = '{int(float(number) * self._UNITS[unit] * share)} bytes'")
            self._holders += 1
        try:
            yield
        finally:
            with self._lock:
                self._holders -= 1
                if self._holders == 0:
                    with con.raw.cursor() as own:
                        own.execute(f"SET memory_limit = '{self.limit}'")


class Connection:
    """A DuckDB connection, the Deadlines and the MemoryShare of its database. Its attributes are the DuckDB
    connection's, but for `cursor()`, whose cursor has the same Deadlines and MemoryShare; `raw` is the DuckDB
    connection itself."""

    __slots__ = ("raw", "deadlines", "memory")

    def __init__(self, raw: duckdb.DuckDBPyConnection, deadlines: Deadlines, memory: MemoryShare | None = None):
        self.raw, self.deadlines, self.memory = raw, deadlines, memory or MemoryShare()

    def cursor(self) -> Connection:
        return Connection(self.raw.cursor(), self.deadlines, self.memory)

    def __getattr__(self, name: str):
        return getattr(self.raw, name)

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc) -> None:
        self.raw.close()


def _parts(con) -> tuple[duckdb.DuckDBPyConnection, Deadlines]:
    if not isinstance(con, Connection):
        raise TypeError("a statement's connection must be a backend.db.Connection (the Store's, or a cursor of it)")
    return con.raw, con.deadlines


@contextlib.contextmanager
def deadline(con: Connection, seconds: float, advice: str | None = None) -> Iterator[None]:
    """What the block runs on `con` is interrupted after `seconds`, and raises QueryTimeout (its message ends with
    `advice`, what to do about it)."""
    raw, deadlines = _parts(con)
    ticket = deadlines.arm(raw, seconds)
    interrupted = False
    try:
        yield
    except (duckdb.InterruptException, OSError) as e:  # OSError: DuckDB's interrupt as an Arrow reader reports it
        interrupted = True
        if deadlines.disarm(ticket):
            raise QueryTimeout(seconds, advice) from e
        raise
    finally:
        if not interrupted:
            deadlines.disarm(ticket)


WRITE_ADVICE = "nothing of it was written (STALLSCOPE_WRITE_SECONDS sets the limit)"


def execute(con: Connection, sql: str, params: dict | list | None = None, *, seconds: float | None = None):
    """Runs one statement (a write, or a read of the derive steps) under its time limit (WRITE_SECONDS): its result
    is DuckDB's (fetch it from the returned connection). Past the limit: QueryTimeout."""
    seconds = WRITE_SECONDS if seconds is None else seconds
    with deadline(con, seconds, WRITE_ADVICE):
        return con.raw.execute(sql, params) if params is not None else con.raw.execute(sql)


def arrow(con: Connection, sql: str, params: dict | list | None = None, *, seconds: float | None = None):
    """The result of one statement as a pyarrow Table, under its time limit (WRITE_SECONDS): the derive steps'
    reads into Python."""
    seconds = WRITE_SECONDS if seconds is None else seconds
    with deadline(con, seconds, WRITE_ADVICE):
        return con.raw.sql(sql, params=params).to_arrow_table()


def batches(
    con: Connection,
    sql: str,
    params: dict | list | None = None,
    *,
    batch: int,
    seconds: float | None = None,
    advice: str | None = None,
) -> Iterator[pa.RecordBatch]:
    """The record batches of `sql`'s result as DuckDB streams them, all of them under one deadline of `seconds`
    (WRITE_SECONDS) from the statement's start to its last batch, the time its reader takes between batches
    included. Past it the statement is interrupted, or the next batch refused: QueryTimeout (its message ending with
    `advice`). The reader stopping early (closing the generator) ends the statement."""
    seconds = WRITE_SECONDS if seconds is None else seconds
    advice = advice or WRITE_ADVICE
    end = time.monotonic() + seconds
    with deadline(con, seconds, advice):
        reader = con.raw.sql(sql, params=params).to_arrow_reader(batch)
        try:
            for b in reader:
                if time.monotonic() > end:  # interrupted between two batches: DuckDB ran nothing to interrupt
                    raise QueryTimeout(seconds, advice)
                yield b
        finally:
            reader.close()


@contextlib.contextmanager
def transaction(con: Connection, seconds: float | None = None, advice: str | None = None) -> Iterator[Connection]:
    """A transaction under one deadline (WRITE_SECONDS): committed when the block ends, rolled back if it raises or
    passes its deadline (QueryTimeout), so nothing of it is ever half-written."""
    seconds = WRITE_SECONDS if seconds is None else seconds
    con.raw.begin()
    try:
        with deadline(con, seconds, advice or WRITE_ADVICE):
            yield con
            con.raw.commit()
    except BaseException:
        with contextlib.suppress(duckdb.Error):  # DuckDB may have ended it already (a failed commit)
            con.raw.rollback()
        raise
