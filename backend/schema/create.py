"""Opening a database file: every table and view made, or brought to this version, in this order:

1. `analyses` and `sources` (tables.CORE_SCHEMA) and the parsers' tables (from their Arrow schemas; a table whose
   column became generated is rebuilt), as far as they do not exist yet;
2. the migrations (migrations.py), from the file's schema version to SCHEMA_VERSION;
3. the parsers' views and every derived table and view (tables.SCHEMA), which may need the migrated layout.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa

from parsers.detect import PARSERS

from ..db import execute
from .migrations import migrate, rebuild, stored_columns
from .tables import CORE_SCHEMA, SCHEMA


def create_or_migrate(con: duckdb.DuckDBPyConnection) -> None:
    """Brings the database to this version's schema (a new file: creates it). Raises migrations.NewerSchema for a
    file written by a newer Stallscope."""
    execute(con, CORE_SCHEMA)
    made: set[str] = set()
    for parser in PARSERS:
        for table, schema in parser.TABLES.items():
            if table not in made:
                made.add(table)
                create_parser_table(
                    con,
                    table,
                    schema,
                    getattr(parser, "GENERATED", {}).get(table, {}),
                    getattr(parser, "COMPRESSION", {}).get(table, {}),
                )
    migrate(con)
    for parser in PARSERS:  # the views parsers give over their tables (once an older layout's table is gone)
        for view, sql in getattr(parser, "VIEWS", {}).items():
            execute(con, f"CREATE OR REPLACE VIEW {view} AS {sql}")
    execute(con, SCHEMA)


def create_parser_table(
    con: duckdb.DuckDBPyConnection,
    table: str,
    schema: pa.Schema,
    generated: dict[str, str],
    compression: dict[str, str] | None = None,
):
    """Creates a parser's table: source_id, the columns of its Arrow schema (each with its method in `compression`,
    if any), then its generated columns (virtual: computed when read, never stored). A file written before a column
    became generated holds it as a stored column: the table is rebuilt once, its rows copied. (A table made before
    a column's method was set keeps DuckDB's choice.)"""
    compression = compression or {}
    con.register("_empty", schema.empty_table())
    stored = [
        f'"{name}" {kind}' + (f" USING COMPRESSION {compression[name]}" if name in compression else "")
        for name, kind, *_ in execute(con, "DESCRIBE SELECT * FROM _empty").fetchall()
    ]
    con.unregister("_empty")
    ddl = ", ".join(['"source_id" INTEGER', *stored, *(f'"{n}" AS ({sql}) VIRTUAL' for n, sql in generated.items())])
    plain = set(stored_columns(con, table))
    if not plain or not plain & set(generated):
        execute(con, f"CREATE TABLE IF NOT EXISTS {table} ({ddl})")
        return
    rebuild(con, table, table, ddl)
