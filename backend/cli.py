"""The `stallscope` command: serve the web app, or ingest files into an analysis from the shell.

Flags win over the environment: STALLSCOPE_DB, STALLSCOPE_HOST, STALLSCOPE_PORT; the access model and limits come
from STALLSCOPE_TOKEN, STALLSCOPE_ALLOWED_HOSTS, STALLSCOPE_MAX_UPLOAD(S), ... (docs/SECURITY.md).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from pathlib import Path

from .cli_ask import add_commands as add_ask_commands

DEFAULT_DB = "data/stallscope.duckdb"


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    try:
        return int(value) if value else default
    except ValueError:
        sys.exit(f"stallscope: {name}={value!r} is not a whole number")


def _human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def cmd_serve(args) -> int:
    from .access import Access
    from .app import create_app
    from .limits import Limits
    from .server import serve
    from .store import Store

    try:  # the access model and the limits of docs/SECURITY.md, from the environment
        access, limits = Access.from_env(args.host), Limits.from_env()
    except ValueError as e:
        sys.exit(f"stallscope: {e}")
    store = Store(args.db)
    if args.demo:
        load_demo(store)
    app = create_app(store, access=access, limits=limits)
    mode = "shared: STALLSCOPE_TOKEN set" if access.shared else "local: no token needed"
    print(
        f"stallscope: serving {args.db} at http://{args.host}:{args.port} ({mode}; hosts answered:"
        f" {', '.join(access.allowed_hosts)})",
        file=sys.stderr,
        flush=True,
    )
    try:
        serve(app, args.host, args.port, limits)
    finally:
        store.close()  # checkpoints, and removes DuckDB's spill files
    return 0


SAMPLES = Path(__file__).resolve().parent.parent / "samples"
DEMOS = [  # (analysis name, files under samples/); the first is listed on top
    (
        "Real kernel: dd's fsync waits for ext4's journal, whose write sat 200+ ms in device-mapper"
        " (lab recording: trace.dat, blktrace of dm-0 and vdb, offcputime)",
        [
            "real/ext4-jbd2/trace.dat",
            "real/ext4-jbd2/blktrace/dm-0.blktrace.0",
            "real/ext4-jbd2/blktrace/vdb.blktrace.0",
            "real/ext4-jbd2/offcputime.txt",
        ],
    ),
    (
        "Demo: an app's write stalls 2.3 s behind an inode lock, down to the starved metadata write"
        " (synthetic, three sources)",
        ["incident.blkparse.txt", "incident.trace-cmd-report.txt", "incident.offcputime.txt"],
    ),
    ("Demo: a metadata write starved 15.6 s in CFQ's queue (synthetic)", ["demo-cfq-starvation.blkparse.txt"]),
    (
        "Demo: an ext4 write waits for the journal commit's block I/O (synthetic)",
        ["ext4-jbd2-commit.trace-cmd-report.txt", "ext4-jbd2-commit.blkparse.txt", "ext4-jbd2-commit.offwaketime.txt"],
    ),
    (
        "Seed excerpt: an XFS write fault stalled 316 ms behind an inode lock (kernel bug report)",
        ["xfs-unwritten-stall.trace-cmd-report.txt"],
    ),
    ("Seed excerpt: open() sleeping in xfs_buf_lock (kernel bug report)", ["xfs-open-stall.offcputime.txt"]),
    (
        "Seed excerpt: xfsaild write waits 15.6 s for dispatch (kernel bug report)",
        ["cfq-dispatch-starvation.blkparse.txt"],
    ),
]


def load_demo(store) -> None:
    """Loads the samples as demo analyses into a database that has none yet, each with its first views stored."""
    from .cache import AnalysisCache
    from .ingest import InputFile
    from .queries import analyses, first_views

    con = store.cursor()
    try:
        if analyses.count(con):
            return
    finally:
        con.close()
    for name, names in reversed(DEMOS):
        paths = [SAMPLES / n for n in names]
        files = [InputFile(filename=p.name, stream=open(p, "rb"), size=p.stat().st_size) for p in paths]
        try:
            created = store.ingest(files, name)
        finally:
            for f in files:
                f.stream.close()
        first_views.precompute(store.db, AnalysisCache(), created["id"])
        print(f"stallscope: loaded demo analysis {created['url']}: {name}", file=sys.stderr)


def _stop(done: threading.Event, thread: threading.Thread | None) -> None:
    done.set()
    if thread is not None:
        thread.join()


def cmd_ingest(args) -> int:
    from .cache import AnalysisCache
    from .ingest import IngestError, InputFile, Progress
    from .queries import first_views
    from .store import Store

    files = []
    for path in args.files:
        p = Path(path)
        if not p.is_file():
            print(f"stallscope: {path}: no such file", file=sys.stderr)
            return 2
        files.append(InputFile(filename=p.name, stream=open(p, "rb"), size=p.stat().st_size))
    progress = Progress()
    done = threading.Event()

    def report():  # progress on stderr, all the way
        while not done.wait(0.5):
            d = progress.as_dict()
            print(
                f"\r{d['phase']}: {d['filename'] or ''} {_human(d['bytes_read'])} of {_human(d['bytes_total'])},"
                f" {d['events']:,} events",
                end="",
                file=sys.stderr,
                flush=True,
            )

    show = args.progress if args.progress is not None else sys.stderr.isatty()
    reporter = threading.Thread(target=report, name="progress", daemon=True) if show else None
    if reporter:
        reporter.start()  # stopped and joined below, before the answer is printed
    store = Store(args.db)
    try:
        created = store.ingest(files, args.name, progress)
        first_views.precompute(store.db, AnalysisCache(), created["id"])  # what its page's first requests read, stored
    except IngestError as e:
        _stop(done, reporter)
        if show:
            print(file=sys.stderr)
        if args.json:
            print(
                json.dumps(
                    {
                        "error": e.detail,
                        "files": [
                            {"filename": f.filename, "error": f.message, "line": f.line, "offset": f.offset}
                            for f in e.files
                        ],
                    }
                )
            )
        else:
            for f in e.files:
                print(f"stallscope: {f}", file=sys.stderr)
        return 1
    finally:
        _stop(done, reporter)
        store.close()
        for f in files:
            f.stream.close()
    if show:
        print(file=sys.stderr)
    if args.json:
        print(json.dumps(created))
    else:
        print(f"analysis {created['id']}")
        print(f"link     {created['url']}")
        for s in created["sources"]:
            print(
                f"  {s['filename']}: {s['format']}, {s['events']:,} events from {s['lines']:,} lines,"
                f" {s['skipped_lines']:,} skipped"
            )
            if len(s["files"]) > 1 or s["files"][0]["filename"] != s["filename"]:
                for f in s["files"]:
                    print(f"    file {f['filename']}: {f['kind']}, {_human(f['bytes'])}")
            for e in s["skipped_examples"][:5]:
                print(f"    line {e['line']}: {e['reason']}: {e['text'][:80]}")
            for n in s["notes"]:
                print(f"    note: {n}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="stallscope", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    db_help = f"the DuckDB file (default $STALLSCOPE_DB or {DEFAULT_DB})"

    serve = sub.add_parser("serve", help="serve the web app and API")
    serve.add_argument("--db", default=os.environ.get("STALLSCOPE_DB", DEFAULT_DB), help=db_help)
    serve.add_argument("--host", default=os.environ.get("STALLSCOPE_HOST", "127.0.0.1"))
    serve.add_argument("--port", type=int, default=_env_int("STALLSCOPE_PORT", 8000))
    serve.add_argument("--demo", action="store_true", help="load the samples as demo analyses if the database is empty")
    serve.set_defaults(func=cmd_serve)

    ingest = sub.add_parser(
        "ingest",
        help="create one analysis from trace files and print its id and link (the"
        " per-CPU files of a blktrace capture, NAME.blktrace.N, form one source)",
    )
    ingest.add_argument("--db", default=os.environ.get("STALLSCOPE_DB", DEFAULT_DB), help=db_help)
    ingest.add_argument("--name", help="the analysis' name (default: the file names)")
    ingest.add_argument("--json", action="store_true", help="print one JSON object: id, url, sources")
    ingest.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show progress on stderr (default: when stderr is a terminal)",
    )
    ingest.add_argument("files", nargs="+", metavar="FILE")
    ingest.set_defaults(func=cmd_ingest)
    add_ask_commands(sub, os.environ.get("STALLSCOPE_DB", DEFAULT_DB), db_help)  # sql, views, report

    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
