"""CSV that a spreadsheet opens as data, never as formulas: every CSV Stallscope writes (the exports, `stallscope sql
--format csv`; the SQL tab's download does the same in frontend/src/lib/csv.ts) goes through here.

A text cell beginning with `=`, `+`, `-`, `@`, a tab or a carriage return is what a spreadsheet may run (a task named
`=cmd|' /C calc'!A0`): as OWASP recommends, it is written with a single quote before it, and quoted. Numbers stay
numbers: numeric columns are written as they are, and a text cell that is a plain decimal number (`-12`, `+3.5e-2`)
is left alone. Otherwise RFC 4180: the exports, written by Arrow's CSV writer, quote every text cell; `cell` and
`line` (the command line's) quote a cell holding `"`, `,`, CR or LF, or empty; NULL is an empty cell.
"""

from __future__ import annotations

import re

import pyarrow as pa
import pyarrow.compute as pc

RISKY_START = r"^[=+\-@\t\r]"
NUMBER = r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$"
NEEDS_QUOTES = r'[",\r\n]'
_RISKY, _NUMBER, _QUOTES = re.compile(RISKY_START), re.compile(NUMBER), re.compile(NEEDS_QUOTES)


def _inert(text: str) -> tuple[str, bool]:
    """The text with a quote before it when a spreadsheet could read it as a formula, and whether it had to."""
    risky = bool(_RISKY.match(text)) and not _NUMBER.match(text)
    return ("'" + text if risky else text), risky


def _quoted(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def cell(value) -> str:
    """One cell's CSV text (None: empty; text neutralised and quoted as above; anything else as str())."""
    if value is None:
        return ""
    if not isinstance(value, str):
        return str(value)
    text, risky = _inert(value)
    return _quoted(text) if risky or not text or _QUOTES.search(text) else text


def line(values) -> str:
    """One CSV line (without its end) of `values`."""
    return ",".join(cell(v) for v in values)


def inert_text(col: pa.Array) -> pa.Array:
    """A text column with a single quote before each cell a spreadsheet would read as a formula (Arrow's CSV writer
    quotes every text cell)."""
    risky = pc.match_substring_regex(col, RISKY_START)
    if not pc.any(risky).as_py():  # most columns: nothing to do
        return col
    risky = pc.and_kleene(risky, pc.invert(pc.match_substring_regex(col, NUMBER)))
    return pc.if_else(risky, pc.binary_join_element_wise("'", col, ""), col)


def _is_text(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def inert_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    """The batch with its text columns made inert (its other columns as they are), for Arrow's CSV writer."""
    columns = [inert_text(col) if _is_text(col.type) else col for col in batch.columns]
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)
