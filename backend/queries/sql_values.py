"""The SQL console's results as JSON: each column's DuckDB type name, each value as JSON can carry it, and the rows
encoded up to a byte cap (what `truncated` says, beside the row cap)."""

from __future__ import annotations

import datetime
import decimal
import json
import math

import pyarrow as pa

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


def columns_of(schema: pa.Schema) -> list[dict]:
    return [{"name": f.name, "type": type_name(f.type)} for f in schema]


def rows_of(table: pa.Table | pa.RecordBatch) -> list[list]:
    columns = []
    for col in table.columns:
        values = col.to_pylist()
        columns.append([_plain(v) for v in values] if _needs_plain(col.type) else values)
    return [list(r) for r in zip(*columns)] if columns else [[] for _ in range(table.num_rows)]


def _dumps(value) -> bytes:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()


class RowsJson:
    """The JSON text of a result's rows, batch after batch, up to `max_rows` rows and `max_bytes` bytes; a row past
    either is left out, and `truncated` says so."""

    def __init__(self, max_rows: int, max_bytes: int):
        self.max_rows, self.max_bytes = max_rows, max_bytes
        self.parts: list[bytes] = []
        self.rows = self.bytes = 0
        self.truncated = False

    def add(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        if self.truncated or self.rows >= self.max_rows:
            self.truncated = True
            return
        if self.rows + batch.num_rows > self.max_rows:
            batch = batch.slice(0, self.max_rows - self.rows)
            self.truncated = True
        rows = rows_of(batch)
        whole = _dumps(rows)[1:-1]
        if self.bytes + len(whole) + 1 <= self.max_bytes:
            self._take(whole, len(rows))
            return
        self.truncated = True
        for row in rows:  # the rows that still fit
            text = _dumps(row)
            if self.bytes + len(text) + 1 > self.max_bytes:
                return
            self._take(text, 1)

    def _take(self, text: bytes, n: int) -> None:
        if n:
            self.parts.append(text)
            self.rows += n
            self.bytes += len(text) + 1

    def answer(self, columns: list[dict], elapsed_ms: float) -> bytes:
        """The console's whole answer: {columns, rows, truncated, elapsed_ms} as JSON."""
        head = _dumps({"columns": columns})[:-1]
        tail = _dumps({"truncated": self.truncated, "elapsed_ms": elapsed_ms})[1:]
        return head + b',"rows":[' + b",".join(self.parts) + b"]," + tail
