"""Rows between DuckDB and Python for the derive steps: a table of Python lists registered as a view
(`register_table`), a result read as dicts (`fetch_dicts`)."""

from __future__ import annotations

import pyarrow as pa


def register_table(con, name: str, columns: dict[str, list], types: dict[str, pa.DataType]) -> None:
    con.register(name, pa.table({k: pa.array(v, type=types[k]) for k, v in columns.items()}))


def fetch_dicts(cur, blank: dict | None = None) -> list[dict]:
    """The rows as dicts; each a copy of `blank` (its other keys) updated with the row, when given."""
    names = [d[0] for d in cur.description]
    if blank is None:
        return [dict(zip(names, r)) for r in cur.fetchall()]
    out = []
    for r in cur.fetchall():
        d = blank.copy()
        d.update(zip(names, r))
        out.append(d)
    return out
