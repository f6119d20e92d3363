"""The writes that cross tables: an analysis' rows deleted from every table, an ingest's staged rows discarded.
Each is one transaction under one deadline (backend/db.py `transaction`): done whole, or not at all."""

from __future__ import annotations

from ..db import Connection, execute, transaction
from .tables import PARSER_TABLES, STAGED_TABLES

SOURCE_ROW_TABLES = (*PARSER_TABLES, *STAGED_TABLES)  # the tables an ingest writes before its sources rows exist


def tables_with(con: Connection, column: str) -> list[str]:
    """The tables of the database that have `column` (source_id, analysis_id)."""
    return [
        r[0]
        for r in execute(
            con,
            "SELECT c.table_name FROM duckdb_columns() c JOIN duckdb_tables() t USING (database_name, schema_name,"
            " table_name) WHERE c.database_name = current_database() AND c.schema_name = 'main' AND c.column_name = ?"
            " ORDER BY 1",
            [column],
        ).fetchall()
    ]


def delete_analysis(con: Connection, analysis_id: str) -> bool:
    """Deletes an analysis and every row of it (its sources' rows in every table keyed by source_id, every row keyed
    by analysis_id, its edit key), in one transaction. False if there was no such analysis."""
    with transaction(con):
        if not execute(con, "SELECT 1 FROM analyses WHERE id = ?", [analysis_id]).fetchall():
            return False
        ids = [r[0] for r in execute(con, "SELECT id FROM sources WHERE analysis_id = ?", [analysis_id]).fetchall()]
        by_analysis = set(tables_with(con, "analysis_id"))
        for table in tables_with(con, "source_id"):
            if table not in by_analysis and table != "sources":
                execute(con, f'DELETE FROM "{table}" WHERE list_contains(?, source_id)', [ids])
        for table in by_analysis - {"sources"}:
            execute(con, f'DELETE FROM "{table}" WHERE analysis_id = ?', [analysis_id])
        execute(con, "DELETE FROM sources WHERE analysis_id = ?", [analysis_id])
        execute(con, "DELETE FROM analyses WHERE id = ?", [analysis_id])
    return True


def discard_staged(con: Connection, source_ids: list[int]) -> None:
    """Deletes the staged rows of an ingest that failed (no sources row ever referred to them)."""
    if not source_ids:
        return
    with transaction(con):
        for table in SOURCE_ROW_TABLES:
            execute(con, f"DELETE FROM {table} WHERE list_contains(?, source_id)", [source_ids])


def discard_unfinished(con: Connection) -> None:
    """Deletes the rows staged by an ingest that never finished (its process died): no sources row refers to them."""
    for table in SOURCE_ROW_TABLES:
        execute(con, f"DELETE FROM {table} WHERE source_id NOT IN (SELECT id FROM sources)")
