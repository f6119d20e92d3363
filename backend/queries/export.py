"""Exports: every row of a documented view (views.py) of an analysis, as Parquet or CSV, streamed.

The rows are read from DuckDB in record batches of BATCH rows (run.stream: a streaming result, DuckDB does not hold
the whole view) and each is written out at once, so memory stays at a batch or two whatever the view's size; no row
cap, but a time limit for the whole export (STALLSCOPE_EXPORT_SECONDS): past it the stream ends with QueryTimeout
before the file does, and the response is cut off unfinished (backend/api/export.py).
Parquet: one row group per batch, zstd. CSV: a header line, RFC 4180 quoting, cells a spreadsheet would read as a
formula made inert (backend/inert_csv.py); a list column (a stack) is its items joined by LIST_SEP.
"""

from __future__ import annotations

from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from .. import inert_csv
from ..db import Connection
from . import run as query
from . import views

BATCH = 64 * 1024
FORMATS = {"parquet": "application/vnd.apache.parquet", "csv": "text/csv; charset=utf-8"}
LIST_SEP = ";"


class _Sink:
    """A file-like object the writers write into; `take()` hands over what was written since the last take."""

    def __init__(self):
        self.parts: list[bytes] = []
        self.closed = False
        self.pos = 0

    def write(self, data) -> int:
        b = bytes(data)
        self.parts.append(b)
        self.pos += len(b)
        return len(b)

    def tell(self) -> int:
        return self.pos

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True

    def take(self) -> bytes:
        out, self.parts = b"".join(self.parts), []
        return out


def _flat(batch: pa.RecordBatch) -> pa.RecordBatch:
    """The batch with its list columns as text (items joined by LIST_SEP), for CSV."""
    cols, fields = [], []
    for field, col in zip(batch.schema, batch.columns):
        if pa.types.is_list(field.type) or pa.types.is_large_list(field.type):
            col = pc.binary_join(col.cast(pa.list_(pa.string())), LIST_SEP)
            field = pa.field(field.name, pa.string())
        cols.append(col)
        fields.append(field)
    return pa.RecordBatch.from_arrays(cols, schema=pa.schema(fields))


def stream(
    con: Connection, analysis_id: str, view_name: str, fmt: str, seconds: float | None = None
) -> Iterator[bytes]:
    """The bytes of the view's export, batch after batch, the whole of it under one time limit (`seconds`, else
    run.EXPORT_SECONDS): past it, QueryTimeout ends the stream before the file does. `con` is a cursor of its own:
    it is closed at the end (or when the reader of the stream stops early)."""
    view = views.BY_NAME[view_name]
    sink = _Sink()
    try:
        sql, params = f"SELECT * FROM ({views.select(view)})", {"aid": analysis_id}
        schema = query.run(con, f"{sql} LIMIT 0", params, shape="arrow").schema
        reader = query.stream(con, sql, params, batch=BATCH, seconds=seconds)
        if fmt == "csv":
            schema = _flat(pa.RecordBatch.from_pylist([], schema)).schema
            writer = pacsv.CSVWriter(sink, schema)
            for batch in reader:
                writer.write_batch(inert_csv.inert_batch(_flat(batch)))
                if sink.parts:
                    yield sink.take()
        else:
            writer = pq.ParquetWriter(sink, schema, compression="zstd")
            for batch in reader:
                writer.write_batch(batch)
                yield sink.take()
        writer.close()
        yield sink.take()
    finally:
        con.close()
