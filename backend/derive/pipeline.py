"""The derive steps of an ingest, and what runs beside what: read this file top to bottom.

backend/ingest/pipeline.py stages each file's rows (the parsers' tables, keyed by source_id):

0. per source, once its rows are staged, committed with them (DERIVE_STAGED[a table its parser writes]:
   fn(con, source_id)): for function_graph calls, `cpu_tasks.name_cpu_tasks` (the derive steps' reader cursor reads
   the staged rows, not the ingest transaction's writes);

then, in the ingest's transaction:

1. per source, as it is added (DERIVE_SOURCE[format]: fn(con, source_id, report) -> its time span, or None):
   blkparse: `blk.derive` (blk_top, notes); ftrace: `block_events.derive` (requests from its block tracepoints,
   when its parser rebuilt none), `blk.derive` when it has requests, `waits.span`;
2. per analysis, once every source is in (DERIVE_ANALYSIS: fn(con, analysis_id)), in order:
   `align.derive` (each source's clock offset: chains compare times across sources), then
   `waits_chains_and_timeline`, which runs three threads of work:

       this thread (Python, on `con`)      | the reader thread (a cursor of its own)  | the inserter thread (on `con`)
       ------------------------------------+------------------------------------------+-------------------------------
       per ftrace source: waits.derive_waits | stacks.call_index of that source (its |
         (its waits' own columns staged in |   names, windows, calls read ahead)      |
         a temporary table, by SQL;        |                                          |
         the acquires of locks, SQL)       |                                          |
       ... its waits' lines known -------->| recorded.event_stacks (SQL, the stacks   |
                                           |   the trace recorded at those lines)     |
       stacks of calls (numpy: the calls   | timeline.prepare (staged rows only), once|
         scanned in line windows; each     |                                          |
         window's waits' locks, holders,   |                                          |
         the holders' stacks from it too)  |                                          |
       ... its locks known --------------->| timeline.summarize, then cpus.summarize, |
                                           |   own transaction                        |
                                           |   (writes STAGED_TABLES, commits)         |
       chain_plan.plan (numpy: the waits'  |                                          | each source's wait_rows, a
         next links, groups, chains kept)  |                                          |   window of waits at a time
       chains.build_chains (the rows of    |                                          |
         their links), match_requests, insert_chains                                  |

   The reader works on the staged rows (committed by their inserts: a cursor of its own sees them); `con` is used
   by one thread at a time (the inserter holds it while this thread plans the chains). No wait is a Python object:
   the waits are arrays of their columns (what the stacks' look-ups and the chains need) and rows in DuckDB, so the
   derivation's memory does not grow with the trace (docs/BENCHMARKS.md). The garbage collector is off meanwhile.
"""

from __future__ import annotations

import gc
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable

import pyarrow as pa

from ..memory import trim_heap
from ..schema import migrations
from . import align, blk, block_events, chain_plan, chains, cpu_tasks, cpus, stacks, timeline, wait_rows, waits

DERIVE_STAGED: dict[str, list[Callable]] = {"fg_call_rows": [cpu_tasks.name_cpu_tasks]}


def derive_staged(con, source_id: int, tables) -> None:
    """The DERIVE_STAGED steps of a source whose parser writes `tables`, on its staged rows."""
    for table in tables:
        for step in DERIVE_STAGED.get(table, []):
            step(con, source_id)


# (an ftrace-format source may hold block requests too: perf script text rebuilds them from block tracepoints)
DERIVE_SOURCE: dict[str, list[Callable]] = {
    "blkparse": [blk.derive],
    "ftrace": [block_events.derive, blk.derive, waits.span],
}


def waits_chains_and_timeline(con, analysis_id: str) -> None:
    """The waits of the analysis' ftrace sources, its chains, and the timeline's summaries of every source (inside
    the ingest's transaction; the threads: see the module's docstring).

    timeline.prepare(reader, [(source id, t_min_ns, t_max_ns)]) reads what the summaries need of the ftrace
    sources' staged rows alone, beside the waits' derivation. timeline.summarize(reader, the analysis' sources
    [(id, format, t_min_ns, t_max_ns)], its waits (waits.SUMMARY_COLUMNS), what prepare returned) needs the waits'
    locks but not their holders nor the chains: it starts once the locks are known (the stacks' scan found them,
    with the holders), beside the waits' insert and the chains, in a transaction of its own that it commits first (it writes tables keyed by the
    sources' staged ids: STAGED_TABLES). Without ftrace sources it runs on `con`, in the ingest's transaction."""
    rows = con.execute(
        "SELECT id, format, t_min_ns, t_max_ns, clock_offset_ns FROM sources WHERE analysis_id = ? ORDER BY id",
        [analysis_id],
    ).fetchall()
    sources = [r[:4] for r in rows]
    spans = [(sid, t_min, t_max) for sid, fmt, t_min, t_max, _ in rows if fmt == "ftrace"]
    offs = {sid: off for sid, fmt, _, _, off in rows if fmt == "ftrace"}
    if not offs:
        timeline.summarize(con, sources, None, None)  # (cpus.summarize: ftrace sources only)
        return
    gc_was = gc.isenabled()
    gc.disable()  # many small lists and dicts, no cycles: the collector would only rescan them
    reader = con.cursor()  # the staged rows, read by the pool's thread while this one uses `con`
    try:
        # the reader thread: work that releases the GIL (DuckDB, Arrow, numpy) while this one goes on in Python or
        # in DuckDB; a connection is used by one thread at a time
        with ThreadPoolExecutor(max_workers=1) as pool:
            derived: list[waits.SourceWaits] = []
            prepared = summarized = None

            def locked(last: pa.Table) -> None:
                """Every wait's lock is known (the last source's too: `last`): the summaries can start, beside the
                waits' insert and the chains."""
                nonlocal prepared, summarized
                if summarized is None:
                    summary = pa.concat_tables([wait_rows.empty_summary(), *(d.summary for d in derived), last])
                    summarized = pool.submit(_summarize_committed, reader, sources, summary, prepared)
                    prepared = None  # held by that step only: freed once used, before the chains' peak

            def queue_prepare() -> None:
                """timeline.prepare, once: needed only once the locks are known, so queued behind what the waits
                wait for (the first source's call index and recorded stacks)."""
                nonlocal prepared
                if prepared is None and summarized is None:
                    prepared = pool.submit(timeline.prepare, reader, spans)

            def on_reader(fn: Callable, *args) -> Future:
                done = pool.submit(fn, reader, *args)
                queue_prepare()
                return done

            for k, sid in enumerate(offs):
                funcs = waits.function_names(con, sid)
                calls = pool.submit(stacks.call_index, reader, sid, funcs)  # read while the waits are derived
                got = waits.derive_waits(con, sid, funcs, calls, locked if k == len(offs) - 1 else None, on_reader)
                queue_prepare()  # (when the source had no waits)
                calls = None
                if got is not None:
                    derived.append(got)
            locked(wait_rows.empty_summary())  # when the last source had no waits
            # the inserter thread: the waits' rows (DuckDB, on `con`: this thread does not use it until they are in),
            # beside the summaries and the chains' plan here (numpy)
            with ThreadPoolExecutor(max_workers=1) as inserter:
                trim_heap()  # the stacks' scans' freed blocks, before the inserts' and the plan's
                inserted = inserter.submit(lambda: [d.insert() for d in derived])
                planned = chain_plan.plan([(d.sid, d.chain) for d in derived])
                derived = []
                inserted.result()
            # the summaries done first: their statements' memory and the chains' rows (Python) would peak together
            summarized.result()
            built = chains.build_chains(planned, chains.stored_rows(con, planned))
        chains.match_requests(con, analysis_id, built)
        chains.insert_chains(con, analysis_id, built)
    finally:
        reader.close()
        if gc_was:
            gc.enable()


def _summarize_committed(cur, sources: list[tuple], summary: pa.Table, prepared: Future | None) -> None:
    """timeline.summarize(cur, sources, summary, what `prepared` holds) in a transaction of its own, committed when it
    returns."""
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
    pending = {step for (step,) in con.execute("SELECT step FROM pending_derive").fetchall()}
    for step, fn in DERIVE_MIGRATED.items():
        if step not in pending:
            continue
        con.begin()
        try:
            fn(con)
            con.execute("DELETE FROM pending_derive WHERE step = ?", [step])
            con.commit()
        except BaseException:
            con.rollback()
            raise
