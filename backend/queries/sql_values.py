"""The SQL console's results as JSON: each column's type as DuckDB names it, each value exactly, and the rows encoded up
to a byte cap (what `truncated` says, beside the row cap).

Exactly: a column of a type Arrow and JSON carry as they are (integers up to 64 bits, floats, text, blobs as hex,
enums, and lists and structs of those: `is_plain`) comes through Arrow; any other (DATE, TIMESTAMP, TIME WITH TIME
ZONE, INTERVAL, HUGEINT, DECIMAL, UUID, BIT, MAP, UNION, and what holds them) as DuckDB's own `to_json` of the value,
read back with its numbers' digits (`exact`). A value JSON cannot hold exactly comes as text: infinite and
out-of-range dates and times as DuckDB writes them (`infinity`, `5881580-07-10`), NaN and infinite floats as `nan`,
`inf`, `-inf`, integers past 64 bits and decimals of more than 15 digits as their digits; the column's type says what
it is.
"""

from __future__ import annotations

import datetime
import decimal
import json
import math

import duckdb
import numpy as np
import pyarrow as pa

_PLAIN_IDS = {"boolean", "tinyint", "smallint", "integer", "bigint", "utinyint", "usmallint", "uinteger", "ubigint",
              "float", "double", "varchar", "blob", "enum"}  # fmt: skip
_INT64_MIN, _UINT64_MAX = -(1 << 63), (1 << 64) - 1
_DOUBLE_DIGITS = 15  # a decimal of at most this many digits is the same number after a round trip through a double

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


def is_plain(t: duckdb.DuckDBPyType) -> bool:
    """Whether a DuckDB type's values come through Arrow as JSON holds them exactly."""
    if t.id in _PLAIN_IDS:
        return True
    if t.id in ("list", "array"):
        return is_plain(dict(t.children)["child"])
    if t.id == "struct":
        return all(is_plain(child) for _, child in t.children)
    return False


def _float(value: float):
    if math.isfinite(value):
        return value
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")  # as DuckDB writes them


def _plain(value):
    """A value of a plain column (is_plain) as JSON holds it: bytes as hex, non-finite floats as text."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (datetime.date, datetime.time, datetime.timedelta, decimal.Decimal)):  # not plain: a defect
        raise TypeError(f"{type(value).__name__} in a plain column")
    return str(value)


def exact(value):
    """A value read from DuckDB's to_json (numbers as int or Decimal) as JSON holds it exactly: integers of up to 64
    bits and decimals of up to 15 digits as numbers, others as their digits; non-finite floats as text."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value if _INT64_MIN <= value <= _UINT64_MAX else str(value)
    if isinstance(value, float):  # NaN, Infinity (json reads them as floats)
        return _float(value)
    if isinstance(value, decimal.Decimal):
        digits = value.as_tuple().digits
        return float(value) if value.is_finite() and len(digits) <= _DOUBLE_DIGITS else str(value)
    if isinstance(value, dict):
        return {k: exact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [exact(v) for v in value]
    return str(value)


def _from_json(text: str | None):
    return None if text is None else exact(json.loads(text, parse_float=decimal.Decimal))


def projection(types: list[duckdb.DuckDBPyType]) -> tuple[str, set[int]]:
    """The SELECT list over a query's columns (by position) that reads each exactly, and which columns it gives as
    JSON text."""
    as_json = {i for i, t in enumerate(types) if not is_plain(t)}
    return ", ".join(f"to_json(#{i + 1})" if i in as_json else f"#{i + 1}" for i in range(len(types))), as_json


def _needs_plain(t: pa.DataType) -> bool:
    return not (pa.types.is_integer(t) or pa.types.is_boolean(t) or pa.types.is_string(t))


def rows_of(table: pa.Table | pa.RecordBatch, as_json: set[int] = frozenset()) -> list[list]:
    columns = []
    for i, col in enumerate(table.columns):
        values = col.to_pylist()
        if i in as_json:
            values = [_from_json(v) for v in values]
        elif pa.types.is_float32(col.type):  # a FLOAT as its shortest text reads (0.1, not 0.10000000149011612)
            values = [None if v is None else _float(float(str(np.float32(v)))) for v in values]
        elif _needs_plain(col.type):
            values = [_plain(v) for v in values]
        columns.append(values)
    return [list(r) for r in zip(*columns)] if columns else [[] for _ in range(table.num_rows)]


def _dumps(value) -> bytes:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()


class RowsJson:
    """The JSON text of a result's rows, batch after batch, up to `max_rows` rows and `max_bytes` bytes; a row past
    either is left out, and `truncated` says so."""

    def __init__(self, max_rows: int, max_bytes: int, as_json: set[int] = frozenset()):
        self.max_rows, self.max_bytes, self.as_json = max_rows, max_bytes, as_json
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
        rows = rows_of(batch, self.as_json)
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
