"""Staging a source's rows: one streamed INSERT per parser table, fed as the parser makes its record batches."""

from __future__ import annotations

import queue
import threading
from typing import Iterator

import duckdb
import pyarrow as pa

from ..db import execute

STREAM_DEPTH = 8  # record batches waiting per table for its insert (a 16 MiB chunk makes one per table)


class StreamAborted(Exception):
    """Ends a table's stream with an error: its insert writes nothing."""


class TableStreams:
    """One INSERT per table, each reading its rows from a queue as they come (a RecordBatchReader over it), on a cursor
    and in a thread of its own: the tables are inserted beside the parser and beside each other, DuckDB's threads
    working on whichever has rows, and each is written in whole row groups. (Inserting the rows instead in steps of
    4 row groups, a statement each, left partial row groups at every step, which the commit appended again and a
    checkpoint compressed once more: a 10 M-line blkparse file took ~1.2 s more CPU at close, 150-200 MiB more peak
    memory and a 141 MiB file instead of 111.)

    put() hands a batch to its table's insert, waiting while that queue is full; a table's insert starts with its
    first batch (a table that gets none has none: no DuckDB thread waits on it; function_graph's names come at the
    end). Leaving the `with` block ends the streams and waits for the inserts: without an exception each commits its
    rows (the first insert's error, if any, is raised); with one, each stream ends in an error instead, so that its
    insert writes nothing. An insert that fails is raised by the next put(), never left with a queue no one reads."""

    def __init__(self, db: duckdb.DuckDBPyConnection, source_id: int, tables: dict[str, pa.Schema]):
        self.db, self.source_id, self.tables = db, source_id, tables
        self.queues: dict[str, queue.Queue] = {}
        self.workers: dict[str, threading.Thread] = {}
        self.errors: list[BaseException] = []

    def _start(self, table: str) -> None:
        self.queues[table] = queue.Queue(maxsize=STREAM_DEPTH)
        self.workers[table] = threading.Thread(
            target=self._insert, args=(self.db.cursor(), table), name=f"insert {table}", daemon=True
        )
        self.workers[table].start()

    def _insert(self, cur: duckdb.DuckDBPyConnection, table: str) -> None:
        q, schema = self.queues[table], self.tables[table]

        def batches() -> Iterator[pa.RecordBatch]:
            while (item := q.get()) is not None:
                if isinstance(item, BaseException):
                    raise item
                yield item

        try:
            cur.register("_rows", pa.RecordBatchReader.from_batches(schema, batches()))
            cols = ", ".join(f'"{n}"' for n in schema.names)
            execute(cur, f"INSERT INTO {table} (source_id, {cols}) SELECT ?, {cols} FROM _rows", [self.source_id])
        except BaseException as e:  # noqa: BLE001 - raised in the parser's thread
            self.errors.append(e)
        finally:
            cur.close()

    def _offer(self, table: str, item) -> bool:
        """Puts item on the table's queue, unless its insert has ended (then False)."""
        while self.workers[table].is_alive():
            try:
                self.queues[table].put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def put(self, table: str, batch: pa.RecordBatch) -> None:
        assert table in self.tables, f"rows for unknown table {table}"
        if table not in self.workers:
            self._start(table)
        if self.errors or not self._offer(table, batch):  # an insert ends early only once its error is kept
            raise self.errors[0]

    def __enter__(self) -> "TableStreams":
        return self

    def __exit__(self, kind, exc, tb) -> None:
        for table in self.queues:
            self._offer(table, None if exc is None else StreamAborted(f"the ingest failed: {exc!r}"))
        for worker in self.workers.values():
            worker.join()
        if exc is None and self.errors:
            raise self.errors[0]
