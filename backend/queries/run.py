"""The one path of every read: `run` executes a statement with bound parameters under a time limit and a row cap;
`stream` hands an export's rows over batch by batch under the export's time limit.

A query still running at its deadline is interrupted (backend/db.py: DuckDB's per-connection interrupt, from the
Deadlines thread of the Store the connection belongs to) and raises QueryTimeout, which the API answers with 503 and
a message saying what to narrow; a result of more rows than the cap raises TooManyRows (422). So no read can hang a
request or fill the memory, whatever the parameters. (Datasette reads the same way: one execute path with a time
limit and a row cap.) A stream past its deadline raises QueryTimeout between two batches, after its response began:
the route's body ends there, unfinished (backend/api/export.py). The writes run through backend/db.py's `execute`
and `transaction`, under the same deadlines.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pyarrow as pa

from ..db import QUERY_SECONDS, Connection, QueryTimeout, batches, deadline

__all__ = ["QUERY_SECONDS", "EXPORT_SECONDS", "QueryTimeout", "TooManyRows", "deadline", "run", "stream"]

EXPORT_SECONDS = float(os.environ.get("STALLSCOPE_EXPORT_SECONDS", "600"))  # a streamed export's time limit
MAX_ROWS = 5_000_000  # rows a read may return (the largest, kept summaries of a 17 M-event analysis: ~1 M)
ARROW_BATCH = 1 << 20  # rows per record batch of an Arrow result (DuckDB's default)


class TooManyRows(Exception):
    """A read would return more rows than its cap."""

    status = 422

    def __init__(self, cap: int):
        super().__init__(f"the result has more than {cap} rows: narrow the time window or the filters")


EXPORT_ADVICE = "the export is incomplete (STALLSCOPE_EXPORT_SECONDS sets the limit)"


def stream(
    con: Connection,
    sql: str,
    params: dict | list | None = None,
    *,
    batch: int = ARROW_BATCH,
    seconds: float | None = None,
) -> Iterator[pa.RecordBatch]:
    """The record batches of `sql`'s result as DuckDB streams them (no row cap: an export's every row), all of them
    under one deadline of `seconds` (EXPORT_SECONDS) from the statement's start to its last batch, the time its
    reader takes between batches included (backend/db.py `batches`). Past it: QueryTimeout, the stream unfinished."""
    seconds = EXPORT_SECONDS if seconds is None else seconds
    return batches(con, sql, params, batch=batch, seconds=seconds, advice=EXPORT_ADVICE)


def run(
    con: Connection,
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
            reader = con.raw.sql(sql, params=params).to_arrow_reader(min(ARROW_BATCH, max_rows + 1))
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
            cur = con.raw.execute(sql, params) if params is not None else con.raw.execute(sql)
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
