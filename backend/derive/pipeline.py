"""The derive steps of an ingest, and what runs beside what: read this file top to bottom.

backend/ingest/pipeline.py stages each file's rows (the parsers' tables, keyed by source_id):

0. per source, once its rows are staged, committed with them (DERIVE_STAGED[a table its parser writes]:
   fn(con, source_id)): for function_graph calls, `cpu_tasks.name_cpu_tasks` (the derive steps' reader cursor reads
   the staged rows, not the ingest transaction's writes);

then, in the ingest's transaction:

1. per source, as it is added (DERIVE_SOURCE[format]: fn(con, source_id, report) -> its time span, or None):
   blkparse: `blk.derive` (blk_top, notes); ftrace: `block_events.derive` (requests from its block tracepoints,
   when its parser rebuilt none), `blk.derive` when it has requests, `ftrace_span.span`;
2. per analysis, once every source is in (DERIVE_ANALYSIS: fn(con, analysis_id)), in order:
   `align.derive` (each source's clock offset: chains compare times across sources), then
   `waits_chains_and_timeline`, which runs three threads of work:

       this thread (Python, on `con`)       | the reader thread (`reader`, a cursor) | the inserter thread (on `con`)
       -------------------------------------+----------------------------------------+------------------------------
       per ftrace source (_waits_of_sources):| stacks.call_index of that source (its  |
         waits.stage (its waits' own columns |   names, windows, calls read ahead),   |
         staged in a temporary table, SQL)   |   waits.holder_finder (its lock calls),|
                                             |   recorded.stack_owners (SQL: which    |
                                             |   event each recorded stack is of)     |
       ... its waits' lines known ---------->| recorded.event_stacks (the texts of    |
                                             |   the stacks recorded at those lines)  |
       waits.find_stacks (numpy: the calls   | timeline.prepare (staged rows only),   |
         scanned in line windows; each       |   once, after the first source's reads |
         window's waits' locks, holders, the |                                        |
         holders' stacks from it too)        |                                        |
       ... the last source's locks known --->| _summarize_committed: timeline.summarize,
       waits.finish (their holders, what the |   then cpus.summarize, own transaction |
         chains need of them)                |   (writes STAGED_TABLES, commits)      |
       chain_plan.plan (numpy: the waits'    |                                        | SourceWaits.insert of each
         next links, groups, chains kept)    |                                        |   source, a window of waits
       chains.build_chains (the rows of      |                                        |   at a time
         their links), match_requests, insert_chains                                  |

   The reader works on the staged rows (committed by their inserts: a cursor of its own sees them); `con` is used
   by one thread at a time (the inserter holds it while this thread plans the chains). No wait is a Python object:
   the waits are arrays of their columns (what the stacks' look-ups and the chains need) and rows in DuckDB, so the
   derivation's memory does not grow with the trace (docs/BENCHMARKS.md). The garbage collector is off meanwhile.

Outside an ingest:

3. when a database file is opened (store.py, after its migrations): the DERIVE_MIGRATED steps a schema migration
   marked pending (`run_pending`);
4. when a user places a source on the timeline (the PATCH route): `place_source`.
"""

from __future__ import annotations

import gc
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable

import pyarrow as pa

from ..db import execute
from ..memory import trim_heap
from ..schema import migrations
from . import (
    align,
    blk,
    block_events,
    chain_plan,
    chains,
    cpu_tasks,
    cpus,
    ftrace_span,
    recorded,
    stacks,
    timeline,
    wait_rows,
    waits,
)
from .frames import FrameKinds

DERIVE_STAGED: dict[str, list[Callable]] = {"fg_call_rows": [cpu_tasks.name_cpu_tasks]}
# DuckDB's memory limit, as a share of the configured one, while the waits of ftrace sources are derived (their
# arrays, stacks and rows in Python beside DuckDB's buffers). On a 1 GiB trace.dat of 437 k waits (bench.derive_calls,
# 2 runs each): the ingest's peak 1096-1099 -> 937-941 MiB, the derive 7.24-7.78 -> 7.08-7.18 s; a 1 GiB function_graph
# text: 656-666 -> 597-603 MiB, 3.06-3.32 -> 2.91-3.14 s. (The whole ingest at this share was slower on blkparse.)
DUCKDB_SHARE_WITH_WAITS = 0.5


def derive_staged(con, source_id: int, tables) -> None:
    """The DERIVE_STAGED steps of a source whose parser writes `tables`, on its staged rows."""
    for table in tables:
        for step in DERIVE_STAGED.get(table, []):
            step(con, source_id)


# (an ftrace-format source may hold block requests too: perf script text rebuilds them from block tracepoints)
DERIVE_SOURCE: dict[str, list[Callable]] = {
    "blkparse": [blk.derive],
    "ftrace": [block_events.derive, blk.derive, ftrace_span.span],
}


def waits_chains_and_timeline(con, analysis_id: str) -> None:
    """The waits of the analysis' ftrace sources, its chains, and the timeline's summaries of every source (inside
    the ingest's transaction; the threads: see the module's docstring).

    timeline.prepare(reader, [(source id, t_min_ns, t_max_ns)]) reads what the summaries need of the ftrace
    sources' staged rows alone, beside the waits' derivation. timeline.summarize(reader, the analysis' sources
    [(id, format, t_min_ns, t_max_ns)], its waits (wait_rows.SUMMARY_COLUMNS), what prepare returned) needs the
    waits' locks but not their holders nor the chains: it starts once the locks are known (the stacks' scan found
    them, with the holders), beside the waits' insert and the chains, in a transaction of its own that it commits
    first (it writes tables keyed by the sources' staged ids: STAGED_TABLES). Without ftrace sources it runs on
    `con`, in the ingest's transaction."""
    rows = execute(
        con,
        "SELECT id, format, t_min_ns, t_max_ns, clock_offset_ns FROM sources WHERE analysis_id = ? ORDER BY id",
        [analysis_id],
    ).fetchall()
    sources = [r[:4] for r in rows]
    ftrace = [r[:4] for r in rows if r[1] == "ftrace"]
    if not ftrace:
        timeline.summarize(con, sources, None, None)  # (cpus.summarize: ftrace sources only)
        return
    frames = FrameKinds()  # what each frame of the stacks is, looked up once for this ingest and dropped with it
    gc_was = gc.isenabled()
    gc.disable()  # many small lists and dicts, no cycles: the collector would only rescan them
    reader = con.cursor()  # the staged rows, read by the reader thread while this one uses `con`
    try:
        # the reader thread: work that releases the GIL (DuckDB, Arrow, numpy) while this one goes on in Python or
        # in DuckDB; a connection is used by one thread at a time. DuckDB's memory limit is lowered meanwhile: the
        # waits' arrays are this process' memory too
        with (
            con.memory.lowered(con, DUCKDB_SHARE_WITH_WAITS),
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="derive-reader") as pool,
        ):
            derived, summarized = _waits_of_sources(con, reader, pool, sources, ftrace, frames)
            # the inserter thread: the waits' rows (DuckDB, on `con`: this thread does not use it until they are in),
            # beside the summaries and the chains' plan here (numpy)
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="derive-inserter") as inserter:
                trim_heap()  # the stacks' scans' freed blocks, before the inserts' and the plan's
                inserted = inserter.submit(_insert_waits, con, derived)
                planned = chain_plan.plan([(d.sid, d.chain) for d in derived])
                derived = None  # (the inserter holds them until they are in)
                inserted.result()
            built = chains.build_chains(planned, chains.stored_rows(con, planned), frames)  # beside the summaries
            summarized.result()
        chains.match_requests(con, analysis_id, built)
        chains.insert_chains(con, analysis_id, built)
    finally:
        reader.close()
        if gc_was:
            gc.enable()


def _waits_of_sources(
    con, reader, pool: ThreadPoolExecutor, sources: list[tuple], ftrace: list[tuple], frames: FrameKinds
) -> tuple[list[waits.SourceWaits], Future]:
    """Each ftrace source's waits (waits.stage, find_stacks, finish), derived here while the reader thread (`pool`,
    on `reader`) reads what they need next: the source's call index, then the stacks the trace recorded at its waits'
    lines. timeline.prepare is queued once, behind the first source's reads (it is needed only once the locks are
    known); the summaries (_summarize_committed) once the last source's locks are. Returns the sources' waits (those
    that have some) and the summaries' future."""
    spans = [(sid, t_min, t_max) for sid, _, t_min, t_max in ftrace]
    derived: list[waits.SourceWaits] = []
    prepared: Future | None = None
    summarized: Future | None = None
    for k, (sid, *_) in enumerate(ftrace):
        funcs = waits.function_names(con, sid)
        calls = pool.submit(stacks.call_index, reader, sid, funcs)  # read while the waits are staged
        holders = pool.submit(waits.holder_finder, reader, sid, funcs)  # so are the lock calls
        owners = pool.submit(recorded.stack_owners, reader, sid)  # and which event each recorded stack is of
        staged = waits.stage(con, sid, funcs)
        if staged is not None:
            recording = pool.submit(_recorded_stacks, reader, sid, staged.at_lines(), owners)
        if prepared is None:
            prepared = pool.submit(timeline.prepare, reader, spans)
        owners = None  # (held by the reading, once queued)
        if staged is None:
            calls = holders = None
            continue
        found = waits.find_stacks(con, staged, calls.result(), recording.result(), holders.result(), frames)
        calls = recording = holders = None
        if k == len(ftrace) - 1:  # every wait's lock is known: the summaries start, beside the inserts and the chains
            summarized = pool.submit(_summarize_committed, reader, sources, _summary(derived, found.summary), prepared)
            prepared = None  # held by that step only: freed once used, before the chains' peak
        derived.append(waits.finish(staged, found, frames))
        staged = found = None
    if summarized is None:  # the last source had no waits
        summarized = pool.submit(_summarize_committed, reader, sources, _summary(derived), prepared)
    return derived, summarized


def _recorded_stacks(reader, sid: int, lines, owners: Future) -> recorded.Recorded:
    """recorded.event_stacks of the source at `lines`, with the stacks' owners `owners` read before it (on the same
    reader thread: done by then)."""
    return recorded.event_stacks(reader, sid, lines, owners.result())


def _summary(derived: list[waits.SourceWaits], *more: pa.Table) -> pa.Table:
    """The waits' summaries (wait_rows.SUMMARY_COLUMNS) of the sources so far, and `more`, as one table."""
    return pa.concat_tables([wait_rows.empty_summary(), *(d.summary for d in derived), *more])


def _insert_waits(con, derived: list[waits.SourceWaits]) -> None:
    for d in derived:
        d.insert(con)


def _summarize_committed(cur, sources: list[tuple], summary: pa.Table, prepared: Future) -> None:
    """timeline.summarize(cur, sources, summary, what `prepared` holds: timeline.prepare, run before it on the reader
    thread) in a transaction of its own, committed when it returns."""
    early_rows = prepared.result() if prepared else None
    cur.begin()
    try:
        timeline.summarize(cur, sources, summary, early_rows)
        cpus.summarize(cur, sources)  # each CPU's tasks, as lanes numbered after the source's others
        cur.commit()
    except BaseException:
        cur.rollback()
        raise


DERIVE_ANALYSIS: list[Callable] = [align.derive, waits_chains_and_timeline]


# 3. over the rows a database file already holds, when it is opened (store.py, after its migrations): the steps a
#    schema migration marked pending in `pending_derive` (schema/migrations.py), by name: fn(con), in this order, each
#    in a transaction that also clears its mark
DERIVE_MIGRATED: dict[str, Callable] = {migrations.CPU_TRACKS: cpus.summarize_kept}


def run_pending(con) -> None:
    """Runs the DERIVE_MIGRATED steps marked pending in the file, each with its mark cleared in its transaction."""
    pending = {step for (step,) in execute(con, "SELECT step FROM pending_derive").fetchall()}
    for step, fn in DERIVE_MIGRATED.items():
        if step not in pending:
            continue
        con.begin()
        try:
            fn(con)
            execute(con, "DELETE FROM pending_derive WHERE step = ?", [step])
            con.commit()
        except BaseException:
            con.rollback()
            raise


def place_source(
    con, analysis_id: str, source_id: int, offset_ns: int | None = None, same_span_as: int | None = None
) -> None:
    """4. after a user placed a source on the analysis' timeline (PATCH, in the caller's transaction): its clock
    offset (`align.set_offset`: raises LookupError or ValueError), then the chains linked again to block requests
    with the new times (`chains.relink`)."""
    align.set_offset(con, analysis_id, source_id, offset_ns, same_span_as)
    chains.relink(con, analysis_id)
