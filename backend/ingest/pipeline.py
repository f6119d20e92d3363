"""An ingest, top to bottom: the files of one upload (or `stallscope ingest`) become one analysis, whole or not at
all. `ingest` runs these stages in order; what runs beside what:

1. detect (files.detect_sources): every file is sniffed before any is parsed, so all refusals are reported at once;
   a format that reads a group of files as one source (blktrace's per-CPU files) groups them: at the end, or, for
   an upload's files sent in pieces (a set's members interleaved, api/upload_body.py), once they have all begun.
2. stage, source by source (stage_source): its rows are written to the parsers' tables, keyed by a new source id,
   committed but invisible (every read reaches rows through `sources` and `analyses`); then its DERIVE_STAGED steps
   (an ftrace source's calls without a task get their CPU's pseudo-task, derive/cpu_tasks.py), committed with them:

       this thread                          | a thread per table (streams)          | the hash threads
       -------------------------------------+---------------------------------------+-------------------------------
       the parser: chunks -> record batches | one INSERT reading its queue of       | one (hashes) for the files on
       (the C tokenizers release the GIL)   | batches, on a cursor of its own       | disk or in memory, read again
                                            |                                       | by position, at SCHED_IDLE;
                                            |                                       | one per upload part (started
                                            |                                       | here: start_hash) on its bytes
                                            |                                       | as they pass

   then the C heap is trimmed (memory.trim_heap).
3. derive and publish, in one transaction on the ingest's cursor: per source its DERIVE_SOURCE steps and its
   `sources` row (add_source), the DERIVE_ANALYSIS steps (derive/pipeline.py says what they run beside what), the
   heap trimmed, the hashes awaited and written, the `analyses` row; commit.
4. on failure: the hashing stops (an upload's parts are drained, which ends their hash threads), the transaction is
   rolled back and the staged rows are deleted (schema/rows.py discard_staged). Rows left by a process that died
   mid-ingest are deleted when the database is next opened (schema/rows.py discard_unfinished).
"""

from __future__ import annotations

import json
import secrets
import tempfile
from datetime import datetime, timezone
from types import ModuleType
from typing import Callable, Iterable

import duckdb

from parsers.common import ParseError, ParseReport
from parsers.detect import detect

from ..db import execute
from ..derive.pipeline import DERIVE_ANALYSIS, DERIVE_SOURCE, derive_staged
from ..memory import trim_heap
from ..schema.rows import discard_staged
from .arrivals import PIECES_BEGUN
from .files import (
    CountingReader,
    IngestError,
    InputFile,
    Progress,
    detect_sources,
    group_sources,
    read_head,
    source_name,
)
from .hashes import FileHashes, source_digest
from .pieces import PiecedInput
from .streams import TableStreams


def new_id() -> str:
    """An unguessable analysis id: 128 random bits, URL-safe, starting with a letter or digit (an id starting with
    '-' read as an option on a command line: `stallscope sql ID …`)."""
    while not (token := secrets.token_urlsafe(16))[0].isalnum():
        pass
    return token


def ingest(
    db: duckdb.DuckDBPyConnection,
    files: Iterable[InputFile],
    name: str | None = None,
    progress: Progress | None = None,
    bytes_total: int = 0,
    spool: Callable[[int], None] | None = None,
) -> dict:
    """Creates one analysis from the files in the database `db`. Raises IngestError (nothing written) if any is
    refused.

    `files` is a list (all there: each is detected before any is parsed) or files that arrive while it runs (an
    upload read as it comes, arrivals.Arrivals: each file is detected and parsed as it arrives, its name field read
    at the end; `bytes_total` says how many bytes are expected, for the progress). A file of a format read as a set
    (blktrace's per-CPU files: a set needs all its files) is, if it came whole, kept until the end, copied to a
    temporary file if it came as a stream (`spool(n)` is told of each n bytes so copied; it may refuse by raising),
    then staged with its set; if it came in pieces (pieces.PiecedInput: on disk as they arrive, interleaved with its
    set's other members), its set is staged as soon as every file sent in pieces has begun (arrivals.PIECES_BEGUN,
    else at the end), reading each member as it grows."""
    progress = progress or Progress()
    if isinstance(files, list):
        detect_sources(files)  # every refusal at once, before anything is parsed
        bytes_total = sum(f.size for f in files)
    progress.update(phase="parsing", bytes_total=bytes_total, bytes_read=0, events=0)

    analysis_id = new_id()
    con = db.cursor()
    staged: list[int] = []  # source ids whose rows are written, not yet visible
    hashes = FileHashes()
    hashes.start()  # the hash thread, ended by hashes.result() or hashes.cancel() below
    arrived: list[InputFile] = []
    spooled: list = []  # temporary files of streamed set members, and files sent in pieces (PiecedInput)
    try:
        parsed, sets, refused = [], [], []  # parsed: (first file's index, staged source)
        pieced_sets = []  # (index, parser) of set members sent in pieces: staged once every one has begun

        def stage_sets(members_at: list[tuple[int, ModuleType]]) -> None:
            members = [arrived[i] for i, _ in members_at]
            for parser, group in group_sources(members, [p for _, p in members_at]):
                unit = [members[k] for k in group]
                parsed.append((members_at[group[0]][0], stage_source(db, con, unit, parser, progress, staged)))

        for f in files:
            if f is PIECES_BEGUN:  # every set member sent in pieces has begun: parsed as the rest arrives
                if pieced_sets and not refused:
                    stage_sets(pieced_sets)
                    pieced_sets = []
                continue
            i = len(arrived)
            arrived.append(f)
            hashes.add(f)  # a file on disk or in memory: read again by the hash thread, by position
            if f.streamed:  # an upload's part: a thread of its own hashes its bytes as they pass, until its end
                f.stream.start_hash()
            try:
                parser = detect(read_head(f), f.filename)
            except ParseError as e:
                refused.append(e)
            if refused:  # nothing will be written: the rest is only detected, so every refusal is reported
                if f.streamed:
                    f.stream.drain()
                continue
            if isinstance(f.stream, PiecedInput):  # on disk as it comes: staged once its set's members are known
                spooled.append(f.stream)  # closed (its file removed) at the end
                if hasattr(parser, "group"):
                    pieced_sets.append((i, parser))
                    continue
            elif hasattr(parser, "group"):  # a set's member sent whole: staged with the others, at the end
                if f.streamed:
                    spooled.append(spool_file(f, spool))
                sets.append((i, parser))
                continue
            parsed.append((i, stage_source(db, con, [f], parser, progress, staged)))
        if refused:
            raise IngestError(refused)
        if pieced_sets:  # the body ended before a second piece of any
            stage_sets(pieced_sets)
        if sets:
            stage_sets(sets)
        if not arrived:
            raise IngestError(
                [ParseError("no file: send one or more files in multipart fields named 'files'", filename="upload")]
            )
        parsed = [p for _, p in sorted(parsed, key=lambda p: p[0])]  # sources in the order of their first file
        hashes.parsed.set()
        trim_heap()  # what staging freed (Arrow batches, parser buffers) back to the OS before deriving
        name = name or getattr(files, "name", None)
        name = name or ", ".join(source_name(p[3], [f.filename for f in p[1]]) for p in parsed)[:200]
        # One transaction makes the analysis visible: derived tables, then its sources and itself.
        progress.update(phase="deriving")
        con.begin()
        sources = [add_source(con, analysis_id, *p) for p in parsed]
        for step in DERIVE_ANALYSIS:
            step(con, analysis_id)
        trim_heap()  # what the derivation freed (the waits' and chains' Python objects), before the commit's writes
        digests = dict(zip((id(f) for f in arrived), hashes.result()))
        for (source_id, unit, *_), source in zip(parsed, sources):
            digest = source_digest(unit, [digests[id(f)] for f in unit])
            for entry, f in zip(source["files"], unit):
                entry["sha256"] = digests[id(f)]
            execute(
                con,
                "UPDATE sources SET sha256 = ?, files = ? WHERE id = ?",
                [digest, json.dumps(source["files"]), source_id],
            )
        execute(
            con,
            "INSERT INTO analyses (id, name, created_at) VALUES (?, ?, ?)",
            [analysis_id, name, datetime.now(timezone.utc).replace(tzinfo=None)],
        )
        con.commit()
    except BaseException as e:
        if hasattr(files, "close"):  # arrivals: the rest of the upload is dropped as it comes
            files.close()
        hashes.cancel()
        try:
            con.rollback()
        except duckdb.Error:  # no transaction was open
            pass
        discard_staged(con, staged)
        progress.update(phase="error", error=str(e))
        if isinstance(e, ParseError):
            raise IngestError([e]) from e
        raise
    finally:
        con.close()
        for tmp in spooled:
            tmp.close()
    progress.update(phase="done")
    return {"id": analysis_id, "url": f"/a/{analysis_id}", "sources": sources}


def spool_file(f: InputFile, spool: Callable[[int], None] | None):
    """Copies a streamed file to a temporary file (deleted when closed) and makes it the file's stream; returns the
    temporary file. Its SHA-256 is still the stream's."""
    tmp = tempfile.TemporaryFile(prefix="stallscope-upload-")
    try:
        buf = bytearray(1 << 20)
        with memoryview(buf) as view:
            while got := f.stream.readinto(view):
                if spool is not None:
                    spool(got)
                tmp.write(view[:got])
        f.size = tmp.tell()
        tmp.seek(0)
        digest = f.stream.digest
        f.stream = SpooledStream(tmp, digest)
    except BaseException:
        tmp.close()
        raise
    return tmp


class SpooledStream:
    """A streamed file once copied to a temporary file: read from the copy, hashed as it passed (`digest`)."""

    def __init__(self, file, digest: Callable[[], str]):
        self.file, self.digest = file, digest

    def readinto(self, b) -> int:
        return self.file.readinto(b)

    def read(self, size: int = -1) -> bytes:
        return self.file.read(size)

    def seek(self, *a) -> int:
        return self.file.seek(*a)

    def tell(self) -> int:
        return self.file.tell()

    def fileno(self) -> int:
        return self.file.fileno()


def stage_source(
    db: duckdb.DuckDBPyConnection,
    con: duckdb.DuckDBPyConnection,
    unit: list[InputFile],
    parser: ModuleType,
    progress: Progress,
    staged: list[int],
) -> tuple:
    """Parses a source's files (one, or a format's group: blktrace's per-CPU files) into its tables, each through
    one INSERT that reads the rows as the parser makes them (TableStreams): memory stays bounded whatever the files'
    size, and each table is written in whole row groups. The rows stay invisible until add_source links them
    to an analysis."""
    done_events, done = progress.events, progress.bytes_read
    source_id = execute(con, "SELECT nextval('source_ids')").fetchall()[0][0]
    staged.append(source_id)
    names = [f.filename for f in unit]
    name = source_name(parser, names)
    report = ParseReport(name)
    progress.update(filename=name)
    readers: list[CountingReader] = []
    readers.extend(
        CountingReader(f.stream, lambda _: progress.update(bytes_read=done + sum(r.n for r in readers))) for f in unit
    )
    if hasattr(parser, "parse_set"):
        batches = parser.parse_set(list(zip(names, readers)), report)
    else:
        batches = parser.parse(readers[0], report)
    with TableStreams(db, source_id, parser.TABLES) as streams:
        for table, batch in batches:  # the C tokenizers release the GIL: DuckDB goes on
            streams.put(table, batch)
            progress.update(events=done_events + report.events)
    derive_staged(con, source_id, parser.TABLES)  # committed with the staged rows (derive/pipeline.py's step 0)
    if report.events == 0:
        raise report.nothing_usable()
    return source_id, unit, name, parser, report, readers


def add_source(
    con: duckdb.DuckDBPyConnection,
    analysis_id: str,
    source_id: int,
    unit: list[InputFile],
    name: str,
    parser: ModuleType,
    report: ParseReport,
    readers: list[CountingReader],
) -> dict:
    """Runs the source's DERIVE_SOURCE steps and writes its `sources` row (its hashes come at the end); returns what
    the ingest answers about it."""
    t_min = t_max = None
    for step in DERIVE_SOURCE.get(parser.FORMAT, []):
        got = step(con, source_id, report)
        if got is not None:
            t_min, t_max = got
    execute(
        con,
        "INSERT INTO sources (id, analysis_id, filename, format, sha256, bytes, lines, events, skipped_lines,"
        " skipped_examples, notes, t_min_ns, t_max_ns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            source_id,
            analysis_id,
            name,
            parser.FORMAT,
            "",
            sum(r.n for r in readers),
            report.lines,
            report.events,
            report.skipped,
            json.dumps([e.__dict__ for e in report.examples]),
            json.dumps(report.notes),
            t_min,
            t_max,
        ],
    )
    kinds = report.files or [{"kind": f"{parser.FORMAT} text"}]
    files = [
        {"filename": f.filename, "bytes": r.n, "kind": k.get("kind", ""), "sha256": ""}
        for f, r, k in zip(unit, readers, kinds)
    ]
    return {
        "id": source_id,
        "filename": name,
        "format": parser.FORMAT,
        **report.as_dict(),
        "bytes": sum(r.n for r in readers),
        "files": files,
    }
