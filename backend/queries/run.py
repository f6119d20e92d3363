"""The one path of every read: `run` executes a statement with bound parameters under a time limit and a row cap.

A query still running at its deadline is interrupted (DuckDB's per-connection interrupt, from one watchdog thread)
and raises QueryTimeout, which the API answers with 503 and a message saying what to narrow; a result of more rows
than the cap raises TooManyRows (422). So no read can hang a request or fill the memory, whatever the parameters.
(Datasette reads the same way: one execute path with a time limit and a row cap.) Ingest-time derivation writes
through its own connection inside the ingest's transaction and does not use this path.
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
MAX_ROWS = 5_000_000  # rows a read may return (the largest, kept summaries of a 17 M-event analysis: ~1 M)
ARROW_BATCH = 1 << 20  # rows per record batch of an Arrow result (DuckDB's default)


class QueryTimeout(Exception):
    """A read ran past its time limit and was interrupted."""

    status = 503

    def __init__(self, seconds: float):
        super().__init__(
            f"the query took longer than {seconds:g} s and was stopped: narrow the time window or the"
            " filters and try again (STALLSCOPE_QUERY_SECONDS sets the limit)"
        )


class TooManyRows(Exception):
    """A read would return more rows than its cap."""

    status = 422

    def __init__(self, cap: int):
        super().__init__(f"the result has more than {cap} rows: narrow the time window or the filters")


class _Watchdog:
    """One thread that interrupts the connections whose query is past its deadline (a heap of deadlines)."""

    def __init__(self):
        self._heap: list[tuple[float, int, duckdb.DuckDBPyConnection]] = []
        self._armed: dict[int, bool] = {}  # ticket -> fired
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def arm(self, con: duckdb.DuckDBPyConnection, seconds: float) -> int:
        ticket = next(self._seq)
        with self._cond:
            self._armed[ticket] = False
            heapq.heappush(self._heap, (time.monotonic() + seconds, ticket, con))
            if self._thread is None:
                self._thread = threading.Thread(target=self._watch, name="query deadlines", daemon=True)
                self._thread.start()
            elif self._heap[0][1] == ticket:
                self._cond.notify()
        return ticket

    def disarm(self, ticket: int) -> bool:
        """Whether the ticket's query was interrupted for its deadline. A query that finished in time leaves the
        heap now, not at its deadline: the heap holds only running queries' connections (one it kept past its
        query would outlive the query's cursor, and a process' exit)."""
        with self._cond:
            fired = self._armed.pop(ticket)
            if not fired:
                i = next(i for i, entry in enumerate(self._heap) if entry[1] == ticket)
                self._heap[i] = self._heap[-1]
                self._heap.pop()
                heapq.heapify(self._heap)  # a heap of the queries running now: a few entries
            return fired

    def _watch(self) -> None:
        with self._cond:
            while True:
                if not self._heap:
                    self._cond.wait()
                    continue
                wait = self._heap[0][0] - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                _, ticket, con = heapq.heappop(self._heap)
                self._armed[ticket] = True
                con.interrupt()  # under the lock: the ticket's query has not been disarmed
                del con  # nor does this thread keep it while it waits


_watchdog = _Watchdog()


@contextlib.contextmanager
def deadline(con: duckdb.DuckDBPyConnection, seconds: float) -> Iterator[None]:
    """What the block runs on `con` is interrupted after `seconds` (QueryTimeout), as `run` does: for a reader that
    consumes a result its own way (the SQL console's worker)."""
    ticket = _watchdog.arm(con, seconds)
    interrupted = False
    try:
        yield
    except duckdb.InterruptException as e:
        interrupted = True
        if _watchdog.disarm(ticket):
            raise QueryTimeout(seconds) from e
        raise
    finally:
        if not interrupted:
            _watchdog.disarm(ticket)


def run(
    con: duckdb.DuckDBPyConnection,
    sql: str,
    params: dict | list | None = None,
    *,
    shape: str = "rows",
    max_rows: int = MAX_ROWS,
    seconds: float | None = None,
    cut: bool = False,
):
    """The result of `sql` with its bound `params` (a dict for $name, a list for ?), as `shape`: "rows" (tuples),
    "dicts" (column name -> value), "arrow" (a pyarrow Table), "numpy" (column name -> array). Raises QueryTimeout
    past `seconds` (QUERY_SECONDS), TooManyRows past `max_rows`; with `cut` (arrow only), returns the first
    max_rows + 1 rows instead (more than max_rows: the result was cut)."""
    seconds = QUERY_SECONDS if seconds is None else seconds
    with deadline(con, seconds):
        if shape == "arrow":
            reader = con.sql(sql, params=params).to_arrow_reader(min(ARROW_BATCH, max_rows + 1))
            batches, n = [], 0
            for batch in reader:
                batches.append(batch)
                n += batch.num_rows
                if n > max_rows:
                    reader.close()  # the rest is never read: the connection is free again
                    break
            out = pa.Table.from_batches(batches, reader.schema)
            if cut and n > max_rows:
                return out.slice(0, max_rows + 1)
        else:
            cur = con.execute(sql, params) if params is not None else con.execute(sql)
            if shape == "numpy":
                out = cur.fetchnumpy()
                n = len(next(iter(out.values()))) if out else 0
            else:
                got = cur.fetchmany(max_rows + 1)
                n = len(got)
                if n > max_rows:
                    cur.abort()  # the rest is never read: the connection is free again
                if shape == "dicts":
                    names = [d[0] for d in cur.description]
                    got = [dict(zip(names, r)) for r in got]
                elif shape != "rows":
                    raise ValueError(f"unknown result shape {shape!r}")
                out = got
    if n > max_rows:
        raise TooManyRows(max_rows)
    return out
