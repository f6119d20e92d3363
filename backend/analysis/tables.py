"""A table of an older layout, rebuilt once when a database file is opened: the parsers' tables (store.py) and the
waits' and chains' (stalls.migrate)."""
from __future__ import annotations


def stored_columns(con, table: str) -> list[str]:
    """The stored columns of the base table `table`, in order (not its generated ones); [] when no base table has
    that name (none, or a view)."""
    return [c for (c,) in con.execute(
        "SELECT c.column_name FROM duckdb_columns() c JOIN duckdb_tables() t ON t.table_oid = c.table_oid"
        " WHERE t.database_name = current_database() AND t.schema_name = 'main' AND t.table_name = ?"
        " AND c.column_default IS NULL ORDER BY c.column_index", [table]).fetchall()]


def rebuild(con, old: str, new: str, columns: str, derived: dict[str, str] | None = None) -> None:
    """Moves the rows of the table `old` into a new table `new` (`columns`: its column definitions; new = old: the
    table is rebuilt under its name), in one transaction: each stored column of the new table from the old one of
    its name, else from the SQL expression `derived` gives it over the old table's columns."""
    before = stored_columns(con, old)
    target = "_rebuilt" if new == old else new
    con.begin()
    con.execute(f"CREATE TABLE {target} ({columns})")
    values = {c: f'"{c}"' if c in before else derived[c] for c in stored_columns(con, target)
              if c in before or c in (derived or {})}
    names = ", ".join(f'"{c}"' for c in values)
    con.execute(f"INSERT INTO {target} ({names}) SELECT {', '.join(values.values())} FROM {old}")
    con.execute(f"DROP TABLE {old}")
    if target != new:
        con.execute(f"ALTER TABLE {target} RENAME TO {new}")
    con.commit()
