"""The schema's version and the ordered migrations that bring a database file to it, run when the file is opened
(schema/create.py: after the tables that already existed in version 0 exist, before the parsers' views and
schema/tables.py's SCHEMA).

A file records its version in `schema_version` (one row). A file without that table is version 0: any file written
before versions existed (release 2f0e012 and earlier; tests/test_release_db.py keeps one), or a new one. Each step
of STEPS moves a file from the version before it to its own, in order; a file newer than SCHEMA_VERSION is refused
(it was written by a newer Stallscope). Steps written before versions existed look before they change anything, so
they are right on any layout of version 0:
* 1: `migrate_calls` (fg_calls as a table of text -> fg_call_rows + fg_names) and `migrate_waits_and_links` (waits /
  chain_links as tables -> wait_rows / chain_link_rows behind views).
* 2: `add_source_columns`: sources' clock, alignment and files (each added by a release of version 0 or 1 that
  wrote them with `ADD COLUMN IF NOT EXISTS` at every start: a file may have any of them).
* 3: `add_cpu_tracks`: the table cpu_slices, and the derive step CPU_TRACKS marked pending (`pending_derive`):
  when the file is opened (store.py, after the migrations), derive/pipeline.run_pending makes each kept ftrace
  source's cpu_slices and cpu lanes from its sched_switch rows as an ingest makes them (derive/cpus.py).
* 4: `add_first_views`: the table of the answers of an analysis page's first requests, empty: an analysis without
  them is answered by computing (as before), and the warm-up stores them (backend/warm.py).
* 5: `add_wait_kinds`: every stored wait's kind and rule (wait_kinds.py), from its stack, state and lock as an ingest
  finds them; the stored first views are deleted (their waits were ranked without the kinds) and stored again by
  the warm-up. The stored chains stay as they were built.
The parsers' tables are rebuilt by schema/create.py when a column became generated (`rebuild`). A migration changes
the schema and the rows it moves; what must be derived again over the kept rows it marks in `pending_derive` by name,
for derive/pipeline.py to run: the schema imports nothing of derive/.
"""

from __future__ import annotations

from typing import Callable

import pyarrow as pa

from parsers import funcgraph

from ..db import execute
from .tables import (
    CHAIN_LINKS_COLUMNS,
    FIRST_VIEWS_SCHEMA,
    PENDING_DERIVE_SCHEMA,
    STACK_SEP,
    TIMELINE_SCHEMA,
    WAITS_COLUMNS,
)

CPU_TRACKS = "cpu_tracks"  # a derive step marked pending by migration 3 (derive/pipeline.DERIVE_MIGRATED)


def stored_columns(con, table: str) -> list[str]:
    """The stored columns of the base table `table`, in order (not its generated ones); [] when no base table has
    that name (none, or a view)."""
    return [
        c
        for (c,) in execute(
            con,
            "SELECT c.column_name FROM duckdb_columns() c JOIN duckdb_tables() t ON t.table_oid = c.table_oid"
            " WHERE t.database_name = current_database() AND t.schema_name = 'main' AND t.table_name = ?"
            " AND c.column_default IS NULL ORDER BY c.column_index",
            [table],
        ).fetchall()
    ]


def rebuild(con, old: str, new: str, columns: str, derived: dict[str, str] | None = None) -> None:
    """Moves the rows of the table `old` into a new table `new` (`columns`: its column definitions; new = old: the
    table is rebuilt under its name), in one transaction: each stored column of the new table from the old one of
    its name, else from the SQL expression `derived` gives it over the old table's columns."""
    before = stored_columns(con, old)
    target = "_rebuilt" if new == old else new
    con.begin()
    execute(con, f"CREATE TABLE {target} ({columns})")
    values = {
        c: f'"{c}"' if c in before else derived[c]
        for c in stored_columns(con, target)
        if c in before or c in (derived or {})
    }
    names = ", ".join(f'"{c}"' for c in values)
    execute(con, f"INSERT INTO {target} ({names}) SELECT {', '.join(values.values())} FROM {old}")
    execute(con, f"DROP TABLE {old}")
    if target != new:
        execute(con, f"ALTER TABLE {target} RENAME TO {new}")
    con.commit()


def migrate_calls(con) -> None:
    """A database written before the calls' names became ids (parsers/funcgraph.py): a table `fg_calls` with the
    comm and func text in each row. Its names go to fg_names (per source, ids in name order), its rows to
    fg_call_rows, in one transaction, before the view of that name is made."""
    if not stored_columns(con, "fg_calls"):  # no such table: the view, or a new file
        return
    con.begin()
    execute(
        con,
        """
        INSERT INTO fg_names (source_id, id, name)
        SELECT source_id, (row_number() OVER (PARTITION BY source_id ORDER BY name) - 1)::INTEGER, name FROM (
            SELECT source_id, comm AS name FROM fg_calls WHERE comm IS NOT NULL
            UNION SELECT source_id, func FROM fg_calls WHERE func IS NOT NULL)""",
    )
    cols = [c for c in funcgraph.CALL_COLUMNS if c not in ("comm", "func")]
    execute(
        con,
        f"""
        INSERT INTO fg_call_rows ({", ".join(cols)}, comm_id, func_id)
        SELECT {", ".join(f"c.{c}" for c in cols)}, cn.id, fn.id FROM fg_calls c
        LEFT JOIN fg_names cn ON cn.source_id = c.source_id AND cn.name = c.comm
        LEFT JOIN fg_names fn ON fn.source_id = c.source_id AND fn.name = c.func""",
    )
    execute(con, "DROP TABLE fg_calls")
    con.commit()


def migrate_waits_and_links(con) -> None:
    """A database written with an older layout of the waits or the chains' links: a table `waits` or `chain_links`
    (stacks stored as lists, or as text with virtual list columns; the waits' stack_lines, never read). Each is
    rebuilt once into wait_rows or chain_link_rows (WAITS_COLUMNS, CHAIN_LINKS_COLUMNS), its rows kept, before the
    schema makes the views of those names."""
    for old, rows, columns in (
        ("waits", "wait_rows", WAITS_COLUMNS),
        ("chain_links", "chain_link_rows", CHAIN_LINKS_COLUMNS),
    ):
        stored = stored_columns(con, old)
        if not stored:  # no such table: the view, or a new file
            continue
        execute(con, "DROP VIEW IF EXISTS stall_waits")
        # a stack's text from its list, where the old table stored the list
        rebuild(
            con,
            old,
            rows,
            columns,
            {
                f"{c}_text": f"array_to_string({c}, chr(31))"
                for c in ("stack", "waker_stack", "holder_stack")
                if c in stored
            },
        )


def add_source_columns(con) -> None:
    """sources' columns added after the first releases, in the order tables.CORE_SCHEMA has them (so a migrated
    file's sources is a new file's): the clock its times come from, how its offset was found, its files."""
    for column, kind in (("clock", "VARCHAR"), ("alignment", "JSON"), ("files", "JSON")):
        execute(con, f"ALTER TABLE sources ADD COLUMN IF NOT EXISTS {column} {kind}")


def add_cpu_tracks(con) -> None:
    """The timeline's tables as far as the file lacks them (cpu_slices), and CPU_TRACKS marked pending: the kept
    ftrace sources' CPU tracks are made by that derive step (derive/cpus.summarize_kept) once the file is migrated,
    so a migrated file's tracks are a new ingest's."""
    execute(con, TIMELINE_SCHEMA)
    execute(con, PENDING_DERIVE_SCHEMA)
    execute(con, "INSERT INTO pending_derive (step) VALUES (?) ON CONFLICT DO NOTHING", [CPU_TRACKS])


def add_first_views(con) -> None:
    """The table `first_views` (queries/first_views.py), empty: none of the file's analyses has its first views stored
    yet. Not computed here (seconds per analysis of millions of events, at every open of an old file's server): the
    warm-up stores them, newest analyses first, and until then a request computes its answer as before."""
    execute(con, FIRST_VIEWS_SCHEMA)


def add_wait_kinds(con) -> None:
    """wait_rows' columns wait_kind and wait_rule, filled for every stored wait by wait_kinds.classify (the rules an
    ingest applies), in one transaction; the first views (waits ranked before the kinds) deleted."""
    from .. import wait_kinds

    if not stored_columns(con, "wait_rows"):
        return
    con.begin()
    try:
        for column in ("wait_kind", "wait_rule"):
            execute(con, f"ALTER TABLE wait_rows ADD COLUMN IF NOT EXISTS {column} VARCHAR")
        rows = execute(
            con, "SELECT source_id, line, kind, stack_text, state, primitive, lock_key FROM wait_rows"
        ).fetchall()
        found = [wait_kinds.classify(t.split(STACK_SEP) if t else [], st, p, k) for *_, t, st, p, k in rows]
        con.register(
            "_wait_kinds",
            pa.table(
                {
                    "source_id": pa.array([r[0] for r in rows], pa.int32()),
                    "line": pa.array([r[1] for r in rows], pa.int64()),
                    "kind": pa.array([r[2] for r in rows], pa.string()),
                    "wait_kind": pa.array([f.kind for f in found], pa.string()),
                    "wait_rule": pa.array([f.name for f in found], pa.string()),
                }
            ),
        )
        execute(
            con,
            "UPDATE wait_rows w SET wait_kind = k.wait_kind, wait_rule = k.wait_rule FROM _wait_kinds k"
            " WHERE w.source_id = k.source_id AND w.line = k.line AND w.kind = k.kind",
        )
        con.unregister("_wait_kinds")
        if stored_columns(con, "first_views"):
            execute(con, "DELETE FROM first_views")
        con.commit()
    except BaseException:
        con.rollback()
        raise


def forget_first_views(con) -> None:
    """The stored first views deleted: their answers changed shape (the heatmaps say whether idle sleeps are
    counted, `idle`). The warm-up stores them again, newest analyses first."""
    if stored_columns(con, "first_views"):
        execute(con, "DELETE FROM first_views")


def _to_version_1(con) -> None:
    migrate_calls(con)
    migrate_waits_and_links(con)


SCHEMA_VERSION = 6
# (the version a step makes, the step), in order
STEPS: list[tuple[int, Callable]] = [
    (1, _to_version_1),
    (2, add_source_columns),
    (3, add_cpu_tracks),
    (4, add_first_views),
    (5, add_wait_kinds),
    (6, forget_first_views),
]


class NewerSchema(Exception):
    """The file was written by a newer Stallscope, with a schema this one does not know."""


def version_of(con) -> int:
    """The file's schema version (0: no schema_version table)."""
    if not stored_columns(con, "schema_version"):
        return 0
    return execute(con, "SELECT max(version) FROM schema_version").fetchall()[0][0] or 0


def migrate(con) -> int:
    """Brings the file to SCHEMA_VERSION, step by step (each step's changes are its own transactions), then records
    it. Returns the version the file had. Raises NewerSchema for a file of a later version."""
    found = version_of(con)
    if found > SCHEMA_VERSION:
        raise NewerSchema(
            f"the database was written with schema version {found}, newer than this Stallscope's"
            f" ({SCHEMA_VERSION}): open it with the version that wrote it, or a newer one"
        )
    for version, step in STEPS:
        if version > found:
            step(con)
    if found < SCHEMA_VERSION:
        execute(
            con,
            "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL, migrated_at TIMESTAMP NOT"
            " NULL DEFAULT current_timestamp)",
        )
        execute(con, "DELETE FROM schema_version")
        execute(con, "INSERT INTO schema_version (version) VALUES (?)", [SCHEMA_VERSION])
    return found
