"""The `stallscope sql` and `stallscope report` commands: the SQL console and a chain's bug-report text, from the
shell, on a database file (the same answers as POST /api/analyses/{id}/query and GET .../chains/{rank}/report.txt)."""

from __future__ import annotations

import json
import sys


def add_commands(sub, db_default: str, db_help: str) -> None:
    sql = sub.add_parser(
        "sql",
        help="run one SELECT over an analysis' views (requests, waits, calls, chains, links, ...) in the SQL"
        " console's sandbox and print the result",
    )
    sql.add_argument("--db", default=db_default, help=db_help)
    sql.add_argument("--format", choices=("table", "csv", "json"), default="table", help="how to print the rows")
    sql.add_argument("--max-rows", type=int, default=10_000, help="rows at most (the result says it was cut)")
    sql.add_argument("analysis", metavar="ID", help="the analysis id (as in its link /a/ID)")
    sql.add_argument("query", metavar="SQL", help="one SELECT; `stallscope views` lists the views")
    sql.set_defaults(func=cmd_sql)

    views = sub.add_parser("views", help="list the views the SQL console and the exports read, with their columns")
    views.add_argument("--db", default=db_default, help=db_help)
    views.set_defaults(func=cmd_views)

    report = sub.add_parser("report", help="print a chain of waits as a bug report's text (ASCII, 80 columns)")
    report.add_argument("--db", default=db_default, help=db_help)
    report.add_argument("analysis", metavar="ID", help="the analysis id")
    report.add_argument("rank", metavar="RANK", type=int, nargs="?", default=1, help="the chain's rank (default 1)")
    report.set_defaults(func=cmd_report)


def _open(db: str):
    from .store import Store

    return Store(db)


def _analysis_missing(con, args) -> bool:
    """Whether args.analysis is not in the database args.db (said on stderr)."""
    from .queries import analyses

    if analyses.analysis(con, args.analysis) is not None:
        return False
    print(f"stallscope: no analysis with id {args.analysis!r} in {args.db}", file=sys.stderr)
    return True


def _table(columns: list[str], rows: list[list]) -> str:
    def cell(v) -> str:
        text = "NULL" if v is None else json.dumps(v) if isinstance(v, (list, dict)) else str(v)
        return "".join(ch if ch.isprintable() else "?" for ch in text)

    cells = [[cell(v) for v in row] for row in rows]
    widths = [min(60, max([len(c)] + [len(r[i]) for r in cells])) for i, c in enumerate(columns)]
    fmt = lambda vals: "  ".join(v[:w].ljust(w) for v, w in zip(vals, widths)).rstrip()  # noqa: E731
    return "\n".join([fmt(columns), fmt(["-" * w for w in widths]), *(fmt(r) for r in cells)])


def cmd_sql(args) -> int:
    from .queries.sql import Console, SqlError

    store = _open(args.db)
    console = Console(store.path)
    con = store.cursor()
    try:
        if _analysis_missing(con, args):
            return 2
        try:
            result = console.query(con, args.analysis, args.query, max(1, args.max_rows))
        except SqlError as e:
            print(f"stallscope: {e}", file=sys.stderr)
            return 1
    finally:
        con.close()
        console.close()
        store.close()
    names = [c["name"] for c in result["columns"]]
    if args.format == "json":
        print(json.dumps(result))
    elif args.format == "csv":
        from .inert_csv import line

        print(line(names))
        for r in result["rows"]:
            print(line(json.dumps(v) if isinstance(v, (list, dict)) else v for v in r))
    else:
        print(_table(names, result["rows"]))
        more = f", cut at {len(result['rows'])}" if result["truncated"] else ""
        print(f"({len(result['rows'])} rows{more}, {result['elapsed_ms']:.0f} ms)", file=sys.stderr)
    return 0


def cmd_views(args) -> int:
    from .queries.sql import catalog

    store = _open(args.db)
    con = store.cursor()
    try:
        for view in catalog(con):
            print(f"{view['name']}: {view['about']}")
            print("    " + ", ".join(f"{c['name']} {c['type']}" for c in view["columns"]))
    finally:
        con.close()
        store.close()
    return 0


def cmd_report(args) -> int:
    from .cache import AnalysisCache
    from .queries import report

    store = _open(args.db)
    con = store.cursor()
    try:
        if _analysis_missing(con, args):
            return 2
        text = report.chain_report(con, AnalysisCache(), args.analysis, args.rank)
    finally:
        con.close()
        store.close()
    if text is None:
        print(f"stallscope: the analysis has no chain of rank {args.rank}", file=sys.stderr)
        return 1
    sys.stdout.write(text)
    return 0
