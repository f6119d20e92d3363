"""What an ingest wrote, as one line per table: its row count and an order-free hash of its rows (issue 27: a faster
ingest must write the same rows). What differs between two ingests of the same files by design is left out: the
analysis' random id, its creation time, the schema's migration time, and the paging cursors in the stored first views
(they carry a hash of the analysis id).

    python -m bench.digest DB [DB2]

With two databases, prints the tables whose count or hash differ and exits 1 if any do.
"""

from __future__ import annotations

import sys

import duckdb

VARYING_COLUMNS = {"analysis_id", "created_at", "migrated_at"}
CURSOR_FREE_BODY = """regexp_replace(decode("body"), '"next_cursor": ?"[^"]*"', '"next_cursor":""', 'g')"""


def digest(path: str) -> dict[str, tuple[int, int]]:
    """{table: (rows, hash)} of every base table in the database at `path`."""
    con = duckdb.connect(path, read_only=True)
    try:
        out = {}
        tables = [
            r[0]
            for r in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' ORDER BY 1"
            ).fetchall()
        ]
        for table in tables:
            cols = [
                r[0]
                for r in con.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position",
                    [table],
                ).fetchall()
            ]
            kept = [c for c in cols if c not in VARYING_COLUMNS and not (table == "analyses" and c == "id")]
            if not kept:
                out[table] = (con.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0], 0)
                continue
            select = ", ".join(CURSOR_FREE_BODY if (table, c) == ("first_views", "body") else f'"{c}"' for c in kept)
            n, h = con.execute(
                f'SELECT count(*), coalesce(bit_xor(hash(t)), 0) FROM (SELECT {select} FROM "{table}") t'
            ).fetchone()
            out[table] = (n, h)
        return out
    finally:
        con.close()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    first = digest(args[0])
    if len(args) == 1:
        for table, (n, h) in first.items():
            print(f"{table}\t{n}\t{h:016x}")
        return 0
    second = digest(args[1])
    differ = [t for t in sorted(first.keys() | second.keys()) if first.get(t) != second.get(t)]
    for t in differ:
        print(f"{t}: {first.get(t)} != {second.get(t)}")
    print("same rows in every table" if not differ else f"{len(differ)} tables differ")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
