"""The DuckDB file: schema, cursors, and ingest in one transaction.

One `duckdb.DuckDBPyConnection` owns the database file; every request and every ingest works on its
own `cursor()` (a DuckDB connection is not shared across threads). An ingest writes its analysis,
sources, events and derived tables inside one transaction: it commits whole or leaves nothing.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import secrets
import stat
import queue
import threading
from datetime import datetime, timezone
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Callable, Iterator

import duckdb
import pyarrow as pa

from parsers.common import ParseError, ParseReport
from parsers.detect import PARSERS, SNIFF_BYTES, detect

from .analysis import DERIVE_ANALYSIS, DERIVE_SOURCE, MIGRATIONS, STAGED_TABLES
from .analysis import SCHEMA as ANALYSIS_SCHEMA
from .analysis.tables import rebuild, stored_columns

SCHEMA = """
CREATE TABLE IF NOT EXISTS analyses (
    id VARCHAR PRIMARY KEY,
    name VARCHAR NOT NULL,
    created_at TIMESTAMP NOT NULL  -- UTC
);
CREATE SEQUENCE IF NOT EXISTS source_ids START 1;
CREATE TABLE IF NOT EXISTS sources (
    id INTEGER PRIMARY KEY,
    analysis_id VARCHAR NOT NULL,
    filename VARCHAR NOT NULL,
    format VARCHAR NOT NULL,
    sha256 VARCHAR NOT NULL,
    bytes BIGINT NOT NULL,
    lines BIGINT NOT NULL,
    events BIGINT NOT NULL,
    skipped_lines BIGINT NOT NULL,
    skipped_examples JSON NOT NULL,
    notes JSON NOT NULL,
    clock_offset_ns BIGINT NOT NULL DEFAULT 0,
    t_min_ns BIGINT,
    t_max_ns BIGINT
);
ALTER TABLE sources ADD COLUMN IF NOT EXISTS clock VARCHAR;      -- the clock its times come from, when known
ALTER TABLE sources ADD COLUMN IF NOT EXISTS alignment JSON;     -- how clock_offset_ns was found (analysis/align.py)
ALTER TABLE sources ADD COLUMN IF NOT EXISTS files JSON;         -- the files it was read from (NULL: written before)
"""


PARSER_TABLES: set[str] = set()
STREAM_DEPTH = 8  # record batches waiting per table for its insert (a 16 MiB chunk makes one per table)


def new_id() -> str:
    """An unguessable analysis id: 128 random bits, URL-safe."""
    return secrets.token_urlsafe(16)


@dataclass
class Progress:
    """What an ingest has done so far, for the browser's progress bar and the CLI."""

    phase: str = "uploading"
    filename: str | None = None
    bytes_read: int = 0
    bytes_total: int = 0
    events: int = 0
    error: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def update(self, **kw) -> None:
        with self._lock:
            for k, v in kw.items():
                setattr(self, k, v)

    def as_dict(self) -> dict:
        with self._lock:
            return {k: getattr(self, k) for k in ("phase", "filename", "bytes_read", "bytes_total", "events", "error")}


@dataclass
class InputFile:
    filename: str
    stream: BinaryIO  # seekable
    size: int


class IngestError(Exception):
    """One or more files were refused; nothing was written."""

    def __init__(self, files: list[ParseError]):
        self.files = files
        super().__init__("; ".join(str(f) for f in files))

    @property
    def detail(self) -> str:
        if len(self.files) == 1:
            return str(self.files[0])
        return f"{len(self.files)} files could not be read: " + "; ".join(str(f) for f in self.files)


class _Counting:
    """A read-through wrapper that reports the bytes read (the progress bar's)."""

    def __init__(self, stream: BinaryIO, on_read: Callable[[int], None]):
        self.stream, self.on_read, self.n = stream, on_read, 0

    def readinto(self, b) -> int:
        got = self.stream.readinto(b) or 0
        self.n += got
        self.on_read(self.n)
        return got

    def read(self, size: int = -1) -> bytes:
        data = self.stream.read(size)
        self.n += len(data)
        self.on_read(self.n)
        return data


class _Hashes:
    """The SHA-256 of each file, read a second time in a thread of its own at the lowest CPU priority (Linux's
    SCHED_IDLE, else nice 19), from the start of the ingest: it takes the CPU time parsing, inserting and deriving
    leave idle. (At nice 19 it still took some from them: blkparse's ingest, interleaved runs, median 6.25 -> 6.09 s
    with SCHED_IDLE.) A file with a descriptor is read by position (os.pread: the parser's offset is untouched); any
    other stream once parsing is done (`parsed`). hashlib and the reads release the GIL."""

    def __init__(self, files: list[InputFile]):
        self.digests: list[str | None] = [None] * len(files)
        self.error: BaseException | None = None  # a read that failed: raised by result()
        self.stop = threading.Event()
        self.parsed = threading.Event()
        # asked here, not in the worker: fileno() of an upload spooled in memory moves it to disk (not while it is read)
        fds = [_descriptor(f.stream) for f in files]
        self._worker = threading.Thread(target=self._hash, args=(files, fds), name="sha256", daemon=True)
        self._worker.start()

    def _hash(self, files: list[InputFile], fds: list[int | None]) -> None:
        try:  # this thread only
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
            os.sched_setscheduler(threading.get_native_id(), os.SCHED_IDLE, os.sched_param(0))
        except (AttributeError, OSError):
            pass
        buf = bytearray(1 << 20)
        try:
            for i, (f, fd) in enumerate(zip(files, fds)):
                sha = hashlib.sha256()
                with memoryview(buf) as view:
                    if fd is not None:
                        at = 0
                        while not self.stop.is_set() and (got := os.preadv(fd, [view], at)):
                            sha.update(view[:got])
                            at += got
                    else:
                        self.parsed.wait()
                        f.stream.seek(0)
                        while not self.stop.is_set() and (got := f.stream.readinto(view)):
                            sha.update(view[:got])
                self.digests[i] = sha.hexdigest()
        except BaseException as e:  # noqa: BLE001 - handed to the ingest's thread
            self.error = e

    def result(self) -> list[str]:
        self.parsed.set()
        self._worker.join()
        if self.error is not None:
            raise self.error
        return self.digests

    def cancel(self) -> None:
        self.stop.set()
        self.parsed.set()
        self._worker.join()


def _descriptor(stream: BinaryIO) -> int | None:
    """The OS file descriptor of a stream that is a plain file (uploads spooled to disk, the CLI's files), else None."""
    try:
        fd = stream.fileno()
        return fd if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError and a ValueError
        return None


class Store:
    def __init__(self, path: str | Path, memory_limit: str = os.environ.get("STALLSCOPE_MEMORY_LIMIT", "512MB")):
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        # rows need no insertion order (every read sorts), which lets DuckDB insert in parallel
        # no Python replacement scans: a missing table must be an error, never a Python variable of that name
        # memory freed by DuckDB goes back to the OS from 32 MB on (the default keeps up to 128 MB per flush)
        config = {"preserve_insertion_order": False, "memory_limit": memory_limit, "python_enable_replacements": False,
                  "checkpoint_threshold": "1GB", "allocator_flush_threshold": "32MB"}
        _return_freed_blocks()
        self.db = duckdb.connect(str(path), config=config)
        self.db.execute(SCHEMA)
        for parser in PARSERS:  # each parser's tables, from its Arrow schemas, keyed by source_id
            for table, schema in parser.TABLES.items():
                PARSER_TABLES.add(table)
                self._parser_table(table, schema, getattr(parser, "GENERATED", {}).get(table, {}))
        for migrate in MIGRATIONS:
            migrate(self.db)
        for parser in PARSERS:  # the views parsers give over their tables (once an older layout's table is gone)
            for view, sql in getattr(parser, "VIEWS", {}).items():
                self.db.execute(f"CREATE OR REPLACE VIEW {view} AS {sql}")
        self.db.execute(ANALYSIS_SCHEMA)
        for table in [*PARSER_TABLES, *STAGED_TABLES]:  # rows staged by an ingest that never finished (it died)
            self.db.execute(f"DELETE FROM {table} WHERE source_id NOT IN (SELECT id FROM sources)")

    def _parser_table(self, table: str, schema: pa.Schema, generated: dict[str, str]) -> None:
        """Creates a parser's table: source_id, the columns of its Arrow schema, then its generated columns (virtual:
        computed when read, never stored). A file written before a column became generated holds it as a stored
        column: the table is rebuilt once, its rows copied."""
        self.db.register("_empty", schema.empty_table())
        stored = [f'"{name}" {kind}' for name, kind, *_ in self.db.execute("DESCRIBE SELECT * FROM _empty").fetchall()]
        self.db.unregister("_empty")
        ddl = ", ".join(['"source_id" INTEGER', *stored, *(f'"{n}" AS ({sql}) VIRTUAL' for n, sql in generated.items())])
        plain = set(stored_columns(self.db, table))
        if not plain or not plain & set(generated):
            self.db.execute(f"CREATE TABLE IF NOT EXISTS {table} ({ddl})")
            return
        rebuild(self.db, table, table, ddl)

    def cursor(self) -> duckdb.DuckDBPyConnection:
        return self.db.cursor()

    def close(self) -> None:
        self.db.close()

    def ingest(self, files: list[InputFile], name: str | None = None, progress: Progress | None = None) -> dict:
        """Creates one analysis from the files. Raises IngestError (nothing written) if any is refused."""
        progress = progress or Progress()
        progress.update(phase="parsing", bytes_total=sum(f.size for f in files), bytes_read=0, events=0)
        parsers, errors = [], []
        for f in files:  # detect every file first, so that all problems are reported at once
            head = f.stream.read(SNIFF_BYTES)
            f.stream.seek(0)
            try:
                parsers.append(detect(head, f.filename))
            except ParseError as e:
                errors.append(e)
        if errors:
            raise IngestError(errors)
        groups = _groups(files, parsers)

        analysis_id = new_id()
        name = name or ", ".join(p.source_name([files[i].filename for i in g]) if hasattr(p, "source_name")
                                 else files[g[0]].filename for p, g in groups)[:200]
        con = self.cursor()
        staged: list[int] = []  # source ids whose rows are written, not yet visible
        hashes = _Hashes(files)
        try:
            parsed, done = [], 0
            for parser, members in groups:
                unit = [files[i] for i in members]
                parsed.append(self._stage_source(con, unit, parser, progress, done, staged))
                done += sum(f.size for f in unit)
            hashes.parsed.set()
            _trim()  # what staging freed (Arrow batches, parser buffers) back to the OS before deriving
            # One transaction makes the analysis visible: derived tables, then its sources and itself.
            progress.update(phase="deriving")
            con.begin()
            sources = [self._add_source(con, analysis_id, *p) for p in parsed]
            for step in DERIVE_ANALYSIS:
                step(con, analysis_id)
            _trim()  # what the derivation freed (the waits' and chains' Python objects), before the commit's writes
            digests = dict(zip((id(f) for f in files), hashes.result()))
            for (source_id, unit, *_), source in zip(parsed, sources):
                digest = _source_digest(unit, [digests[id(f)] for f in unit])
                for entry, f in zip(source["files"], unit):
                    entry["sha256"] = digests[id(f)]
                con.execute("UPDATE sources SET sha256 = ?, files = ? WHERE id = ?",
                            [digest, _json(source["files"]), source_id])
            con.execute("INSERT INTO analyses (id, name, created_at) VALUES (?, ?, ?)",
                        [analysis_id, name, datetime.now(timezone.utc).replace(tzinfo=None)])
            con.commit()
        except BaseException as e:
            hashes.cancel()
            try:
                con.rollback()
            except duckdb.Error:  # no transaction was open
                pass
            self._discard(con, staged)
            progress.update(phase="error", error=str(e))
            if isinstance(e, ParseError):
                raise IngestError([e]) from e
            raise
        finally:
            con.close()
        progress.update(phase="done")
        return {"id": analysis_id, "url": f"/a/{analysis_id}", "sources": sources}

    def _discard(self, con, source_ids: list[int]) -> None:
        """Deletes the staged rows of an ingest that failed (no sources row ever referred to them)."""
        if not source_ids:
            return
        con.begin()
        for table in [*PARSER_TABLES, *STAGED_TABLES]:
            con.execute(f"DELETE FROM {table} WHERE list_contains(?, source_id)", [source_ids])
        con.commit()

    def _stage_source(self, con, unit: list[InputFile], parser, progress: Progress, done: int,
                      staged: list[int]) -> tuple:
        """Parses a source's files (one, or a format's group: blktrace's per-CPU files) into its tables, each through
        one INSERT that reads the rows as the parser makes them (_Streams): memory stays bounded whatever the files'
        size, and each table is written in whole row groups. The rows stay invisible until _add_source links them
        to an analysis."""
        done_events = progress.events
        source_id = con.execute("SELECT nextval('source_ids')").fetchall()[0][0]
        staged.append(source_id)
        names = [f.filename for f in unit]
        name = parser.source_name(names) if hasattr(parser, "source_name") else names[0]
        report = ParseReport(name)
        progress.update(filename=name)
        readers: list[_Counting] = []
        readers.extend(_Counting(f.stream, lambda _: progress.update(bytes_read=done + sum(r.n for r in readers)))
                       for f in unit)
        if hasattr(parser, "parse_set"):
            batches = parser.parse_set(list(zip(names, readers)), report)
        else:
            batches = parser.parse(readers[0], report)
        with _Streams(self.db, source_id, parser.TABLES) as streams:
            for table, batch in batches:  # the C tokenizers release the GIL: DuckDB goes on
                streams.put(table, batch)
                progress.update(events=done_events + report.events)
        if report.events == 0:
            raise report.nothing_usable()
        return source_id, unit, name, parser, report, readers

    def _add_source(self, con, analysis_id: str, source_id: int, unit: list[InputFile], name: str, parser,
                    report: ParseReport, readers: list[_Counting]) -> dict:
        t_min = t_max = None
        for step in DERIVE_SOURCE.get(parser.FORMAT, []):
            got = step(con, source_id, report)
            if got is not None:
                t_min, t_max = got
        con.execute(
            "INSERT INTO sources (id, analysis_id, filename, format, sha256, bytes, lines, events, skipped_lines,"
            " skipped_examples, notes, t_min_ns, t_max_ns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [source_id, analysis_id, name, parser.FORMAT, "", sum(r.n for r in readers), report.lines,
             report.events, report.skipped, _json([e.__dict__ for e in report.examples]), _json(report.notes),
             t_min, t_max],
        )
        kinds = report.files or [{"kind": f"{parser.FORMAT} text"}]
        files = [{"filename": f.filename, "bytes": r.n, "kind": k.get("kind", ""), "sha256": ""}
                 for f, r, k in zip(unit, readers, kinds)]
        return {"id": source_id, "filename": name, "format": parser.FORMAT, **report.as_dict(), "bytes": sum(
            r.n for r in readers), "files": files}


def _groups(files: list[InputFile], parsers: list) -> list[tuple[object, list[int]]]:
    """Which files form which source, in the order of each source's first file: a format with group() (blktrace:
    the per-CPU files of one capture) says how its files go together; any other file is a source alone."""
    by_parser: dict[int, list[int]] = {}
    for i, parser in enumerate(parsers):
        by_parser.setdefault(id(parser), []).append(i)
    groups = []
    for indices in by_parser.values():
        parser = parsers[indices[0]]
        if hasattr(parser, "group"):
            groups += [(parser, [indices[k] for k in g]) for g in parser.group([files[i].filename for i in indices])]
        else:
            groups += [(parser, [i]) for i in indices]
    return sorted(groups, key=lambda g: min(g[1]))


def _source_digest(unit: list[InputFile], digests: list[str]) -> str:
    """A source's SHA-256: its file's; for several files, the SHA-256 of the lines `sha256sum` prints for them
    (`<hex>  <name>`), the names sorted as bytes: `sha256sum NAME.blktrace.* | LC_ALL=C sort -k2 | sha256sum`."""
    if len(unit) == 1:
        return digests[0]
    lines = sorted((f.filename.encode(), f"{d}  {f.filename}\n".encode()) for f, d in zip(unit, digests))
    return hashlib.sha256(b"".join(line for _, line in lines)).hexdigest()


class _Aborted(Exception):
    """Ends a table's stream with an error: its insert writes nothing."""


class _Streams:
    """One INSERT per table, each reading its rows from a queue as they come (a RecordBatchReader over it), on a cursor
    and in a thread of its own: the tables are inserted beside the parser and beside each other, DuckDB's threads
    working on whichever has rows, and each is written in whole row groups. (Inserting the rows instead in steps of
    4 row groups, a statement each, left partial row groups at every step, which the commit appended again and a
    checkpoint compressed once more: a 10 M-line blkparse file took ~1.2 s more CPU at close, 150-200 MiB more peak
    memory and a 141 MiB file instead of 111.)

    put() hands a batch to its table's insert, waiting while that queue is full; a table's insert starts with its
    first batch (a table that gets none has none: no DuckDB thread waits on it; function_graph's names come at the
    end). Leaving the `with` block ends the streams and waits for the inserts: without an exception each commits its
    rows (the first insert's error, if any, is raised); with one, each stream ends in an error instead, so that its
    insert writes nothing. An insert that fails is raised by the next put(), never left with a queue no one reads."""

    def __init__(self, db: duckdb.DuckDBPyConnection, source_id: int, tables: dict[str, pa.Schema]):
        self.db, self.source_id, self.tables = db, source_id, tables
        self.queues: dict[str, queue.Queue] = {}
        self.workers: dict[str, threading.Thread] = {}
        self.errors: list[BaseException] = []

    def _start(self, table: str) -> None:
        self.queues[table] = queue.Queue(maxsize=STREAM_DEPTH)
        self.workers[table] = threading.Thread(target=self._insert, args=(self.db.cursor(), table),
                                               name=f"insert {table}", daemon=True)
        self.workers[table].start()

    def _insert(self, cur: duckdb.DuckDBPyConnection, table: str) -> None:
        q, schema = self.queues[table], self.tables[table]

        def batches() -> Iterator[pa.RecordBatch]:
            while (item := q.get()) is not None:
                if isinstance(item, BaseException):
                    raise item
                yield item

        try:
            cur.register("_rows", pa.RecordBatchReader.from_batches(schema, batches()))
            cols = ", ".join(f'"{n}"' for n in schema.names)
            cur.execute(f"INSERT INTO {table} (source_id, {cols}) SELECT ?, {cols} FROM _rows", [self.source_id])
        except BaseException as e:  # noqa: BLE001 - raised in the parser's thread
            self.errors.append(e)
        finally:
            cur.close()

    def _offer(self, table: str, item) -> bool:
        """Puts item on the table's queue, unless its insert has ended (then False)."""
        while self.workers[table].is_alive():
            try:
                self.queues[table].put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def put(self, table: str, batch: pa.RecordBatch) -> None:
        assert table in self.tables, f"rows for unknown table {table}"
        if table not in self.workers:
            self._start(table)
        if self.errors or not self._offer(table, batch):  # an insert ends early only once its error is kept
            raise self.errors[0]

    def __enter__(self) -> "_Streams":
        return self

    def __exit__(self, kind, exc, tb) -> None:
        for table in self.queues:
            self._offer(table, None if exc is None else _Aborted(f"the ingest failed: {exc!r}"))
        for worker in self.workers.values():
            worker.join()
        if exc is None and self.errors:
            raise self.errors[0]


def _glibc(function: str, *args: int) -> None:
    """Calls a function of glibc's malloc (elsewhere, where it has none, nothing)."""
    try:
        getattr(ctypes.CDLL(None), function)(*args)
    except (OSError, AttributeError):
        pass


M_MMAP_THRESHOLD, MMAP_THRESHOLD = -3, 256 << 10


def _return_freed_blocks() -> None:
    """Blocks of 256 KiB and more (numpy arrays, long lists) are mapped on their own, so that freeing one returns
    it to the OS (mallopt). By default glibc raises that threshold up to 32 MiB each time such a block is freed,
    after which those blocks come from its heaps and stay there, scattered between live objects: a function_graph
    ingest's peak varied from 921 to 987 MiB (median 921, 4 runs), and with this 828-837 MiB, for ~0.3 s more CPU
    (1/40 of it); blkparse's 564 -> 526 MiB, no slower. A setting of the process: the same for every Store."""
    _glibc("mallopt", M_MMAP_THRESHOLD, MMAP_THRESHOLD)


def _trim() -> None:
    """Returns the C heap's free memory to the OS (malloc_trim): without it the arenas of the parser and insert
    threads keep ~100 MB the derivation that follows could use."""
    _glibc("malloc_trim", 0)


def _json(value) -> str:
    import json

    return json.dumps(value)
